"""What a running search shows: a live bar on a terminal, a line now and then elsewhere.

On a terminal, one tqdm bar per run, redrawn in place: evaluations out of the budget, rate,
time left, and after it the best accuracy so far, the failures, the generation (synchronous
runs only: an asynchronous run has no generation that moves forward) and the candidate and
epoch being trained. Off a terminal (a log file, CI, mpirun's forwarded output) a bar would
write a line per redraw, so a plain line is written at the first result and then at most
every ``interval`` seconds. Either way the run ends with one closing line whose counts add
up and which says which split the best accuracy comes from.
"""
from __future__ import annotations

import math
import sys
import time
from typing import Callable, Mapping, Optional, TextIO

from nord.progress import ProgressDisplay

__all__ = ["SearchProgressView", "closing_line", "worker_line"]


class SearchProgressView:
    """The progress of one search run; pass :meth:`result` as ``run_search``'s ``on_result``
    and :meth:`epoch` as its ``on_epoch``, then call :meth:`close` with the summary.

    Args:
        budget: evaluations the run will make.
        mode: ``'sync'`` or ``'async'``.
        signal: what the accuracy the search sees is, e.g. ``"validation accuracy"``.
        reported: what the reported accuracy is, e.g. ``"test accuracy"``.
        stream: where the bar or the lines go (stdout).
        interval: seconds between two lines off a terminal.
        live: draw a bar (default: whether ``stream`` is a terminal).
        clock: the time source, in seconds.
    """

    def __init__(self, budget: int, mode: str = "sync", signal: str = "accuracy",
                 reported: str = "test accuracy", stream: Optional[TextIO] = None, interval: float = 30.0,
                 live: Optional[bool] = None, clock: Callable[[], float] = time.monotonic):
        self.budget = int(budget)
        self.mode = mode
        self.signal = signal
        self.reported = reported
        self.display = ProgressDisplay(stream if stream is not None else sys.stdout, interval,
                                       clock, live)
        self.live = self.display.live
        self._training = ""

    # -- engine callbacks -----------------------------------------------------------------
    def result(self, progress) -> None:
        """A result was told (``progress`` is the engine's SearchProgress)."""
        if self.live:
            bar = self._live_bar(progress.replayed)
            bar.set_postfix_str(self._postfix(progress), refresh=False)
            bar.update(progress.evaluations - bar.n)
            return
        if self.display.due():
            self.display.write(self._line(progress))

    def epoch(self, number: int, record) -> None:
        """A candidate finished an epoch: the bar names what is being trained."""
        self._training = f"candidate {number} epoch {record.epoch}"
        bar = self.display.current
        if bar is not None:
            postfix = bar.postfix or ""
            head = postfix.split(" | training ", 1)[0]
            bar.set_postfix_str(f"{head} | training {self._training}" if head
                                else f"training {self._training}")

    def close(self, summary=None) -> Optional[str]:
        """Take the bar off the screen and write the closing line (returned too)."""
        self.display.close()
        if summary is None:
            return None
        line = closing_line(summary, self.signal, self.reported)
        self.display.write(line)
        return line

    # -- what is shown --------------------------------------------------------------------
    def _live_bar(self, replayed: int):
        return self.display.bar(total=self.budget, initial=replayed, unit="eval",
                                bar_format="{n_fmt}/{total_fmt} evaluations |{bar}| "
                                           "{rate_fmt} {remaining} left{postfix}")

    def _postfix(self, progress) -> str:
        parts = [f"best {_accuracy(progress.best_accuracy)}", f"{progress.failed} failed"]
        if self.mode == "sync":
            parts.append(f"generation {progress.generation}")
        if self._training:
            parts.append(f"training {self._training}")
        return " | ".join(parts)

    def _line(self, progress) -> str:
        done_here = progress.evaluations - progress.replayed
        rate = done_here / progress.elapsed if progress.elapsed > 0 else math.nan
        left = progress.remaining
        left = "?" if math.isnan(left) else _duration(left)
        generation = f"generation {progress.generation} | " if self.mode == "sync" else ""
        pace = (f"{_rate(rate)} | {_duration(progress.elapsed)} elapsed, ~{left} left"
                if done_here > 1 else f"{_duration(progress.elapsed)} elapsed")
        return (f"{generation}{progress.evaluations}/{progress.budget} evaluations | "
                f"best {_accuracy(progress.best_accuracy)} | {progress.failed} failed | {pace}")


def closing_line(summary, signal: str = "accuracy", reported: str = "test accuracy") -> str:
    """One line: the counts (which add up), the time, the best candidate with the split its
    accuracy comes from and its reported (test) accuracy, what training in legs cost (with a
    scheduler) and what checkpoints kept, what ended the run, and the journal."""
    best, result = summary.best, summary.best_result
    if result is None:
        found = "no candidate succeeded"
    else:
        test = result.reported_accuracy
        found = (f"best: candidate {best.number}, {signal} {result.accuracy:.4f}"
                 + ("" if test is None or math.isnan(test) else f", {reported} {test:.4f}"))
    trained = ""
    if summary.epochs_trained is not None:
        trained = (f"; {summary.epochs_trained} epochs trained in {summary.legs} legs, "
                   f"checkpoints peaked at {_size(summary.checkpoint_peak_bytes or 0)}")
        if summary.unusable_checkpoints:
            trained += (f", {summary.unusable_checkpoints} could not be used (trained again "
                        "from scratch; the journal's legs say why)")
    elif summary.checkpoint_peak_bytes:
        trained = f"; checkpoints peaked at {_size(summary.checkpoint_peak_bytes)}"
    if summary.resumed_candidates:
        count, kept = summary.resumed_candidates, summary.resumed_epochs
        trained += (f"; {count} candidate{'s' if count > 1 else ''} went on from checkpoints "
                    f"({kept} epoch{'s' if kept != 1 else ''} not trained again)")
    ended = f"; stopped: {summary.stopped_by}" if summary.stopped_by else ""
    return (f"done: {summary.counts()} in {_duration(summary.wall_time)}; {found}{trained}"
            + ended + (f"; journal {summary.journal}" if summary.journal else ""))


def resumed_line(kept: Mapping[int, int]) -> str:
    """What a journal's checkpoints saved after its run was stopped, in words: the
    candidates that went on from within their training and the epochs not trained again."""
    shown = ", ".join(f"{number} (+{epochs})" for number, epochs in sorted(kept.items())[:8])
    more = f", and {len(kept) - 8} more" if len(kept) > 8 else ""
    return (f"went on from checkpoints after a stop: candidate{'s' if len(kept) > 1 else ''} "
            f"{shown}{more}; {sum(kept.values())} epochs not trained again")


def worker_line(executor) -> str:
    """The closing line's companion: where the workers ran and how they shared it."""
    devices = sorted(set(executor.devices))
    count = executor.n_workers
    return (f"{count} worker process{'es' if count > 1 else ''} on {', '.join(devices)}; "
            f"device sharing: {executor.sharing}")


def _size(count: int) -> str:
    for unit in ("bytes", "KB", "MB", "GB"):
        if count < 1024 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "bytes" else f"{count:.1f} {unit}"
        count /= 1024
    return f"{count:.1f} GB"


def _accuracy(value: float) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.4f}"


def _rate(per_second: float) -> str:
    if math.isnan(per_second) or per_second <= 0:
        return "? evaluations/s"
    if per_second >= 1:
        return f"{per_second:.1f} evaluations/s"
    return f"{1 / per_second:.1f} s/evaluation"


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(int(round(seconds)), 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"
