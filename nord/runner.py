"""A search run assembled from plain arguments: the one place experiments and the CLI share.

    from nord.runner import RunConfig, run, resume
    config = RunConfig(algorithm="pygmo", evaluation="distributed", dataset="digits",
                       budget=40, journal="runs/exp3.db", seed=0)
    summary = run(config)           # under mpirun: every rank calls it; rank 0 gets the summary
    summary = resume("runs/exp3.db")

How each ``evaluation`` uses the MPI ranks (see ``nord.search.dispatch``):

* ``'local'``: one process trains every network (the paper's experiment 1). Under mpirun
  with several ranks this is the same as ``'distributed'``.
* ``'data-parallel'``: every network is trained by all ranks together with the
  DistributedEvaluator (Horovod, or torch.distributed); rank 0 runs the algorithm
  (experiment 2).
* ``'distributed'``: groups of ``group_size`` ranks (default 1) train whole networks at
  once; rank 0 runs the algorithm and hands out candidates (experiment 3).
* ``'benchmark'``: look-ups in the NAS-Bench-201 table (space 'nasbench201').

The configuration is stored in the run's journal, so ``resume(journal)`` needs nothing else.
"""
from __future__ import annotations

import json
import logging
import sys
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, Optional

from nord.errors import ConfigurationError, JournalError
from nord.evaluators.local import LocalEvaluator

logger = logging.getLogger(__name__)

EVALUATIONS = ("local", "data-parallel", "distributed", "benchmark")
SPACES = ("conv", "nasbench201")
EXECUTION_FIELDS = ("budget", "journal", "threads", "device", "backend")
"""Settings a resumed run may change: how long it runs and where, not what it measures."""


@dataclass
class RunConfig:
    """Everything a run needs, as plain values (JSON-compatible, stored in the journal).

    Attributes:
        algorithm: a registered algorithm ('pygmo', 'genetic', 'regularized_evolution', 'random').
        algorithm_params: its keyword arguments (e.g. population_size, generations).
        space: 'conv' (the paper's k convolutional layers) or 'nasbench201'.
        space_params: the space's keyword arguments (e.g. layers, channels, kernel_size).
        evaluation: 'local', 'data-parallel', 'distributed' or 'benchmark' (module docstring).
        dataset: a data curator name ('digits', 'mnist', 'fashion-mnist', 'cifar10') or, for
            'benchmark', a NAS-Bench-201 data set ('cifar10', 'cifar100', 'imagenet16').
        data_root: folder of the data set files (None: the curator's default).
        epochs, batch_size, lr, optimizer: training settings of every candidate.
        budget: evaluations in the run (None: what the algorithm asks for when known, else 100).
        mode: 'sync' (generations) or 'async' (steady state).
        group_size: ranks per group for 'distributed' (default 1).
        backend: 'auto', 'horovod' or 'torch', for data-parallel training.
        device: 'auto', 'cpu', 'cuda' or 'cuda:N'.
        threads: torch CPU threads per rank (None: torch's default).
        seed: seeds the algorithm and the training of every candidate.
        journal: the SQLite journal's path (None: no record, no resume).
    """

    algorithm: str = "pygmo"
    algorithm_params: Dict[str, Any] = field(default_factory=dict)
    space: str = "conv"
    space_params: Dict[str, Any] = field(default_factory=dict)
    evaluation: str = "local"
    dataset: str = "digits"
    data_root: Optional[str] = None
    epochs: int = 1
    batch_size: int = 64
    lr: float = 1e-3
    optimizer: str = "adam"
    budget: Optional[int] = None
    mode: str = "sync"
    group_size: Optional[int] = None
    backend: str = "auto"
    device: str = "auto"
    threads: Optional[int] = None
    seed: int = 0
    journal: Optional[str] = None

    def __post_init__(self):
        if self.evaluation not in EVALUATIONS:
            raise ConfigurationError(
                f"evaluation must be one of {EVALUATIONS}; got {self.evaluation!r}")
        if self.space not in SPACES:
            raise ConfigurationError(f"space must be one of {SPACES}; got {self.space!r}")
        if (self.evaluation == "benchmark") != (self.space == "nasbench201"):
            raise ConfigurationError(
                "the NAS-Bench-201 space goes with evaluation='benchmark' and back: the table "
                f"holds only its cells; got space={self.space!r}, evaluation={self.evaluation!r}")
        if self.budget is not None and self.budget < 1:
            raise ConfigurationError(f"budget must be at least 1; got {self.budget}")
        if self.group_size is not None and self.group_size < 1:
            raise ConfigurationError(f"group_size must be at least 1; got {self.group_size}")
        for name in ("algorithm_params", "space_params"):
            if not isinstance(getattr(self, name), dict):
                raise ConfigurationError(
                    f"{name} must be a dict of keyword arguments; got {getattr(self, name)!r}")
        if "seed" in self.algorithm_params:
            raise ConfigurationError(
                "give the seed as RunConfig(seed=...) (nord run --seed), not among the "
                "algorithm's parameters: it seeds the algorithm and the training alike")

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "RunConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


def build_curator(config: RunConfig):
    from nord.data import get_curator
    kwargs = {"seed": config.seed} if config.dataset == "digits" else {}
    if config.data_root is not None and config.dataset != "digits":
        kwargs["root"] = config.data_root
    return get_curator(config.dataset, **kwargs)


def build_space(config: RunConfig, curator=None):
    if config.space == "nasbench201":
        from nord.benchmarks import NASBench201Space
        make, shape, accepted = NASBench201Space, {}, "channels"
    else:
        from nord.search.spaces import ConvSpace
        make, shape = ConvSpace, {"input_shape": tuple(curator.input_shape)}
        accepted = "layers, channels, kernel_size, activation and repair"
    try:
        return make(**shape, **config.space_params)
    except TypeError as error:
        raise ConfigurationError(
            f"space {config.space!r} does not take {config.space_params}: {error}; its "
            f"parameters are {accepted}") from error


def build_evaluator(config: RunConfig, env, curator=None):
    """The evaluator of this rank; on a dedicated root, the description of the groups' one."""
    if config.evaluation == "benchmark":
        from nord.benchmarks import BenchmarkEvaluator
        return BenchmarkEvaluator(dataset=config.dataset)
    training = dict(curator=curator, epochs=config.epochs, batch_size=config.batch_size,
                    lr=config.lr, optimizer=config.optimizer, device=config.device,
                    seed=config.seed, threads=config.threads)
    if env.group is not None and env.group.size > 1:
        from nord.evaluators.distributed import DistributedEvaluator
        return DistributedEvaluator(env, backend=config.backend, **training)
    if env.group is None:
        # a dedicated rank 0 trains nothing: it describes, for the journal, what the groups run
        largest = max(len(members) for members in env.group_layout)
        return GroupsEvaluatorDescription(largest, config.backend, **training)
    return LocalEvaluator(**training)


class GroupsEvaluatorDescription(LocalEvaluator):
    """Held by a dedicated rank 0, which never evaluates: describes the groups' evaluator
    in the journal (the evaluator, its ranks and backend), so the record says how networks
    were trained."""

    def __init__(self, ranks: int, backend: str, **training):
        super().__init__(**training)
        self.ranks, self.backend = ranks, backend

    def describe(self) -> Dict[str, Any]:
        described = super().describe()
        described.update(ranks=self.ranks)
        if self.ranks > 1:
            described.update(evaluator="DistributedEvaluator", backend=self.backend)
        return described


def group_size(config: RunConfig) -> Optional[int]:
    """Ranks per group: all of them for 'data-parallel', else ``group_size`` (default 1)."""
    if config.evaluation == "data-parallel":
        return None
    return config.group_size or 1


def dedicated_root(config: RunConfig) -> bool:
    """Rank 0 only dispatches when groups of several ranks train networks: otherwise the
    other ranks of rank 0's group would have nobody to train with."""
    from nord.environments import launcher_world_size
    return ((launcher_world_size() or 1) > 1 and config.evaluation == "distributed"
            and group_size(config) > 1)


def run(config: RunConfig, resume: bool = False, progress: bool = True, stream=None):
    """Run (or resume) a search on every rank; returns the summary on rank 0, else None."""
    from nord.environments import Environment
    from nord.search.dispatch import MPIExecutor
    from nord.search.loop import run_search
    from nord.search.registry import make_algorithm

    with Environment(group_size=group_size(config), dedicated_root=dedicated_root(config)) as env:
        curator = build_curator(config) if config.evaluation != "benchmark" else None
        space = build_space(config, curator)
        evaluator = build_evaluator(config, env, curator)
        # asynchronous runs keep one candidate in reserve at each worker, so that no worker
        # waits for rank 0 between two evaluations (bench/async_dispatch.py measures it)
        executor = MPIExecutor(evaluator, env, prefetch=1 if config.mode == "async" else 0)
        algorithm = None
        if env.is_root:
            algorithm = make_algorithm(config.algorithm, space, seed=config.seed,
                                       **config.algorithm_params)
        budget = config.budget or getattr(algorithm, "evaluations", None) or 100
        budget = env.bcast(budget)
        if resume and env.is_root:
            _check_resumable(config, budget)
        report = _progress_printer(stream or sys.stdout) if (progress and env.is_root) else None
        try:
            summary = run_search(algorithm, budget=budget, journal=config.journal,
                                 mode=config.mode, executor=executor, resume=resume,
                                 progress=report, metadata={"config": config.to_dict()})
        finally:
            if algorithm is not None:
                algorithm.close()
        if env.is_root and summary is not None and progress:
            best = summary.best_result
            env.print(f"done: {summary.evaluations} evaluations ({summary.trained} trained, "
                      f"{summary.cached} cached, {summary.failed} failed) in "
                      f"{summary.wall_time:.1f} s; best accuracy "
                      f"{best.accuracy if best else float('nan'):.4f}"
                      + (f"; journal {summary.journal}" if summary.journal else ""))
        return summary if env.is_root else None


def resume(journal: str, progress: bool = True, stream=None):
    """Continue the run recorded in ``journal`` with the configuration stored there.

    Rank 0 reads the journal (the other nodes of a cluster may not see its file) and sends
    the configuration to every rank.
    """
    from nord.environments import Environment
    with Environment() as env:
        config = env.bcast(stored_config(journal) if env.is_root else None)
    config.journal = str(journal)
    return run(config, resume=True, progress=progress, stream=stream)


def stored_config(journal: str) -> RunConfig:
    """The RunConfig a journal's run was started with."""
    import os
    from nord.journal import Journal
    if not os.path.isfile(journal):
        raise JournalError(f"there is no journal at {journal}; give the path of a run's .db file")
    with Journal(journal) as record:
        if not record.exists():
            raise JournalError(f"{journal} holds no run to resume; start one with 'nord run'")
        extra = record.metadata().get("extra") or {}
    if "config" not in extra:
        raise JournalError(
            f"{journal} was not written by nord.runner (no stored configuration), so it cannot "
            "be resumed from the command line; call run_search(..., resume=True) with the same "
            "algorithm, seed and space instead")
    return RunConfig.from_dict(extra["config"])


def _check_resumable(config: RunConfig, budget: int) -> None:
    """Rank 0, on resume: the journal's run must be this one; a new budget is recorded.

    Everything that decides what is measured must be equal (otherwise the journal would
    mix, say, 1-epoch and 3-epoch results and reuse them from its cache); the budget and
    where the run executes (``EXECUTION_FIELDS``) may change.
    """
    import os
    from nord.journal import Journal
    if config.journal is None or not os.path.isfile(config.journal):
        return
    with Journal(config.journal) as record:
        if not record.exists():
            return
        extra = record.metadata().get("extra") or {}
        stored = extra.get("config")
        if stored is None:
            return  # not written by the runner: run_search checks what it can
        given = json.loads(json.dumps(config.to_dict()))  # as stored: tuples become lists
        for name, value in given.items():
            if name not in EXECUTION_FIELDS and stored.get(name) != value:
                raise ConfigurationError(
                    f"cannot resume {config.journal}: its run has {name}={stored.get(name)!r}, "
                    f"this one {name}={value!r}. Resume with the run's own settings ('nord "
                    f"resume {config.journal}' uses them; only {', '.join(EXECUTION_FIELDS)} "
                    "may change), or start a new journal")
        record.update_run(budget=budget, extra={**extra, "config": given})


def _progress_printer(stream):
    def show(p):
        best = "-" if p.best_accuracy != p.best_accuracy else f"{p.best_accuracy:.4f}"
        left = "?" if p.remaining != p.remaining else f"{p.remaining:.0f} s"
        stream.write(f"generation {p.generation:3d} | {p.evaluations:4d}/{p.budget} evaluations | "
                     f"best {best} | {p.elapsed:6.1f} s elapsed, ~{left} left\n")
        stream.flush()
    return show
