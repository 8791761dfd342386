"""Formal harnesses of the RTL blocks, one module per block (names as in hdl/), run by ``hts prove``."""
