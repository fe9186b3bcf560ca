"""Handing the memory a finished compaction unit freed back to the operating system.

A unit's ORC readers and writer allocate their stream buffers with the C library's
``malloc`` (ORC C++ does not use Arrow's memory pool), tens of MB per unit, on whatever
thread runs it. glibc keeps what they free in per-thread arenas for reuse instead of
returning it, so a process that compacts bucket after bucket (and a minor compaction before a
major one) stays at the resident size of its largest moment plus this retained memory: at
10M rows 140-160 MB of free but resident memory before a major compaction even started.
``release_free_memory`` returns it: Arrow's pool gives back its unused pages, and glibc's
``malloc_trim`` its free arena memory. Both only release memory nobody holds, so calling
this while another unit is running is safe; elsewhere (no glibc) the trim is skipped.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from collections.abc import Callable

import pyarrow as pa

__all__ = ["release_free_memory"]


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim`` (None where the C library has none: musl, macOS, Windows)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        trim: Callable[[int], int] = ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None
    return trim


def release_free_memory() -> None:
    """Return the free memory of Arrow's pool and of the C heap to the operating system."""
    pa.default_memory_pool().release_unused()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
