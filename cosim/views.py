"""Integers read through Amaranth layouts, quickly: what the testbench decodes ports with.

``amaranth.lib.data.Const`` works its layout's sizes out again on every field access,
which made decoding the ports (the trace port above all, through
:class:`hts.hdl.trace.TraceReader`) most of the Python time of a co-simulation
(docs/results.md, "Co-simulation speed"). :func:`view_reader` works the offsets out once per layout and
returns views that read like ``data.Const``: struct fields as attributes, array elements
by index and iteration, plain fields as ints, enum-shaped ones as enum members.
"""

from amaranth.hdl import Shape, ShapeCastable
from amaranth.lib import data

__all__ = ["view_reader"]


class _Struct:
    __slots__ = ("_fields", "_bits")

    def __init__(self, fields: dict, bits: int):
        self._fields, self._bits = fields, bits

    def __getattr__(self, name):
        try:
            offset, mask, read = self._fields[name]
        except KeyError:
            raise AttributeError(name) from None
        return read(self._bits >> offset & mask)


class _Array:
    __slots__ = ("_element", "_bits")

    def __init__(self, element: tuple, bits: int):
        self._element, self._bits = element, bits

    def __len__(self):
        return self._element[3]

    def __getitem__(self, index: int):
        width, mask, read, length = self._element
        if not 0 <= index < length:
            raise IndexError(index)
        return read(self._bits >> index * width & mask)

    def __iter__(self):
        return (self[index] for index in range(len(self)))


def _signed(width: int):
    return lambda bits: bits - (1 << width) if bits >> (width - 1) else bits


def view_reader(shape):
    """``bits -> value`` of ``shape``, as ``data.Const`` reads it, with the layout worked out once."""
    if isinstance(shape, data.ArrayLayout):
        width = Shape.cast(shape.elem_shape).width
        element = (width, (1 << width) - 1, view_reader(shape.elem_shape), shape.length)
        return lambda bits: _Array(element, bits)
    if isinstance(shape, data.Layout):
        fields = {name: (field.offset, (1 << field.width) - 1, view_reader(field.shape)) for name, field in shape}
        return lambda bits: _Struct(fields, bits)
    if isinstance(shape, ShapeCastable):
        return shape.from_bits
    plain = Shape.cast(shape)
    return _signed(plain.width) if plain.signed else int
