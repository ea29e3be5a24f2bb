"""``nord run --space nasbench201 --algorithm gdas``: a weight-sharing search from a RunConfig,
journaled as every nord run is, resumed by ``nord resume``.

The search (nord.oneshot.search) writes each epoch to the journal's ``search_epochs`` table and
a checkpoint to ``<journal>.checkpoints/search.pt``; when it ends, the trained supernet is kept
beside the journal (``<journal>.supernet.pt``, what ``--evaluation supernet`` reads), the
final cell is evaluated (``--final-evaluation``) and journaled as the run's one result, and the
checkpoint, with nothing left to resume, is removed.

Under ``mpirun -np N`` the N ranks search together, data-parallel (each its shard of every
batch, gradients averaged, the root's draws); rank 0 alone keeps the journal, the checkpoint
and the supernet; the final cell, when trained, trains data-parallel on every rank.
"""
from __future__ import annotations

import contextlib
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, Optional, Tuple

from nord.app.assembly import describe_data
from nord.app.evaluation import WeightSharing, supernet_file
from nord.errors import DiskFullError, JournalError, RunInterrupted

CHECKPOINT = "search.pt"
"""The search's checkpoint, in the journal's checkpoint folder."""


@dataclass
class WeightSharingSummary:
    """What a weight-sharing run ends with (what ``nord.app.runner.run`` returns for one)."""

    cell: str
    genome: Tuple[int, ...]
    result: Any
    epochs: int
    journal: str
    supernet: str


class _Shown:
    """Keeps each epoch in the journal and says it on ``stream``."""

    def __init__(self, journal, epochs: int, stream):
        self.journal, self.epochs, self.stream = journal, epochs, stream

    def search_epoch(self, record) -> None:
        self.journal.search_epoch(record)
        if self.stream is None:
            return
        losses = ", ".join(f"{name.replace('_', ' ')} {value:.4f}"
                           for name, value in record.metrics.items() if name.endswith("loss"))
        table = ("" if math.isnan(record.lookup_accuracy) else
                 f", table test {100 * record.lookup_accuracy:.2f} %")
        print(f"epoch {record.epoch}/{self.epochs} ({record.seconds:.1f} s): {record.cell} "
              f"({losses}{table})", file=self.stream, flush=True)


def _table(dataset: str):
    """The NAS-Bench-201 table's evaluator of ``dataset`` (loaded once for the run), or None
    off the table's data sets."""
    from nord.benchmarks.nasbench201.table import DATASETS
    if dataset not in DATASETS:
        return None
    from nord.benchmarks.nasbench201 import BenchmarkEvaluator
    return BenchmarkEvaluator(dataset=dataset)


def _lookup(table) -> Callable[[Tuple[int, ...]], float]:
    """The 200-epoch test accuracy of a cell in ``table`` (NaN without one)."""
    if table is None:
        return lambda genome: math.nan
    return lambda genome: float(table.evaluate_genome(genome).reported_accuracy)


def _final_result(config, table, curator, group, genome):
    """The final cell's result: looked up in the table, or trained stand-alone with the
    nasbench201 recipe for ``config.epochs`` (data-parallel on the search's ranks: the other
    ranks train it in ``_train_with_the_root``)."""
    from nord.benchmarks.nasbench201 import network_to_descriptor
    if config.final_evaluation == "table":     # only on the table's data sets
        return table.evaluate_genome(genome)
    return _trainer(config, curator, group).descriptor_evaluate(network_to_descriptor(genome))


def _train_with_the_root(config, curator, group) -> None:
    """A rank other than the root: train the final cell with the root when it trains one."""
    if config.final_evaluation == "train" and group.root_decides(None) is not None:
        _trainer(config, curator, group).descriptor_evaluate(None)


def _trainer(config, curator, group):
    settings = dict(curator=curator, epochs=config.epochs, seed=config.seed,
                    device=config.device, threads=config.threads)
    from nord.nn.recipe import get_recipe
    settings["recipe"] = get_recipe("nasbench201")
    if group.size == 1:
        from nord.evaluators.local import LocalEvaluator
        return LocalEvaluator(**settings)
    from nord.evaluators.distributed import DistributedEvaluator
    return DistributedEvaluator(comm=group.comm, backend=group.backend, **settings)


def run_weight_sharing(config, way: WeightSharing, env, curator, resume: bool, progress: bool,
                       stream) -> Tuple[Optional[WeightSharingSummary], Optional[JournalError]]:
    """Search, keep the supernet, evaluate and journal the final cell (see the module):
    ``(summary, refused)``, the summary on rank 0 (None on the other ranks), or on every rank
    the journal's refusal, to raise once the ranks have left MPI (nothing was written)."""
    from nord.oneshot.search import OneShotSearch
    started, refusal = None, None
    if env.is_root:
        try:
            started = _check_journal(config, way, env, curator, resume)
        except JournalError as error:
            refusal = str(error)
    # collective: the ranks refuse together, before any of them starts to search
    refusal = env.bcast(refusal)
    if refusal is not None:
        return None, JournalError(refusal)
    group = way.search_group(env)
    checkpoint = os.path.join(f"{config.journal}.checkpoints", CHECKPOINT)
    if not env.is_root:      # searches with rank 0, which keeps the records
        try:
            OneShotSearch(way.search_settings(), curator, checkpoint=checkpoint,
                          group=group).run()
            _train_with_the_root(config, curator, group)
        finally:
            group.close()
        return None, None
    try:
        return _run_on_root(config, env, curator, progress, stream, group, checkpoint,
                            *started), None
    finally:
        group.close()


def _check_journal(config, way: WeightSharing, env, curator, resume: bool):
    """Rank 0: the run's record checked against its journal, written nowhere yet:
    ``(journal, record, stored, settings, reported)``.

    Raises:
        JournalError: the journal cannot be started or resumed with this record.
    """
    from nord.benchmarks.nasbench201 import NASBench201Space
    from nord.journal import Journal, RunRecord
    settings = way.search_settings()
    selection = way.selection(curator)
    dataset, warnings = describe_data(config, curator, selection)
    for warning in warnings:
        env.print(f"warning: {warning}", file=sys.stderr)
    described = way.describe(env.size, None)
    signal, reported = way.accuracy_names(described, selection)
    described.update(signal=signal, reported=reported, selection=selection)
    record = RunRecord(algorithm=config.algorithm, parameters=asdict(settings.method_settings),
                       seed=config.seed, space=NASBench201Space().describe(),
                       evaluator=described, dataset=dataset, mode="sync", budget=1,
                       execution=config.execution(), config=config.measured(),
                       extra={"warnings": warnings} if warnings else {})
    journal = Journal(config.journal)
    try:
        stored = journal.check_start(record, resume)
    except JournalError:
        journal.close()
        raise
    record.execution.update(_where_searched(stored, way.device_name()))
    return journal, record, stored, settings, reported


def _run_on_root(config, env, curator, progress: bool, stream, group, checkpoint: str,
                 journal, record, stored, settings, reported) -> WeightSharingSummary:
    from nord.benchmarks.nasbench201 import NASBench201Space, genome_to_cell
    from nord.journal import CandidateRecord, EvaluationRecord
    from nord.oneshot.evaluator import save_supernet
    from nord.oneshot.search import OneShotSearch
    stream = (stream or sys.stdout) if progress else None
    journal.claim(record, stored)
    try:
        os.makedirs(os.path.dirname(checkpoint), exist_ok=True)
        table = _table(config.dataset)
        search = OneShotSearch(settings, curator,
                               records=_Shown(journal, settings.search_epochs, stream),
                               checkpoint=checkpoint, lookup=_lookup(table), group=group)
        outcome = search.run()
        kept = supernet_file(config.journal)
        save_supernet(search.supernet, kept, method=config.algorithm, dataset=config.dataset,
                      search_epochs=settings.search_epochs, seed=config.seed)
        genome = tuple(outcome.cell)
        trained = journal.count() > 0     # by the run this one resumes: journaled already
        if config.final_evaluation == "train":
            group.root_decides(None if trained else genome)     # the other ranks' cue
        if not trained:
            started = time.time()
            result = _final_result(config, table, curator, group, genome)
            space = NASBench201Space()
            journal.record([CandidateRecord(0, 0, genome, 0)], [EvaluationRecord(
                0, 0, 0, genome, space.identify(genome)[0], space.decode(genome).to_json(),
                None, result, None, started, time.time())])
        result = journal.evaluations()[0]
        journal.finish("finished", f"{settings.search_epochs} search epochs")
    except RunInterrupted as stop:
        journal.finish("interrupted", stop.signal_name)
        env.print(f"interrupted by {stop.signal_name}: the journal {config.journal} keeps "
                  f"every finished search epoch; continue with 'nord resume {config.journal}'",
                  file=sys.stderr)
        raise
    except DiskFullError as error:
        journal.finish("failed", f"disk full: {error}")
        raise
    except BaseException as error:
        journal.finish("crashed", f"{type(error).__name__}: {error}")
        raise
    finally:
        journal.close()
    _remove_checkpoint(checkpoint)
    _closing_line(stream, config, genome, result, reported)
    return WeightSharingSummary(genome_to_cell(genome), genome, result,
                                settings.search_epochs, config.journal, kept)


def _where_searched(stored, device: str) -> Dict[str, Any]:
    """Where the search's seconds are measured (``resolved_device``: this start's device) and
    every device its starts have searched on, in order (``searched_on``): a resume on another
    device replaces the first, and the seconds of the epochs before it were not measured there."""
    execution = {} if stored is None else stored.execution
    before = execution.get("searched_on") or (
        [execution["resolved_device"]] if "resolved_device" in execution else [])
    return {"resolved_device": device,
            "searched_on": before if before[-1:] == [device] else [*before, device]}


def _remove_checkpoint(checkpoint: str) -> None:
    """The search is journaled and its supernet kept: its checkpoint (and the folder, when
    nothing else is in it) has nothing left to resume."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(checkpoint)
    with contextlib.suppress(OSError):
        os.rmdir(os.path.dirname(checkpoint))


def _closing_line(stream, config, genome, result, reported: str) -> None:
    from nord.benchmarks.nasbench201 import genome_to_cell
    if stream is None:
        return
    figures = []
    if result.get("accuracy") is not None:
        figures.append(f"accuracy {100 * result['accuracy']:.2f} %")
    if result.get("reported_accuracy") is not None:
        figures.append(f"{reported}: {100 * result['reported_accuracy']:.2f} %")
    print(f"{config.algorithm}: final cell {genome_to_cell(genome)}"
          f"{' (' + '; '.join(figures) + ')' if figures else ''}; journal {config.journal}, "
          f"supernet {supernet_file(config.journal)}", file=stream, flush=True)
