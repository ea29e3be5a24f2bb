"""How a run evaluates its candidates: one class per way, chosen once from its RunConfig.

    from nord.app.evaluation import evaluation_of
    way = evaluation_of(config)           # a table look-up, a zero-cost score, or training
    way.ranks_per_network(world_size)     # recorded: a resume must train on as many
    evaluator = way.build(env, curator)   # this rank's evaluator (None on a dedicated rank 0)
    way.describe(world_size, evaluator)   # what the journal records about it

Each way answers for itself how the ranks make groups, whether a data set is loaded, how its
evaluator is built and described, and which split selects architectures, so that the
assembly of a run asks once instead of branching on ``config.evaluation`` at every step.
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Tuple

from nord.app.settings import RunConfig
from nord.errors import ConfigurationError

# The evaluators are imported where they are built, so that a configuration is checked (and
# refused) before torch or a data set is loaded.

TEST_SELECTION = ("there is no validation split (valid_fraction=0 and the data set has no "
                  "official one): the search selected architectures by their TEST accuracy, so "
                  "the best one's test accuracy is optimistically biased. Hold out a validation "
                  "split (--valid-fraction 0.1) for results you report")


class Evaluation:
    """What every way of evaluating answers. The defaults are those of a way in which each
    rank evaluates candidates of its own."""

    needs_data = True
    """Whether the run loads its data set (the benchmark's tables hold their own)."""

    def __init__(self, config: RunConfig):
        self.config = config

    def group_size(self) -> Optional[int]:
        """Ranks per group (None: all of them)."""
        return 1

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


class _NamesItsSignal(Evaluation):
    """A way whose description names its signal: no accuracy, or not one measured here."""

    def accuracy_names(self, described: Dict[str, Any], selection: str) -> Tuple[str, str]:
        return described.get("signal", "accuracy"), described.get("reported", "test accuracy")


class _TableRead(_NamesItsSignal):
    """Results read from a table that every rank holds, which describes itself; no data set
    is loaded."""

    needs_data = False

    def describe(self, world_size: int, evaluator) -> Dict[str, Any]:
        return evaluator.describe()


class TableLookup(_TableRead):
    """NAS-Bench-201: each result is read from the benchmark's table."""

    def ranks_per_network(self, world_size: int) -> int:
        return 1

    def build(self, env, curator=None):
        from nord.benchmarks.nasbench201 import BenchmarkEvaluator
        return BenchmarkEvaluator(dataset=self.config.dataset)


class ProxyTableLookup(_TableRead):
    """A zero-cost score of a NAS-Bench-201 cell, read from nord's packaged proxy table."""

    def build(self, env, curator=None):
        from nord.benchmarks.nasbench201.proxy_evaluator import ProxyTableEvaluator
        return ProxyTableEvaluator(self.config.proxy, dataset=self.config.dataset)

    def selection(self, curator) -> str:
        return "proxy"


class Scoring(_NamesItsSignal):
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

    def selection(self, curator) -> str:
        return "proxy"


class Training(Evaluation):
    """Each candidate is trained with the run's settings, on one rank (the subclasses: on
    several, data-parallel)."""

    def build(self, env, curator=None):
        if env.group is None:
            return None
        return self.trainer(curator, env if env.group.size > 1 else None)

    def trainer(self, curator, env=None):
        """A LocalEvaluator with the run's training settings; with ``env``, a
        DistributedEvaluator training on its group's ranks."""
        from nord.evaluators.callbacks import callback_classes
        config = self.config
        training = dict(curator=curator, epochs=config.training_epochs,
                        batch_size=config.batch_size, lr=config.lr, optimizer=config.optimizer,
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
        return described


class DataParallelTraining(Training):
    """All the ranks train each candidate together."""

    def group_size(self) -> Optional[int]:
        return None

    def ranks_per_network(self, world_size: int) -> int:
        return world_size

    def launch_for(self, ranks: int) -> str:
        return f"mpirun -np {ranks}" if ranks > 1 else "one process, without mpirun"


class GroupTraining(Training):
    """Groups of ``group_size`` ranks each train a candidate together, side by side; rank 0
    only dispatches when the groups hold several ranks."""

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


_WAYS = {"benchmark": TableLookup, "local": Training, "data-parallel": DataParallelTraining,
         "distributed": GroupTraining}


def evaluation_of(config: RunConfig) -> Evaluation:
    """The way ``config`` evaluates its candidates (its ``evaluation``, on its space)."""
    if config.evaluation == "zero-cost":
        return ProxyTableLookup(config) if config.on_benchmark else Scoring(config)
    return _WAYS[config.evaluation](config)

