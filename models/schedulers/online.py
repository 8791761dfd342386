"""Online scheduling of a stream of jobs on heterogeneous accelerators, after Puigdemont,
Russo et al., *A Data-Driven Approach to Dataflow-Aware Online Scheduling for GNN
Inference* (seed 003, §4).

Jobs (GNN layers) arrive at release times not known in advance and are scheduled without
preemption on a set of servers (accelerators). Each server offers several configurations
(the tilings of one inter-phase dataflow), and a job's latency depends on the server and
the configuration. Whenever a server is idle and jobs are waiting, the policy picks one
job for it and a configuration to run it with; idle servers are served in index order.

Job orders (§4.2): ``random``; ``fcfs`` (first come first served); ``lifo`` (last come
first served); ``sjf_true`` (shortest job first on the true latency, not feasible in
practice); ``sjf_predicted`` (shortest job first on a latency predictor's estimate, the
paper's method). A job's length on a server is its latency with the best configuration
for that server, true or predicted. Configuration choices: ``random``, ``best`` (true
optimum, theoretical) and ``predicted`` (the predictor's optimum).
:func:`paper_policies` gives the combinations the paper compares in Figures 6 and 7.

Arrivals: Pareto-distributed inter-arrival times, scaled to a target utilisation (the
paper uses 85%). Metrics (§4.2), means over jobs: completion time (when a job finishes),
turnaround time (finish minus arrival) and execution time (finish minus start).
"""

from dataclasses import dataclass

import numpy as np

from hts.models.devices.gnn_dataflow import INTER_PHASE, TILINGS, Dataflow, dataflow_cycles

__all__ = [
    "ORDERS", "CONFIGURATION_CHOICES", "Job", "Policy", "Assignment", "Metrics", "paper_policies",
    "simulate", "metrics", "pareto_gaps", "release_times", "interarrival_for_utilization",
    "noisy_predictions", "gnn_latencies", "job_stream",
]

ORDERS = ("random", "fcfs", "lifo", "sjf_true", "sjf_predicted")
CONFIGURATION_CHOICES = ("random", "best", "predicted")
PAPER_UTILIZATION = 0.85


def _latency_table(values, what: str) -> np.ndarray:
    """A (servers, configurations) array of latencies; a scalar or per-server list is widened."""
    table = np.asarray(values, dtype=float)
    if table.ndim == 0:
        table = table.reshape(1, 1)
    elif table.ndim == 1:
        table = table[:, np.newaxis]
    if table.ndim != 2 or 0 in table.shape:
        raise ValueError(f"{what} must be a scalar, a list per server or a servers x configurations table, "
                         f"got shape {np.shape(values)}")
    if not np.all(np.isfinite(table)) or np.any(table <= 0):
        raise ValueError(f"{what} must be finite and > 0, got {table.tolist()}")
    return table


@dataclass(frozen=True, eq=False)
class Job:
    """A job released at ``release`` with its latency on every server and configuration.

    ``predicted`` is what a latency predictor estimates for the same table; without one it
    equals the truth.
    """
    release: float
    latency: np.ndarray
    predicted: np.ndarray | None = None

    def __post_init__(self):
        if not (np.isfinite(self.release) and self.release >= 0):
            raise ValueError(f"release must be a finite time >= 0, got {self.release}")
        object.__setattr__(self, "release", float(self.release))
        latency = _latency_table(self.latency, "latency")
        predicted = latency if self.predicted is None else _latency_table(self.predicted, "predicted")
        if predicted.shape != latency.shape:
            raise ValueError(f"predicted has shape {predicted.shape}, latency {latency.shape}")
        object.__setattr__(self, "latency", latency)
        object.__setattr__(self, "predicted", predicted)


@dataclass(frozen=True)
class Policy:
    order: str
    configuration: str

    def __post_init__(self):
        if self.order not in ORDERS:
            raise ValueError(f"order must be one of {', '.join(ORDERS)}, got {self.order!r}")
        if self.configuration not in CONFIGURATION_CHOICES:
            raise ValueError(f"configuration must be one of {', '.join(CONFIGURATION_CHOICES)}, "
                             f"got {self.configuration!r}")


def paper_policies(baseline_configuration: str = "random") -> dict[str, Policy]:
    """The policies of §4.2, by the paper's names (SJF-Nodes and SJF-Edges need graph sizes, not modelled).

    The baselines choose configurations at random (Figure 6) or optimally (Figure 7);
    SJF-Truth always runs the best configuration and SJF-Predicted the predicted best.
    """
    return {
        "Random": Policy("random", baseline_configuration),
        "FCFS": Policy("fcfs", baseline_configuration),
        "LIFO": Policy("lifo", baseline_configuration),
        "SJF-Truth": Policy("sjf_true", "best"),
        "SJF-Predicted": Policy("sjf_predicted", "predicted"),
    }


@dataclass(frozen=True)
class Assignment:
    server: int
    configuration: int
    start: float
    finish: float


@dataclass(frozen=True)
class Metrics:
    completion: float
    turnaround: float
    execution: float


def _next_job(jobs: list[Job], waiting: list[int], server: int, order: str, rng: np.random.Generator) -> int:
    """The job of ``waiting`` (job numbers in arrival order) that ``order`` runs next on ``server``."""
    if order == "random":
        return waiting[int(rng.integers(len(waiting)))]
    if order == "fcfs":
        return min(waiting, key=lambda j: (jobs[j].release, j))
    if order == "lifo":
        return max(waiting, key=lambda j: (jobs[j].release, j))
    table = "latency" if order == "sjf_true" else "predicted"
    return min(waiting, key=lambda j: (getattr(jobs[j], table)[server].min(), j))


def _pick_configuration(job: Job, server: int, choice: str, rng: np.random.Generator) -> int:
    if choice == "random":
        return int(rng.integers(job.latency.shape[1]))
    table = job.latency if choice == "best" else job.predicted
    return int(np.argmin(table[server]))


def _check_same_servers(jobs: list[Job]) -> int:
    shapes = {job.latency.shape for job in jobs}
    if len(shapes) != 1:
        raise ValueError(f"every job must have a latency table of the same servers x configurations, "
                         f"got shapes {sorted(shapes)}")
    return shapes.pop()[0]


def simulate(jobs, policy: Policy, seed: int = 0) -> list[Assignment]:
    """Where and when every job runs under ``policy``; random choices come from ``seed``."""
    jobs = list(jobs)
    if not jobs:
        return []
    servers = _check_same_servers(jobs)
    rng = np.random.default_rng(seed)
    arrival_order = sorted(range(len(jobs)), key=lambda j: (jobs[j].release, j))
    free_at = [0.0] * servers
    assignments: dict[int, Assignment] = {}
    waiting: list[int] = []
    arrived, now = 0, 0.0
    while len(assignments) < len(jobs):
        while arrived < len(jobs) and jobs[arrival_order[arrived]].release <= now:
            waiting.append(arrival_order[arrived])
            arrived += 1
        for server in range(servers):
            if free_at[server] <= now and waiting:
                job = _next_job(jobs, waiting, server, policy.order, rng)
                waiting.remove(job)
                configuration = _pick_configuration(jobs[job], server, policy.configuration, rng)
                finish = now + float(jobs[job].latency[server, configuration])
                assignments[job] = Assignment(server, configuration, now, finish)
                free_at[server] = finish
        # Nothing changes until the next arrival or the next server to free up.
        events = [t for t in free_at if t > now]
        if arrived < len(jobs):
            events.append(jobs[arrival_order[arrived]].release)
        now = min(events, default=now)
    return [assignments[j] for j in range(len(jobs))]


def metrics(jobs, assignments: list[Assignment]) -> Metrics:
    """Mean completion, turnaround and execution time of a schedule (§4.2)."""
    releases = np.array([job.release for job in jobs])
    starts = np.array([a.start for a in assignments])
    finishes = np.array([a.finish for a in assignments])
    if releases.shape != finishes.shape:
        raise ValueError(f"{len(releases)} jobs but {len(finishes)} assignments")
    return Metrics(float(finishes.mean()), float((finishes - releases).mean()), float((finishes - starts).mean()))


def pareto_gaps(count: int, mean: float, shape: float, rng: np.random.Generator) -> np.ndarray:
    """``count`` Pareto inter-arrival times of the given ``mean`` and tail index ``shape``.

    numpy draws the Lomax form (Pareto shifted to start at 0); adding 1 and scaling by
    ``x_m = mean (shape - 1) / shape`` gives the classic Pareto of minimum ``x_m``, whose
    mean is ``shape x_m / (shape - 1)``. A finite mean needs ``shape > 1``.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if not mean > 0:
        raise ValueError(f"mean must be > 0, got {mean}")
    if not shape > 1:
        raise ValueError(f"shape must be > 1 for a finite mean, got {shape}")
    minimum = mean * (shape - 1) / shape
    return (rng.pareto(shape, count) + 1) * minimum


def release_times(gaps: np.ndarray) -> np.ndarray:
    """Arrival times of jobs separated by ``gaps``; the first job arrives at 0."""
    return np.concatenate(([0.0], np.cumsum(gaps[:-1]))) if len(gaps) else np.zeros(0)


def interarrival_for_utilization(mean_service: float, servers: int, utilization: float) -> float:
    """Mean gap between arrivals that keeps ``servers`` busy ``utilization`` of the time."""
    if not mean_service > 0:
        raise ValueError(f"mean_service must be > 0, got {mean_service}")
    if servers < 1:
        raise ValueError(f"servers must be >= 1, got {servers}")
    if not 0 < utilization <= 1:
        raise ValueError(f"utilization must be in (0, 1], got {utilization}")
    return mean_service / (servers * utilization)


def noisy_predictions(latency: np.ndarray, mape: float, rng: np.random.Generator) -> np.ndarray:
    """Stand-in for the paper's learned predictor: the truth times ``1 + U(-2 mape, 2 mape)``.

    The expected absolute percentage error of that factor is exactly ``mape``; Table 3 of
    the paper reports MAPEs from 3.78% to 40%.
    """
    if not 0 <= mape < 0.5:
        raise ValueError(f"mape must be in [0, 0.5) so that predictions stay positive, got {mape}")
    latency = np.asarray(latency, dtype=float)
    return latency * (1 + rng.uniform(-2 * mape, 2 * mape, latency.shape))


def gnn_latencies(shapes) -> np.ndarray:
    """(jobs, 3, 8) surrogate latencies: the paper's first scenario, one accelerator per
    inter-phase dataflow, each able to run any of the 8 tilings."""
    return np.array([[[dataflow_cycles(shape, Dataflow(inter, tiling)) for tiling in TILINGS]
                      for inter in INTER_PHASE] for shape in shapes], dtype=float)


def job_stream(latency, predicted=None, utilization: float = PAPER_UTILIZATION, shape: float = 2.0,
               seed: int = 0) -> list[Job]:
    """Jobs of the given (jobs, servers, configurations) latencies with Pareto arrivals.

    The arrival rate makes the servers busy ``utilization`` of the time when each job runs
    with its best configuration on a server of average speed for it.
    """
    latency = np.asarray(latency, dtype=float)
    if latency.ndim != 3 or 0 in latency.shape:
        raise ValueError(f"latency must be a jobs x servers x configurations array, got shape {latency.shape}")
    predicted = latency if predicted is None else np.asarray(predicted, dtype=float)
    if predicted.shape != latency.shape:
        raise ValueError(f"predicted has shape {predicted.shape}, latency {latency.shape}")
    mean_service = float(latency.min(axis=2).mean())
    gap = interarrival_for_utilization(mean_service, latency.shape[1], utilization)
    releases = release_times(pareto_gaps(latency.shape[0], gap, shape, np.random.default_rng(seed)))
    return [Job(float(r), table, guess) for r, table, guess in zip(releases, latency, predicted)]
