"""The surroundings both whole-scheduler benches play (``hts.cosim.environment``), on their own.

Each test drives :class:`Environment` through the cycle protocol a bench follows (begin,
grant, observe) with hand-made outputs, and checks what it answers and when.
"""

from types import SimpleNamespace

import numpy as np
import pytest

from hts.cosim.environment import COPYBACK_HOME, COPYBACK_TM, Drive, Environment, Outputs, rtl_dma_port
from hts.models import dsp
from hts.models.accelerator import AcceleratorFunctions
from hts.models.copy_back import transfer_cycles
from hts.models.memory import Memory, read_beat
from hts.models.timing import TableLatency

PROGRAM = SimpleNamespace(decoded={0: None})      # TableLatency reads the class only


def _memory(config) -> Memory:
    memory = Memory(config)
    memory.words[:] = np.arange(len(memory.words), dtype=np.int32) * 7 + 3
    return memory


def _cycle(env: Environment, cycle: int, outputs: Outputs | None = None, grants: int = 0,
           writes=(), records=()) -> tuple[Drive, dict[int, int], bool]:
    """One cycle as a bench runs it: its inputs, its branch-read answers, whether the run is over."""
    drive = env.begin(cycle)
    answers = env.grant(grants, writes, records)
    return drive, answers, env.observe(outputs or Outputs())


def _task(config, name: str, reads: tuple[int, int], writes: tuple[int, int]):
    index = next(i for i, accel in enumerate(config.accelerators) if accel.name == name)
    return SimpleNamespace(accel_class=index, pid=0, pc=0,
                           reads=SimpleNamespace(base=reads[0], blocks=reads[1]),
                           writes=SimpleNamespace(base=writes[0], blocks=writes[1]))


def _record(metadata: int = 0):
    """A task's record (task ID, metadata), as its core gets it with the task."""
    return SimpleNamespace(task_id=0, metadata=metadata)


def test_a_branch_read_is_answered_exactly_memory_latency_cycles_later_with_the_word_then(tiny_config):
    memory = _memory(tiny_config)
    env = Environment(tiny_config, memory, [PROGRAM], cycle_limit=1000)
    latency = tiny_config.timing.memory_latency
    assert latency > 1
    _cycle(env, 10, Outputs(branch_reads={1: 5}))
    assert env.next_due(10) == 10 + latency
    memory.words[5 * memory.block_words] = 1234          # written while the read is in flight
    for cycle in range(11, 10 + latency):
        assert _cycle(env, cycle)[1] == {}
    assert _cycle(env, 10 + latency)[1] == {1: 1234}
    assert env.next_due(10 + latency) is None
    assert _cycle(env, 11 + latency)[1] == {}


def test_a_branch_read_sees_the_completion_granted_in_its_due_cycle(tiny_config):
    memory = _memory(tiny_config)
    env = Environment(tiny_config, memory, [PROGRAM], cycle_limit=1000)
    task = _task(tiny_config, "vector_add", reads=(0, 2), writes=(40, 1))
    expected = memory.copy()
    AcceleratorFunctions(tiny_config).run(expected, tiny_config.accelerators[task.accel_class].id, 0, 2, 40, 1, 0)
    assert expected.first_word(40) != memory.first_word(40)
    _cycle(env, 0, Outputs(branch_reads={0: 40}, started=0b1, tasks=[task]))
    due = tiny_config.timing.memory_latency
    for cycle in range(1, due):
        _cycle(env, cycle)
    assert _cycle(env, due, grants=0b1, writes=[task.writes], records=[_record()])[1] == {0: expected.first_word(40)}


def test_a_bench_skipping_the_cycle_of_an_answer_is_told(tiny_config):
    env = Environment(tiny_config, _memory(tiny_config), [PROGRAM], cycle_limit=1000)
    _cycle(env, 0, Outputs(branch_reads={0: 3}))
    with pytest.raises(RuntimeError, match="owed an answer"):
        env.begin(tiny_config.timing.memory_latency + 1)


def test_a_dma_read_is_answered_the_next_cycle_and_withdrawn_after(tiny_config):
    memory = _memory(tiny_config)
    env = Environment(tiny_config, memory, [PROGRAM], cycle_limit=1000, rtl_instances=[3], rtl_dma_latency=2)
    per_beat = tiny_config.hts.copyback_words_per_cycle
    _cycle(env, 4, Outputs(dma_reads={COPYBACK_TM: 100, rtl_dma_port(0): 200}))
    assert env.next_due(4) == 5
    memory.words[100] = -9                                  # stored before the answer: seen
    assert _cycle(env, 5)[0].dma_data == {COPYBACK_TM: read_beat(memory.words, 100, per_beat)}
    assert read_beat(memory.words, 100, per_beat) & 0xFFFFFFFF == 0xFFFFFFF7
    assert env.next_due(5) == 6                               # the RTL core's read, and rvalid dropping
    assert _cycle(env, 6)[0].dma_data == {rtl_dma_port(0): read_beat(memory.words, 200, per_beat)}
    assert env.next_due(6) == 7                               # rvalid dropping
    assert _cycle(env, 7)[0].dma_data == {}
    assert env.next_due(7) is None


def test_a_dma_write_is_stored_in_its_cycle(tiny_config):
    memory = _memory(tiny_config)
    env = Environment(tiny_config, memory, [PROGRAM], cycle_limit=1000)
    per_beat = tiny_config.hts.copyback_words_per_cycle
    beat = sum((lane + 1) << (32 * lane) for lane in range(per_beat))
    _cycle(env, 0, Outputs(dma_writes={COPYBACK_HOME: (64, beat)}))
    assert list(memory.words[64:64 + per_beat]) == list(range(1, per_beat + 1))
    assert memory.words[64 + per_beat] == (64 + per_beat) * 7 + 3


def test_a_completion_at_the_grant_writes_the_task_output_and_an_rtl_core_does_its_own(tiny_config):
    memory = _memory(tiny_config)
    env = Environment(tiny_config, memory, [PROGRAM], cycle_limit=1000, rtl_instances=[1])
    python, rtl = _task(tiny_config, "vector_add", (0, 2), (40, 1)), _task(tiny_config, "vector_add", (2, 2), (41, 1))
    expected = memory.copy()
    AcceleratorFunctions(tiny_config).run(expected, tiny_config.accelerators[python.accel_class].id, 0, 2, 40, 1, 0)
    before = memory.copy()
    assert not np.array_equal(expected.read(40, 1), before.read(40, 1))
    _cycle(env, 0, Outputs(started=0b11, tasks=[python, rtl]))
    _cycle(env, 1, grants=0b00, writes=[python.writes, rtl.writes], records=[_record(), _record()])
    assert np.array_equal(memory.words, before.words)       # no grant, no function
    _cycle(env, 2, grants=0b11, writes=[python.writes, rtl.writes], records=[_record(), _record()])
    assert np.array_equal(memory.read(40, 1), expected.read(40, 1))
    assert np.array_equal(memory.read(41, 1), before.read(41, 1))


def test_a_completion_writes_where_the_shell_holds_the_output_at_the_grant(tiny_config):
    """The task comes at its start; its output region at the grant, retargets applied, and
    its metadata from the record its core was given."""
    memory = _memory(tiny_config)
    env = Environment(tiny_config, memory, [PROGRAM], cycle_limit=1000)
    started = _task(tiny_config, "vector_add", (0, 2), (40, 1))
    metadata = dsp.SCALE.encode(1)
    expected, unscaled = memory.copy(), memory.copy()
    for copy, meta in ((expected, metadata), (unscaled, 0)):
        AcceleratorFunctions(tiny_config).run(copy, tiny_config.accelerators[started.accel_class].id, 0, 2, 44, 1,
                                              meta)
    before = memory.copy()
    assert not np.array_equal(expected.read(44, 1), before.read(44, 1))
    assert not np.array_equal(expected.read(44, 1), unscaled.read(44, 1))
    _cycle(env, 0, Outputs(started=0b1, tasks=[started]))
    _cycle(env, 1, grants=0b1, writes=[SimpleNamespace(base=44, blocks=1)], records=[_record(metadata)])
    assert np.array_equal(memory.read(44, 1), expected.read(44, 1))
    assert np.array_equal(memory.read(40, 1), before.read(40, 1))


def test_a_python_core_raises_done_after_its_cycles_and_writeback_over_the_last(tiny_config):
    env = Environment(tiny_config, _memory(tiny_config), [PROGRAM], cycle_limit=10_000, timing=TableLatency(),
                      rtl_instances=[0])
    task = _task(tiny_config, "vector_add", (0, 2), (40, 2))
    latency = tiny_config.accelerators[task.accel_class].latency
    writing = transfer_cycles(tiny_config, 2)
    assert 1 < writing < latency
    _cycle(env, 10, Outputs(started=0b011, tasks=[task, task, None]))   # instance 0 is an RTL core
    assert env.next_due(10) == 10 + latency - writing
    drive = _cycle(env, 10 + latency - writing - 1)[0]
    assert (drive.done, drive.writeback) == (0, 0)
    drive = _cycle(env, 10 + latency - writing)[0]
    assert (drive.done, drive.writeback) == (0, 0b10)
    assert env.next_due(10 + latency - writing) == 10 + latency
    drive = _cycle(env, 10 + latency, Outputs(released=0b10))[0]
    assert (drive.done, drive.writeback) == (0b10, 0b10)
    assert env.next_due(10 + latency) is None
    assert _cycle(env, 11 + latency)[0].done == 0              # released: idle


def test_the_run_ends_when_every_process_ended_or_at_the_cycle_limit(tiny_config):
    env = Environment(tiny_config, _memory(tiny_config), [PROGRAM, PROGRAM], cycle_limit=50)
    event = {"cycle": 3, "event": "end", "pid": 0}
    assert not _cycle(env, 3, Outputs(events=[event], ended=0b01, fault=(1, 7, "illegal")))[2]
    assert _cycle(env, 8, Outputs(ended=0b10))[2]
    assert (env.record.events, env.record.faults, env.record.cycles) == ([event], [(3, 1, 7, "illegal")], 9)
    limited = Environment(tiny_config, _memory(tiny_config), [PROGRAM], cycle_limit=50)
    assert not _cycle(limited, 49)[2]
    assert _cycle(limited, 50)[2]
    assert limited.record.cycles is None
