"""Random valid task programs and configurations, for differential testing.

Programs are built to stress the scheduler, not to compute anything sensible: regions
overlap often (RAW, WAR and WAW hazards), loops nest and may run zero times, and
branches of every kind (RR, MR, BR; speculated or not; all conditions) jump forward,
inside their own loop body or past the end. On request (``speculated_loops``, as the
fuzzer asks) some speculated memory branches guard a loop of tasks that write nothing:
a long path, right or wrong, that needs no TM room, so that a misprediction finds tasks
in every stage and loops run under speculation (the bins of ``hts.models.coverage``).
Without it a seed draws the programs it always did. Every program terminates: control only goes
backwards through ``lend``. Each process works in its own slice of memory, as the
sequential-equivalence contract requires.

With windows (:func:`random_windows`: each process's slice, sometimes narrowed) a
program may also be *wild*: some base registers then point anywhere in memory or past
its end, so that register-indirect tasks leave the window and fault, on the committed
path or a wrong one.

Everything is drawn from one ``random.Random`` so that a seed reproduces a case.
"""

import dataclasses
import random

from hts.base.config import AcceleratorClass, MemoryConfig, SchedulerConfig, SystemConfig, TimingConfig, Window

__all__ = ["random_config", "random_program", "random_programs", "random_windows", "SLICE_BLOCKS"]

# Blocks of memory each process owns; regions are kept inside the owner's slice.
SLICE_BLOCKS = 24
_MAX_REGION = 3
# Functions cheap enough to run thousands of times (the LMS filter runs sample by sample).
_FUNCTIONS = ("real_fir", "vector_add", "vector_max", "vector_dot", "correlation", "dct_64", "iir")


def random_config(rng: random.Random, processes: int | None = None) -> SystemConfig:
    """A small system, from one-entry-everywhere to roomy, with short random latencies."""
    tiny = rng.random() < 0.3
    pick = (lambda lo, hi: lo) if tiny else rng.randint
    accelerators = tuple(
        AcceleratorClass(name=name, latency=rng.randint(1, 60), count=pick(1, 3), id=index, function=None)
        for index, name in enumerate(rng.sample(_FUNCTIONS, rng.randint(2, len(_FUNCTIONS)))))
    procs = processes or rng.randint(1, 3)
    hts = SchedulerConfig(
        queue_depth=pick(1, 4), tracker_entries=pick(1, 12),
        tlb_entries=pick(1, 8), tm_blocks=rng.choice([1, 2, _MAX_REGION, 8, 32]), gprs=8, loop_depth=3,
        dispatch_width=pick(1, 3), cdb_width=pick(1, 2), processes=procs, speculation=rng.random() < 0.8,
        spec_ids=pick(1, 4), copyback_words_per_cycle=rng.choice([1, 4, 16]))
    side = _side_stream(rng)
    hts = dataclasses.replace(hts, tracker_lanes=_tracker_lanes(side, hts.tracker_entries),
                              successor_slots=side.choice([2, 3, 16]))
    return SystemConfig(memory=MemoryConfig(block_words=8, blocks=SLICE_BLOCKS * procs), accelerators=accelerators,
                        hts=hts, timing=TimingConfig(interrupt_latency=rng.randint(0, 50), l2_latency=rng.randint(0, 5),
                                                     memory_latency=rng.randint(5, 90)), source="<random>")


def _side_stream(rng: random.Random) -> random.Random:
    """A second stream, seeded from ``rng``'s state without moving it: a choice added to
    ``random_config`` after seeds were found by probing leaves their systems and programs as they were."""
    return random.Random(repr(rng.getstate()))


def _tracker_lanes(rng: random.Random, entries: int) -> int:
    """Every entry in one cycle half the time; otherwise from one lane to all, so that rows
    of several cycles, a short last row and a single lane all come up."""
    return entries if rng.random() < 0.5 else rng.randint(1, entries)


def random_windows(rng: random.Random, config: SystemConfig) -> tuple[Window, ...]:
    """One window per process: its slice, or (one time in three) the slice narrowed by up
    to two blocks at either end, so that direct regions near the edges fault too."""
    windows = []
    for pid in range(config.hts.processes):
        base, end = pid * SLICE_BLOCKS, (pid + 1) * SLICE_BLOCKS
        if rng.random() < 1 / 3:
            base, end = base + rng.randint(0, 2), end - rng.randint(0, 2)
        windows.append(Window(base, end - base))
    return tuple(windows)


class _Writer:
    """Emits one process's program as assembly text, tracking PCs for branch targets."""

    def __init__(self, rng: random.Random, config: SystemConfig, pid: int, wild: float, speculated_loops: float):
        self.rng, self.config, self.pid, self.wild = rng, config, pid, wild
        self.speculated_loops = speculated_loops
        self.lines: list[str] = []
        self.base = pid * SLICE_BLOCKS
        self.labels = 0
        # Regions used so far: reusing them exactly makes producer -> consumer chains,
        # which is what exercises TLB remapping and copy-back ordering.
        self.used: list[tuple[int, int]] = []

    def emit(self, text: str):
        self.lines.append(f"{text} {self.rng.randint(0, 15):x} {self.pid:x} ")

    def region(self) -> tuple[int, int]:
        if self.used and self.rng.random() < 0.6:
            return self.rng.choice(self.used[-6:])
        size = self.rng.randint(0, _MAX_REGION)
        region = self.base + self.rng.randint(0, SLICE_BLOCKS - _MAX_REGION), size
        self.used.append(region)
        return region

    def task(self, output: bool = True):
        acc = self.rng.choice(self.config.accelerators)
        (a, b), (c, d) = self.region(), self.region()
        if not output:
            d = 0
        if self.rng.random() < 0.25:
            # Indirect: r1..r3 hold blocks inside this process's slice (set in the prologue), unless wild.
            ra, rc = self.rng.randint(1, 3), self.rng.randint(1, 3)
            self.emit(f"{acc.name} r{ra} {b:x} r{rc} {d:x}")
            self.lines[-1] += f"1 {self.rng.randint(0, 1 << 30):x}"
        else:
            self.emit(f"{acc.name} {a:x} {b:x} {c:x} {d:x}")
            self.lines[-1] += f"0 {self.rng.randint(0, 1 << 30):x}"

    def base_block(self) -> int:
        if self.wild and self.rng.random() < self.wild:
            return self.rng.randrange(self.config.memory.blocks + 2 * _MAX_REGION)
        return self.base + self.rng.randint(0, SLICE_BLOCKS - _MAX_REGION)

    def register_op(self):
        kind = self.rng.random()
        if kind < 0.3:   # move a base register elsewhere inside the slice, or anywhere if wild
            self.emit(f"mov {self.base_block():x} 0 r{self.rng.randint(1, 3)} 0")
        elif kind < 0.7:
            self.emit(f"mov {self.rng.randint(0, 200):x} 0 r{self.rng.randint(4, 7)} 0")
        else:
            op = self.rng.choice(["add", "mul"])
            self.emit(f"{op} r{self.rng.randint(4, 7)} r{self.rng.randint(4, 7)} r{self.rng.randint(4, 7)} 0")
        self.lines[-1] += "0"

    def branch_or_jump(self, label: str):
        if self.rng.random() < 0.25:
            self.emit(f"jump 0 0 {label} 0")
            self.lines[-1] += "0"
            return
        memory = self.rng.random() < 0.7
        k = memory << 3 | (self.rng.random() < 0.8) << 2 | self.rng.randint(0, 3)
        a = f"{self.region()[0]:x}" if memory else f"r{self.rng.randint(4, 7)}"
        self.emit(f"if {a} r{self.rng.randint(4, 7)} {label} 0")
        self.lines[-1] += f"{k:x}"

    def loop(self, depth: int, iterations: int, body):
        """``lbeg``, what ``body()`` emits, ``lend``; the counter register is the depth's own."""
        counter = 4 + depth
        self.emit(f"lbeg {iterations:x} r{counter} 0 0")
        self.lines[-1] += "0"
        body()
        self.emit(f"lend 0 r{counter} 0 0")
        self.lines[-1] += "0"

    def speculated_loop(self, depth: int):
        """A speculated memory branch over a loop of two to four tasks that write nothing.

        The loop is a long path, right or wrong, that needs no TM room: decode is still
        busy with it when the branch resolves, so a squash finds tasks in every stage,
        and a loop runs under speculation.
        """
        self.labels += 1
        label = f"p{self.pid}_l{self.labels}"
        k = 1 << 3 | 1 << 2 | self.rng.randint(0, 3)
        self.emit(f"if {self.region()[0]:x} r{self.rng.randint(4, 7)} {label} 0")
        self.lines[-1] += f"{k:x}"
        tasks = self.rng.randint(2, 4)
        self.loop(depth, self.rng.randint(3, 8), lambda: [self.task(output=False) for _ in range(tasks)])
        self.lines.append(f"{label}:")

    def block(self, depth: int, budget: list[int]):
        """A sequence of items; forward branches land on a later item or the block's end.

        The top level takes the whole budget; a loop body takes 1 to 7 items of it.
        """
        pending: list[str] = []
        for _ in range(budget[0] if depth == 0 else self.rng.randint(1, 7)):
            if budget[0] <= 0:
                break
            budget[0] -= 1
            if pending and self.rng.random() < 0.4:
                self.lines.append(f"{pending.pop()}:")
            kind = self.rng.random()
            if kind < 0.45:
                self.task()
            elif kind < 0.65:
                self.register_op()
            elif kind < 0.8 and depth < self.config.hts.loop_depth:
                self.loop(depth, self.rng.choice([0, 1, 2, 3]), lambda: self.block(depth + 1, budget))
            elif kind < 0.8 + self.speculated_loops and depth < self.config.hts.loop_depth:
                self.speculated_loop(depth)
            else:
                self.labels += 1
                label = f"p{self.pid}_l{self.labels}"
                pending.append(label)
                self.branch_or_jump(label)
        for label in pending:  # the end of the block: before its lend, or the program's end
            self.lines.append(f"{label}:")


def random_program(rng: random.Random, config: SystemConfig, pid: int = 0, items: int = 24,
                   wild: float = 0.0, speculated_loops: float = 0.0) -> str:
    """``wild``: the chance that a base register is loaded with any block; ``speculated_loops``:
    the share of items that are a speculated branch over a loop (see the module)."""
    writer = _Writer(rng, config, pid, wild, speculated_loops)
    for register in (1, 2, 3):
        writer.emit(f"mov {writer.base_block():x} 0 r{register} 0")
        writer.lines[-1] += "0"
    writer.block(0, [items])
    return "\n".join(writer.lines) + "\n"


def random_programs(rng: random.Random, config: SystemConfig, items: int = 24, wild: float = 0.0,
                    speculated_loops: float = 0.0) -> list[str]:
    return [random_program(rng, config, pid, items, wild, speculated_loops) for pid in range(config.hts.processes)]
