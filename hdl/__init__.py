"""Amaranth RTL of the HTS and its accelerator shells (docs/hardware.md).

One component per hardware block, named as its cycle model in ``hts.models``;
``hts.hdl.hts.HTS`` is the top level, ``hts.hdl.interfaces`` holds what crosses blocks.
"""
