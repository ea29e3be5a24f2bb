"""The search engine: one loop for every search nord runs (see :mod:`~nord.search.engine.run`).

Rooms, each importing only those listed before it: ``checkpoints`` (where candidates in
training leave their checkpoints, if anywhere), ``outcomes`` (the records a run produces),
``stopping`` (the limits that end a run), ``settings`` (a run's settings in three groups),
``legs`` (the ledger of a scheduler's legs of training), ``loop`` (:class:`Search`,
ask/identify/evaluate/tell, doing what its scheduler decides), ``replay`` (resuming from a
journal), ``run`` (:func:`run_search`, which starts and drives the loop)::

    from nord.search.engine import Limits, Training, run_search
    summary = run_search(algorithm, evaluator, journal="runs/rea.db", limits=Limits(budget=100))
"""
from nord.search.engine.outcomes import MODES, NO_KEY, Outcome, RunInfo, SearchProgress, SearchSummary
from nord.search.engine.run import run_record, run_search
from nord.search.engine.settings import Limits, Reporting, Training

__all__ = ["run_search", "run_record", "Limits", "Training", "Reporting", "RunInfo",
           "SearchSummary", "SearchProgress", "Outcome", "MODES", "NO_KEY"]
