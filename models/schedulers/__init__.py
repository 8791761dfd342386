"""Reference schedulers: offline list schedulers, optimal, online policies, pipeline partitioners.

The offline ones read a :class:`hts.models.graphs.TaskGraph` and a machine model and
return a :class:`~.schedule.Schedule`:

- :mod:`.machine`: PEs, configurations, locations and reconfiguration delay (seed 004);
- :mod:`.schedule`: the shared result type and the feasibility rules (:func:`~.schedule.violations`);
- :mod:`.heft`, :mod:`.reft`: list scheduling without and with reconfiguration;
- :mod:`.optimal`: CP-SAT, with a proven-optimal flag; :mod:`.bounds`: a lower bound;
- :mod:`.metrics`: makespan, speedup, SLR, slack, efficiency (seed 004, section 6.2);
- :mod:`.cycle_model`: the HTS cycle model's run of a graph as a schedule;
- :mod:`.study`: how far HTS, HEFT and REFT are from optimal (``python -m hts.flows.gap_study``).
"""
