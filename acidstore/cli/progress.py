"""Progress of long work (compactions, checks) on the terminal, and nothing elsewhere.

A bar redrawn in place helps a person watching; in cron logs, CI output or a pipe it would
only be noise, so off a terminal it prints nothing (the command's summary still does). No
progress library is needed for one line of text.
"""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["ProgressBar"]

_BAR = 30


class ProgressBar:
    """``[#####.....] 3/10 buckets`` on ``out`` (stderr) when it is a terminal; call it with
    (what, done, total) as work advances."""

    def __init__(self, unit: str = "buckets", out: TextIO | None = None) -> None:
        self._out = out if out is not None else sys.stderr
        self._unit = unit
        self._tty = self._out.isatty()

    @property
    def active(self) -> bool:
        return self._tty

    def __call__(self, what: str, done: int, total: int) -> None:
        if not self._tty:
            return
        filled = _BAR * done // max(total, 1)
        line = (f"  {what:<40} [{'#' * filled}{'.' * (_BAR - filled)}] "
                f"{done}/{total} {self._unit}")
        self._out.write("\r" + line + ("\n" if done >= total else ""))
        self._out.flush()
