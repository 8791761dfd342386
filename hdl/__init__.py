"""Amaranth RTL of the HTS and its accelerator shells.

One component per hardware block, with the module name of its cycle model in
``hts.models``; docs/hardware.md lists them and what is still to build (the top level).
"""
