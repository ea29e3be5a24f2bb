"""What the view shows of one candidate: its result, descriptor and drawing (the report's
layered layout, drawn by the page as SVG), learning curves with the callbacks' per-layer
signals, legs, checkpoints, and the per-step series where the journal has them.

    view = candidate_view(entry, 7)    # None when the run has no candidate 7
"""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Dict, List, Optional

from nord.architecture.descriptor import NeuralDescriptor
from nord.errors import JournalError, NordError
from nord.report.architecture import layer_colour, layered_layout
from nord.serve.catalogue import Entry
from nord.serve.runs import json_ready, open_reader

__all__ = ["candidate_view"]



def drawing(descriptor: Dict[str, Any]) -> Dict[str, Any]:
    """The report's layered layout of a serialised descriptor: boxes (centre, size, lines,
    colour) and edge routes, in inches with y growing upwards; or the reason it cannot be
    drawn."""
    try:
        layout = layered_layout(NeuralDescriptor.from_dict(descriptor))
    except (NordError, KeyError, TypeError, ValueError) as error:
        return {"error": f"the descriptor cannot be drawn: {error}"}
    return {
        "nodes": [{"name": node.name, "kind": node.kind, "lines": node.lines, "x": node.x,
                   "y": node.y, "width": node.width, "height": node.height,
                   "colour": (layer_colour(node.layer_type) if node.kind == "layer"
                              else "#ffffff")}
                  for node in layout.nodes.values()],
        "edges": [{"source": source, "target": target, "route": route}
                  for source, target, route in layout.edges],
        "bounds": list(layout.bounds),
    }


def _checkpoints(path: Path, candidate: int) -> List[Dict[str, Any]]:
    """The checkpoint files the run keeps for the candidate (names and sizes; never read)."""
    folder = Path(f"{path}.checkpoints")
    if not folder.is_dir():
        return []
    found = []
    for file in sorted(folder.iterdir()):
        stem = file.name.split(".")[0]
        digits = "".join(ch for ch in stem if ch.isdigit())
        if digits and int(digits) == candidate and file.is_file():
            found.append({"name": file.name, "bytes": file.stat().st_size})
    return found


def _series(reader, candidate: int) -> Dict[str, Any]:
    """The candidate's per-step series (``JournalReader.series``) as a names-by-steps grid:
    ``{"names", "steps", "values"}``, a step labelled ``epoch:step`` (steps count from 0 in
    each epoch) and ``values[name][step]``; no names for a journal without series."""
    rows = reader.series(candidate)
    names = sorted({row["name"] for row in rows})
    steps = sorted({(row["epoch"], row["step"]) for row in rows})
    index = {s: i for i, s in enumerate(steps)}
    grid = {n: [None] * len(steps) for n in names}
    for row in rows:
        if math.isfinite(row["value"]):
            grid[row["name"]][index[(row["epoch"], row["step"])]] = row["value"]
    return {"names": names, "steps": [f"{epoch}:{step}" for epoch, step in steps],
            "values": [grid[n] for n in names]}


def candidate_view(entry: Entry, candidate: int) -> Optional[Dict[str, Any]]:
    """Everything the candidate page shows; None when the run has no such candidate.

    Raises:
        JournalError: the journal cannot be read.
    """
    with open_reader(entry) as reader:
        asked = reader.query("SELECT candidate, generation, genome, asked FROM candidates "
                              "WHERE candidate = ?", (candidate,))
        evaluation = reader.evaluation(candidate)
        if not asked and evaluation is None:
            return None
        descriptor = None
        if evaluation is not None and evaluation.get("descriptor"):
            try:
                descriptor = json.loads(evaluation["descriptor"])
            except ValueError as error:
                raise JournalError(f"'{entry.path}' holds a descriptor of candidate "
                                   f"{candidate} that is not JSON ({error})") from error
        genome = (evaluation or {}).get("genome")
        if genome is None and asked:
            genome = json.loads(asked[0]["genome"])
        legs = [leg for leg in reader.legs() if leg["candidate"] == candidate]
        epochs = reader.epochs(candidate)
        series = _series(reader, candidate)
        state = reader.state()
    errors = []
    if evaluation is not None and evaluation.get("error"):
        errors.append(evaluation["error"])
    errors += [leg["error"] for leg in legs if leg.get("error")]
    errors += [leg["detail"] for leg in legs if leg.get("detail")]
    for epoch in epochs:   # a callback that failed says so in its metrics
        errors += [f"epoch {epoch['epoch']}: {key}: {value}"
                   for key, value in epoch["metrics"].items()
                   if isinstance(value, str) and "error" in key.lower()]
    return json_ready({
        "candidate": candidate, "run_state": state,
        "generation": asked[0]["generation"] if asked else evaluation["generation"],
        "asked": asked[0]["asked"] if asked else None,
        "evaluation": None if evaluation is None else {
            key: value for key, value in evaluation.items()
            if key not in ("genome", "descriptor")},
        "genome": genome, "descriptor": descriptor,
        "drawing": None if descriptor is None else drawing(descriptor),
        "epochs": epochs, "legs": [{key: value for key, value in leg.items() if key != "result"}
                                   for leg in legs],
        "checkpoints": _checkpoints(entry.path, candidate), "series": series,
        "errors": errors,
    })
