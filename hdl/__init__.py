"""Amaranth RTL of the HTS and its accelerator shells.

One component per hardware block, with the module name of its cycle model in
``hts.models``; ``hts.hdl.hts.HTS`` is the top level. docs/hardware.md describes them.
The signatures and layouts that cross between blocks are in ``hts.hdl.interfaces``.
"""
