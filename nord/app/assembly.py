"""A run's parts built from its RunConfig: data, space, evaluator, worker processes, scheduler,
how its ranks are laid out, and what the journal records about them.

    from nord.app.assembly import assemble, layout
    groups, dedicated = layout(config, world_size)   # before MPI starts; refuses bad layouts
    parts = assemble(config, env)                    # every rank (collective)
    parts.executor, parts.algorithm, parts.info      # what run_search is given

nord.app.runner runs them.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Tuple, Union

from nord.app.plugins import load_modules
from nord.app.settings import RunConfig, usable_cpus
from nord.errors import ConfigurationError

# The data sets, evaluators and executors are imported where they are used, so that a
# configuration is checked (and refused) before torch or a data set is loaded.


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
    """The run's search space, given the data's input shape when it takes one."""
    from nord.search.spaces.registry import make_space, space_parameters
    takes = space_parameters(config.space)
    shape = ({"input_shape": tuple(curator.input_shape)}
             if curator is not None and (takes is None or "input_shape" in takes) else {})
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


def check_workers(config: RunConfig) -> None:
    """Refuse more ``worker_processes`` than this machine's GPUs can host (the rules that need
    no machine, such as no workers under mpirun, were checked when the RunConfig was made)."""
    if config.worker_processes is None:
        return
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
    if config.on_benchmark:   # a zero-cost score read from the benchmark's proxy table
        from nord.benchmarks.nasbench201.proxy_evaluator import ProxyTableEvaluator
        return ProxyTableEvaluator(config.proxy, dataset=config.dataset)
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
    from nord.evaluators.callbacks import callback_classes
    training = dict(curator=curator, epochs=config.training_epochs, batch_size=config.batch_size,
                    lr=config.lr, optimizer=config.optimizer, device=config.device,
                    seed=config.seed, threads=config.threads, max_params=config.max_params,
                    callbacks=callback_classes(config.callbacks),
                    strict_callbacks=config.strict_callbacks, stop_rules=config.stop_when)
    if env is not None:
        from nord.evaluators.distributed import DistributedEvaluator
        return DistributedEvaluator(env, backend=config.backend, **training)
    from nord.evaluators.local import LocalEvaluator
    return LocalEvaluator(**training)


def describe_evaluation(config: RunConfig, world_size: int, evaluator) -> Dict[str, Any]:
    """What the journal records about how candidates are evaluated: a benchmark's table
    evaluator (which every rank holds) describes itself; a training or scoring one is described
    from the configuration alone (a dedicated rank 0 holds none, and need not load the data)."""
    if config.on_benchmark:
        return evaluator.describe()
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
    if config.strict_callbacks:
        described["strict_callbacks"] = True
    if config.stop_when:
        described["stop_rules"] = list(config.stop_when)
    return described


TEST_SELECTION = ("there is no validation split (valid_fraction=0 and the data set has no "
                  "official one): the search selected architectures by their TEST accuracy, so "
                  "the best one's test accuracy is optimistically biased. Hold out a validation "
                  "split (--valid-fraction 0.1) for results you report")


def selection_of(config: RunConfig, curator) -> str:
    """The split the search selects architectures on, as the journal records it (a fact the
    report reads, not a sentence it parses): 'validation', 'test' (there is no validation
    split) or 'proxy' (a zero-cost score of untrained networks)."""
    if config.evaluation == "zero-cost":
        return "proxy"
    if curator is not None and curator.n_valid == 0:
        return "test"
    return "validation"


def accuracy_names(config: RunConfig, evaluator: Dict[str, Any],
                   selection: str) -> Tuple[str, str]:
    """What the search's accuracy and the reported accuracy are measured on, in words."""
    if config.evaluation in ("benchmark", "zero-cost"):
        return evaluator.get("signal", "accuracy"), evaluator.get("reported", "test accuracy")
    if selection == "test":
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


def layout(config: RunConfig, world_size: int) -> Tuple[Optional[int], bool]:
    """How the launch's ranks make groups, checked on every rank alike before MPI starts:
    the ranks a group holds (None: all) and whether rank 0 only dispatches.

    Raises:
        ConfigurationError: groups that do not split the ranks, or --workers under mpirun
            beyond what the machine holds.
    """
    check_groups(config, world_size)
    check_workers(config)
    return group_size(config), dedicated_root(config)


@dataclass
class RunParts:
    """What a rank runs a search with (the algorithm and scheduler on rank 0 only)."""

    executor: Any
    algorithm: Any
    scheduler: Any
    budget: int
    info: Any
    signal: str
    reported: str


def assemble(config: RunConfig, env) -> RunParts:
    """Every rank (collective): the data, space, evaluator and executor of this rank, the
    algorithm and scheduler of rank 0, the budget, and what the journal records; the data's
    warnings are printed."""
    from nord.search.algorithms.registry import make_algorithm
    from nord.search.engine import RunInfo
    from nord.search.executors import MPIExecutor
    curator = None if config.on_benchmark else build_curator(config)
    space = build_space(config, curator)
    evaluator = build_evaluator(config, env, curator)
    if config.worker_processes is not None:
        executor = build_worker_executor(config, evaluator)
    else:
        # asynchronous runs keep one candidate in reserve at each worker, so that no worker
        # waits for rank 0 between two evaluations (bench/async_dispatch.py)
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
    info = RunInfo(evaluator=describe_evaluation(config, env.size, evaluator), dataset=dataset,
                   config=config.measured(), execution=config.execution(),
                   extra={"warnings": warnings} if warnings else {})
    selection = selection_of(config, curator)
    signal, reported = accuracy_names(config, info.evaluator, selection)
    info.evaluator.update(signal=signal, reported=reported, selection=selection)
    return RunParts(executor, algorithm, scheduler, budget, info, signal, reported)
