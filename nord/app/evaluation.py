"""How a run evaluates its candidates: one class per way, chosen once from its RunConfig.

    from nord.app.evaluation import evaluation_of
    way = evaluation_of(config)           # a table look-up, a zero-cost score, or training
    way.ranks_per_network(world_size)     # recorded: a resume must train on as many
    evaluator = way.build(env, curator)   # this rank's evaluator (None on a dedicated rank 0)
    way.describe(world_size, evaluator)   # what the journal records about it

Each way answers for itself which settings of a run it takes (RunConfig asks it when the
configuration is made), how the ranks make groups, whether a data set is loaded, how its
evaluator is built and described, and which split selects architectures, so that neither the
configuration nor the assembly of a run branches on ``config.evaluation``. A new way is one
class, registered under the name ``--evaluation`` gives (in a plug-in module, for example)::

    class Distillation(Training):   # each candidate learns from a trained teacher
        def trainer(self, curator, env=None): ...

    register_way("distillation", Distillation)
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple, Type

from nord.checks import check_choice, check_int
from nord.errors import ConfigurationError
from nord.nn.recipe import RECIPE_PARTS
from nord.registry import check_subclass

RunConfig = Any
"""What a way reads: a ``nord.app.settings.RunConfig``, which asks its way when it is made (it
imports this module, so this module does not import it back)."""

# The evaluators, data sets and proxies are imported where they are used, so that a
# configuration is checked (and refused) before torch or a data set is loaded.

TEST_SELECTION = ("there is no validation split (valid_fraction=0 and the data set has no "
                  "official one): the search selected architectures by their TEST accuracy, so "
                  "the best one's test accuracy is optimistically biased. Hold out a validation "
                  "split (--valid-fraction 0.1) for results you report")
_RECIPE = ("recipe", *RECIPE_PARTS)
LOOKUP_UNUSED = ("epochs", "batch_size", "lr", "optimizer", "valid_fraction", "data_root",
                 "data_checksums", "max_params", *_RECIPE)
"""Settings of training and of the data it reads: what a run that reads its results from a
table must leave at their defaults."""
SCORING_UNUSED = ("epochs", "lr", "optimizer", "max_params", "scheduler", *_RECIPE)
"""Settings of how candidates are trained: what a zero-cost run, which reads its data but
trains nothing, must leave at their defaults (its callbacks too)."""
_ON_SEVERAL_RANKS = ("trains each network on several MPI ranks: launch it with mpirun "
                     "instead of --workers")
"""Why a way that trains each network on several ranks does not run under --workers."""


def _changed_settings(config: RunConfig, names: Sequence[str]) -> List[str]:
    """Those of the settings ``names`` that ``config`` sets (``RunConfig.is_set``)."""
    return [name for name in names if config.is_set(name)]


def _refuse_training_settings(config: RunConfig, names: Sequence[str], why: str) -> None:
    """Refuse those of the training settings ``names`` that ``config`` sets, saying ``why``
    they shape nothing in this run."""
    given = [f"{_flag(name)} {getattr(config, name)}" for name in _changed_settings(config, names)]
    if given:
        raise ConfigurationError(
            f"{', '.join(given)} set(s) how candidates are trained, but {why}; leave "
            f"{'it' if len(given) == 1 else 'them'} out")


def _flag(name: str) -> str:
    """A setting's command-line flag: ``max_params`` -> ``--max-params``."""
    return "--" + name.replace("_", "-")


class Evaluation:
    """What every way of evaluating answers. The defaults are those of a way in which each
    rank evaluates candidates of its own, built as networks of a data set.

    The methods from ``check_proxy`` to ``check_callbacks`` are the rules of a configuration
    that depend on its way: RunConfig asks them while it checks itself, in its own order, so
    that a bad configuration is refused by the first rule it breaks.
    """

    needs_data = True
    """Whether the run loads its data set (the benchmark's tables hold their own)."""
    default_dataset = "digits"
    """The data set of a run that names none."""
    table_space: Optional[str] = None
    """The space whose cells this way reads from a table, the only space it takes (None: it
    builds the networks of any space that no way reads from a table); such a way names the
    evaluations that take its space in ``space_ways``."""
    how_ranks_evaluate = "evaluates each network on one rank"
    """What a rank does with a candidate, in the words of a refusal of --group-size."""
    workers_refusal: Optional[str] = "evaluates them otherwise: run it without --workers"
    on_several_ranks: Optional[str] = None
    """What the way does with the ranks of an mpirun launch, for the warning of a run of one
    process (None: it evaluates one process's way, with nothing to warn of)."""
    """Why worker processes, which train candidates as 'local' does, cannot evaluate this way,
    and what to run instead (None: they can)."""
    shares_weights = False
    """Whether the run is a weight-sharing search (one supernet trained by the run's method)
    instead of candidates evaluated one by one."""
    reads_supernet = False
    """Whether candidates are scored with the weights of a trained supernet (``supernet``)."""

    def __init__(self, config: RunConfig):
        self.config = config

    def check_proxy(self) -> Optional[str]:
        """The zero-cost proxy the run scores with (None: none); a way that trains candidates
        or looks them up refuses one."""
        config = self.config
        if config.proxy is not None:
            raise ConfigurationError(
                f"--proxy {config.proxy} chooses the zero-cost proxy that scores untrained "
                f"candidates, but evaluation is {config.evaluation!r}, which trains or looks "
                "them up; add --evaluation zero-cost, or drop --proxy")
        return None

    def check_space(self) -> None:
        """Refuse a space whose cells a way reads from a table: they are not built here."""
        reader = table_reader(self.config.space)
        if reader is not None:
            raise ConfigurationError(
                f"{reader.space_ways}; got evaluation={self.config.evaluation!r}")

    def check_dataset(self) -> str:
        """The data set's canonical name in the registry of data sets, which refuses an
        unknown one."""
        from nord.data.registry import CURATORS
        return CURATORS.canonical(self.config.dataset)

    def check_settings(self) -> None:
        """Refuse settings of training and of its data that this way does not use, or that do
        not fit the data set, rather than record them as if they had shaped the run. A way
        checks its training settings here."""
        config = self.config
        if config.dataset == "digits" and (config.data_root, config.data_checksums) != (
                None, None):
            given = "--data-root" if config.data_root is not None else "--data-checksums"
            raise ConfigurationError(
                f"{given} points at a data set's files, but digits is built in (it comes with "
                "scikit-learn); leave it out, or choose a data set read from files (mnist, "
                "fashion-mnist, cifar10)")
        if config.data_checksums is not None:
            from nord.data import FileCurator   # loads torch: only where checksums are given
            from nord.data.registry import curator_class
            if not issubclass(curator_class(config.dataset), FileCurator):
                raise ConfigurationError(
                    f"data_checksums (--data-checksums) checks a data set's files, and "
                    f"{config.dataset!r} is not read from files; leave it out")

    def check_group_size(self) -> None:
        """Refuse ``group_size``, which shapes only the groups of 'distributed' runs: given
        with another way it would be recorded as if it had (or, under mpirun, end every
        rank)."""
        config = self.config
        if config.group_size is not None:
            raise ConfigurationError(
                f"--group-size {config.group_size} (group_size=) sets how many ranks train "
                f"each network together under --evaluation distributed, but evaluation="
                f"{config.evaluation!r} {self.how_ranks_evaluate}; drop --group-size, or use "
                "--evaluation distributed")

    def check_workers(self) -> None:
        """Refuse ``worker_processes`` (given) where worker processes cannot evaluate this
        way."""
        if self.workers_refusal is not None:
            raise ConfigurationError(
                f"--workers runs candidates side by side in worker processes, each training "
                f"its own network; evaluation={self.config.evaluation!r} "
                + self.workers_refusal)

    def check_scheduled_algorithm(self, schedulers: Sequence[str]) -> None:
        """Refuse the run's algorithm, which runs only under one of ``schedulers``, where
        this way cannot train candidates in legs."""

    def check_scheduler(self) -> None:
        """Refuse the run's scheduler (given) where there is no training to stop early."""

    def check_stop_rules(self) -> None:
        """Refuse the run's stop rules where there is no training to end."""

    def check_callbacks(self) -> None:
        """Refuse the run's callbacks where there is no training to look inside."""

    def check_data(self, curator) -> None:
        """Refuse, once the data set is loaded (on every rank, before the journal is written),
        settings that cannot apply to its samples."""

    def group_size(self) -> Optional[int]:
        """Ranks per group (None: all of them)."""
        return 1

    def launch_warning(self, world_size: int) -> Optional[str]:
        """What this way does not do with a launch of ``world_size`` ranks, said before the
        run (a warning the journal keeps), or None."""
        if world_size > 1 or self.on_several_ranks is None:
            return None
        return (f"--evaluation {self.config.evaluation} {self.on_several_ranks}, and this run "
                "has one process, which evaluates every candidate as --evaluation local would. "
                "Launch it as mpirun -np N nord run ... to use N ranks")

    def dedicated_root(self) -> bool:
        """Whether rank 0 only dispatches (and holds no evaluator)."""
        return False

    def check_layout(self, world_size: int) -> None:
        """Refuse, on every rank before MPI starts, ranks that this way cannot group."""

    def launch_refusal(self, world_size: int) -> Optional[str]:
        """Why a launch of ``world_size`` ranks cannot resume this way's run as it ran (in
        mpirun's words), or None; ranks per network that differ are the journal's to refuse."""
        return None

    def ranks_per_network(self, world_size: int) -> int:
        """How many ranks train each network (it changes the global batch: recorded)."""
        training = world_size - (1 if self.dedicated_root() else 0)
        return min(self.group_size(), max(1, training))

    def placement_refusal(self, env) -> Optional[str]:
        """Every rank (collective): why NCCL cannot place the run's data-parallel groups
        (two ranks of a group on one GPU), or None. Opens no CUDA context."""
        if self.ranks_per_network(env.size) < 2:
            return None
        import socket

        from nord.evaluators.distributed import choose_backend, rank_placement
        from nord.nn.training import resolve_device
        from nord.parallel.placement import Placement, shared_gpu_refusal
        config, backend = self.config, None
        mine = Placement(env.rank, socket.gethostname(), None, None)
        if env.group is not None:
            device = resolve_device(config.device, env.local_rank)
            backend = choose_backend(config.backend, device.type == "cuda")
            mine = rank_placement(env.rank, backend, device, env.group.index)
        everyone = env.allgather((mine, backend))
        backend = next((name for _, name in everyone if name is not None), config.backend)
        return shared_gpu_refusal([placement for placement, _ in everyone], backend)

    def launch_for(self, ranks: int) -> str:
        """The launch that trains each network on ``ranks`` ranks again, in mpirun's words."""
        if ranks > 1:
            return f"mpirun -np {1 + ranks} (rank 0 dispatches; or 1 + any multiple of {ranks})"
        return "mpirun with groups of one rank (--group-size 1), or without mpirun"

    def build(self, env, curator=None):
        """This rank's evaluator; None where the rank only dispatches."""
        raise NotImplementedError

    def describe(self, world_size: int, evaluator) -> Dict[str, Any]:
        """What the journal records about how candidates are evaluated."""
        raise NotImplementedError

    def selection(self, curator) -> str:
        """The split the search selects architectures on, as the journal records it (a fact
        the report reads, not a sentence it parses): 'validation', 'test' (there is no
        validation split) or 'proxy' (a zero-cost score of untrained networks)."""
        if curator is not None and curator.n_valid == 0:
            return "test"
        return "validation"

    def accuracy_names(self, described: Dict[str, Any], selection: str) -> Tuple[str, str]:
        """What the search's accuracy and the reported accuracy are measured on, in words."""
        if selection == "test":
            return "test accuracy (no validation split)", "test accuracy"
        return "validation accuracy", "test accuracy"


class _Untrained(Evaluation):
    """A way that trains no network: its description names its signal (no accuracy, or not
    one measured here), and nothing may stop, schedule or look inside training."""

    def check_scheduler(self) -> None:
        raise ConfigurationError(
            f"a scheduler stops training early, but evaluation={self.config.evaluation!r} "
            "trains nothing: there is no training to stop; drop --scheduler")

    def check_stop_rules(self) -> None:
        if self.config.stop_when:
            raise ConfigurationError(
                f"--stop-when ends training early, but evaluation={self.config.evaluation!r} "
                "trains nothing; drop --stop-when")

    def check_callbacks(self) -> None:
        if self.config.callbacks:
            raise ConfigurationError(
                f"--callbacks look inside training, but evaluation={self.config.evaluation!r} "
                "trains nothing; drop --callbacks")

    def accuracy_names(self, described: Dict[str, Any], selection: str) -> Tuple[str, str]:
        return described.get("signal", "accuracy"), described.get("reported", "test accuracy")


class _TableRead(_Untrained):
    """Results read from a table of NAS-Bench-201's cells that every rank holds, which
    describes itself; no data set is loaded (the benchmark's data sets are its own)."""

    needs_data = False
    default_dataset = "cifar10"
    table_space = "nasbench201"
    space_ways = ("the NAS-Bench-201 space (space='nasbench201') is looked up in the "
                  "benchmark's table (evaluation='benchmark') or scored by a zero-cost proxy "
                  "from nord's packaged table (evaluation='zero-cost')")
    """The evaluations that take the table's space, in the words of a refusal of another."""

    def check_space(self) -> None:
        if self.config.space != self.table_space:
            raise ConfigurationError(
                f"evaluation={self.config.evaluation!r} looks results up in the NAS-Bench-201 "
                f"table, which holds only its cells; got space={self.config.space!r}: give "
                f"--space {self.table_space}, or an evaluation that trains or scores networks")

    def check_dataset(self) -> str:
        """The data set's name in the benchmark, which refuses one it has no table of."""
        from nord.benchmarks.nasbench201.table import get_dataset
        return get_dataset(self.config.dataset).name

    def check_settings(self) -> None:
        _refuse_training_settings(
            self.config, LOOKUP_UNUSED, "a NAS-Bench-201 run looks results up in the "
            "benchmark's table (its networks were trained once, by the benchmark's authors, "
            "with its own split and settings)")

    def describe(self, world_size: int, evaluator) -> Dict[str, Any]:
        return evaluator.describe()


class TableLookup(_TableRead):
    """NAS-Bench-201: each result is read from the benchmark's table."""

    how_ranks_evaluate = "looks results up in a table"
    workers_refusal = ("looks results up in a table, which takes microseconds: run it "
                       "without --workers")

    def check_scheduled_algorithm(self, schedulers: Sequence[str]) -> None:
        algorithm = self.config.algorithm
        raise ConfigurationError(
            f"the {algorithm} algorithm runs only under --scheduler {' or '.join(schedulers)}, "
            "which trains candidates in legs, but a NAS-Bench-201 run looks results up; "
            f"compare it on the table with nord compare --algorithms {algorithm} (its "
            "multi-fidelity protocol: docs/comparisons.md)")

    def check_scheduler(self) -> None:
        raise ConfigurationError(
            "a scheduler stops training early, but evaluation='benchmark' looks results up "
            "in the NAS-Bench-201 table: there is no training to stop. Run the benchmark "
            "without --scheduler")

    def check_callbacks(self) -> None:
        if self.config.callbacks:
            raise ConfigurationError(
                "--callbacks look inside training, but NAS-Bench-201 runs look results up and "
                "train nothing; drop --callbacks")

    def ranks_per_network(self, world_size: int) -> int:
        return 1

    def build(self, env, curator=None):
        from nord.benchmarks.nasbench201 import BenchmarkEvaluator
        return BenchmarkEvaluator(dataset=self.config.dataset)


class _ScoredByProxy(_Untrained):
    """A zero-cost proxy's score of each untrained network: the run names its proxy
    (synflow by default), and no setting of training."""

    how_ranks_evaluate = "scores each untrained network on one rank"
    workers_refusal = ("scores untrained networks, a fraction of a second each: run it without "
                       "--workers (under mpirun, ranks score side by side)")

    def check_proxy(self) -> Optional[str]:
        from nord.nn.proxies import check_proxy
        config = self.config
        proxy = check_proxy("synflow" if config.proxy is None else config.proxy)
        given = [_flag(name) for name in _changed_settings(config, SCORING_UNUSED)]
        if given or config.callbacks:
            raise ConfigurationError(
                f"{', '.join(given + ['--callbacks'] * bool(config.callbacks))} set(s) how "
                "candidates are trained, but --evaluation zero-cost scores untrained networks; "
                "drop them")
        return proxy

    def selection(self, curator) -> str:
        return "proxy"


class ProxyTableLookup(_ScoredByProxy, _TableRead):
    """A zero-cost score of a NAS-Bench-201 cell, read from nord's packaged proxy table."""

    def check_settings(self) -> None:
        """The table holds the scores of a few proxies, and none of training."""
        from nord.benchmarks.nasbench201.proxy_evaluator import check_table_proxy
        check_table_proxy(self.config.proxy)
        super().check_settings()

    def build(self, env, curator=None):
        from nord.benchmarks.nasbench201.proxy_evaluator import ProxyTableEvaluator
        return ProxyTableEvaluator(self.config.proxy, dataset=self.config.dataset)


class Scoring(_ScoredByProxy):
    """A zero-cost proxy scores each untrained network on a batch of the data."""

    def build(self, env, curator=None):
        if env.group is None:
            return None
        from nord.evaluators.zero_cost import ZeroCostEvaluator
        config = self.config
        return ZeroCostEvaluator(config.proxy, curator=curator, batch_size=config.batch_size,
                                 device=config.device, seed=config.seed, threads=config.threads)

    def describe(self, world_size: int, evaluator) -> Dict[str, Any]:
        config = self.config
        return {"evaluator": "ZeroCostEvaluator", "proxy": config.proxy,
                "dataset": config.dataset, "batch_size": config.batch_size, "seed": config.seed,
                "signal": f"{config.proxy} score, mapped into (0, 1) (not an accuracy)",
                "reported": "none: no network is trained"}


class Training(Evaluation):
    """Each candidate is trained with the run's settings, on one rank (the subclasses: on
    several, data-parallel)."""

    how_ranks_evaluate = "trains each network on one rank"
    workers_refusal = None

    def check_settings(self) -> None:
        """Refuse a run that trains nothing: a search by the accuracy of random initial weights
        is a mistake, not a method (ranking untrained networks is what zero-cost proxies
        are for)."""
        super().check_settings()
        config = self.config
        if config.epochs == 0 and not isinstance(config.epochs, bool) and config.scheduler is None:
            raise ConfigurationError(
                f"--epochs 0 (epochs=0) trains no candidate under evaluation="
                f"{config.evaluation!r}: the search would rank networks by the accuracy of their "
                "random initial weights. Give --epochs 1 or more; to rank untrained networks on "
                "purpose, score them with --evaluation zero-cost (a proxy such as synflow)")

    def build(self, env, curator=None):
        if env.group is None:
            return None
        return self.trainer(curator, env if env.group.size > 1 else None)

    def check_data(self, curator) -> None:
        """The recipe's augmentation needs images."""
        from nord.nn.augment import Augmentation
        Augmentation(self.config.training_recipe().augment, curator.input_shape)

    def trainer(self, curator, env=None):
        """A LocalEvaluator with the run's training settings; with ``env``, a
        DistributedEvaluator training on its group's ranks."""
        from nord.evaluators.callbacks import callback_classes
        config = self.config
        training = dict(curator=curator, epochs=config.training_epochs,
                        recipe=config.training_recipe(),
                        device=config.device, seed=config.seed, threads=config.threads,
                        max_params=config.max_params,
                        callbacks=callback_classes(config.callbacks),
                        strict_callbacks=config.strict_callbacks, stop_rules=config.stop_when)
        if env is not None:
            from nord.evaluators.distributed import DistributedEvaluator
            return DistributedEvaluator(env, backend=config.backend, **training)
        from nord.evaluators.local import LocalEvaluator
        return LocalEvaluator(**training)

    def describe(self, world_size: int, evaluator) -> Dict[str, Any]:
        """From the configuration alone: a dedicated rank 0 holds no evaluator, and need not
        load the data."""
        config = self.config
        ranks = self.ranks_per_network(world_size)
        described = {"evaluator": "DistributedEvaluator" if ranks > 1 else "LocalEvaluator",
                     "dataset": config.dataset, "epochs": config.training_epochs,
                     "batch_size": config.batch_size,
                     "optimizer": config.optimizer, "lr": config.lr, "seed": config.seed,
                     "ranks_per_network": ranks, "callbacks": list(config.callbacks)}
        if config.max_params is not None:
            described["max_params"] = config.max_params
        if config.strict_callbacks:
            described["strict_callbacks"] = True
        if config.stop_when:
            described["stop_rules"] = list(config.stop_when)
        if config.recipe is not None:
            described["recipe"] = config.training_recipe().describe(config.dataset)
        return described


class _AllRanksTogether:
    """Every rank of the launch trains together, data-parallel (a mixin of ways)."""

    def group_size(self) -> Optional[int]:
        return None

    def ranks_per_network(self, world_size: int) -> int:
        return world_size

    def launch_for(self, ranks: int) -> str:
        return f"mpirun -np {ranks}" if ranks > 1 else "one process, without mpirun"


class DataParallelTraining(_AllRanksTogether, Training):
    """All the ranks train each candidate together."""

    how_ranks_evaluate = "trains each network on all the ranks of the launch"
    workers_refusal = _ON_SEVERAL_RANKS
    on_several_ranks = "trains each network on all the ranks of an mpirun launch"


class GroupTraining(Training):
    """Groups of ``group_size`` ranks each train a candidate together, side by side; rank 0
    only dispatches when the groups hold several ranks."""

    workers_refusal = _ON_SEVERAL_RANKS
    on_several_ranks = "evaluates candidates side by side on the ranks of an mpirun launch"

    def check_group_size(self) -> None:
        """The groups are this way's own (``group_size`` None: groups of one rank)."""

    def group_size(self) -> Optional[int]:
        return self.config.group_size or 1


    def launch_refusal(self, world_size: int) -> Optional[str]:
        k = self.group_size()
        if k <= 1 or (world_size > k and (world_size - 1) % k == 0):
            return None
        return (f"this run trained each network on a group of {k} ranks, and a launch of "
                f"{world_size} rank{'s' if world_size > 1 else ''} cannot make such groups: "
                f"resume it under {self.launch_for(k)}")

    def dedicated_root(self) -> bool:
        """Otherwise the other ranks of rank 0's group would have nobody to train with."""
        from nord.parallel import launcher_world_size
        return (launcher_world_size() or 1) > 1 and self.group_size() > 1

    def check_layout(self, world_size: int) -> None:
        """Refuse groups that do not split the training ranks evenly: every group trains
        each network together, so a smaller last group would train with another global batch
        (and alone, with an evaluator that is not data-parallel).

        Raises:
            ConfigurationError: naming the ranks, the group size and what would fit.
        """
        k = self.group_size()
        if world_size <= 1 or k <= 1:
            return
        training = world_size - 1   # rank 0 only dispatches
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


# --- the registry of ways ----------------------------------------------------------------------
# A plain dict rather than a nord.registry.Registry: one name may hold several ways, each for
# the spaces it takes, and names are matched as journals record them.
_WAYS: Dict[str, List[Type[Evaluation]]] = {}
DEFAULT_EVALUATION = "local"
"""The evaluation of a run that names none, on a space that no way reads from a table."""


ONESHOT_SETTINGS = ("search_epochs", "supernet_channels", "supernet_cells", "final_evaluation")
"""Settings of a weight-sharing search, which no other way takes."""
FINAL_EVALUATIONS = ("table", "train")
"""How a weight-sharing search's final cell is evaluated: looked up in the NAS-Bench-201
table (for its data sets), or trained stand-alone with the nasbench201 recipe for --epochs."""


class _NASBench201Only:
    """A way that takes only NAS-Bench-201's space, whose cells it builds from its supernet."""

    config: Any

    def check_space(self) -> None:
        if self.config.space != "nasbench201":
            raise ConfigurationError(
                f"evaluation={self.config.evaluation!r} shares weights in NAS-Bench-201's "
                f"supernet, which holds only that space's cells; got space="
                f"{self.config.space!r}: give --space nasbench201")


class WeightSharing(_AllRanksTogether, _NASBench201Only, Evaluation):
    """A weight-sharing search: the run's method trains one supernet of the NAS-Bench-201
    space on the data set and derives a cell each epoch (nord.oneshot); its result is the
    final cell, looked up in the benchmark's table or trained stand-alone. Under mpirun every
    rank trains the one supernet together, data-parallel."""

    shares_weights = True
    default_dataset = "cifar10"
    how_ranks_evaluate = "trains one supernet on all the ranks of the launch"
    workers_refusal = ("trains one supernet: run it without --workers (under mpirun -np N its "
                       "N ranks train the supernet together)")

    def check_settings(self) -> None:
        super().check_settings()
        config = self.config
        from nord.benchmarks.nasbench201.table import DATASETS
        from nord.oneshot.settings import method_settings
        method_settings(config.algorithm_params)
        if config.search_epochs is not None:
            check_int(config.search_epochs, "search_epochs (--search-epochs, epochs of search)", 1)
        for name in ("supernet_channels", "supernet_cells"):
            if getattr(config, name) is not None:
                check_int(getattr(config, name), f"{name} ({_flag(name)})", 1)
        if config.final_evaluation is None:
            config.final_evaluation = "table" if config.dataset in DATASETS else "train"
        if config.final_evaluation not in FINAL_EVALUATIONS:
            raise ConfigurationError(
                f"--final-evaluation must be one of {', '.join(FINAL_EVALUATIONS)}; got "
                f"{config.final_evaluation!r}")
        if config.final_evaluation == "table" and config.dataset not in DATASETS:
            raise ConfigurationError(
                f"--final-evaluation table looks the final cell up in the NAS-Bench-201 table, "
                f"which has {', '.join(DATASETS)}; the search ran on {config.dataset}: use "
                "--final-evaluation train (it trains the cell for --epochs)")
        if config.final_evaluation == "table" and config.is_set("epochs"):
            raise ConfigurationError(
                f"--epochs {config.epochs} trains the final cell, but --final-evaluation table "
                "looks it up: drop --epochs, or use --final-evaluation train")
        unused = [name for name in ("scheduler", "time_budget", "target")
                  if getattr(config, name) is not None]
        if config.budget not in (None, 1):      # its one result: the final cell
            unused.insert(0, "budget")
        if config.mode != "sync":
            unused.append("mode")
        if unused:
            raise ConfigurationError(
                f"{', '.join(_flag(name) for name in unused)} shape(s) a search that evaluates "
                "candidates one by one; a weight-sharing search trains one supernet for "
                "--search-epochs and ends with one cell: leave "
                f"{'it' if len(unused) == 1 else 'them'} out")

    def check_callbacks(self) -> None:
        if self.config.callbacks or self.config.stop_when:
            raise ConfigurationError(
                "--callbacks and --stop-when look inside one candidate's training; a "
                "weight-sharing search trains one supernet for every cell: drop them")

    def check_data(self, curator) -> None:
        from nord.benchmarks.nasbench201.supernet import check_image_shape
        check_image_shape(curator.input_shape, "a weight-sharing search")

    def build(self, env, curator=None):
        return None

    def search_group(self, env):
        """The ranks that search together: this process alone, or every rank of the launch
        as one data-parallel group, started (collective; imports torch)."""
        from nord.evaluators.group import Alone
        from nord.nn.training import resolve_device
        device = resolve_device(self.config.device, env.local_rank)
        if env.size == 1:
            return Alone(env.local_rank)
        from nord.evaluators.distributed import DataParallelGroup, choose_backend
        group = DataParallelGroup(env.group.comm, choose_backend(self.config.backend,
                                                                 device.type == "cuda"),
                                  env.local_rank)
        group.start(device)
        return group

    def device_name(self) -> str:
        """Where the search measures its seconds: 'cpu', or the GPU by name (``--device``
        resolved, as 'auto' is on this machine)."""
        import torch

        from nord.nn.training import resolve_device
        device = resolve_device(self.config.device)
        if device.type == "cuda":
            return f"{device} ({torch.cuda.get_device_name(device)})"
        return str(device)

    def search_settings(self):
        """The search the run makes (nord.oneshot.search.OneShotSettings; imports torch)."""
        from nord.oneshot.search import OneShotSettings
        from nord.oneshot.settings import method_settings
        config = self.config
        sizes = {key: value for key, value in (
            ("search_epochs", config.search_epochs), ("channels", config.supernet_channels),
            ("cells_per_stage", config.supernet_cells)) if value is not None}
        return OneShotSettings(config.algorithm, recipe=config.training_recipe(),
                               method_settings=method_settings(config.algorithm_params),
                               seed=config.seed, device=config.device, **sizes)

    def describe(self, world_size: int, evaluator) -> Dict[str, Any]:
        settings = self.search_settings()
        described = {"evaluator": "weight sharing", "method": settings.method,
                     "search_epochs": settings.search_epochs,
                     "supernet": {"channels": settings.channels,
                                  "cells_per_stage": settings.cells_per_stage,
                                  "affine": settings.affine,
                                  "track_running_stats": settings.track_running_stats},
                     "recipe": settings.recipe.describe(self.config.dataset),
                     "final_evaluation": self.config.final_evaluation,
                     "final_epochs": self.config.epochs,
                     "ranks_per_network": world_size}
        if world_size > 1:
            from nord.evaluators.distributed import choose_backend
            from nord.nn.training import resolve_device
            described["backend"] = choose_backend(
                self.config.backend, resolve_device(self.config.device).type == "cuda")
        return described

    def accuracy_names(self, described: Dict[str, Any], selection: str) -> Tuple[str, str]:
        if self.config.final_evaluation == "table":
            return ("the final cell's 12-epoch validation accuracy in the NAS-Bench-201 table",
                    "its 200-epoch test accuracy in the table")
        return super().accuracy_names(described, selection)


class SupernetInherited(_NASBench201Only, Evaluation):
    """Each NAS-Bench-201 cell is scored with the weights it inherits from a trained supernet
    (``supernet``: the journal of a finished weight-sharing search), its batch norms
    recalibrated; nothing is trained."""

    reads_supernet = True
    default_dataset = None       # the supernet's own
    how_ranks_evaluate = "scores each cell with inherited weights"
    workers_refusal = ("scores cells with one supernet's weights in milliseconds: run it "
                       "without --workers")

    def check_dataset(self) -> str:
        """The data set the supernet was trained on (given or not: another would score its
        cells with weights learned elsewhere)."""
        trained_on = (self.supernet_run().get("dataset") or {}).get("name")
        given = self.config.dataset
        if given is not None and trained_on is not None and given != trained_on:
            raise ConfigurationError(
                f"--dataset {given}: the supernet in {self.config.supernet} was trained on "
                f"{trained_on}, and its cells are scored on the data it learned; drop "
                f"--dataset (or give --dataset {trained_on})")
        self.config.dataset = trained_on or given
        return super().check_dataset()

    def supernet_run(self) -> Dict[str, Any]:
        """The metadata of the search whose supernet scores the cells.

        Raises:
            ConfigurationError: ``supernet`` is missing, or names no journal of a finished
                weight-sharing search with its supernet.
        """
        import os
        path = self.config.supernet
        if path is None:
            raise ConfigurationError(
                "evaluation='supernet' scores cells with a trained supernet: give --supernet "
                "RUN.db, the journal of a finished weight-sharing search (nord run --space "
                "nasbench201 --algorithm darts-v1 ...)")
        from nord.journal import Journal
        from nord.oneshot.registry import METHODS
        if not os.path.isfile(path):
            raise ConfigurationError(f"--supernet {path}: there is no such journal; give the "
                                     "journal of a finished weight-sharing search")
        with Journal(path) as journal:
            meta = journal.metadata()
        if METHODS.find(meta.get("algorithm")) is None or not os.path.isfile(
                supernet_file(path)):
            raise ConfigurationError(
                f"--supernet {path} holds no trained supernet (its run is "
                f"{meta.get('algorithm')!r}, {meta.get('status')}); give the journal of a "
                f"finished weight-sharing search ({', '.join(METHODS.names())})")
        return meta

    def check_settings(self) -> None:
        super().check_settings()
        self.supernet_run()
        _refuse_training_settings(self.config, SCORING_UNUSED,
                                  "evaluation='supernet' trains nothing: each cell inherits "
                                  "its weights")

    def build(self, env, curator=None):
        from nord.oneshot.evaluator import SupernetEvaluator
        return SupernetEvaluator.from_checkpoint(supernet_file(self.config.supernet), curator,
                                                 device=self.config.device)

    def describe(self, world_size: int, evaluator) -> Dict[str, Any]:
        import os
        return {**evaluator.describe(), "supernet_journal": os.path.abspath(self.config.supernet)}

    def accuracy_names(self, described: Dict[str, Any], selection: str) -> Tuple[str, str]:
        return ("validation accuracy with weights inherited from the supernet",
                "(none: cells scored with inherited weights are not tested)")


def supernet_file(journal: str) -> str:
    """Where a weight-sharing search keeps its trained supernet: beside its journal."""
    return f"{journal}.supernet.pt"


def register_way(name: str, way: Type[Evaluation]) -> None:
    """Let ``RunConfig(evaluation=name)`` (``--evaluation name``) evaluate candidates by
    ``way``. A name may hold several ways: the one whose ``table_space`` is the run's space,
    else the first registered.

    Raises:
        ConfigurationError: ``way`` is not an Evaluation subclass.
    """
    check_subclass(way, Evaluation, name)
    _WAYS.setdefault(name, []).append(way)


def list_evaluations() -> List[str]:
    """The evaluations a run may name, in the order they were registered."""
    return list(_WAYS)


def table_reader(space: str) -> Optional[Type[Evaluation]]:
    """The first way registered that reads ``space``'s cells from a table, or None."""
    return next((way for ways in _WAYS.values() for way in ways if way.table_space == space),
                None)


def default_evaluation(space: str) -> str:
    """The evaluation of a run on ``space`` that names none: the first that reads the
    space's cells from a table, else :data:`DEFAULT_EVALUATION`."""
    return next((name for name, ways in _WAYS.items()
                 if any(way.table_space == space for way in ways)), DEFAULT_EVALUATION)


def way_class(evaluation: str, space: str) -> Type[Evaluation]:
    """The way that ``evaluation`` names on ``space`` (a way that cannot take the space
    refuses it in its ``check_space``).

    Raises:
        ConfigurationError: an evaluation that no way is registered as, listing those that are.
    """
    check_choice(evaluation, "evaluation", tuple(_WAYS))
    ways = _WAYS[evaluation]
    return next((way for way in ways if way.table_space == space), ways[0])


def evaluation_of(config: RunConfig) -> Evaluation:
    """The way ``config`` evaluates its candidates (its ``evaluation``, on its space)."""
    return way_class(config.evaluation, config.space)(config)


register_way("local", Training)
register_way("data-parallel", DataParallelTraining)
register_way("distributed", GroupTraining)
register_way("benchmark", TableLookup)
register_way("zero-cost", Scoring)
register_way("zero-cost", ProxyTableLookup)
register_way("weight-sharing", WeightSharing)
register_way("supernet", SupernetInherited)
