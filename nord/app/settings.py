"""RunConfig: every setting of a run as plain values, checked when it is made.

    from nord.app.settings import RunConfig
    config = RunConfig(algorithm="rea", budget=40, seed=0)   # a bad setting is refused here
    config.measured()    # what the journal compares on a resume
    config.execution()   # what a resume may change

nord.app.runner runs a configuration; nord.app.assembly builds its parts.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Dict, List, Optional, Union

from nord.app.evaluation import ONESHOT_SETTINGS, Evaluation, default_evaluation, evaluation_of
from nord.app.plugins import load_modules, recorded
from nord.checks import (MAX_BUDGET, MAX_SEED, check_choice, check_device, check_duration, check_int,
                         check_valid_fraction)
from nord.errors import ConfigurationError
from nord.nn.recipe import DEFAULT as DEFAULT_RECIPE
from nord.nn.recipe import RECIPE_PARTS, get_recipe
from nord.registry import normalise_name

# The registries and the rules of other modules (proxies, schedulers, workers) are imported
# where they are used, so that a configuration is checked (and refused) before torch or a data
# set is loaded.

EXECUTION_FIELDS = ("budget", "journal", "threads", "device", "backend", "worker_processes", "mps",
                    "max_attempts", "checkpoint_every", "time_budget", "target")
"""Settings a resumed run may change: how long it runs and where, not what it measures."""
RESUME_CHANGES = ("device", "threads", "backend", "worker_processes", "mps", "max_attempts",
                  "checkpoint_every", "time_budget", "target")
"""Where it runs: what ``nord resume`` may change besides the budget."""
TRAINING_DEFAULTS = {"batch_size": 64, "lr": DEFAULT_RECIPE.lr,
                     "optimizer": DEFAULT_RECIPE.optimizer}
"""What a run trains with where neither the flags nor its recipe say (these settings default
to None: the recipe's)."""
ALGORITHM_OWN_KEYS = {"space": "--space and --space-params (space=, space_params=)",
                      "budget": "--budget (budget=)", "name": "--algorithm (algorithm=)"}
"""Keys of ``algorithm_params`` that nord gives the algorithm itself (the seed besides), and
the settings that give them."""
RECORDED_WHEN_SET = {"data_checksums": None, "max_params": None, "plugins": None, "proxy": None,
                     "stop_when": [], "strict_callbacks": False, "recipe": None,
                     "search_epochs": None, "supernet_channels": None, "supernet_cells": None,
                     "final_evaluation": None, "supernet": None,
                     **{part: None for part in RECIPE_PARTS}}
"""Settings added after journals were first written, recorded only when they differ from the
value given here (what leaving them out meant before), so that a journal written without
them still resumes."""


def _unset(value: Any, unset: Any) -> bool:
    """Whether ``value`` is a setting's ``unset`` value (False is not 0 here)."""
    return type(value) is type(unset) and value == unset


@dataclass
class RunConfig:
    """Everything a run needs, as plain values (JSON-compatible, stored in the journal).

    Attributes:
        algorithm: a registered algorithm or alias ('regularized_evolution' or 'rea',
            'pygmo', 'genetic' or 'ga', 'random', ...: ``nord.search.algorithms.registry``).
        algorithm_params: its keyword arguments (e.g. population_size, generations); not
            seed, space, budget or name, which their own settings give.
        space: a registered search space: 'conv' (the paper's k convolutional layers) or
            'nasbench201'.
        space_params: the space's keyword arguments (e.g. layers, channels, kernel_size);
            not input_shape, which the data set gives where a way reads one.
        evaluation: 'local', 'data-parallel', 'distributed', 'benchmark', 'zero-cost' or
            another registered way (``nord.app.evaluation``, which also holds the rules that
            depend on it); None: 'benchmark' for the 'nasbench201' space, else 'local'.
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
        epochs: training epochs of every candidate; at least 1 where candidates train
            (untrained networks are ranked by 'zero-cost').
        recipe: how every candidate is trained (``nord.nn.recipe``): 'default' (None),
            'nasbench201', 'darts-search' or a registered name; the settings below replace its
            parts. A run whose recipe differs from the default records every part.
        batch_size, lr, optimizer: the recipe's (None: its own, else 64, 1e-3 and 'adam').
        momentum, nesterov, weight_decay, lr_schedule, warmup_epochs, warmup_lr, min_lr,
            decay_epochs, decay_rate, schedule_span, augment, crop_padding, cutout_length,
            clip_grad, label_smoothing, precision, memory_format, normalise: the recipe's
            parts of those names (None: the recipe's own; ``nord.nn.recipe.Recipe``).
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
        callbacks: registered training callbacks by name; each candidate gets fresh ones.
        strict_callbacks: a callback that raises fails its candidate (by default it is a
            diagnostic of the candidate, and its result stays what it would have been).
        stop_when: stopping rules such as ``'dead_relu > 0.9'`` (``nord.evaluators.stop_rules``):
            the first that holds ends a candidate's training, its result the last validation
            figure. A rule naming a scalar that nothing records is refused.
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
    recipe: Optional[str] = None
    batch_size: Optional[int] = None
    lr: Optional[float] = None
    optimizer: Optional[str] = None
    momentum: Optional[float] = None
    nesterov: Optional[bool] = None
    weight_decay: Optional[float] = None
    lr_schedule: Optional[str] = None
    warmup_epochs: Optional[int] = None
    warmup_lr: Optional[float] = None
    min_lr: Optional[float] = None
    decay_epochs: Optional[int] = None
    decay_rate: Optional[float] = None
    schedule_span: Optional[str] = None
    augment: Optional[Union[str, List[str]]] = None
    crop_padding: Optional[int] = None
    cutout_length: Optional[int] = None
    clip_grad: Optional[float] = None
    label_smoothing: Optional[float] = None
    precision: Optional[str] = None
    memory_format: Optional[str] = None
    normalise: Optional[str] = None
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
    strict_callbacks: bool = False
    stop_when: List[str] = field(default_factory=list)
    plugins: Optional[List[str]] = None
    max_attempts: int = 2   # the engine's MAX_ATTEMPTS, without importing the engine here
    checkpoint_every: int = 1
    time_budget: Optional[Union[str, float]] = None
    target: Optional[float] = None
    search_epochs: Optional[int] = None
    supernet_channels: Optional[int] = None
    supernet_cells: Optional[int] = None
    final_evaluation: Optional[str] = None
    supernet: Optional[str] = None

    def __post_init__(self):
        from nord.oneshot.registry import METHODS
        from nord.search.algorithms.registry import ALGORITHMS
        from nord.search.spaces import SPACES

        self._load_plugins()   # first: they may register the names checked below

        shares_weights = METHODS.find(self.algorithm) is not None
        self.algorithm = (METHODS if shares_weights else ALGORITHMS).canonical(self.algorithm)
        self.space = SPACES.canonical(self.space)
        if self.evaluation is None:
            self.evaluation = ("weight-sharing" if shares_weights
                               else default_evaluation(self.space))
        if shares_weights and self.recipe is None:
            self.recipe = "darts-search"       # the benchmark's one-shot searches' weights
        # the rules that depend on how candidates are evaluated are the way's own; it reads
        # this configuration as it is being checked
        way = evaluation_of(self)
        self._check_weight_sharing(way, shares_weights)
        self.proxy = way.check_proxy()
        if self.dataset is None:
            self.dataset = way.default_dataset
        way.check_space()
        self.dataset = way.check_dataset()
        way.check_settings()
        check_device(self.device)
        self._settle_recipe()
        for name, minimum in (("group_size", 1), ("threads", 1), ("max_params", 1)):
            if getattr(self, name) is not None:
                check_int(getattr(self, name), name, minimum)
        way.check_group_size()
        if self.budget is not None and check_int(self.budget, "budget", 1) > MAX_BUDGET:
            raise ConfigurationError(
                f"budget must be at most {MAX_BUDGET:,} evaluations (the journal stores it as a "
                f"64-bit integer); got {self.budget}")
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
        if self.threads is not None and self.threads > usable_cpus():
            raise ConfigurationError(
                f"threads (torch CPU threads per rank) must be at most the {usable_cpus()} "
                f"CPUs this process may use; got {self.threads}. More threads than CPUs only "
                "slow training down; with several ranks on one machine, give each its share "
                "(CPUs / ranks)")
        self._check_workers(way)
        check_choice(self.mode, "mode (--mode)", ("sync", "async"))
        check_choice(self.backend, "backend (--backend)", ("auto", "horovod", "torch"))
        for name in ("algorithm_params", "space_params"):
            if not isinstance(getattr(self, name), dict):
                raise ConfigurationError(
                    f"{name} must be a dict of keyword arguments; got {getattr(self, name)!r}")
        self.valid_fraction = check_valid_fraction(self.valid_fraction)
        self._check_scheduler(way)
        self._check_callbacks(way)
        self._check_own_keys(way)

    def _check_own_keys(self, way: Evaluation) -> None:
        """Refuse keys of ``algorithm_params`` and ``space_params`` that nord gives the
        algorithm and the space itself: given twice, they would reach Python as a TypeError."""
        if "seed" in self.algorithm_params:
            raise ConfigurationError(
                "give the seed as RunConfig(seed=...) (nord run --seed), not among the "
                "algorithm's parameters: it seeds the algorithm and the training alike")
        for key, instead in ALGORITHM_OWN_KEYS.items():
            if key in self.algorithm_params:
                raise ConfigurationError(
                    f"--params (algorithm_params=) sets {key!r}, which nord gives the algorithm "
                    f"itself from {instead}; drop {key!r} from --params, and give {instead}")
        if (way.needs_data and "input_shape" in self.space_params
                and takes_input_shape(self.space)):
            raise ConfigurationError(
                f"--space-params (space_params=) sets 'input_shape' "
                f"({self.space_params['input_shape']!r}), which nord gives the space itself: "
                f"the shape of the data set's images (--dataset {self.dataset}). Drop "
                "input_shape from --space-params; to search for other images, choose their "
                "data set with --dataset")

    def _check_weight_sharing(self, way: Evaluation, method: bool) -> None:
        """A weight-sharing method runs as a weight-sharing search, and nothing else does; the
        settings of such a search and of a supernet's scores belong to those ways alone."""
        from nord.oneshot.registry import METHODS
        if method and not way.shares_weights:
            raise ConfigurationError(
                f"--algorithm {self.algorithm} is a weight-sharing method: it trains one "
                f"supernet instead of evaluating candidates, so it runs with --evaluation "
                f"weight-sharing (its default), not {self.evaluation!r}; drop --evaluation")
        if way.shares_weights and not method:
            raise ConfigurationError(
                f"--evaluation weight-sharing trains a supernet for a weight-sharing method "
                f"({', '.join(METHODS.names())}); --algorithm {self.algorithm} evaluates "
                "candidates one by one: choose one of those methods, or another evaluation")
        if not way.shares_weights:
            given = [name for name in ONESHOT_SETTINGS if getattr(self, name) is not None]
            if given:
                raise ConfigurationError(
                    f"{', '.join('--' + name.replace('_', '-') for name in given)} set(s) a "
                    f"weight-sharing search, and --algorithm {self.algorithm} is not one; "
                    f"choose a weight-sharing method ({', '.join(METHODS.names())}) with "
                    "--space nasbench201, or leave them out")
        if self.supernet is not None and not way.reads_supernet:
            raise ConfigurationError(
                f"--supernet {self.supernet} scores cells with a trained supernet's weights, "
                f"which evaluation={self.evaluation!r} does not: add --evaluation supernet, or "
                "drop --supernet")

    def _settle_recipe(self) -> None:
        """The recipe named, its parts replaced by the settings given, checked; then every
        training setting holds the value trained with: ``optimizer``, ``lr`` and
        ``batch_size`` always, the other parts where the recipe differs from the default (a
        run trained as before recipes records none of them, so its journal is unchanged)."""
        recipe = get_recipe(self.recipe).replace(
            optimizer=self.optimizer, lr=self.lr, batch_size=self.batch_size,
            **{part: getattr(self, part) for part in RECIPE_PARTS})
        self.optimizer, self.lr = recipe.optimizer, recipe.lr
        self.batch_size = recipe.batch_size or TRAINING_DEFAULTS["batch_size"]
        if recipe.schedule_span == "leg" and self.scheduler is None:
            raise ConfigurationError(
                "--schedule-span leg (schedule_span=) gives each leg of training under "
                "--scheduler a learning-rate schedule of its own, and this run has no "
                "scheduler (each candidate trains --epochs in one go): drop it, or add "
                "--scheduler asha (or sha, median, hyperband)")
        if recipe.trains_as_default:
            self.recipe = None
            return
        self.recipe = recipe.name
        for part, value in recipe.to_dict().items():
            if part in RECIPE_PARTS:
                setattr(self, part, value)
        if recipe.precision != "fp32":   # loads torch: only where reduced precision is asked
            from nord.nn.precision import check_precision
            from nord.nn.training import resolve_device
            check_precision(recipe.precision, resolve_device(self.device))

    def training_recipe(self):
        """The :class:`~nord.nn.recipe.Recipe` every candidate is trained with."""
        return get_recipe(self.recipe).replace(
            optimizer=self.optimizer, lr=self.lr, batch_size=self.batch_size,
            **{part: getattr(self, part) for part in RECIPE_PARTS})

    def is_set(self, name: str) -> bool:
        """Whether setting ``name`` differs from what leaving it out means (a training
        setting at the value a run without a recipe trains with is not set)."""
        value = getattr(self, name)
        if name in TRAINING_DEFAULTS:
            return value is not None and value != TRAINING_DEFAULTS[name]
        if name == "recipe":   # naming the default recipe sets nothing
            return value is not None and normalise_name(value) != "default"
        default = next(f for f in fields(self) if f.name == name)
        return value != (default.default_factory() if callable(default.default_factory)
                         else default.default)

    def _check_workers(self, way: Evaluation) -> None:
        """``worker_processes`` and ``mps``: the machine-independent rules (the GPUs are
        counted when the run starts, :func:`~nord.app.assembly.check_workers`)."""
        from nord.parallel import launcher_world_size
        from nord.parallel.mps import check_mps_setting
        from nord.parallel.placement import check_worker_count
        check_mps_setting(self.mps)
        if self.worker_processes is None:
            if self.mps != "auto":
                raise ConfigurationError(
                    f"--mps {self.mps} says how worker processes share a GPU, but no --workers "
                    "were asked for; add --workers N, or leave --mps out")
            return
        ranks = launcher_world_size() or 1
        if ranks > 1:   # the launch is the first thing wrong: say that, not the CPU count
            check_workers_under_launcher(self.worker_processes, ranks)
        way.check_workers()
        check_worker_count(self.worker_processes, usable_cpus())

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
        # none given: recorded as before plug-ins; files by their absolute paths
        self.plugins = [recorded(plugin) for plugin in self.plugins] or None
        load_modules(self.plugins or ())

    def _check_callbacks(self, way: Evaluation) -> None:
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
        if not isinstance(self.strict_callbacks, bool):
            raise ConfigurationError(
                f"strict_callbacks is true or false; got {self.strict_callbacks!r}")
        self._check_stop_rules(way)
        way.check_callbacks()

    def _check_stop_rules(self, way: Evaluation) -> None:
        """Rules that parse and name what the run records; none where nothing trains."""
        from nord.evaluators.callbacks import callback_classes, fresh_callback
        from nord.evaluators.stop_rules import check_rule_names, parse_rules
        if isinstance(self.stop_when, str):
            self.stop_when = [self.stop_when]
        if not (isinstance(self.stop_when, list)
                and all(isinstance(rule, str) for rule in self.stop_when)):
            raise ConfigurationError(
                f"stop_when must be a list of rules such as ['dead_relu > 0.9']; got "
                f"{self.stop_when!r}")
        rules = parse_rules(self.stop_when)
        self.stop_when = [rule.text for rule in rules]
        way.check_stop_rules()
        outputs = [name for cls in callback_classes(self.callbacks)
                   for name in fresh_callback(cls).outputs()]
        check_rule_names(rules, outputs)

    def _check_scheduler(self, way: Evaluation) -> None:
        """A scheduler's name and settings, its mode and evaluation, checked now without
        building it (the run builds it once): a bad one is refused before anything is loaded."""
        given = [name for name in ("min_epochs", "max_epochs", "eta")
                 if getattr(self, name) is not None]
        from nord.search.algorithms.registry import get_algorithm
        needs = None if way.shares_weights else get_algorithm(self.algorithm).schedulers
        if needs is not None:
            way.check_scheduled_algorithm(needs)
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
        way.check_scheduler()
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
                and not (key in RECORDED_WHEN_SET and _unset(value, RECORDED_WHEN_SET[key]))}

    def execution(self) -> Dict[str, Any]:
        """The settings a resumed run may change."""
        return {key: getattr(self, key) for key in EXECUTION_FIELDS}

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "RunConfig":
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in data.items() if key in known})


def takes_input_shape(space: str) -> bool:
    """Whether the search space ``space`` is given the data's ``input_shape`` by nord (when it
    takes one, or any keyword)."""
    from nord.search.spaces.registry import space_parameters
    takes = space_parameters(space)
    return takes is None or "input_shape" in takes


def check_workers_under_launcher(workers: int, ranks: int) -> None:
    """Refuse ``--workers`` in a launch of several MPI ranks: one way to parallelise at a time."""
    if ranks > 1:
        raise ConfigurationError(
            f"--workers {workers} starts worker processes on this machine, but this run was "
            f"launched by mpirun with {ranks} ranks, which evaluate side by side already; use "
            "one way to parallelise at a time: drop --workers, or run without mpirun")


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, where the system says)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:   # not on Linux
        return os.cpu_count() or 1
