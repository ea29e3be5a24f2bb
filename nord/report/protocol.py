"""What a run's accuracies measure: the search signal, the reported figure, and whether the
architectures were selected on test data.

When a run had no validation split, the search signal *is* the test accuracy, and the best
architecture's test accuracy is optimistically biased: the report must say so where nobody
can miss it::

    from nord.report.protocol import protocol_of

    protocol = protocol_of(run.metadata, run.evaluations)
    protocol.signal            # 'validation accuracy' (the evaluator's own words when it gave them)
    protocol.selected_on_test  # True: selection used test data
    protocol.warnings          # the run's own warnings, as journaled

Details (the evidence, any one of which is enough): docs/report.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Iterable, List, Mapping

__all__ = ["Protocol", "protocol_of"]


@dataclass(frozen=True)
class Protocol:
    """How a run's accuracies are to be read.

    Attributes:
        signal: what the search selected by (``accuracy`` in the journal).
        reported: what the run reports besides it (``reported_accuracy``), never seen by the
            search.
        selected_on_test: the signal was measured on test data.
        reasons: why ``selected_on_test`` is True (empty when it is False).
        warnings: the run's own warnings, from its metadata.
    """

    signal: str
    reported: str
    selected_on_test: bool
    reasons: List[str] = field(default_factory=list)
    warnings: List[str] = field(default_factory=list)
    measure: str = "accuracy"

    @property
    def scores(self) -> bool:
        """Whether the signal is a zero-cost proxy's score (mapped into (0, 1)), not an
        accuracy: every place that shows it must say so."""
        return self.measure == "proxy score"

    @property
    def selection(self) -> str:
        """'test' or 'validation': the data the architectures were selected on; 'proxy'
        where untrained networks were scored."""
        if self.scores:
            return "proxy"
        return "test" if self.selected_on_test else "validation"

    def to_json(self) -> Dict[str, Any]:
        return {"signal": self.signal, "reported": self.reported, "selection": self.selection,
                "measure": self.measure,
                "selected_on_test": self.selected_on_test, "reasons": list(self.reasons),
                "warnings": list(self.warnings)}


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _is_zero(value: Any) -> bool:
    try:
        return value is not None and not isinstance(value, bool) and float(value) == 0.0
    except (TypeError, ValueError):
        return False


def protocol_of(metadata: Mapping[str, Any],
                evaluations: Iterable[Mapping[str, Any]] = ()) -> Protocol:
    """The protocol of a run, from its journaled metadata and (optionally) its evaluations."""
    evaluator = _mapping(metadata.get("evaluator"))
    dataset = _mapping(metadata.get("dataset"))
    extra = _mapping(metadata.get("extra"))
    warnings = [str(w) for w in (extra.get("warnings") or []) if w]
    signal = str(evaluator.get("signal") or "validation accuracy")
    reported = str(evaluator.get("reported") or "test accuracy")

    reasons: List[str] = []
    selection = evaluator.get("selection")
    if selection == "test":
        reasons.append("the run selected on its test split (it had no validation split)")
    elif selection is None and any("test accuracy" in w.lower() and "validation" in w.lower()
                                   for w in warnings):   # a journal from before the field
        reasons.append("the run warned that it had no validation split")
    validation = _mapping(dataset.get("validation"))
    if _is_zero(validation.get("fraction")) or _is_zero(dataset.get("n_valid")):
        reasons.append("the data set's validation split is empty (valid_fraction 0)")
    if signal.lower().startswith("test"):
        reasons.append(f"the evaluator's search signal is {signal!r}")
    if any(_mapping(row.get("metrics")).get("selection") == "test" for row in evaluations):
        reasons.append("its evaluations were scored on test data (metrics.selection 'test')")
    proxy = (selection == "proxy" or "score" in signal.lower() or evaluator.get("evaluator")
             in ("ZeroCostEvaluator", "ProxyTableEvaluator"))
    if proxy:   # untrained networks scored: no split was selected on, nothing is an accuracy
        return Protocol(signal=signal, reported=reported, selected_on_test=False,
                        warnings=warnings, measure="proxy score")
    if reasons and not signal.lower().startswith("test"):
        signal = "test accuracy (no validation split)"
    return Protocol(signal=signal, reported=reported, selected_on_test=bool(reasons),
                    reasons=reasons, warnings=warnings)
