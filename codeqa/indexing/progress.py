"""How far one stage of an index run is, on stderr (a bar on a terminal, lines elsewhere), and to
a listener (a server's index job, whose status an agent reads)."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable

from tqdm import tqdm

# Off a terminal (a log file, `make run`, a service), a stage's progress is a line at every
# PROGRESS_STEP percent, or after PROGRESS_EVERY_S seconds without one, whichever comes first.
PROGRESS_STEP = 10
PROGRESS_EVERY_S = 10.0

# Hears (done, total) of one stage at its start and after every step. It may raise to stop the
# run (a cancelled job): the run stops between two steps, as if it had been killed there.
StageListener = Callable[[int, int], None]


def _duration(seconds: float) -> str:
    """`42s`, `3m05s`, `1h02m`: short enough for a progress line."""
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


class Progress:
    """How far one stage of a run is (files parsed, rows embedded), on stderr: a bar on a
    terminal; elsewhere, where a bar's carriage returns would be one endless line or nothing,
    a line per PROGRESS_STEP percent or PROGRESS_EVERY_S seconds, with the rate and the time
    left, and one when the stage is done. `show=False` says nothing; `listener` hears every
    step either way."""

    def __init__(
        self, desc: str, total: int, unit: str, show: bool | None, listener: StageListener | None = None
    ) -> None:
        self.desc, self.total, self.unit = desc, total, unit
        self.enabled = show is not False and total > 0
        self.listener = listener
        if listener is not None:
            listener(0, total)
        self.bar = tqdm(total=total, unit=unit, desc=desc) if self.enabled and sys.stderr.isatty() else None
        self.done = 0
        self.started = self.last_line = time.monotonic()
        self.last_step = 0

    def update(self, count: int) -> None:
        self.done += count
        if self.listener is not None:
            self.listener(self.done, self.total)
        if self.bar is not None:
            self.bar.update(count)
        elif self.enabled and self.done < self.total:
            now = time.monotonic()
            step = self.done * 100 // self.total // PROGRESS_STEP
            if step > self.last_step or now - self.last_line >= PROGRESS_EVERY_S:
                self.last_step, self.last_line = step, now
                self._line(now)

    def _line(self, now: float) -> None:
        elapsed = now - self.started
        rate = self.done / elapsed if elapsed > 0 else 0.0
        left = f", about {_duration((self.total - self.done) / rate)} left" if rate > 0 else ""
        print(
            f"{self.desc}: {self.done:,}/{self.total:,} {self.unit}s ({self.done * 100 // self.total}%), "
            f"{rate:,.1f} {self.unit}s/s{left}",
            file=sys.stderr,
            flush=True,
        )

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
        elif self.enabled and self.done:
            print(
                f"{self.desc}: {self.done:,}/{self.total:,} {self.unit}s done in "
                f"{_duration(time.monotonic() - self.started)}",
                file=sys.stderr,
                flush=True,
            )
