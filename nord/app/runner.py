"""A search run assembled from plain arguments: the one place experiments and the CLI share.

    from nord.app.runner import run, resume
    from nord.app.settings import RunConfig
    config = RunConfig(algorithm="pygmo", evaluation="distributed", dataset="digits",
                       budget=40, journal="runs/exp3.db", seed=0)
    summary = run(config)           # under mpirun: every rank calls it; rank 0 gets the summary
    summary = resume("runs/exp3.db", budget=80)   # extended; None if nothing is left to do

``evaluation`` is ``'local'``, ``'data-parallel'``, ``'distributed'``, ``'benchmark'`` or
``'zero-cost'`` (each a way of nord.app.evaluation). A configuration is checked when it is
made, and stored in the run's journal, so that ``resume(journal)`` needs nothing else.

Details (how each evaluation uses the MPI ranks, the checks before a start): docs/running.md.
"""
from __future__ import annotations

import contextlib
import datetime
import logging
import math
import os
import sys
from dataclasses import replace
from typing import Any, Dict, Optional, Tuple

from nord.app.assembly import assemble, layout, load_data, recorded_data_settings
from nord.app.evaluation import Evaluation, evaluation_of
from nord.app.settings import EXECUTION_FIELDS, RESUME_CHANGES, RunConfig
from nord.errors import ConfigurationError, JournalError, NordError, RunInterrupted

# The engine, the journal and MPI are imported where they are used, so that a configuration
# is checked (and refused) before torch or a data set is loaded.

logger = logging.getLogger(__name__)

RUNS_FOLDER = "runs"
"""Where a run without ``journal`` writes its journal."""


def default_journal(config: RunConfig) -> str:
    """``runs/<algorithm>-<date>-<time>.db``, a path no file has yet, claimed for this run:
    its checkpoint folder is made at once (an atomic step), so that runs started in the same
    second, in parallel, each get a journal of their own. The run uses the folder, or
    :func:`release_default_journal` removes it."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    base = os.path.join(RUNS_FOLDER, f"{config.algorithm}-{stamp}")
    os.makedirs(RUNS_FOLDER, exist_ok=True)
    number = 1
    while True:
        path = base + ".db" if number == 1 else f"{base}-{number}.db"
        if not os.path.exists(path):
            try:
                os.mkdir(f"{path}.checkpoints")
                return path
            except FileExistsError:   # another run claimed it between the look and now
                pass
        number += 1


def release_default_journal(path: str) -> None:
    """The claim of :func:`default_journal` on ``path`` ends with the run: its checkpoint
    folder is removed where nothing is left in it."""
    with contextlib.suppress(OSError):
        os.rmdir(f"{path}.checkpoints")


def _check_journal(config: RunConfig, way: Evaluation, resume: bool,
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
                refusal = _ranks_refusal(config, way, stored.evaluator or {}, world_size)
                if refusal is not None:
                    return refusal, None
            if resume and stored is not None and journal.state() == "finished":
                if way.shares_weights:
                    return None, (f"'{config.journal}' holds a finished weight-sharing search "
                                  "(its final cell is the run's one result, its supernet "
                                  "beside it): nothing to do, and the journal was left as "
                                  "it is")
                return None, _nothing_left(config, stored, journal)
    except (JournalError, ConfigurationError) as error:
        return str(error), None
    return None, None


def _nothing_left(config: RunConfig, stored, journal) -> Optional[str]:
    """Why resuming a finished run would do nothing (limits it reached still hold), in the
    words of ``nord resume``, naming every such limit and the flag that raises it, so that
    one resume can raise them all; None when the run can go on."""
    from nord.search.engine.stopping import format_duration
    count, path = journal.count(), config.journal
    budget = config.budget or stored.budget
    left = "nothing to do, and the journal was left as it is"
    reached, raises = [], []   # the limits that hold; the flag raising each, and how far
    if config.time_budget is not None:
        running = journal.running_seconds()
        if running >= config.time_budget:
            reached.append(f"its time budget of {format_duration(config.time_budget)} is spent "
                           f"({running:.1f} s of running time)")
            raises.append(("--time-budget T", f"T over {math.ceil(running)}s"))
    if config.target is not None:
        best = journal.best()
        if best is not None and best["accuracy"] >= config.target:
            reached.append(f"candidate {best['candidate']} reached the target accuracy "
                           f"{config.target:g} ({best['accuracy']:.4f})")
            raises.append(("--target X", f"X over {best['accuracy']:.4f}"))
    if count >= budget:
        reached.append(f"its budget of {stored.budget} evaluations is used ({count} "
                       "evaluations)")
        raises.append(("--budget N", f"N > {stored.budget}"))
    if reached:
        return (f"'{path}' holds a finished run in which {' and '.join(reached)}: {left}. "
                f"To run on, raise {'it' if len(raises) == 1 else 'all of them in one resume'}: "
                f"nord resume {path} {' '.join(flag for flag, _ in raises)}, with "
                f"{' and '.join(rule for _, rule in raises)}")
    detail = journal.metadata().get("status_detail") or ""
    if budget <= stored.budget and (detail.startswith("the algorithm")
                                    or (not detail and count < stored.budget)):
        return (f"'{path}' holds a finished run whose algorithm stopped by itself after "
                f"{count} evaluations, before its budget of {stored.budget}: {left}. A larger "
                "budget adds evaluations only where the algorithm's own limit (such as its "
                "generations) allows more")
    return None


def _ranks_refusal(config: RunConfig, way: Evaluation, stored: Dict[str, Any],
                   world_size: int) -> Optional[str]:
    """Why this launch cannot resume a run whose networks trained on another number of ranks
    (the global batch would change), in the words of mpirun; None when it can."""
    # a weight-sharing search recorded before searches ran on several ranks ran on one
    ranks = stored.get("ranks_per_network",
                       1 if stored.get("evaluator") == "weight sharing" else None)
    mine = way.ranks_per_network(world_size)
    if not ranks or ranks == mine:
        return None
    launch = way.launch_for(ranks)
    trained = "trained its supernet" if way.shares_weights else "trained each network"
    on_mine = "train it" if way.shares_weights else "train each"
    return (f"cannot resume '{config.journal}': this run {trained} on {ranks} "
            f"rank{'s' if ranks > 1 else ''}, and this launch ({world_size} rank"
            f"{'s' if world_size > 1 else ''}) would {on_mine} on {mine}, which changes what "
            f"is measured (each rank's shard of every batch): resume it under {launch}")


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
    from nord.parallel import Environment, launcher_world_size

    way = evaluation_of(config)
    groups, dedicated = layout(config, way, launcher_world_size() or 1)   # before MPI starts
    with Environment(group_size=groups, dedicated_root=dedicated) as env:
        journal = config.journal
        claimed = env.is_root and journal is None
        if claimed:
            journal = default_journal(config)
            env.print(f"journal: {journal}")
        elif (env.is_root and not resume and not os.path.exists(os.path.dirname(journal) or ".")
              and os.path.exists(os.path.dirname(os.path.dirname(journal)) or ".")):
            env.print(f"the journal's folder {os.path.dirname(journal)} does not exist: "
                      "creating it")
        # the caller's config stays as given
        config = replace(config, journal=env.bcast(journal))
        try:
            summary, refused = _search(config, way, env, resume, progress, stream, record_data)
        finally:
            if claimed:
                release_default_journal(journal)
    if refused is not None:
        raise refused
    return summary if env.is_root else None


def _search(config: RunConfig, way: Evaluation, env, resume: bool, progress: bool, stream,
            record_data: bool):
    """Every rank: the checks before the journal, then the search; ``(summary, refused)``,
    where ``refused`` is the error to raise once the ranks have left MPI. ``way`` was chosen
    before the journal's path and the data's recorded settings were settled, which no way
    of evaluating reads."""
    from nord.search.engine import run_search
    from nord.app.search_progress import SearchProgressView, worker_line

    sharing = way.placement_refusal(env)        # collective, before the journal
    if sharing is not None:
        return None, ConfigurationError(sharing)
    if record_data:   # rank 0 reads the checksums file; every rank gets its MD5s
        settled, refusal = env.from_root(lambda: recorded_data_settings(config),
                                         (ConfigurationError,))
        if refusal is not None:
            return None, ConfigurationError(refusal)
        config = settled
    refusal, done = env.bcast(_check_journal(config, way, resume, env.size)
                              if env.is_root else (None, None))
    if done is not None:
        env.print(done)
        return None, None
    if refusal is not None:
        return None, JournalError(refusal)
    # every rank reads the data, and all refuse alike when one cannot
    data, unreadable = env.on_every_rank(lambda: load_data(config, way), (NordError,))
    if unreadable is not None:
        return None, unreadable
    if way.shares_weights:   # one supernet trained by the method, not candidates one by one
        from nord.app.weight_sharing import run_weight_sharing
        return run_weight_sharing(config, way, env, data[0], resume, progress, stream)
    parts = assemble(config, way, env, *data)
    view = None
    if progress and env.is_root:
        view = SearchProgressView(parts.budget, config.mode, parts.signal,
                                  parts.reported, stream or sys.stdout)
    try:
        summary = run_search(parts.algorithm, budget=parts.budget,
                             journal=config.journal, mode=config.mode,
                             executor=parts.executor, resume=resume,
                             on_result=view and view.result,
                             on_epoch=view and view.epoch, info=parts.info,
                             scheduler=parts.scheduler,
                             max_attempts=config.max_attempts,
                             checkpoint_every=config.checkpoint_every,
                             time_budget=config.time_budget, target=config.target)
    except RunInterrupted as stop:
        if env.is_root:
            why = (" (mpirun ends its ranks so on Ctrl-C, or when one of them has died)"
                   if stop.signal_name == "SIGTERM" and env.size > 1 else "")
            env.print(f"interrupted by {stop.signal_name}{why}: the journal {config.journal} "
                      "keeps every finished evaluation; continue with 'nord resume "
                      f"{config.journal}'", file=sys.stderr)
        raise
    finally:
        if parts.algorithm is not None:
            parts.algorithm.close()
        if view is not None:
            view.close()
    if view is not None and summary is not None:
        view.close(summary)
        if config.worker_processes is not None:
            view.display.write(worker_line(parts.executor))
    return summary, None


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
        stored, error = env.from_root(lambda: stored_config(journal), (NordError,))
    if error is not None:
        raise JournalError(error)
    stored.journal = str(journal)
    changes = {key: value for key, value in execution.items() if value is not None}
    if budget is not None:
        changes["budget"] = budget
    if changes:
        stored = replace(stored, **changes)   # checked like any setting
    from nord.parallel import launcher_world_size
    refusal = evaluation_of(stored).launch_refusal(launcher_world_size() or 1)
    if refusal is not None:   # before the layout, whose advice (another group size) a resume cannot take
        raise JournalError(f"cannot resume '{journal}': {refusal}")
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
    from nord.parallel import launcher_world_size
    workers, ranks = values.get("worker_processes"), launcher_world_size() or 1
    if workers and ranks > 1:   # in the words of a resume, which cannot drop them
        raise JournalError(
            f"cannot resume '{journal}' under mpirun ({ranks} ranks): its run evaluates "
            f"candidates on worker processes of one machine (--workers {workers}), one way to "
            f"parallelise at a time; resume it without mpirun: nord resume {journal}")
    return RunConfig.from_dict(values)
