"""A search run assembled from plain arguments: the one place experiments and the CLI share.

    from nord.app.runner import RunConfig, run, resume
    config = RunConfig(algorithm="pygmo", evaluation="distributed", dataset="digits",
                       budget=40, journal="runs/exp3.db", seed=0)
    summary = run(config)           # under mpirun: every rank calls it; rank 0 gets the summary
    summary = resume("runs/exp3.db", budget=80)   # extended; None if nothing is left to do

``evaluation`` is ``'local'``, ``'data-parallel'``, ``'distributed'`` or ``'benchmark'``. A
configuration is checked when it is made, and stored in the run's journal, so that
``resume(journal)`` needs nothing else.

Details (how each evaluation uses the MPI ranks, the checks before a start): docs/running.md.
"""
from __future__ import annotations

import datetime
import logging
import math
import os
import sys
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Dict, List, Optional, Tuple, Union

from nord.app.plugins import load_modules
from nord.checks import check_device, check_duration, check_int, check_valid_fraction
from nord.errors import ConfigurationError, JournalError, NordError, RunInterrupted

# The registries, data sets, evaluators and the engine are imported where they are used, so
# that a configuration is checked (and refused) before torch or a data set is loaded.

logger = logging.getLogger(__name__)

EVALUATIONS = ("local", "data-parallel", "distributed", "benchmark", "zero-cost")
OPTIMIZERS = ("adam", "adamw", "sgd", "rmsprop")
"""The optimizers a run may name (``nord.nn.training.OPTIMIZERS``, without importing torch)."""
EXECUTION_FIELDS = ("budget", "journal", "threads", "device", "backend", "worker_processes", "mps",
                    "max_attempts", "checkpoint_every", "time_budget", "target")
"""Settings a resumed run may change: how long it runs and where, not what it measures."""
RESUME_CHANGES = ("device", "threads", "backend", "worker_processes", "mps", "max_attempts",
                  "checkpoint_every", "time_budget", "target")
"""Where it runs: what ``nord resume`` may change besides the budget."""
TRAINING_FIELDS = ("epochs", "batch_size", "lr", "optimizer", "valid_fraction", "data_root",
                   "data_checksums", "max_params")
"""Settings of training and of the data it reads: what a benchmark run (a table look-up)
must leave at their defaults."""
RECORDED_WHEN_SET = ("data_checksums", "max_params", "plugins", "proxy")
"""Settings added after journals were first written, recorded only when not None (what
leaving them out meant before), so that a journal written without them still resumes."""
MAX_SEED = 2 ** 32 - 1
"""The largest seed a run takes (numpy's RandomState, which scikit-learn uses, takes 32 bits)."""
RUNS_FOLDER = "runs"
"""Where a run without ``journal`` writes its journal."""


@dataclass
class RunConfig:
    """Everything a run needs, as plain values (JSON-compatible, stored in the journal).

    Attributes:
        algorithm: a registered algorithm or alias ('regularized_evolution' or 'rea',
            'pygmo', 'genetic' or 'ga', 'random', ...: ``nord.search.algorithms.registry``).
        algorithm_params: its keyword arguments (e.g. population_size, generations).
        space: a registered search space: 'conv' (the paper's k convolutional layers) or
            'nasbench201'.
        space_params: the space's keyword arguments (e.g. layers, channels, kernel_size).
        evaluation: 'local', 'data-parallel', 'distributed', 'benchmark' or 'zero-cost'
            (module docstring); None: 'benchmark' for the 'nasbench201' space, else 'local'.
        proxy: for 'zero-cost', the proxy that scores each untrained candidate
            (``nord.nn.proxies.PROXIES``; None: 'synflow'); refused with any other evaluation.
        dataset: a data set name ('digits', 'mnist', 'fashion-mnist', 'cifar10') or, for
            'benchmark', a NAS-Bench-201 data set ('cifar10', 'cifar100', 'imagenet16');
            None: 'cifar10' for the benchmark, else 'digits'.
        data_root: folder of the data set files (None: the curator's default); a run
            records it as an absolute path.
        data_checksums: a file of MD5s (``md5sum`` format) that the data set's files are
            checked against instead of the official ones: for files from a mirror whose
            files differ (``nord data download --checksums``), or the table itself (file
            name -> MD5), which is what a run records. None: the official MD5s.
        epochs, batch_size, lr, optimizer: training settings of every candidate.
        max_params: a network with more trainable parameters is refused, as a failed
            evaluation, before it is allocated (None: no limit). Networks that would not fit
            the free memory of their GPU or host are refused either way.
        budget: evaluations in the run (None: what the algorithm asks for when known, else 100).
        time_budget: the run's running time, its resumed sessions included, after which no
            candidate starts ('90s', '30m', '8h', '1.5d' or seconds; stored in seconds);
            candidates in training finish. None: no limit. A resume may extend it.
        target: a search-signal accuracy that ends the run the same way once a candidate
            reaches it (None: none). A resume may change it.
        mode: 'sync' (generations) or 'async' (steady state).
        group_size: ranks per group for 'distributed' (default 1).
        backend: 'auto', 'horovod' or 'torch', for data-parallel training.
        device: 'auto', 'cpu', 'cuda' or 'cuda:N'.
        threads: torch CPU threads per rank (None: torch's default; with
            ``worker_processes``, the usable CPUs shared out among the workers).
        worker_processes: (``--workers``) worker processes on this machine that evaluate
            candidates side by side, several per GPU if there are more workers than GPUs
            (None: evaluate in this process, or on the MPI ranks under mpirun). At most one
            per usable CPU and 16 per GPU; not under mpirun (one way to parallelise at a time).
        mps: how workers sharing a GPU share it: 'auto' (CUDA MPS when it is installed or
            running), 'on' (MPS or refuse), 'off' (time-slicing); ``nord.parallel.mps``.
        seed: seeds the algorithm and the training of every candidate.
        journal: the SQLite journal's path (None: ``runs/<algorithm>-<time>.db``).
        valid_fraction: the share of the training split held out (stratified, seeded) as
            the validation split, the search signal, where the data set has no official one;
            0 selects on the test split, and the journal and report warn of it.
        scheduler: None (every candidate trains ``epochs``) or an early-stopping scheduler
            ('median', 'sha', 'asha', 'hyperband': ``nord.search.schedulers``) that trains
            candidates from ``min_epochs`` to at most ``max_epochs``, keeping the best
            ``1/eta`` at each rung.
        min_epochs, max_epochs, eta: the scheduler's settings (``max_epochs`` defaults to
            ``epochs``); given without a scheduler, they are refused.
        plugins: modules to import first, which register the run's own algorithm, space,
            data set or scheduler (``nord.app.plugins``); recorded, so that a resume imports
            them too. None: none.
        max_attempts: how often a candidate's evaluation may kill the run's process (the
            out-of-memory killer's SIGKILL) before a resume records it as failed instead of
            evaluating it again (``run_search``'s ``max_attempts``, default 2); a resume may
            change it.
        checkpoint_every: epochs between the checkpoints of each candidate in training
            (``<journal>.checkpoints``), from which a resumed run goes on so that no epoch is
            trained twice; 0: none (a scheduler's pauses are kept either way). A resume may
            change it.
    """

    algorithm: str = "regularized_evolution"
    algorithm_params: Dict[str, Any] = field(default_factory=dict)
    space: str = "conv"
    space_params: Dict[str, Any] = field(default_factory=dict)
    evaluation: Optional[str] = None
    proxy: Optional[str] = None
    dataset: Optional[str] = None
    data_root: Optional[str] = None
    data_checksums: Optional[Union[str, Dict[str, str]]] = None
    epochs: int = 1
    batch_size: int = 64
    lr: float = 1e-3
    optimizer: str = "adam"
    max_params: Optional[int] = None
    budget: Optional[int] = None
    mode: str = "sync"
    group_size: Optional[int] = None
    backend: str = "auto"
    device: str = "auto"
    threads: Optional[int] = None
    worker_processes: Optional[int] = None
    mps: str = "auto"
    seed: int = 0
    journal: Optional[str] = None
    valid_fraction: float = 0.1
    scheduler: Optional[str] = None
    min_epochs: Optional[int] = None
    max_epochs: Optional[int] = None
    eta: Optional[int] = None
    callbacks: List[str] = field(default_factory=list)
    plugins: Optional[List[str]] = None
    max_attempts: int = 2   # the engine's MAX_ATTEMPTS, without importing the engine here
    checkpoint_every: int = 1
    time_budget: Optional[Union[str, float]] = None
    target: Optional[float] = None

    def __post_init__(self):
        from nord.search.algorithms.registry import ALGORITHMS
        from nord.search.spaces import SPACES

        self._load_plugins()   # first: they may register the names checked below

        self.algorithm = ALGORITHMS.canonical(self.algorithm)
        self.space = SPACES.canonical(self.space)
        if self.evaluation is None:
            self.evaluation = "benchmark" if self.space == "nasbench201" else "local"
        if self.evaluation not in EVALUATIONS:
            raise ConfigurationError(
                f"evaluation must be one of {', '.join(EVALUATIONS)}; got {self.evaluation!r}")
        self._check_proxy()
        if self.dataset is None:
            self.dataset = "cifar10" if self.evaluation == "benchmark" else "digits"
        if (self.evaluation == "benchmark") != (self.space == "nasbench201"):
            raise ConfigurationError(
                "the NAS-Bench-201 space goes with evaluation='benchmark' and back: the table "
                f"holds only its cells; got space={self.space!r}, evaluation={self.evaluation!r}")
        if self.evaluation == "benchmark":
            from nord.benchmarks.nasbench201.table import get_dataset
            self.dataset = get_dataset(self.dataset).name
        else:
            from nord.data.registry import CURATORS
            self.dataset = CURATORS.canonical(self.dataset)
        self._check_training_settings()
        check_device(self.device)
        for name, minimum in (("budget", 1), ("group_size", 1), ("threads", 1),
                              ("max_params", 1)):
            if getattr(self, name) is not None:
                check_int(getattr(self, name), name, minimum)
        if self.seed is not None:   # numpy's and scikit-learn's generators take 32 bits
            check_int(self.seed, "seed", 0, MAX_SEED, rule=f"an integer in [0, {MAX_SEED}] "
                      "(numpy and scikit-learn take 32-bit seeds)")
        check_int(self.epochs, "epochs", 0)
        check_int(self.max_attempts, "max_attempts (kills of the run's process by one candidate "
                  "before it is given up)", 1)
        if self.time_budget is not None:
            self.time_budget = check_duration(self.time_budget, "time_budget (--time-budget)")
        if self.target is not None and (isinstance(self.target, bool) or not isinstance(
                self.target, (int, float)) or not 0 < self.target <= 1):
            raise ConfigurationError(
                f"target (--target) is a search-signal accuracy in (0, 1], such as 0.95; got "
                f"{self.target!r}")
        check_int(self.checkpoint_every, "checkpoint_every (epochs between a training "
                  "candidate's checkpoints; 0: none)", 0)
        check_int(self.batch_size, "batch_size", 1)
        if (not isinstance(self.lr, (int, float)) or isinstance(self.lr, bool)
                or not 0 < self.lr < math.inf):
            raise ConfigurationError(
                f"the learning rate must be a positive, finite number; got {self.lr!r}")
        if self.threads is not None and self.threads > usable_cpus():
            raise ConfigurationError(
                f"threads (torch CPU threads per rank) must be at most the {usable_cpus()} "
                f"CPUs this process may use; got {self.threads}. More threads than CPUs only "
                "slow training down; with several ranks on one machine, give each its share "
                "(CPUs / ranks)")
        self._check_workers()
        if self.optimizer not in OPTIMIZERS:
            raise ConfigurationError(
                f"optimizer must be one of {', '.join(OPTIMIZERS)}; got {self.optimizer!r}")
        if self.mode not in ("sync", "async"):
            raise ConfigurationError(f"mode must be 'sync' or 'async'; got {self.mode!r}")
        if self.backend not in ("auto", "horovod", "torch"):
            raise ConfigurationError(
                f"backend must be 'auto', 'horovod' or 'torch'; got {self.backend!r}")
        for name in ("algorithm_params", "space_params"):
            if not isinstance(getattr(self, name), dict):
                raise ConfigurationError(
                    f"{name} must be a dict of keyword arguments; got {getattr(self, name)!r}")
        self.valid_fraction = check_valid_fraction(self.valid_fraction)
        self._check_scheduler()
        self._check_callbacks()
        if "seed" in self.algorithm_params:
            raise ConfigurationError(
                "give the seed as RunConfig(seed=...) (nord run --seed), not among the "
                "algorithm's parameters: it seeds the algorithm and the training alike")

    def _check_workers(self) -> None:
        """``worker_processes`` and ``mps``: the machine-independent rules (the GPUs are
        counted when the run starts, :func:`check_workers`)."""
        from nord.parallel.mps import check_mps_setting
        from nord.parallel.placement import check_worker_count
        check_mps_setting(self.mps)
        if self.worker_processes is None:
            if self.mps != "auto":
                raise ConfigurationError(
                    f"--mps {self.mps} says how worker processes share a GPU, but no --workers "
                    "were asked for; add --workers N, or leave --mps out")
            return
        check_worker_count(self.worker_processes, usable_cpus())
        if self.evaluation != "local":
            raise ConfigurationError(
                f"--workers runs candidates side by side in worker processes, each training "
                f"its own network; evaluation={self.evaluation!r} "
                + ("looks results up in a table, which takes microseconds: run it without "
                   "--workers" if self.evaluation == "benchmark" else
                   "trains each network on several MPI ranks: launch it with mpirun "
                   "instead of --workers"))

    def _load_plugins(self) -> None:
        """Import the run's plug-in modules (a comma-separated string is split)."""
        if isinstance(self.plugins, str):
            self.plugins = [name.strip() for name in self.plugins.split(",") if name.strip()]
        if self.plugins is None:
            return
        if not (isinstance(self.plugins, list)
                and all(isinstance(name, str) for name in self.plugins)):
            raise ConfigurationError(
                f"plugins must be a list of module names such as ['mypackage.nas']; got "
                f"{self.plugins!r}")
        self.plugins = self.plugins or None   # none given: recorded as before plug-ins
        load_modules(self.plugins or ())

    def _check_proxy(self) -> None:
        """A zero-cost run names a known proxy (synflow by default); no other run names one,
        and a zero-cost run trains nothing, so nothing may stop or watch its training."""
        if self.evaluation != "zero-cost":
            if self.proxy is not None:
                raise ConfigurationError(
                    f"--proxy {self.proxy} chooses the zero-cost proxy that scores untrained "
                    f"candidates, but evaluation is {self.evaluation!r}, which trains or looks "
                    "them up; add --evaluation zero-cost, or drop --proxy")
            return
        from nord.nn.proxies import check_proxy
        self.proxy = check_proxy("synflow" if self.proxy is None else self.proxy)
        defaults = {f.name: f.default for f in fields(self)}
        given = [f"--{name.replace('_', '-')}" for name in ("epochs", "lr", "optimizer",
                                                            "max_params", "scheduler")
                 if getattr(self, name) != defaults[name]]
        if given or self.callbacks:
            raise ConfigurationError(
                f"{', '.join(given + ['--callbacks'] * bool(self.callbacks))} set(s) how "
                "candidates are trained, but --evaluation zero-cost scores untrained networks; "
                "drop them")

    def _check_callbacks(self) -> None:
        """Built-in training callbacks by canonical name; none where nothing trains."""
        from nord.evaluators.callbacks import CALLBACKS
        if isinstance(self.callbacks, str):
            self.callbacks = [name for name in self.callbacks.split(",") if name.strip()]
        if not isinstance(self.callbacks, list):
            raise ConfigurationError(
                f"callbacks must be a list of names such as ['grad_norm']; got {self.callbacks!r}")
        self.callbacks = [CALLBACKS.canonical(name.strip()) for name in self.callbacks]
        repeated = sorted({name for name in self.callbacks if self.callbacks.count(name) > 1})
        if repeated:
            raise ConfigurationError(
                f"--callbacks names {', '.join(repeated)} more than once (aliases included); "
                "each callback records its scalars once per epoch: name it once")
        if self.callbacks and self.evaluation == "benchmark":
            raise ConfigurationError(
                "--callbacks look inside training, but NAS-Bench-201 runs look results up and "
                "train nothing; drop --callbacks")

    def _check_training_settings(self) -> None:
        """Settings of training and its data refused where nothing uses them, rather than
        recorded as if they had shaped the run."""
        if self.evaluation == "benchmark":
            defaults = {f.name: f.default for f in fields(self) if f.name in TRAINING_FIELDS}
            given = [f"--{name.replace('_', '-')} {getattr(self, name)}"
                     for name in TRAINING_FIELDS if getattr(self, name) != defaults[name]]
            if given:
                raise ConfigurationError(
                    f"{', '.join(given)} set(s) how candidates are trained, but a NAS-Bench-201 "
                    "run looks results up in the benchmark's table (its networks were trained "
                    "once, by the benchmark's authors, with its own split and settings); leave "
                    f"{'it' if len(given) == 1 else 'them'} out")
        elif self.dataset == "digits" and (self.data_root, self.data_checksums) != (None, None):
            flag = "--data-root" if self.data_root is not None else "--data-checksums"
            raise ConfigurationError(
                f"{flag} points at a data set's files, but digits is built in (it comes with "
                "scikit-learn); leave it out, or choose a data set read from files (mnist, "
                "fashion-mnist, cifar10)")

    def _check_scheduler(self) -> None:
        """A scheduler's name and settings, its mode and evaluation, checked now without
        building it (the run builds it once): a bad one is refused before anything is loaded."""
        given = [name for name in ("min_epochs", "max_epochs", "eta")
                 if getattr(self, name) is not None]
        from nord.search.algorithms.registry import get_algorithm
        needs = get_algorithm(self.algorithm).schedulers
        if needs is not None and self.evaluation == "benchmark":
            raise ConfigurationError(
                f"the {self.algorithm} algorithm runs only under --scheduler "
                f"{' or '.join(needs)}, which trains candidates in legs, but a NAS-Bench-201 run "
                "looks results up; compare it on the table with nord compare --algorithms "
                f"{self.algorithm} (its multi-fidelity protocol: docs/comparisons.md)")
        if needs is not None:
            from nord.search.schedulers import SCHEDULERS
            get_algorithm(self.algorithm).check_scheduler(
                None if self.scheduler is None else SCHEDULERS.canonical(self.scheduler))
        if self.scheduler is None:
            if given:
                flags = ", ".join("--" + name.replace("_", "-") for name in given)
                raise ConfigurationError(
                    f"{flags} set(s) an early-stopping scheduler, but no scheduler was chosen; "
                    "add --scheduler asha (or sha, median, hyperband), or train every candidate "
                    "--epochs without one")
            return
        if self.evaluation == "benchmark":
            raise ConfigurationError(
                "a scheduler stops training early, but evaluation='benchmark' looks results up "
                "in the NAS-Bench-201 table: there is no training to stop. Run the benchmark "
                "without --scheduler")
        from nord.search.schedulers import SCHEDULERS, check_settings
        self.scheduler = SCHEDULERS.canonical(self.scheduler)
        settings = self.scheduler_settings()
        if settings["max_epochs"] <= settings["min_epochs"]:
            raise ConfigurationError(
                f"with --scheduler {self.scheduler}, candidates train from --min-epochs "
                f"({settings['min_epochs']}) to --max-epochs ({settings['max_epochs']}"
                f"{', from --epochs' if self.max_epochs is None else ''}): there is nothing to "
                "stop early. Give a --max-epochs larger than --min-epochs")
        check_settings(**settings)
        SCHEDULERS.get(self.scheduler).check_mode(self.mode)

    def scheduler_settings(self) -> Dict[str, int]:
        """The scheduler's settings, its defaults filled in: ``min_epochs`` 1, ``max_epochs``
        ``epochs``, ``eta`` 3."""
        return {"min_epochs": 1 if self.min_epochs is None else self.min_epochs,
                "max_epochs": self.epochs if self.max_epochs is None else self.max_epochs,
                "eta": 3 if self.eta is None else self.eta}

    @property
    def training_epochs(self) -> int:
        """The epochs a candidate trains at most: ``max_epochs`` with a scheduler, else
        ``epochs``."""
        if self.scheduler is not None and self.max_epochs is not None:
            return self.max_epochs
        return self.epochs

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)

    def measured(self) -> Dict[str, Any]:
        """The settings that decide what the run measures (all but ``EXECUTION_FIELDS``;
        those of ``RECORDED_WHEN_SET`` only when set)."""
        return {key: value for key, value in self.to_dict().items()
                if key not in EXECUTION_FIELDS
                and not (key in RECORDED_WHEN_SET and value is None)}

    def execution(self) -> Dict[str, Any]:
        """The settings a resumed run may change."""
        return {key: getattr(self, key) for key in EXECUTION_FIELDS}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "RunConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, where the system says)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        return os.cpu_count() or 1


def default_journal(config: RunConfig) -> str:
    """``runs/<algorithm>-<date>-<time>.db``, a path no file has yet."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.path.join(RUNS_FOLDER, f"{config.algorithm}-{stamp}")
    path, number = base + ".db", 1
    while os.path.exists(path):
        number += 1
        path = f"{base}-{number}.db"
    return path


# --- the parts of a run ------------------------------------------------------------------------
def build_curator(config: RunConfig):
    from nord.data import get_curator
    kwargs = {"seed": config.seed} if config.dataset == "digits" else {}
    kwargs["valid_fraction"] = config.valid_fraction
    if config.data_root is not None and config.dataset != "digits":
        kwargs["root"] = config.data_root
    if config.data_checksums is not None:
        from nord.data import FileCurator
        from nord.data.registry import curator_class
        if not issubclass(curator_class(config.dataset), FileCurator):
            raise ConfigurationError(
                f"data_checksums (--data-checksums) checks a data set's files, and "
                f"{config.dataset!r} is not read from files; leave it out")
        kwargs["checksums"] = checksum_table(config.data_checksums)
    return get_curator(config.dataset, **kwargs)


def checksum_table(checksums: Union[str, Dict[str, str]]) -> Dict[str, str]:
    """``data_checksums`` as the table of MD5s it names (a journal written before runs
    recorded the table holds the file's path).

    Raises:
        ConfigurationError: the file cannot be read, or is not in md5sum's format.
    """
    if isinstance(checksums, dict):
        return dict(checksums)
    from nord.data.download import read_checksums
    try:
        return read_checksums(checksums)
    except OSError as error:
        raise ConfigurationError(
            f"cannot read the data checksums {checksums} (--data-checksums): "
            f"{error.strerror or error}") from None


def recorded_data_settings(config: RunConfig) -> RunConfig:
    """``config`` with its data settings as a journal records them: the folder as an absolute
    path and the checksums as the MD5s themselves, so that a resume from another folder reads
    the same files and an edited checksums file lets no other data in.

    Raises:
        ConfigurationError: the checksums file cannot be read.
    """
    changes: Dict[str, Any] = {}
    if config.data_root is not None:
        changes["data_root"] = os.path.abspath(os.path.expanduser(config.data_root))
    if isinstance(config.data_checksums, str):
        changes["data_checksums"] = checksum_table(config.data_checksums)
    return replace(config, **changes) if changes else config


def build_space(config: RunConfig, curator=None):
    from nord.search.spaces import make_space
    shape = {} if config.space == "nasbench201" else {"input_shape": tuple(curator.input_shape)}
    return make_space(config.space, **shape, **config.space_params)


def build_scheduler(config: RunConfig):
    """The run's scheduler, built once (the engine prepares it for the run's budget and mode);
    None without one."""
    if config.scheduler is None:
        return None
    from nord.search.schedulers import make_scheduler
    return make_scheduler(config.scheduler, **config.scheduler_settings())


def run_budget(config: RunConfig, algorithm) -> int:
    """Evaluations in the run: ``budget`` when given, else what the algorithm asks for when
    it knows (its generations), else 100."""
    return config.budget or getattr(algorithm, "evaluations", None) or 100


def group_size(config: RunConfig) -> Optional[int]:
    """Ranks per group: all of them for 'data-parallel', else ``group_size`` (default 1)."""
    if config.evaluation == "data-parallel":
        return None
    return config.group_size or 1


def ranks_per_network(config: RunConfig, world_size: int) -> int:
    """How many ranks train each network (it changes the global batch, so it is recorded)."""
    if config.evaluation == "benchmark":
        return 1
    if config.evaluation == "data-parallel":
        return world_size
    return min(group_size(config), max(1, world_size - (1 if dedicated_root(config) else 0)))


def check_groups(config: RunConfig, world_size: int) -> None:
    """Refuse, on every rank before any work, groups that do not split the training ranks
    evenly: every group trains each network together, so a smaller last group would train
    with another global batch (and alone, with an evaluator that is not data-parallel).

    Raises:
        ConfigurationError: naming the ranks, the group size and what would fit.
    """
    if config.evaluation != "distributed" or world_size <= 1 or group_size(config) <= 1:
        return
    k = group_size(config)
    training = world_size - 1   # rank 0 only dispatches (dedicated_root)
    if k > training or training % k == 0:
        return   # too large a group is refused by the layout itself, naming it
    fitting = [n for n in range(2, training + 1) if training % n == 0]
    sizes = f"--group-size {' or '.join(map(str, fitting))}" if fitting else "--group-size 1"
    lower, upper = 1 + k * (training // k), 1 + k * (training // k + 1)
    raise ConfigurationError(
        f"--group-size {k} does not divide the {training} ranks that train networks "
        f"(mpirun -np {world_size}: rank 0 only dispatches); each group of {k} ranks trains "
        f"every network together, so they must split evenly. Launch with mpirun -np {lower} "
        f"or -np {upper}, or use {sizes} with -np {world_size}")


def check_workers(config: RunConfig, world_size: int) -> None:
    """Refuse ``worker_processes`` under mpirun, or more than this machine's GPUs can host."""
    if config.worker_processes is None:
        return
    if world_size > 1:
        raise ConfigurationError(
            f"--workers {config.worker_processes} starts worker processes on this machine, but "
            f"this run was launched by mpirun with {world_size} ranks, which evaluate side by "
            "side already; use one way to parallelise at a time: drop --workers, or run without "
            "mpirun")
    from nord.parallel.placement import check_worker_count
    gpus = set(worker_devices_of(config)) - {"cpu"}
    check_worker_count(config.worker_processes, usable_cpus(), len(gpus))


def worker_devices_of(config: RunConfig) -> List[str]:
    """Each worker's device: the visible GPUs round robin, or the CPU."""
    from nord.parallel.placement import worker_devices
    gpus = 0
    if config.device != "cpu":
        import torch
        gpus = torch.cuda.device_count() if torch.cuda.is_available() else 0
    return worker_devices(config.worker_processes, config.device, gpus)


def worker_evaluator(config: RunConfig, device: str):
    """A worker process's evaluator: the run's, on the worker's device, with its own copy
    of the data (module level, so that it pickles)."""
    load_modules(config.plugins or ())   # a fresh interpreter: register the run's plug-ins
    return _training_evaluator(replace(config, device=device), build_curator(config))


def build_worker_executor(config: RunConfig, evaluator):
    """The run's ProcessExecutor: ``config.worker_processes`` processes, each with the run's
    evaluator on its device, CPU threads shared out, candidates admitted to GPUs by memory."""
    from functools import partial

    from nord.search.executors import ProcessExecutor
    threads = config.threads
    if threads is None:
        threads = max(1, usable_cpus() // config.worker_processes)
    devices = worker_devices_of(config)
    on_gpu = any(device != "cpu" for device in devices)
    return ProcessExecutor(partial(worker_evaluator, config),
                           workers=config.worker_processes, devices=devices,
                           evaluator=evaluator, threads=threads,
                           memory_need=evaluator.memory_need if on_gpu else None,
                           mps=config.mps)


def worker_line(executor) -> str:
    """The closing line's companion: where the workers ran and how they shared it."""
    devices = sorted(set(executor.devices))
    count = executor.n_workers
    return (f"{count} worker process{'es' if count > 1 else ''} on {', '.join(devices)}; "
            f"device sharing: {executor.sharing}")


def dedicated_root(config: RunConfig) -> bool:
    """Rank 0 only dispatches when groups of several ranks train networks: otherwise the
    other ranks of rank 0's group would have nobody to train with."""
    from nord.parallel import launcher_world_size
    return ((launcher_world_size() or 1) > 1 and config.evaluation == "distributed"
            and group_size(config) > 1)


def build_evaluator(config: RunConfig, env, curator=None):
    """This rank's evaluator; None on a dedicated root (it never evaluates)."""
    if config.evaluation == "benchmark":
        from nord.benchmarks.nasbench201 import BenchmarkEvaluator
        return BenchmarkEvaluator(dataset=config.dataset)
    if env.group is None:
        return None
    if config.evaluation == "zero-cost":
        from nord.evaluators.zero_cost import ZeroCostEvaluator
        return ZeroCostEvaluator(config.proxy, curator=curator, batch_size=config.batch_size,
                                 device=config.device, seed=config.seed, threads=config.threads)
    return _training_evaluator(config, curator, env if env.group.size > 1 else None)


def _training_evaluator(config: RunConfig, curator, env=None):
    """A LocalEvaluator with the run's training settings; with ``env``, a
    DistributedEvaluator training on its group's ranks."""
    from nord.evaluators.callbacks import make_callbacks
    training = dict(curator=curator, epochs=config.training_epochs, batch_size=config.batch_size,
                    lr=config.lr, optimizer=config.optimizer, device=config.device,
                    seed=config.seed, threads=config.threads, max_params=config.max_params,
                    callbacks=make_callbacks(config.callbacks))
    if env is not None:
        from nord.evaluators.distributed import DistributedEvaluator
        return DistributedEvaluator(env, backend=config.backend, **training)
    from nord.evaluators.local import LocalEvaluator
    return LocalEvaluator(**training)


def describe_evaluation(config: RunConfig, world_size: int) -> Dict[str, Any]:
    """What the journal records about how candidates are evaluated, from the configuration
    alone (a dedicated rank 0 holds no evaluator, and need not load the data)."""
    if config.evaluation == "benchmark":
        from nord.benchmarks.nasbench201 import BenchmarkEvaluator
        return BenchmarkEvaluator(dataset=config.dataset).describe()
    if config.evaluation == "zero-cost":
        return {"evaluator": "ZeroCostEvaluator", "proxy": config.proxy,
                "dataset": config.dataset, "batch_size": config.batch_size, "seed": config.seed,
                "signal": f"{config.proxy} score, mapped into (0, 1) (not an accuracy)",
                "reported": "none: no network is trained"}
    ranks = ranks_per_network(config, world_size)
    described = {"evaluator": "DistributedEvaluator" if ranks > 1 else "LocalEvaluator",
                 "dataset": config.dataset, "epochs": config.training_epochs,
                 "batch_size": config.batch_size,
                 "optimizer": config.optimizer, "lr": config.lr, "seed": config.seed,
                 "ranks_per_network": ranks, "callbacks": list(config.callbacks)}
    if config.max_params is not None:
        described["max_params"] = config.max_params
    return described


TEST_SELECTION = ("there is no validation split (valid_fraction=0 and the data set has no "
                  "official one): the search selected architectures by their TEST accuracy, so "
                  "the best one's test accuracy is optimistically biased. Hold out a validation "
                  "split (--valid-fraction 0.1) for results you report")


def accuracy_names(config: RunConfig, evaluator: Dict[str, Any],
                   warnings: List[str]) -> Tuple[str, str]:
    """What the search's accuracy and the reported accuracy are measured on, in words."""
    if config.evaluation in ("benchmark", "zero-cost"):
        return evaluator.get("signal", "accuracy"), evaluator.get("reported", "test accuracy")
    if TEST_SELECTION in warnings:
        return "test accuracy (no validation split)", "test accuracy"
    return "validation accuracy", "test accuracy"


def describe_data(config: RunConfig, curator) -> Tuple[Dict[str, Any], List[str]]:
    """What the journal records about the data (name, folder, split sizes and how the
    validation split was made: a resumed run must get the same one), and the run's warnings
    about it. Loads the data set."""
    described = curator.describe()
    described.pop("classes", None)
    dataset = {"name": config.dataset, "root": config.data_root, **described}
    dataset["name"] = config.dataset
    warnings = [TEST_SELECTION] if curator.n_valid == 0 else []
    if curator.n_valid > curator.n_train:
        warnings.append(
            f"valid_fraction={config.valid_fraction} holds out {curator.n_valid} of the "
            f"{curator.n_train + curator.n_valid} training images for validation: networks "
            f"train on only {curator.n_train}, and their accuracies say little. 0.1 to 0.2 is "
            "usual (--valid-fraction)")
    return dataset, warnings


def shared_gpu_refusal_of_run(config: RunConfig, env) -> Optional[str]:
    """Every rank (collective): why NCCL cannot place the run's data-parallel groups (two
    ranks of a group on one GPU), or None. Opens no CUDA context."""
    if config.evaluation == "benchmark" or ranks_per_network(config, env.size) < 2:
        return None
    import socket

    from nord.evaluators.distributed import choose_backend, rank_placement
    from nord.nn.training import resolve_device
    from nord.parallel.placement import Placement, shared_gpu_refusal
    backend = None
    mine = Placement(env.rank, socket.gethostname(), None, None)
    if env.group is not None:
        device = resolve_device(config.device, env.local_rank)
        backend = choose_backend(config.backend, device.type == "cuda")
        mine = rank_placement(env.rank, backend, device, env.group.index)
    everyone = env.allgather((mine, backend))
    backend = next((name for _, name in everyone if name is not None), config.backend)
    return shared_gpu_refusal([placement for placement, _ in everyone], backend)


def _check_journal(config: RunConfig, resume: bool,
                   world_size: int = 1) -> Tuple[Optional[str], Optional[str]]:
    """Rank 0, before the data is read: why the journal cannot be used (or None), and why
    there is nothing to do (or None): a resume of a finished run that is given no larger
    budget, which leaves the journal as it is (a job script may resume until done).

    Only the configuration is compared here, in its own words (``config.dataset``); the
    engine checks the whole record once more before it writes, when what the data and the
    ranks make of the configuration is known.
    """
    from nord.journal import Journal, RunRecord
    # what the configuration alone says: its settings, and the budget when one was given (0:
    # decided only once the algorithm is built)
    known = RunRecord(algorithm=config.algorithm, parameters={}, seed=config.seed, space={},
                      config=config.measured(), budget=config.budget or 0)
    try:
        with Journal(config.journal) as journal:
            stored = journal.check_start(known, resume, compare=("config",))
            if stored is not None:
                refusal = _ranks_refusal(config, stored.evaluator or {}, world_size)
                if refusal is not None:
                    return refusal, None
            if resume and stored is not None and journal.state() == "finished":
                return None, _nothing_left(config, stored, journal)
    except (JournalError, ConfigurationError) as error:
        return str(error), None
    return None, None


def _nothing_left(config: RunConfig, stored, journal) -> Optional[str]:
    """Why resuming a finished run would do nothing (a limit it reached still holds), in the
    words of ``nord resume``; None when a limit was raised and the run can go on."""
    from nord.search.engine.stopping import format_duration
    count, path = journal.count(), config.journal
    budget = config.budget or stored.budget
    left = "nothing to do, and the journal was left as it is"
    if config.time_budget is not None:
        running = journal.running_seconds()
        if running >= config.time_budget:
            return (f"'{path}' holds a finished run whose time budget of "
                    f"{format_duration(config.time_budget)} is spent ({running:.1f} s of "
                    f"running time, {count} evaluations): {left}. To run longer, extend it: "
                    f"nord resume {path} --time-budget T, with T over {math.ceil(running)}s")
    if config.target is not None:
        best = journal.best()
        if best is not None and best["accuracy"] >= config.target:
            return (f"'{path}' holds a finished run in which candidate {best['candidate']} "
                    f"reached the target accuracy {config.target:g} ({best['accuracy']:.4f}): "
                    f"{left}. To search on, give a higher one: nord resume {path} --target X")
    if count >= budget:
        return (f"'{path}' holds a finished run ({count} evaluations, budget {stored.budget}): "
                f"{left}. To evaluate more, extend it: nord resume {path} --budget N, with "
                f"N > {stored.budget}")
    detail = journal.metadata().get("status_detail") or ""
    if budget <= stored.budget and (detail.startswith("the algorithm")
                                    or (not detail and count < stored.budget)):
        return (f"'{path}' holds a finished run whose algorithm stopped by itself after "
                f"{count} evaluations, before its budget of {stored.budget}: {left}. A larger "
                "budget adds evaluations only where the algorithm's own limit (such as its "
                "generations) allows more")
    return None


def _ranks_refusal(config: RunConfig, stored: Dict[str, Any], world_size: int) -> Optional[str]:
    """Why this launch cannot resume a run whose networks trained on another number of ranks
    (the global batch would change), in the words of mpirun; None when it can."""
    ranks = stored.get("ranks_per_network")
    mine = describe_evaluation(config, world_size).get("ranks_per_network")
    if not ranks or ranks == mine:
        return None
    if config.evaluation == "data-parallel":
        launch = f"mpirun -np {ranks}"
    elif ranks > 1:
        launch = f"mpirun -np {1 + ranks} (rank 0 dispatches; or 1 + any multiple of {ranks})"
    else:
        launch = "mpirun with groups of one rank (--group-size 1), or without mpirun"
    return (f"cannot resume '{config.journal}': this run trained each network on {ranks} "
            f"rank{'s' if ranks > 1 else ''}, and this launch ({world_size} rank"
            f"{'s' if world_size > 1 else ''}) would train each on {mine}, which changes what "
            f"is measured: resume it under {launch}")


# --- running ----------------------------------------------------------------------------------
def run(config: RunConfig, resume: bool = False, progress: bool = True, stream=None):
    """Run (or resume) a search on every rank; returns the summary on rank 0, else None
    (None on rank 0 too when a finished run is resumed with no more budget: nothing runs).

    Raises:
        JournalError: the journal cannot be started or resumed (nothing was written).
        RunInterrupted: SIGINT or SIGTERM stopped the run; its journal says ``interrupted``.
    """
    return _run(config, resume, progress, stream, record_data=True)


def _run(config: RunConfig, resume: bool, progress: bool, stream, record_data: bool):
    from nord.parallel import interruptible
    with interruptible():   # the closing line and the ranks' exit happen before a second signal
        return _run_with_environment(config, resume, progress, stream, record_data)


def _run_with_environment(config: RunConfig, resume: bool, progress: bool, stream,
                          record_data: bool):
    from nord.parallel import Environment
    from nord.search.engine import RunInfo, run_search
    from nord.search.executors import MPIExecutor
    from nord.app.search_progress import SearchProgressView
    from nord.search.algorithms.registry import make_algorithm

    from nord.parallel import launcher_world_size
    check_groups(config, launcher_world_size() or 1)   # every rank alike, before MPI starts
    check_workers(config, launcher_world_size() or 1)
    with Environment(group_size=group_size(config), dedicated_root=dedicated_root(config)) as env:
        journal = config.journal
        if env.is_root and journal is None:
            journal = default_journal(config)
            env.print(f"journal: {journal}")
        elif (env.is_root and not resume and not os.path.exists(os.path.dirname(journal) or ".")
              and os.path.exists(os.path.dirname(os.path.dirname(journal)) or ".")):
            env.print(f"the journal's folder {os.path.dirname(journal)} does not exist: "
                      "creating it")
        config = replace(config, journal=env.bcast(journal))   # the caller's config stays as given
        sharing = shared_gpu_refusal_of_run(config, env)        # collective, before the journal
        refusal = None
        if record_data:   # rank 0 reads the checksums file; every rank gets its MD5s
            settled, refusal = _from_root(env, lambda: recorded_data_settings(config),
                                          ConfigurationError)
            if refusal is not None:
                raise ConfigurationError(refusal)
            config = settled
        refusal, done = env.bcast(_check_journal(config, resume, env.size)
                                  if env.is_root and sharing is None else (None, None))
        summary = None
        if sharing is not None:
            refused = ConfigurationError(sharing)
        elif done is not None:
            refused = None
            env.print(done)
        elif refusal is not None:
            refused = JournalError(refusal)
        else:
            refused = None
            curator = build_curator(config) if config.evaluation != "benchmark" else None
            space = build_space(config, curator)
            evaluator = build_evaluator(config, env, curator)
            if config.worker_processes is not None:
                executor = build_worker_executor(config, evaluator)
            else:
                # asynchronous runs keep one candidate in reserve at each worker, so that no
                # worker waits for rank 0 between two evaluations (bench/async_dispatch.py)
                executor = MPIExecutor(evaluator, env, space=space,
                                       prefetch=1 if config.mode == "async" else 0)
            algorithm = scheduler = None
            if env.is_root:   # only the engine's rank asks, tells and schedules
                algorithm = make_algorithm(config.algorithm, space, seed=config.seed,
                                           budget=config.budget, **config.algorithm_params)
                scheduler = build_scheduler(config)
            budget = env.bcast(run_budget(config, algorithm) if env.is_root else None)
            dataset, warnings = {"name": config.dataset, "root": config.data_root}, []
            if env.is_root and curator is not None:
                dataset, warnings = describe_data(config, curator)
                for warning in warnings:
                    env.print(f"warning: {warning}", file=sys.stderr)
            info = RunInfo(evaluator=describe_evaluation(config, env.size), dataset=dataset,
                           config=config.measured(), execution=config.execution(),
                           extra={"warnings": warnings} if warnings else {})
            signal, reported = accuracy_names(config, info.evaluator, warnings)
            info.evaluator.update(signal=signal, reported=reported)
            view = None
            if progress and env.is_root:
                view = SearchProgressView(budget, config.mode, signal, reported,
                                          stream or sys.stdout)
            try:
                summary = run_search(algorithm, budget=budget, journal=config.journal,
                                     mode=config.mode, executor=executor, resume=resume,
                                     on_result=view and view.result,
                                     on_epoch=view and view.epoch, info=info,
                                     scheduler=scheduler, max_attempts=config.max_attempts,
                                     checkpoint_every=config.checkpoint_every,
                                     time_budget=config.time_budget, target=config.target)
            except RunInterrupted as stop:
                if env.is_root:
                    env.print(f"interrupted by {stop.signal_name}: the journal {config.journal} "
                              "keeps every finished evaluation; continue with 'nord resume "
                              f"{config.journal}'", file=sys.stderr)
                raise
            finally:
                if algorithm is not None:
                    algorithm.close()
                if view is not None:
                    view.close()
            if view is not None and summary is not None:
                view.close(summary)
                if config.worker_processes is not None:
                    view.display.write(worker_line(executor))
    if refused is not None:
        raise refused
    return summary if env.is_root else None


def _from_root(env, compute, errors):
    """``compute()`` on rank 0, sent to every rank (collective): ``(value, None)``, or
    ``(None, message)`` when it raised one of ``errors`` (the other ranks read no file)."""
    value = message = None
    if env.is_root:
        try:
            value = compute()
        except errors as failure:
            message = str(failure)
    return env.bcast((value, message))

def resume(journal: str, progress: bool = True, stream=None, budget: Optional[int] = None,
           **execution: Any):
    """Continue the run recorded in ``journal`` with the configuration stored there, and
    ``budget`` (evaluations in all) when given; what :func:`run` returns (None on rank 0
    too when the run is finished and the budget is not larger: nothing runs).

    ``execution``: where and how it runs now, when it changes (``device``, ``threads``,
    ``backend``, ``worker_processes``, ``mps``, ``max_attempts``, ``checkpoint_every``:
    :data:`RESUME_CHANGES`; None
    keeps the journal's).

    Raises:
        ConfigurationError: a setting in ``execution`` other than those.

    Rank 0 reads the journal (the other nodes of a cluster may not see its file) and sends
    the configuration to every rank.
    """
    from nord.parallel import Environment
    unknown = sorted(set(execution) - set(RESUME_CHANGES))
    if unknown:
        raise ConfigurationError(
            f"a resume may change only {', '.join(RESUME_CHANGES)} besides the budget (what a "
            f"run measures stays as recorded); got {', '.join(unknown)}")
    with Environment() as env:
        stored, error = _from_root(env, lambda: stored_config(journal), NordError)
    if error is not None:
        raise JournalError(error)
    stored.journal = str(journal)
    changes = {key: value for key, value in execution.items() if value is not None}
    if budget is not None:
        changes["budget"] = budget
    if changes:
        stored = replace(stored, **changes)   # checked like any setting
    # the settings as recorded: a journal from before runs recorded MD5s and absolute
    # folders resumes with what it holds
    return _run(stored, True, progress, stream, record_data=False)


def recorded_config(journal: str) -> Dict[str, Any]:
    """The settings a journal's run was started with (its last execution settings), as
    recorded: plain values, without checking them or importing the run's plug-ins."""
    from nord.journal import Journal
    with Journal(journal) as record:   # a missing path or a folder is named as such
        meta = record.metadata()
    config = meta.get("config") or {}
    execution = {key: value for key, value in (meta.get("execution") or {}).items()
                 if key in EXECUTION_FIELDS}
    execution["budget"] = meta.get("budget")
    return {**config, **execution}


def stored_config(journal: str) -> RunConfig:
    """The RunConfig a journal's run was started with (its last execution settings); its
    plug-ins are imported."""
    values = recorded_config(journal)
    if "algorithm" not in values:
        raise JournalError(
            f"'{journal}' was not written by 'nord run' (no stored configuration), so it cannot "
            "be resumed from the command line; call run_search(..., resume=True) with the same "
            "algorithm, seed and space instead")
    return RunConfig.from_dict(values)
