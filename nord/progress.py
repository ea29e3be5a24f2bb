"""How nord shows progress: a bar redrawn in place on a terminal, a plain line now and then
anywhere else (a log file, CI, mpirun's forwarded output), where a redrawn bar would write a
line per redraw. The search's view, a download's and an epoch's steps are all drawn by it::

    display = ProgressDisplay(sys.stderr, interval=30.0)
    if display.live:
        display.bar(total=100, unit="step").update(1)
    elif display.due():
        display.write("step 1/100")
    display.close()
"""
from __future__ import annotations

import sys
import time
from typing import Callable, Optional, TextIO

__all__ = ["ProgressDisplay"]


class ProgressDisplay:
    """One place progress goes: a tqdm bar when ``stream`` is a terminal, else lines.

    Args:
        stream: where the bar or the lines go (stderr by default).
        interval: the fewest seconds between two lines off a terminal.
        clock: the time source, in seconds.
        live: draw a bar (default: whether ``stream`` is a terminal).
    """

    def __init__(self, stream: Optional[TextIO] = None, interval: float = 30.0,
                 clock: Callable[[], float] = time.monotonic, live: Optional[bool] = None):
        self.stream = stream if stream is not None else sys.stderr
        self.interval = float(interval)
        self.clock = clock
        self.live = bool(getattr(self.stream, "isatty", lambda: False)()) if live is None else live
        self.current = None   # the open bar, if any
        self._last_line: Optional[float] = None
        self._gone = False   # the stream was a pipe whose reader went away

    def bar(self, **options):
        """The open tqdm bar, opened with ``options`` (tqdm's) when there is none; the bar
        leaves the screen when closed."""
        if self.current is None:
            from tqdm import tqdm   # imported here: only a terminal needs it
            self.current = tqdm(file=self.stream, dynamic_ncols=True, leave=False, **options)
        return self.current

    def due(self) -> bool:
        """Whether a line may be written now: the first time, then once ``interval`` seconds
        have passed since the last (or since :meth:`wait`)."""
        now = self.clock()
        if self._last_line is not None and now - self._last_line < self.interval:
            return False
        self._last_line = now
        return True

    def wait(self) -> None:
        """Count the interval from now, as if a line had just been written."""
        self._last_line = self.clock()

    def write(self, line: str) -> None:
        """Write one line (flushed, so that a log shows it at once); nothing more once the
        reader of a pipe went away (the work goes on)."""
        if self._gone:
            return
        try:
            self.stream.write(line + "\n")
            self.stream.flush()
        except BrokenPipeError:
            self._gone = True

    def close(self) -> None:
        """Take the bar off the screen, if one is open."""
        if self.current is not None:
            self.current.close()
            self.current = None
