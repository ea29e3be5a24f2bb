"""run_search: the search engine, one loop for every search nord runs.

The engine asks the algorithm for candidates, identifies each genome's architecture with the
search space (a repeat reuses the first result), has an executor evaluate it, tells the
algorithm the result and records it in the journal::

    from nord.search import RandomSearch, run_search

    summary = run_search(RandomSearch(space, seed=0), evaluator, budget=100,
                         journal="runs/random.db")
    print(summary.best_result.accuracy, summary.evaluations, summary.wall_time)

Its settings come in three groups (:mod:`~nord.search.engine.settings`: ``limits=``,
``training=``, ``reporting=``), each of whose fields is a keyword of its own too.
Over MPI, every rank calls it with an ``MPIExecutor``; rank 0 returns the summary, the others None.

Details (budget, identity, sync and async modes, journal, time budget, resume): docs/engine.md.
"""
from __future__ import annotations

import logging
import os
from dataclasses import replace
from typing import Any, List, Optional, Tuple, Union

from nord.checks import MAX_BUDGET, check_bool, check_instance, check_int, given
from nord.errors import ConfigurationError, DiskFullError
from nord.evaluators.base import Evaluator
from nord.journal import Journal, RunRecord
from nord.journal.recorder import NoJournal
from nord.parallel import interruptible
from nord.search.algorithms.base import SearchAlgorithm
from nord.search.engine.checkpoints import CheckpointStore, Checkpoints, NoCheckpoints
from nord.search.engine.loop import Search
from nord.search.engine.outcomes import MODES, RunInfo, SearchSummary
from nord.search.engine.replay import replay
from nord.search.engine.settings import Limits, Reporting, Training, gather_settings
from nord.search.engine.stopping import Stopping
from nord.search.executors import Executor, SerialExecutor, TimeBudgetSpent
from nord.search.schedulers import Scheduler, TrainToEnd

__all__ = ["run_search", "run_record"]

logger = logging.getLogger(__name__)


ALGORITHM_TAKES = "a SearchAlgorithm such as make_algorithm('rea', space, seed=0)"


def _check_parts(algorithm: Any, evaluator: Any, executor: Any, reporting: Reporting) -> None:
    """Refuse, before anything runs, parts of the wrong kind (a name or a class where an
    object goes) and an algorithm that has served another run."""
    check_instance(executor, "executor", Executor,
                   "an Executor such as SerialExecutor(evaluator) (nord.search.executors)",
                   none=True)
    check_instance(evaluator, "evaluator", Evaluator,
                   "an Evaluator such as LocalEvaluator(epochs=2) (nord.evaluators)",
                   none=executor is not None)
    # MPI worker ranks only evaluate: they may pass None for the algorithm they never ask
    check_instance(algorithm, "algorithm", SearchAlgorithm, ALGORITHM_TAKES,
                   none=executor is not None)
    if algorithm is not None and (algorithm.asked or algorithm.told):
        raise ConfigurationError(
            f"an algorithm serves one run: this {algorithm.name} algorithm has already "
            f"proposed {algorithm.asked} candidates and been told {algorithm.told} results, "
            "and would carry that run's numbering, population and best into this one. Make a "
            f"fresh one for each run, e.g. make_algorithm({algorithm.name!r}, space, "
            f"seed={algorithm.seed!r}) (a resume too: the engine replays the journal into it)")
    for name, called_with in (("on_result", "each SearchProgress"),
                              ("on_epoch", "(candidate number, EpochRecord)")):
        hook = getattr(reporting, name)
        if hook is not None and not callable(hook):
            raise ConfigurationError(
                f"{name} takes a function, called with {called_with} as the run goes, or "
                f"None; got {given(hook)}")
    check_instance(reporting.info, "info", RunInfo,
                   "a RunInfo (nord.search.engine) of what the journal records", none=True)


def _check_settings(mode: str, budget: Any, batch_size: Any, journal: Any, resume: bool,
                    scheduler: Any) -> None:
    if not isinstance(mode, str) or mode not in MODES:
        raise ConfigurationError(f"mode must be one of {MODES}; got {mode!r}")
    check_int(budget, "budget (number of evaluations)", 1, MAX_BUDGET)
    check_bool(resume, "resume")
    if batch_size is not None:
        check_int(batch_size, "batch_size", 1, rule="a positive integer or None")
    if journal is not None and not isinstance(journal, (str, os.PathLike, Journal, NoJournal)):
        raise ConfigurationError(
            f"journal must be a path (str or os.PathLike), a Journal, a NoJournal or None; got "
            f"{type(journal).__name__}: {journal!r:.80}. Give the journal's path (the engine "
            "opens and closes it), or a nord.journal.Journal you close yourself")
    keeps_records = isinstance(journal, (str, os.PathLike)) or (
        journal is not None and journal.keeps_records)
    if resume and not keeps_records:
        raise ConfigurationError(
            "resume=True continues a run from its journal, and none was given; pass the "
            "journal's path (journal='runs/rea.db')")
    if isinstance(journal, Journal) and journal.writing:
        raise ConfigurationError(
            f"the Journal given for '{journal.path}' is being written already (its start() was "
            "called); the engine starts the journal itself: give a Journal that is not "
            "started, or its path")
    if not isinstance(scheduler, (Scheduler, TrainToEnd, type(None))):
        raise ConfigurationError(
            f"scheduler must be a Scheduler or None (no early stopping); got "
            f"{type(scheduler).__name__}: {scheduler!r:.80}. Make one by name with "
            "nord.search.schedulers.make_scheduler('asha', min_epochs=1, max_epochs=9)")


def _open_journal(journal: Union[str, os.PathLike, Journal, NoJournal, None]
                  ) -> Tuple[Union[Journal, NoJournal], bool]:
    """The run's journal, and whether the engine opened it (and so closes it): the Journal at
    a path, a NoJournal for None; a Journal or NoJournal given is the caller's."""
    if journal is None:
        return NoJournal(), True
    if isinstance(journal, (str, os.PathLike)):
        return Journal(journal), True
    return journal, False


def run_record(algorithm: SearchAlgorithm, evaluator, executor: Executor, mode: str,
               budget: int, batch_size: Optional[int], info: RunInfo,
               scheduler: Union[Scheduler, TrainToEnd] = TrainToEnd()) -> RunRecord:
    """The journal's record of a run, from the engine's parts and the caller's ``info``."""
    parameters = algorithm.parameters()
    evaluator_info = info.evaluator if info.evaluator is not None else (
        evaluator.describe() if evaluator is not None else {})
    return RunRecord(
        algorithm=parameters.get("algorithm", algorithm.name), parameters=parameters,
        seed=algorithm.seed, space=algorithm.space.describe(), evaluator=evaluator_info,
        dataset=info.dataset, mode=mode, batch_size=batch_size, budget=budget,
        execution={**executor.describe(), **info.execution}, config=info.config,
        extra=info.extra, scheduler=scheduler.parameters())


def run_search(algorithm: Optional[SearchAlgorithm], evaluator=None, *,
               journal: Union[str, os.PathLike, Journal, NoJournal, None] = None,
               mode: str = "sync", executor: Optional[Executor] = None, resume: bool = False,
               batch_size: Optional[int] = None, limits: Optional[Limits] = None,
               training: Optional[Training] = None, reporting: Optional[Reporting] = None,
               **settings: Any) -> Optional[SearchSummary]:
    """Run a search: ask, identify, evaluate (once per architecture), tell, journal.

    Args:
        algorithm: a :class:`SearchAlgorithm`; it is told every result, in the order recorded.
            Ranks that do not run the engine (MPI workers) never touch it: None will do there.
        evaluator: evaluates candidates in this process (a :class:`SerialExecutor` is made
            for it). Leave it None when ``executor`` is given.
        journal: the run's :class:`~nord.journal.Journal`, where every proposal and result is
            committed as it happens, by the engine's rank only. A path: the engine opens the
            journal there and closes it when the run ends (read it after the run with
            ``Journal(path)``). A ``Journal`` object (opened or not, but not started): the
            engine starts, writes and finishes the run in it and leaves it open, for you to
            read and close (``with Journal(path) as journal: run_search(...,
            journal=journal)``). None, or a :class:`~nord.journal.recorder.NoJournal`: no
            record.
        mode: 'sync' (generations, results told in candidate order) or 'async' (steady state).
        executor: where evaluations run; default ``SerialExecutor(evaluator)``. With an
            :class:`~nord.search.executors.MPIExecutor`, call this on every rank: the ranks
            that do not run the engine evaluate until it ends, and return None.
        resume: continue the run journaled in ``journal`` (which must hold one).
        batch_size: the most candidates in a synchronous batch; default the number of workers
            (on resume, the journal's). Ignored in async mode.
        limits: what bounds the run (:class:`~nord.search.engine.settings.Limits`: ``budget``
            100, ``time_budget`` and ``target`` None by default).
        training: how candidates train (:class:`~nord.search.engine.settings.Training`:
            ``scheduler`` None, ``checkpoint_every`` 1, ``max_attempts`` 2 by default).
        reporting: what the run tells as it goes
            (:class:`~nord.search.engine.settings.Reporting`: ``on_result``, ``on_epoch``,
            ``info``, None by default).
        **settings: any field of those three as a keyword of its own, in place of its group
            (``budget=100``, ``scheduler=make_scheduler('asha')``, ``on_result=print``, ...).

    Returns:
        A :class:`SearchSummary` on the rank that runs the engine; None on worker ranks.

    Raises:
        ConfigurationError: an ``algorithm``, ``evaluator``, ``executor`` or hook of the
            wrong kind (a name or a class where the object goes), an algorithm that has
            proposed candidates already (it serves one run: make a fresh one, for a resume
            too), a bad ``mode``, ``budget`` (at least 1), ``resume``, ``batch_size``,
            ``journal`` (a Journal already started is one), ``time_budget`` or ``target``, a
            setting given both in its group and as a keyword, or neither evaluator nor
            executor, a ``scheduler`` that is not one or has served another run, or a
            scheduler the algorithm cannot run under (``SearchAlgorithm.schedulers``).
        TypeError: a keyword that is no setting.
        JournalError: the journal cannot be started or resumed by this run (nothing is then
            written), or cannot be written.
        RunInterrupted: SIGINT or SIGTERM stopped the run (journaled as ``interrupted``).
    """
    limits, training, reporting = gather_settings(limits, training, reporting, settings)
    _check_parts(algorithm, evaluator, executor, reporting)
    _check_settings(mode, limits.budget, batch_size, journal, resume, training.scheduler)
    check_int(training.max_attempts, "max_attempts", 1)
    check_int(training.checkpoint_every,
              "checkpoint_every (epochs between checkpoints; 0: none)", 0)
    # the engine always has a scheduler to ask
    training = replace(training, scheduler=training.scheduler or TrainToEnd())
    if algorithm is not None:
        training.scheduler.check_algorithm(algorithm)
    if executor is None:
        if evaluator is None:
            raise ConfigurationError("run_search needs an evaluator, or an executor that has one")
        executor = SerialExecutor(evaluator)
    if evaluator is None:
        evaluator = getattr(executor, "evaluator", None)
    stopping = Stopping(limits.budget, limits.time_budget, limits.target)
    with interruptible():
        return _drive(algorithm, evaluator, executor, journal, mode, resume, batch_size,
                      stopping, training, reporting)


def _drive(algorithm, evaluator, executor: Executor, given_journal, mode: str, resume: bool,
           batch_size: Optional[int], stopping: Stopping, training: Training,
           reporting: Reporting) -> Optional[SearchSummary]:
    budget, scheduler = stopping.budget, training.scheduler
    executor.start()
    if not executor.is_dispatcher:
        executor.serve()
        return None
    if algorithm is None:   # the ranks that only evaluate may pass none; this one asks it
        executor.close(failed=True)
        raise ConfigurationError(
            f"algorithm takes {ALGORITHM_TAKES}; got None on the rank that runs the search "
            "(None will do only on the MPI ranks that evaluate)")

    journal, opened = _open_journal(given_journal)
    search: Optional[Search] = None
    checkpoints: CheckpointStore = NoCheckpoints()
    failed = True
    try:
        effective_batch = _prepare_scheduler(scheduler, algorithm, evaluator, budget, mode,
                                             batch_size, executor.n_workers)
        record = None
        if journal.keeps_records:   # describing the run can load its data: only to keep it
            recorded_batch = None if mode == "async" else (
                batch_size if resume else effective_batch)
            record = run_record(algorithm, evaluator, executor, mode, budget, recorded_batch,
                                reporting.info or RunInfo(), scheduler)
        stored = journal.check_start(record, resume=resume)   # the one check: nothing written
        # the checkpoint folder comes after the check (a refused start leaves none behind) and
        # before the first write (a folder that cannot be written leaves the journal untouched)
        if scheduler.trains_in_legs or (training.checkpoint_every and journal.keeps_records
                                        and _trains_in_legs(evaluator)):
            checkpoints = Checkpoints.beside(journal.path, fresh=not resume)
        journal.claim(record, stored)
        if stored is not None and mode == "sync" and batch_size is None:
            effective_batch = stored.batch_size
        stopping.start(spent_before=journal.spent_before)
        search = Search(algorithm, executor, journal, stopping, mode, effective_batch or 1,
                        training, reporting, checkpoints)
        if journal.keeps_records or reporting.on_epoch is not None:   # learning curves kept
            executor.on_epoch = search.epoch_finished
        if resume:
            replay(search)
            unfinished = search.in_training()
            # candidates whose evaluation kept killing the process are given up (a told
            # candidate's later leg may be in training)
            search.killed = {number: deaths for number, deaths
                             in journal.attempts(told=True).items()
                             if deaths >= training.max_attempts and number in unfinished}
        try:
            if mode == "sync":
                search.run_sync()
            else:
                search.run_async()
        except TimeBudgetSpent as spent:
            search.time_budget_spent = True
            search.flush()
            logger.debug("%s; %d results told, %d in flight abandoned", spent, search.told,
                         search.executor.in_flight)
        search.finish_run()
        summary = search.summary()
        journal.finish("finished", summary.stopped_by)
        logger.debug("search done: %s in %.1f s", summary.counts(), summary.wall_time)
        failed = False
        return summary
    except KeyboardInterrupt as stop:   # RunInterrupted too
        signal_name = getattr(stop, "signal_name", "SIGINT")
        # mpirun ends the other ranks with SIGTERM when one is killed (and on Ctrl-C alike):
        # that may be the candidate's doing, so after a SIGTERM only the attempts of the
        # candidates whose processes are all known to have survived are taken back (SIGINT,
        # SIGHUP, which reach this process itself: all of them)
        survivors = None
        if signal_name == "SIGTERM" and search is not None:
            try:
                survivors = list(executor.survivors())
            except Exception:  # noqa: BLE001 - the stop matters more
                logger.debug("could not learn which workers survived", exc_info=True)
                survivors = []
        _stop(journal, search, "interrupted", signal_name, survivors=survivors)
        raise
    except DiskFullError as error:
        _stop(journal, search, "failed", f"disk full: {error}")
        raise
    except BaseException as error:
        _stop(journal, search, "crashed", f"{type(error).__name__}: {error}")
        raise
    finally:
        executor.on_epoch = None   # the search is done: no cycle keeps it alive
        executor.close(failed=failed)
        if opened:   # a journal given is its owner's to close
            journal.close()
        checkpoints.close()


def _trains_in_legs(evaluator) -> bool:
    """Whether candidates may leave checkpoints: an evaluator that trains in legs, or none
    on this rank (a rank that only dispatches to ranks that train)."""
    return evaluator is None or bool(getattr(evaluator, "trains_in_legs", False))


def _prepare_scheduler(scheduler, algorithm, evaluator, budget: int, mode: str,
                       batch_size: Optional[int], workers: int) -> Optional[int]:
    """Prepare the scheduler for this run (its one preparation) and refuse, before the journal
    is touched, what it cannot serve; the size of the synchronous batches it sets (None in
    async mode)."""
    scheduler.prepare(budget, mode)
    scheduler.check_serves(algorithm, evaluator)
    if mode != "sync":
        return None
    effective = scheduler.batch_size(0, batch_size, workers)
    if batch_size is not None and effective != batch_size:
        raise ConfigurationError(
            f"the {scheduler.name} scheduler sets the size of each synchronous batch itself; "
            f"batch_size={batch_size} was given. Leave batch_size unset")
    return effective


def _stop(journal: Union[Journal, NoJournal], search: Optional[Search], status: str,
          detail: str, survivors: Optional[List[int]] = None) -> None:
    """Keep what is known and mark how the run ended, if this process holds the journal;
    the attempts of the evaluations in flight are taken back (they did not end the run), or
    only those of ``survivors`` when given."""
    if not journal.writing:
        return   # a refused start: the journal is not this run's to mark
    try:
        if search is not None:
            search.flush()   # what is known is a consistent prefix: keep it
    except Exception:  # noqa: BLE001 - the original error matters more
        logger.debug("could not flush the journal", exc_info=True)
    try:
        journal.release_attempts(survivors)
    except Exception:  # noqa: BLE001 - the original error matters more
        logger.debug("could not take back the attempts in flight", exc_info=True)
    try:
        journal.finish(status, detail)
    except Exception:  # noqa: BLE001 - the original error matters more
        logger.debug("could not mark the journal %s", status, exc_info=True)
