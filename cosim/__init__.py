"""cocotb + Verilator co-simulation of the generated Verilog against the reference models.

- ``top``: the Verilog top (``HTS`` with accelerator cores left to the testbench), and
  the wrapper that clocks it and holds its inputs;
- ``environment``: the scheduler's surroundings (memory, branch reads, DMA, Python
  accelerators) as a plain cycle-level model, shared with the Amaranth-simulator tests;
- ``testbench``: the cocotb testbench, playing the CPUs and the environment at the ports;
- ``scoreboard``: runs, their reference (cycle model, sequential executor) and verdicts;
- ``run``: the Verilator build (cached per configuration) and jobs through cocotb's runner;
- ``fuzz``: random programs and latencies on fixed small systems;
- ``progen``: the random-program generator (fuzz, ``hts explore --random``, property tests);
- ``views``: fast decoding of ports through their Amaranth layouts;
- ``replay``, ``speed``: a recorded run replayed from C++, and the speed comparison.
"""
