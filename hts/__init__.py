"""HTS toolkit: an out-of-order, speculative hardware task scheduler and its tools.

Subpackages (each a top-level folder of the repository):

- ``hts.isa``        the 128-bit task ISA, defined once (isa/)
- ``hts.assembler``  assembler and disassembler for task programs (assembler/)
- ``hts.models``     Python reference models: functional executor, cycle model (models/)
- ``hts.hdl``        Amaranth RTL of the scheduler and accelerator shells (hdl/)
- ``hts.cosim``      cocotb + Verilator co-simulation against the models (cosim/)

``hts.base.config`` holds the system configuration every part is sized by, ``hts.cli`` the
``hts`` command.
"""

__version__ = "0.1.0"
