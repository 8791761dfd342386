"""Python reference models of the HTS and of the accelerators it schedules.

One module per hardware block, named as its RTL counterpart in ``hts.hdl``.
"""
