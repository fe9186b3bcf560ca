"""Counting what the library asks of the storage: a ``pyarrow.fs.PyFileSystem`` handler that
passes every call on to the local disk (``fault_support.FaultyHandler``, never armed) and
counts directory listings (the selector form of ``get_file_info``, as ``list``), ``stat``
calls (its path form) and opened files. Counts, never time."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.fs as pafs
from fault_support import FaultyHandler

__all__ = ["CountingHandler", "counted_calls"]


@dataclass
class CountingHandler(FaultyHandler):
    """``FaultyHandler`` (never armed) that also counts ``stat`` calls and keeps the paths
    of the files opened."""

    opened: list[str] = field(default_factory=list)
    stats: Counter[str] = field(default_factory=Counter)

    def reset(self) -> None:
        self.arm(None)
        self.opened.clear()
        self.stats.clear()

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        self.stats["stat"] += len(paths)
        return super().get_file_info(paths)

    def open_input_file(self, path: str) -> pa.NativeFile:
        self.opened.append(path)
        return super().open_input_file(path)

    def open_input_stream(self, path: str) -> pa.NativeFile:
        self.opened.append(path)
        return super().open_input_stream(path)


def counted_calls(handler: CountingHandler, action: Callable[[], object]
                  ) -> tuple[Counter[str], list[str], object]:
    """The calls (listings as ``list``, opens as ``read``, ``stat``) ``action`` made, the
    files it opened, and what it returned."""
    handler.reset()
    result = action()
    return handler.calls + handler.stats, list(handler.opened), result
