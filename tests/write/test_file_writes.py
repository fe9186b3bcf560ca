"""Files are replaced all at once, so two attempts of one Spark task (speculation, or a retry
while the first attempt's executor still runs) never leave a committed bucket file truncated.

The units of a DELETE/UPDATE/MERGE write straight into their final directories (the paths are
fixed by the plan), so a second attempt rewrites the same path with the same bytes: in place,
its truncate could land after the first attempt finished, and being killed then leaves an
empty file that the commit publishes.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
from process_support import CONTEXT

import acidstore
from acidstore.io.fs import write_bytes

PAYLOADS = (b"a" * (4 << 20), b"b" * (4 << 20))


def _rewrite_until(path: str, started: Any, stop: Any) -> None:
    fs = pafs.LocalFileSystem()
    turn = 0
    while not stop.is_set():
        write_bytes(fs, path, PAYLOADS[turn % 2])
        turn += 1
        started.set()


def test_a_file_being_replaced_is_read_whole_or_not_at_all(tmp_path: Path) -> None:
    path = str(tmp_path / "bucket_00000")
    write_bytes(pafs.LocalFileSystem(), path, PAYLOADS[0])
    started, stop = CONTEXT.Event(), CONTEXT.Event()
    writer = CONTEXT.Process(target=_rewrite_until, args=(path, started, stop))
    writer.start()
    seen: set[int] = set()
    try:
        assert started.wait(timeout=60)
        deadline = time.monotonic() + 1.5
        while time.monotonic() < deadline:
            with open(path, "rb") as f:
                data = f.read()
            seen.add(len(data))
            assert data in PAYLOADS, f"read {len(data)} bytes of a file being replaced"
    finally:
        stop.set()
        writer.join(timeout=30)
    assert writer.exitcode == 0
    assert seen == {len(PAYLOADS[0])}
    assert [p.name for p in tmp_path.iterdir()] == ["bucket_00000"]  # no temporary left


def test_a_temporary_left_by_a_killed_writer_is_not_read(tmp_path: Path) -> None:
    with acidstore.connect(tmp_path / "wh") as wh:
        table = wh.create_table("db.t", pa.schema([("id", pa.int64())]))
        table.insert(pa.table({"id": [1, 2, 3]}))
        table.delete("id = 2")
        for directory in Path(table.location).iterdir():
            (directory / ".bucket_00000.0123abcd.tmp").write_bytes(b"half an ORC file")
        assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 3]
