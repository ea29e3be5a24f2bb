"""Run journals made with the Journal write API, for the report tests; and what a running
search has journaled so far, for the tests that kill one.

    path = write_journal(tmp_path / "ga.db", [[ev(0.5, 1200), ev(None)], [ev(0.7, 900)]])

``write_journal`` takes one list of evaluation specs per generation (see its docstring);
``epochs`` adds learning curves and callback metrics, ``dataset``, ``evaluator`` and
``extra`` go into the run's metadata as ``nord run`` writes them. ``search_journal`` starts a
weight-sharing search's journal with epochs made by ``search_epoch``.
"""
from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

from nord.architecture.descriptor import NeuralDescriptor
from nord.benchmarks.nasbench201.cells import EDGE_NAMES, OPS, genome_to_cell
from nord.evaluators.result import EpochRecord, EvaluationResult
from nord.journal import CandidateRecord, EvaluationRecord, Journal, RunRecord
from nord.journal.records import SearchEpochRecord


def conv_descriptor(width: int) -> NeuralDescriptor:
    descriptor = NeuralDescriptor()
    descriptor.add_layer_sequential("conv2d", {"out_channels": width, "kernel_size": 3}, "conv")
    descriptor.add_layer_sequential("relu", name="relu")
    return descriptor


def ev(accuracy, n_params=1000, **extra) -> Dict[str, Any]:
    """One evaluation spec: accuracy (None: failed), n_params, optionally ``reported``,
    ``cached`` (the sequence it repeats) and ``generation`` (overrides the list it is in)."""
    return {"accuracy": accuracy, "n_params": n_params, **extra}


def write_journal(path, generations: Sequence[Sequence[Dict[str, Any]]], algorithm="genetic",
                  parameters=None, status="finished", mode="sync",
                  dataset: Optional[Dict[str, Any]] = None,
                  evaluator: Optional[Dict[str, Any]] = None,
                  extra: Optional[Dict[str, Any]] = None,
                  epochs: Optional[Dict[int, List[EpochRecord]]] = None,
                  with_descriptors: bool = True) -> Path:
    """A journal with the given evaluations.

    ``generations`` is a list (one per generation) of lists of evaluations (:func:`ev`).
    Generation g's evaluation i starts at ``1000 + 100 g + 0.5 i`` and takes ``1 + 0.25 i``
    seconds. ``epochs`` maps a candidate (its sequence number) to its epochs. All
    evaluations are recorded in one commit, so large journals are quick to make.
    """
    journal = Journal(path)
    journal.start(RunRecord(algorithm, parameters or {"population_size": 4}, 7, {"space": "toy"},
                            evaluator=evaluator or {}, dataset=dataset or {"name": "synthetic"},
                            mode=mode, budget=99, extra=extra or {},
                            execution={"ranks": 3, "groups": 2, "workers": 2}))
    records, sequence = [], 0
    for generation, evaluations in enumerate(generations):
        for index, spec in enumerate(evaluations):
            cached_from = spec.get("cached")
            width = (cached_from if cached_from is not None else sequence) + 1
            descriptor = conv_descriptor(width) if with_descriptors else None
            key = descriptor.hash if descriptor is not None else str(width)
            if spec["accuracy"] is None:
                result = EvaluationResult.failure("synthetic failure", train_time=0.5)
            else:
                result = EvaluationResult(accuracy=spec["accuracy"], n_params=spec["n_params"],
                                          train_time=2.0, eval_time=0.25, epochs=1,
                                          reported_accuracy=spec.get("reported"),
                                          metrics=spec.get("metrics") or {})
            started = 1000.0 + 100.0 * generation + 0.5 * index
            records.append(EvaluationRecord(
                sequence, sequence, spec.get("generation", generation), [width, 3], key,
                descriptor.to_json() if descriptor is not None else None, 1 + index % 2, result,
                cached_from, started, started + 1.0 + 0.25 * index))
            sequence += 1
    curves = [(candidate, record, 1) for candidate, records_of in (epochs or {}).items()
              for record in records_of]
    journal.record([], records, curves)
    if status != "running":
        journal.finish(status)
    else:   # a run whose writer is still at work: leave it open, as a live run is
        journal._writing = False
    journal.close()
    return Path(path)


def journaled_evaluations(journal) -> int:
    """Evaluations committed to ``journal`` so far (0 while it does not exist yet), read
    without disturbing the process that writes it."""
    try:
        connection = sqlite3.connect(f"file:{journal}?mode=ro", uri=True, timeout=5)
        try:
            return connection.execute("SELECT COUNT(*) FROM evaluations").fetchone()[0]
        finally:
            connection.close()
    except sqlite3.Error:
        return 0


def search_epoch(epoch: int, lookup: Optional[float] = None) -> SearchEpochRecord:
    """A weight-sharing search's epoch: each edge's distribution leans more each epoch toward
    the operation of the edge's number (so every edge and operation has its own values),
    written with its edges and operations in alphabetical order, as the journal's JSON keeps
    them; ``lookup``: the table accuracy (None: off the table)."""
    weights, genome = {}, []
    for e, edge in sorted(enumerate(EDGE_NAMES), key=lambda item: item[1]):
        raw = {op: 1.0 + (epoch * (e + 1) if o == e % len(OPS) else o / 10)
               for o, op in enumerate(OPS)}
        total = sum(raw.values())
        weights[edge] = {op: raw[op] / total for op in sorted(raw)}
    genome = [e % len(OPS) for e in range(len(EDGE_NAMES))]
    return SearchEpochRecord(epoch, genome_to_cell(genome), tuple(genome), weights,
                             {"weight_loss": 2.3 / epoch, "arch_loss": 2.2 / epoch,
                              "lr": 0.025, "entropy": float("nan")},
                             float("nan") if lookup is None else lookup, 0.5 + epoch / 10)


def search_journal(path, epochs: int, dataset: str = "cifar10", lookup: bool = True,
                   finish: bool = True, of: Optional[int] = None,
                   final: Optional[EvaluationResult] = None,
                   status: str = "finished") -> Journal:
    """A gdas search's journal with ``epochs`` epochs (``lookup``: with table accuracies),
    ended with ``status`` and closed, or, with ``finish=False``, left open as a live run's is
    (the caller adds epochs with ``journal.search_epoch`` and finishes it). ``of``: the search
    epochs its run record names (None: it names none); ``final``: the final cell's result,
    journaled as the run's one evaluation."""
    journal = Journal(path)
    evaluator = {"evaluator": "weight sharing", "method": "gdas",
                 "signal": "validation accuracy", "reported": "test accuracy"}
    if of is not None:
        evaluator["search_epochs"] = of
    journal.start(RunRecord("gdas", {}, 0, {"space": "NASBench201Space"}, evaluator=evaluator,
                            dataset={"name": dataset}, mode="sync", budget=1, extra={},
                            execution={"ranks": 1, "groups": 1, "workers": 1}))
    for epoch in range(1, epochs + 1):
        journal.search_epoch(search_epoch(epoch, 0.5 + epoch / 100 if lookup else None))
    if final is not None:
        genome = search_epoch(max(epochs, 1)).genome
        journal.record([CandidateRecord(0, 0, list(genome), 0)], [EvaluationRecord(
            0, 0, 0, list(genome), "0", None, None, final, None, 1.0, 2.0)])
    if finish:
        journal.finish(status, f"{epochs} search epochs")
        journal.close()
    return journal
