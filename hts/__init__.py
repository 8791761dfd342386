"""HTS toolkit: an out-of-order, speculative hardware task scheduler and its tools.

Subpackages, each a top-level folder of the repository, lowest layer first; a module
imports only its own package and the layers below it (tests/test_layering.py):

- ``hts.isa``        the 128-bit task ISA, defined once (isa/)
- ``hts.base``       the foundation: configuration and presets, errors, safe output,
                     tool paths, progress (base/)
- ``hts.assembler``  assembler and disassembler for task programs (assembler/)
- ``hts.models``     reference models: executor, cycle model, baselines, offline schedulers (models/)
- ``hts.hdl``        Amaranth RTL of the scheduler and accelerator shells (hdl/)
- ``hts.formal``     formal harnesses of the RTL blocks (formal/)
- ``hts.cosim``      cocotb + Verilator co-simulation against the models, random programs (cosim/)
- ``hts.flows``      synthesis, proofs, mutants, exploration, benchmarks, plots (flows/)
- ``hts.cli``        the ``hts`` command, a module per subcommand (cli/)

``hts.benchmarks`` and ``hts.examples`` hold the shipped programs, as data.
"""

__version__ = "0.1.0"
