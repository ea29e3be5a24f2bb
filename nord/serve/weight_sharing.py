"""A weight-sharing search on its run's page: the epochs its journal gained after a cursor,
in the benchmark's order of edges and operations, for the page to draw each edge's
distribution, the derived cell's table accuracy (or the mean losses) and the cells.

    search = search_delta(reader, after=cursor.search)   # None: no new epoch
    search["edges"], search["ops"], search["epochs"][0]["weights"]   # [edge][op] probabilities

The report draws the same in PNG (nord.report.weight_sharing).
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Optional, Sequence

from nord.benchmarks.nasbench201.cells import EDGE_NAMES, OPS
from nord.journal.reads import JournalReader

__all__ = ["search_delta"]


def _benchmark_order(names: Iterable[str], order: Sequence[str]) -> List[str]:
    """``names`` in the benchmark's ``order``; any it does not name after them, sorted."""
    return sorted(set(names), key=lambda name: (order.index(name), "") if name in order
                  else (len(order), name))


def search_delta(reader: JournalReader, after: int = 0) -> Optional[Dict[str, Any]]:
    """The search epochs journaled after epoch ``after``, or None where there is none (a run
    that shares no weights, or no new epoch).

    Returns:
        ``edges`` and ``ops`` (the benchmark's order), and ``epochs``: one dict each with
        ``epoch``, ``cell``, ``weights`` (a list per edge of each operation's probability, in
        that order; None where the epoch has none), ``metrics``, ``lookup_accuracy`` (None
        off the table) and ``seconds``; and ``last``, the last epoch sent.
    """
    rows = reader.search_epochs(after=after)
    if not rows:
        return None
    edges = _benchmark_order((edge for row in rows for edge in row["weights"]), EDGE_NAMES)
    ops = _benchmark_order((op for row in rows for ops in row["weights"].values() for op in ops),
                          OPS)
    epochs = [{
        "epoch": row["epoch"], "cell": row["cell"],
        "weights": [[row["weights"].get(edge, {}).get(op) for op in ops] for edge in edges],
        "metrics": row["metrics"], "lookup_accuracy": row["lookup_accuracy"],
        "seconds": row["seconds"]} for row in rows]
    return {"edges": edges, "ops": ops, "epochs": epochs, "last": rows[-1]["epoch"]}
