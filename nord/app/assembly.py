"""A run's parts built from its RunConfig: data, space, evaluator, worker processes, scheduler,
how its ranks are laid out, and what the journal records about them (how candidates are
evaluated is the way's own: nord.app.evaluation).

    from nord.app.assembly import assemble, layout
    way = evaluation_of(config)                           # nord.app.evaluation
    groups, dedicated = layout(config, way, world_size)   # before MPI starts; refuses bad ones
    curator, space = load_data(config, way)
    parts = assemble(config, way, env, curator, space)    # every rank (collective)
    parts.executor, parts.algorithm, parts.info      # what run_search is given

nord.app.runner runs them.
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from typing import Any, Dict, List, Optional, Tuple, Union

from nord.app.evaluation import TEST_SELECTION, Evaluation, Training
from nord.app.plugins import load_modules
from nord.app.settings import RunConfig, takes_input_shape, usable_cpus
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
        kwargs["checksums"] = checksum_table(config.data_checksums)
    curator = get_curator(config.dataset, **kwargs)
    statistics = config.training_recipe().statistics_for(config.dataset)
    if statistics is not None:   # the recipe's published normalisation, before it loads
        curator.normalise_with(*statistics)
    return curator


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
    from nord.search.spaces.registry import make_space
    shape = ({"input_shape": tuple(curator.input_shape)}
             if curator is not None and takes_input_shape(config.space) else {})
    return make_space(config.space, **shape, **config.space_params)


def run_budget(config: RunConfig, algorithm) -> int:
    """Evaluations in the run: ``budget`` when given, else what the algorithm asks for when
    it knows (its generations), else 100."""
    return config.budget or getattr(algorithm, "evaluations", None) or 100


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
    of the data (module level, so that it pickles; workers serve 'local' runs alone)."""
    load_modules(config.plugins or ())   # a fresh interpreter: register the run's plug-ins
    return Training(replace(config, device=device)).trainer(build_curator(config))


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


def describe_data(config: RunConfig, curator,
                  selection: str) -> Tuple[Dict[str, Any], List[str]]:
    """What the journal records about the data (name, folder, split sizes and how the
    validation split was made: a resumed run must get the same one), and the run's warnings
    about it, given the split the search selects on. Loads the data set."""
    described = curator.describe()
    described.pop("classes", None)
    dataset = {"name": config.dataset, "root": config.data_root, **described}
    dataset["name"] = config.dataset
    warnings = [TEST_SELECTION] if selection == "test" else []
    if curator.n_valid > curator.n_train:
        warnings.append(
            f"valid_fraction={config.valid_fraction} holds out {curator.n_valid} of the "
            f"{curator.n_train + curator.n_valid} training images for validation: networks "
            f"train on only {curator.n_train}, and their accuracies say little. 0.1 to 0.2 is "
            "usual (--valid-fraction)")
    return dataset, warnings


def layout(config: RunConfig, way: Evaluation,
           world_size: int) -> Tuple[Optional[int], bool]:
    """How the launch's ranks make groups, checked on every rank alike before MPI starts:
    the ranks a group holds (None: all) and whether rank 0 only dispatches.

    Raises:
        ConfigurationError: groups that do not split the ranks, or --workers under mpirun
            beyond what the machine holds.
    """
    check_workers(config)
    way.check_layout(world_size)
    return way.group_size(), way.dedicated_root()


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


def load_data(config: RunConfig, way: Evaluation):
    """This rank's data set (None where the way needs none) and the run's search space, which
    takes the data's input shape.

    Raises:
        NordError: the data set cannot be read (missing or damaged files, checksums), or the
            way cannot evaluate on it (a recipe that augments data that are not images).
    """
    curator = build_curator(config) if way.needs_data else None
    if curator is not None:
        way.check_data(curator)
    return curator, build_space(config, curator)


def assemble(config: RunConfig, way: Evaluation, env, curator, space) -> RunParts:
    """Every rank (collective), given this rank's data and the space (:func:`load_data`):
    the algorithm and scheduler of rank 0, the evaluator and executor of this rank, the
    budget, and what the journal records; the data's warnings are printed."""
    from nord.search.algorithms.registry import make_algorithm
    from nord.search.engine import RunInfo
    from nord.search.executors import MPIExecutor
    from nord.search.schedulers import make_scheduler
    algorithm = scheduler = None
    if env.is_root:   # only the engine's rank asks, tells and schedules
        algorithm = make_algorithm(config.algorithm, space, seed=config.seed,
                                   budget=config.budget, **config.algorithm_params)
        if config.scheduler is not None:   # the engine prepares it for the run's budget and mode
            scheduler = make_scheduler(config.scheduler, **config.scheduler_settings())
    evaluator = way.build(env, curator)
    if config.worker_processes is not None:
        executor = build_worker_executor(config, evaluator)
    else:
        # asynchronous runs keep one candidate in reserve at each worker, so that no worker
        # waits for rank 0 between two evaluations (bench/async_dispatch.py)
        executor = MPIExecutor(evaluator, env, space=space,
                               prefetch=1 if config.mode == "async" else 0)
    budget = env.bcast(run_budget(config, algorithm) if env.is_root else None)
    selection = way.selection(curator)
    dataset, warnings = {"name": config.dataset, "root": config.data_root}, []
    if env.is_root and curator is not None:
        dataset, warnings = describe_data(config, curator, selection)
    launch = way.launch_warning(env.size)
    if env.is_root:
        warnings += [launch] if launch is not None else []
        for warning in warnings:
            env.print(f"warning: {warning}", file=sys.stderr)
    info = RunInfo(evaluator=way.describe(env.size, evaluator), dataset=dataset,
                   config=config.measured(), execution=config.execution(),
                   extra={"warnings": warnings} if warnings else {})
    signal, reported = way.accuracy_names(info.evaluator, selection)
    info.evaluator.update(signal=signal, reported=reported, selection=selection)
    return RunParts(executor, algorithm, scheduler, budget, info, signal, reported)
