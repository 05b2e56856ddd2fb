"""The progress line of the commands that read or send many events."""
from __future__ import annotations

import sys
import time


class Progress:
    """A progress line on stderr (events, events/s), shown once a run has lasted `after_s` seconds.
    Library code is given it as an object with tick(n) and done(); only the CLI prints. On a
    terminal the line is redrawn in place; elsewhere (a log file: `make run`'s .run/floor.log) it
    is one line per look, at most one every `LOG_INTERVAL_S`, so the log reads with wc and tail."""

    LOG_INTERVAL_S = 10.0

    def __init__(self, enabled: bool = True, label: str = "replayed", after_s: float = 2.0, stream=None,
                 every: int = 10_000, interval_s: float = 1.0):
        self.enabled = enabled
        self.every = every  # events between two looks at the clock (a replay ticks millions)
        self.interval_s = interval_s
        self.label = label
        self.after_s = after_s
        self.stream = stream or sys.stderr
        self.in_place = bool(getattr(self.stream, "isatty", lambda: False)())
        if not self.in_place:
            self.interval_s = max(interval_s, self.LOG_INTERVAL_S)
        self.start = self.last = time.monotonic()
        self.count = 0
        self.shown = False
        self._next_check = every

    def tick(self, n: int = 1) -> None:
        self.count += n
        if self.count < self._next_check or not self.enabled:
            return
        self._next_check = self.count + self.every
        now = time.monotonic()
        if now - self.start >= self.after_s and now - self.last >= self.interval_s:
            self.last = now
            self.shown = True
            rate = self.count / max(now - self.start, 1e-9)
            line = f"{self.label} {self.count:,} events  {rate:,.0f} events/s"
            if self.in_place:
                print(f"\r{line}", end="", file=self.stream, flush=True)
            else:
                print(line, file=self.stream, flush=True)

    def done(self) -> None:
        if self.enabled and (self.shown or self.after_s == 0):
            elapsed = max(time.monotonic() - self.start, 1e-9)
            line = f"{self.label} {self.count:,} events in {elapsed:.1f} s ({self.count / elapsed:,.0f} events/s)"
            print(f"\r{line}" if self.in_place else line, file=self.stream, flush=True)
