"""A weight-sharing search in the view: its line's facts (epochs searched of the run's, the
latest derived cell, its table accuracy, the final cell's result, and a sentence that says
where the search stands) and, on its run's page, the epochs its journal gained after a
cursor, in the benchmark's order of edges and operations, for the page to draw each edge's
distribution, the derived cell's table accuracy (or the mean losses) and the cells.

    read = search_read(reader, summary) if is_search(summary) else None
    line["search"] = search_line(summary, read, state, path)     # what the pages say of it
    search = search_delta(reader, after=cursor.search)   # None: no new epoch
    search["edges"], search["ops"], search["epochs"][0]["weights"]   # [edge][op] probabilities

The report draws the same in PNG (nord.report.weight_sharing).
"""
from __future__ import annotations

import math
from typing import Any, Dict, Mapping, Optional

from nord.benchmarks.nasbench201.cells import EDGE_NAMES, OPS, in_benchmark_order
from nord.journal.reads import JournalReader
from nord.serve.prerender import percent

__all__ = ["is_search", "search_read", "search_line", "search_delta"]

SEARCH_EVALUATOR = "weight sharing"
"""The ``evaluator`` a weight-sharing search's run record names."""


def is_search(meta: Mapping[str, Any]) -> bool:
    """Whether a run's metadata (or summary) is a weight-sharing search's."""
    evaluator = meta.get("evaluator")
    return isinstance(evaluator, dict) and evaluator.get("evaluator") == SEARCH_EVALUATOR


def _real(value: Any) -> Optional[float]:
    return float(value) if isinstance(value, (int, float)) and math.isfinite(value) else None


def search_read(reader: JournalReader, summary: Mapping[str, Any]) -> Dict[str, Any]:
    """What a search's line needs: its latest epoch (``epoch``, 0 before the first; ``cell``;
    ``lookup_accuracy``), as the run's summary (``reader.summary()``) says it, and its one
    evaluation (``final``, None before the final cell is evaluated), read in one short query."""
    read: Dict[str, Any] = {"epoch": summary.get("search_epochs_done") or 0,
                            "cell": summary.get("latest_cell"),
                            "lookup_accuracy": _real(summary.get("latest_lookup_accuracy")),
                            "final": None}
    final = reader.query("SELECT accuracy, reported_accuracy, status, error FROM evaluations "
                         "ORDER BY sequence LIMIT 1")
    if final:
        read["final"] = {"status": final[0]["status"], "error": final[0]["error"],
                         "accuracy": _real(final[0]["accuracy"]),
                         "reported_accuracy": _real(final[0]["reported_accuracy"])}
    return read


def _result_text(final: Mapping[str, Any], evaluator: Mapping[str, Any]) -> str:
    """The final cell's result in the run record's own names of its two accuracies."""
    if final["status"] != "ok":
        return f"{final['status']}: {final['error'] or 'no reason recorded'}"
    figures = [f"{name} {percent(final[key])}" for key, name in (
        ("accuracy", evaluator.get("signal") or "accuracy"),
        ("reported_accuracy", evaluator.get("reported") or "reported accuracy"))
        if final[key] is not None]
    return "; ".join(figures) or "ok (no accuracy recorded)"


def _progress(state: str, done: int, of: str, final: Optional[Mapping[str, Any]],
              detail: str, path: str) -> str:
    """Where the search stands, in one sentence."""
    searched = f"{done} of {of} epochs"
    resume = f"nord resume {path}"
    unevaluated = (", before the final cell was evaluated"
                   if final is None and of != "?" and done >= int(of) else "")
    if state == "running":
        if final is None and of != "?" and done >= int(of):
            return f"searched {searched}; evaluating the final cell"
        return f"searching: {searched} done"
    if state == "finished":
        return (f"finished: {searched} searched" + ("" if final is not None
                                                    else ", no final cell evaluated"))
    if state == "interrupted":
        how = f" by {detail}" if detail else ""
        return f"interrupted{how} after {searched}{unevaluated}; {resume}"
    if state == "killed":
        return f"killed (its writer stopped) after {searched}{unevaluated}; {resume}"
    reason = f" ({detail})" if detail else ""
    return f"{state}{reason} after {searched}{unevaluated}; {resume}"


def search_line(summary: Mapping[str, Any], read: Mapping[str, Any], state: str,
                path: str) -> Dict[str, Any]:
    """What the run list and the run's page say of a search, from its summary and
    :func:`search_read`.

    Returns:
        ``method``, ``epochs`` (searched), ``of`` (the run's search epochs; None where the
        record does not say), ``cell`` and ``table_accuracy`` (the latest epoch's; None before
        the first, and the accuracy off the table), ``final`` (the one evaluation's status,
        error and accuracies, once there is one), ``progress`` (a sentence: e.g. "interrupted
        by SIGINT after 3 of 6 epochs; nord resume g.db") and ``facts``: [name, text] pairs for
        the run's page.
    """
    evaluator = summary.get("evaluator") or {}
    of = evaluator.get("search_epochs")
    of = of if isinstance(of, int) else None
    final = read["final"]
    method = evaluator.get("method") or summary.get("algorithm")
    finished = state == "finished" and final is not None
    facts = [["method", method or "-"],
             ["search epochs", f"{read['epoch']} of {of if of is not None else '?'}"],
             ["final cell" if finished else "latest cell", read["cell"] or "-"]]
    if read["lookup_accuracy"] is not None:
        facts.append(["its table accuracy", percent(read["lookup_accuracy"])])
    if final is not None:
        facts.append(["final result", _result_text(final, evaluator)])
    return {
        "method": method, "epochs": read["epoch"], "of": of, "cell": read["cell"],
        "table_accuracy": read["lookup_accuracy"], "final": final,
        "progress": _progress(state, read["epoch"], "?" if of is None else str(of), final,
                              summary.get("status_detail") or "", path),
        "facts": facts,
    }


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
    edges = in_benchmark_order((edge for row in rows for edge in row["weights"]), EDGE_NAMES)
    ops = in_benchmark_order((op for row in rows for ops in row["weights"].values() for op in ops),
                          OPS)
    epochs = [{
        "epoch": row["epoch"], "cell": row["cell"],
        "weights": [[row["weights"].get(edge, {}).get(op) for op in ops] for edge in edges],
        "metrics": row["metrics"], "lookup_accuracy": row["lookup_accuracy"],
        "seconds": row["seconds"]} for row in rows]
    return {"edges": edges, "ops": ops, "epochs": epochs, "last": rows[-1]["epoch"]}
