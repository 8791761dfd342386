"""``hts asm`` and ``hts disasm``: task programs to images and back."""

from pathlib import Path

from hts.base.arguments import Files, Role, add_argument

from .arguments import add_config, system
from .command import Command


def _add_asm_arguments(parser):
    add_argument(parser, Role.INPUT, "program", metavar="PROG.s", help="assembly source")
    add_argument(parser, Role.OUTPUT, "-o", "--output", metavar="OUT",
                 help="image to write (default: PROG's name with suffix .hex, in the current folder)")
    add_config(parser)


def _image_path(args) -> Path:
    # In the current folder, as a compiler's object file: the source may sit in a folder
    # that is not the user's (an installed package's examples).
    return Path(args.output) if args.output else Path(Path(args.program).with_suffix(".hex").name)


def _default_image(args) -> Files:
    return Files(outputs=[] if args.output else [str(_image_path(args))])


def run_asm(args) -> int:
    from hts.assembler import assemble_file, write_image
    config = system(args.config)
    program = assemble_file(args.program, config)
    output = _image_path(args)
    write_image(output, program)
    print(f"{args.program}: {len(program)} instructions -> {output}")
    return 0


def _add_disasm_arguments(parser):
    add_argument(parser, Role.INPUT, "image", metavar="IMAGE", help="program image (.hex or .bin)")
    add_config(parser)


def run_disasm(args) -> int:
    from hts.assembler import disassemble, load_image
    config = system(args.config)
    print("\n".join(disassemble(load_image(args.image, config), config)))
    return 0


ASM = Command(
    "asm", help="assemble a task program into a .hex or .bin image",
    description="Assemble PROG (assembly source) into a program image. The output format follows the suffix: "
                ".hex is one 32-hex-digit word per line ($readmemh), .bin is 16 little-endian bytes per "
                "instruction. On any error nothing is written and the errors are printed as file:line:col: "
                "message. A source is UTF-8 text of at most 512 bytes per instruction of program memory "
                "(hts.program_words), or 1 MiB if that is more.",
    add_arguments=_add_asm_arguments, run=run_asm, more_files=_default_image)

DISASM = Command(
    "disasm", help="print a .hex or .bin image back as assembly",
    description="Disassemble a program image into the paper's plain assembly form (every field hex), which "
                "assembles back to the same words.",
    add_arguments=_add_disasm_arguments, run=run_disasm)
