"""Reading the user's files: the one way every command reads one, bounded, with clear errors.

Every file a user names (an assembly source, a program image, a configuration, a sweep
file and the programs it lists, a task graph) is read here:

- only a regular file is read: a named pipe, a device, a directory or a socket is refused
  by name, before it is opened (``os.stat``, following symlinks, so a link to
  ``/dev/zero`` is refused too) and again after (``os.fstat`` of what was opened, without
  blocking, in case the path changed in between);
- at most ``limit + 1`` bytes are read, whatever the file claims its size is, and a file
  longer than its limit is refused with the limit stated;
- text is UTF-8 (a leading byte-order mark is dropped); a byte that is not is an error at
  its ``file:line:col``;
- YAML goes through one loader, :func:`load_yaml`: the safe loader, without aliases (an
  alias bomb of a few hundred bytes expands to gigabytes), with bounded nesting and
  size, every error at ``file:line:col``, and the place of every key kept so that a later
  check can point at the user's own line.

The limits are the constants below, in one place.
"""

import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import HTSError, Location, display_path, shown

__all__ = ["PROGRAM_MIN_BYTES", "PROGRAM_BYTES_PER_INSTRUCTION", "CONFIG_BYTES", "SWEEP_BYTES", "GRAPH_BYTES",
           "PAGE_BYTES", "YAML_DEPTH", "YAML_NODES", "YAML_NUMBER_CHARACTERS", "program_limit", "read_bytes",
           "read_text", "decode_text", "load_yaml", "YamlDocument"]

# ---- the limits ----------------------------------------------------------------------------

#: An assembly source or a program image (.hex, .bin): 512 bytes per instruction of program
#: memory (``hts.program_words``), room for long comments on every line, and at least 1 MiB.
PROGRAM_MIN_BYTES = 1 << 20
PROGRAM_BYTES_PER_INSTRUCTION = 512
#: A configuration file (``-c FILE``): a preset is under 2 kB. The YAML reader takes about
#: 2 s a MiB, so a quarter of one keeps the worst file under a second.
CONFIG_BYTES = 256 << 10
#: A sweep file (``hts explore --sweep``): 10,000 values (``--max-points``) take 60 kB.
SWEEP_BYTES = 256 << 10
#: A task graph (``hts compare GRAPH.graphml``).
GRAPH_BYTES = 16 << 20
#: A results page that ``python -m hts.flows.results`` rewrites.
PAGE_BYTES = 4 << 20
#: Nesting of a YAML document (mappings and lists inside each other); a configuration needs 3.
YAML_DEPTH = 32
#: Nodes (mappings, lists, scalars) of a YAML document: a configuration of every accelerator
#: ID has under 2,000; each node costs about 1 kB and 50 us to read.
YAML_NODES = 20_000
#: Characters of a number in a YAML document: no parameter needs more than 20 digits, and
#: Python refuses to read more than 4,300.
YAML_NUMBER_CHARACTERS = 100


def program_limit(program_words: int) -> int:
    """Bytes a source or image may have when program memory holds ``program_words``."""
    return max(PROGRAM_MIN_BYTES, PROGRAM_BYTES_PER_INSTRUCTION * program_words)


# ---- bytes ---------------------------------------------------------------------------------

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (FIFO)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _refuse_unless_regular(mode: int, where: Location):
    if not stat.S_ISREG(mode):
        kind = next((name for test, name in _KINDS if test(mode)), "an unknown kind of file")
        raise HTSError(f"cannot read: {kind}, not a regular file", where)


def _cannot_read(error: OSError, where: Location) -> HTSError:
    if isinstance(error, FileNotFoundError):
        return HTSError("cannot read: no such file", where)
    return HTSError(f"cannot read: {error.strerror or error}", where)


def read_bytes(path: str | Path, limit: int, what: str = "file", why: str = "") -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them; an HTSError at the
    file otherwise. ``what`` names the file in the message about the limit, and ``why``
    (optional) says where the limit comes from."""
    where = Location(display_path(path))
    try:
        _refuse_unless_regular(os.stat(path).st_mode, where)
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)
                             | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise _cannot_read(error, where) from None
    chunks, left = [], limit + 1
    try:
        # What was opened may not be what was looked at: check it again, without reading.
        _refuse_unless_regular(os.fstat(descriptor).st_mode, where)
        while left > 0:
            chunk = os.read(descriptor, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as error:
        raise _cannot_read(error, where) from None
    finally:
        os.close(descriptor)
    if left <= 0:
        raise HTSError(f"the {what} is larger than {limit:,} bytes, its limit{f' ({why})' if why else ''}; "
                       f"it was not read past the limit", where)
    return b"".join(chunks)


# ---- text ----------------------------------------------------------------------------------

_LINE_END = re.compile(rb"\r\n|\r|\n")


def decode_text(data: bytes, filename: str) -> str:
    """``data`` as UTF-8 text (without a leading byte-order mark); a byte that is not UTF-8
    is an error at its ``filename:line:col`` (lines end at LF, CR LF or CR)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        before = data[:error.start]
        ends = list(_LINE_END.finditer(before))
        line_start = ends[-1].end() if ends else 0
        column = len(before[line_start:].decode("utf-8", errors="replace")) + 1
        raise HTSError(f"not UTF-8 text: the byte {data[error.start]:#04x} cannot start or continue a character",
                       Location(filename, len(ends) + 1, column)) from None
    return text[1:] if text.startswith("\ufeff") else text


def read_text(path: str | Path, limit: int, what: str = "file", why: str = "") -> str:
    """The regular file ``path`` as UTF-8 text, at most ``limit`` bytes (:func:`read_bytes`)."""
    return decode_text(read_bytes(path, limit, what, why), display_path(path))


# ---- YAML ----------------------------------------------------------------------------------

class _Loader(yaml.SafeLoader):
    """The safe loader without aliases, with bounded nesting, nodes and numbers; every
    error a YAMLError at a mark."""

    def __init__(self, text: str, what: str):
        super().__init__(text)
        self._what, self._depth, self._nodes = what, 0, 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):
            raise yaml.MarkedYAMLError(problem=f"aliases (*name) are not accepted: a {self._what} needs none, and "
                                               "an alias bomb of a few hundred bytes takes gigabytes",
                                       problem_mark=event.start_mark)
        self._nodes += 1
        if self._nodes > YAML_NODES:
            raise yaml.MarkedYAMLError(problem=f"more than {YAML_NODES:,} values: far more than a {self._what} "
                                               "needs", problem_mark=event.start_mark)
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            if self._depth >= YAML_DEPTH:
                raise yaml.MarkedYAMLError(problem=f"nested deeper than {YAML_DEPTH} levels: far deeper than a "
                                                   f"{self._what} needs", problem_mark=event.start_mark)
            self._depth += 1
            try:
                return super().compose_node(parent, index)
            finally:
                self._depth -= 1
        return super().compose_node(parent, index)

    def construct_object(self, node, deep=False):
        if isinstance(node, yaml.ScalarNode) and node.tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float") \
                and len(node.value) > YAML_NUMBER_CHARACTERS:
            raise yaml.MarkedYAMLError(problem=f"a number of {len(node.value):,} characters: longer than any "
                                               f"value needs ({YAML_NUMBER_CHARACTERS} at most)",
                                       problem_mark=node.start_mark)
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as error:    # a date that does not exist, say
            raise yaml.MarkedYAMLError(problem=f"{shown(node.value) if isinstance(node.value, str) else 'value'}: "
                                               f"{error}", problem_mark=node.start_mark) from None


@dataclass(frozen=True)
class YamlDocument:
    """A YAML document's value, and where each key path's value starts in the file.

    Key paths are dotted, with list indices in brackets: ``hts.queue_depth``,
    ``accelerators[2].name``; the whole document is ``""``."""
    data: Any
    filename: str
    marks: dict[str, Location] = field(default_factory=dict)

    def where(self, key: str) -> Location:
        """The place of ``key``, or of its closest enclosing key that is in the file."""
        while key and key not in self.marks:
            key = key[:key.rindex("[")] if key.endswith("]") else key.rpartition(".")[0]
        return self.marks.get(key, Location(self.filename))


def _reader_location(text: str, position: int, filename: str) -> Location:
    before = text[:position]
    line_start = max(before.rfind("\n"), before.rfind("\r")) + 1
    return Location(filename, before.count("\n") + before.count("\r") - before.count("\r\n") + 1,
                    position - line_start + 1)


def load_yaml(text: str, filename: str, what: str = "YAML file",
              error: Callable[[str, str, Location], HTSError] | None = None) -> YamlDocument:
    """The one YAML document in ``text``, read as a ``what`` (named in messages).

    Every error is an HTSError at ``filename:line:col``: YAML syntax, an alias, nesting
    deeper than :data:`YAML_DEPTH`, more than :data:`YAML_NODES` nodes, a key given twice
    in one mapping. ``error(key, message, location)`` makes the error (default: an
    HTSError whose message starts with the key, when there is one)."""
    make = error or (lambda key, message, where: HTSError(f"{shown(key, 80)}: {message}" if key else message, where))
    loader = None
    try:
        loader = _Loader(text, what)        # the reader checks every character here
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except yaml.reader.ReaderError as err:
        raise make("", f"not valid YAML: the character U+{err.character:04X} is not allowed",
                   _reader_location(text, err.position, filename)) from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        where = Location(filename, mark.line + 1, mark.column + 1) if mark else Location(filename)
        problem = getattr(err, "problem", None) or str(err)
        raise make("", f"not valid YAML: {problem}", where) from None
    except RecursionError:      # pragma: no cover - the depth bound comes first
        raise make("", f"not valid YAML: nested too deeply for a {what}", Location(filename)) from None
    finally:
        if loader is not None:
            loader.dispose()
    marks: dict[str, Location] = {}

    def walk(node, path):
        marks[path] = Location(filename, node.start_mark.line + 1, node.start_mark.column + 1)
        if isinstance(node, yaml.MappingNode):
            seen = set()
            for key_node, value_node in node.value:
                key = f"{path}.{key_node.value}" if path else str(key_node.value)
                if isinstance(key_node.value, str) and key_node.value in seen:
                    raise make(key, "given twice", Location(
                        filename, key_node.start_mark.line + 1, key_node.start_mark.column + 1))
                seen.add(key_node.value if isinstance(key_node.value, str) else id(key_node))
                walk(value_node, key)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                walk(item, f"{path}[{index}]")

    if node is not None:
        walk(node, "")
    return YamlDocument(data, filename, marks)
