"""cocotb + Verilator co-simulation of the generated Verilog against the reference models.

Empty so far: it follows the RTL (see the issue tracker).
"""
