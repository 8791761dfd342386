"""Amaranth RTL of the HTS and its accelerator shells.

Empty so far: the RTL is built after the reference models (see the issue tracker); its
blocks will carry the same module names as their models in ``hts.models``.
"""
