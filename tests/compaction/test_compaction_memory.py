"""A finished compaction unit gives the C heap's free memory back to the operating system.

ORC C++ allocates its stream buffers with ``malloc``; glibc keeps what is freed in the middle
of its heap resident. The test leaves such a hole (64 MB of freed 4 KiB blocks, pinned in
place by every 16th block still held) and checks that ``release_free_memory`` returns it,
and that ``run_bucket`` calls it when a unit ends, whether the unit succeeded or failed.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from pathlib import Path

import pytest
from compaction_support import make_rows, new_table

from acidstore import Table, Warehouse
from compaction import compact, execute
from compaction.memory import _malloc_trim, release_free_memory

pytestmark = pytest.mark.skipif(_malloc_trim() is None, reason="no glibc malloc_trim here")

BLOCK, BLOCKS = 4096, 16384  # 64 MB, below glibc's mmap threshold: it comes from the heap


def _resident_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def _heap_hole() -> list[int]:
    """Touch 64 MB of small heap blocks and free 15 of every 16; returns the pinned ones."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc.restype = ctypes.c_void_p
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(BLOCK) for _ in range(BLOCKS)]
    for block in blocks:
        ctypes.memset(block, 1, BLOCK)
    for i, block in enumerate(blocks):
        if i % 16:
            libc.free(block)
    return [b for i, b in enumerate(blocks) if not i % 16]


def _free(pinned: list[int]) -> None:
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.free.argtypes = [ctypes.c_void_p]
    for block in pinned:
        libc.free(block)


def test_release_free_memory_returns_a_freed_heap_hole() -> None:
    pinned = _heap_hole()
    try:
        held = _resident_mb()
        release_free_memory()
        assert held - _resident_mb() > 32  # most of the 60 MB freed
    finally:
        _free(pinned)


def _compactable(wh: Warehouse, buckets: int) -> Table:
    """A table of three inserts and a delete (something for a major compaction to do)."""
    t = new_table(wh, buckets=buckets, partitioned=False)
    for k in range(3):
        t.insert(make_rows(range(100 * k, 100 * (k + 1)), dt=None).drop_columns(["dt"]))
    t.delete("id % 7 = 0")
    return t


def test_a_unit_releases_free_memory_when_it_ends(wh: Warehouse,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    t = _compactable(wh, buckets=2)
    calls: list[str] = []

    def counted() -> None:
        calls.append("released")
        release_free_memory()

    monkeypatch.setattr(execute, "release_free_memory", counted)
    before = t.to_arrow().sort_by("id")
    assert compact(t, "major").compacted
    assert calls == ["released", "released"]  # one per bucket
    assert t.to_arrow().sort_by("id").equals(before)


def test_a_failed_unit_releases_free_memory_too(wh: Warehouse,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    t = _compactable(wh, buckets=1)
    calls: list[str] = []
    monkeypatch.setattr(execute, "release_free_memory", lambda: calls.append("released"))

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(execute, "_major", broken)
    with pytest.raises(OSError, match="disk full"):
        compact(t, "major")
    assert calls == ["released"]
