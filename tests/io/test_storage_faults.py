"""Storage faults are typed values, and a failed call leaves nothing partial visible.

Every operation runs once on a sound filesystem to count its filesystem calls of each kind
(create, write, move, read, delete, list, mkdir); then again, on a fresh table each time,
with the first, a middle and the last call of each kind failing (``fault_support``). For
every fault: the process goes on, the error is a ``StorageError`` (or the call succeeds,
when the failed call was one it could do without), the table holds exactly its rows before
the call or, for a call that succeeded, after it; the next write works; and after the
cleaner ``fsck`` finds nothing. On the local disk and on the S3 test server.
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from fault_support import Fault, FaultyHandler, faulty
from s3_support import S3Place

import acidstore
from acidstore.errors import (
    LocationNotEmptyError,
    StorageError,
    StorageFullError,
    StoragePermissionError,
)
from compaction import Cleaner, compact

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.string())])
Op = Callable[[acidstore.Warehouse, acidstore.Table], Any]


def _rows(table: acidstore.Table) -> list[tuple[Any, ...]]:
    data = table.to_arrow().sort_by("id")
    return list(zip(*(data.column(n).to_pylist() for n in SCHEMA.names), strict=True))


def _ingest(wh: acidstore.Warehouse, table: acidstore.Table) -> None:
    with wh.streaming_connection(table.name) as conn:
        conn.begin()
        conn.write(pa.table({"id": [50], "p": ["a"], "v": ["s"]}))
        conn.commit()


_BIG = 120_000
OPS: dict[str, Op] = {
    "insert": lambda wh, t: t.insert(pa.table({"id": [9], "p": ["a"], "v": ["n"]})),
    # a reader large enough for the streamed writer: several ORC stripes per bucket file
    "insert_streamed": lambda wh, t: t.insert(pa.table({
        "id": np.arange(100, 100 + _BIG), "p": ["a"] * _BIG,
        "v": [f"value-{i}" for i in range(_BIG)]}).to_reader(max_chunksize=30_000)),
    "insert_overwrite": lambda wh, t: t.insert_overwrite(
        pa.table({"id": [9], "p": ["a"], "v": ["n"]})),
    "update": lambda wh, t: t.update("id = 2", {"v": "'u'"}),
    "delete": lambda wh, t: t.delete("id = 3"),
    "merge": lambda wh, t: t.merge(
        pa.table({"id": [2, 7], "p": ["a", "b"], "v": ["m", "m"]}), "t.id = s.id")
    .when_matched_update_all().when_not_matched_insert_all().execute(),
    "minor_compaction": lambda wh, t: compact(t, "minor"),
    "major_compaction": lambda wh, t: compact(t, "major"),
    "streaming_ingest": _ingest,
    "read": lambda wh, t: t.to_arrow(),
}
#: the kinds of call each filesystem test fails (a read of an ORC file fails with EIO: a
#: full disk is no reason for a read to fail)
CODES = {"create": errno.ENOSPC, "write": errno.ENOSPC, "move": errno.ENOSPC,
         "mkdir": errno.EACCES, "delete": errno.EACCES, "list": errno.EIO, "read": errno.EIO}


@dataclass
class Place:
    """A warehouse over a faulty filesystem, and its handler."""

    wh: acidstore.Warehouse
    handler: FaultyHandler
    tables: Iterator[int]

    def new_table(self) -> acidstore.Table:
        """A table with a history every operation has something to do with: two
        partitions, a delete delta (an UPDATE) and several deltas to compact."""
        self.handler.arm(None)
        table = self.wh.create_table(f"db.t{next(self.tables)}", SCHEMA, partition_by=["p"])
        table.insert(pa.table({"id": [1, 2, 3], "p": ["a", "a", "b"], "v": ["x", "y", "z"]}))
        table.update("id = 1", {"v": "'xx'"})
        return table


@pytest.fixture(name="local")
def local_fixture(tmp_path: Path) -> Iterator[Place]:
    fs, handler = faulty(pafs.LocalFileSystem(), atomic_rename=True)
    (tmp_path / "wh").mkdir()
    with acidstore.connect(str(tmp_path / "wh"), filesystem=fs,
                           metastore=f"sqlite:///{tmp_path}/metastore.db") as wh:
        yield Place(wh, handler, iter(range(10_000)))


@pytest.fixture(name="s3")
def s3_fixture(s3_place: S3Place) -> Iterator[Place]:
    fs, handler = faulty(s3_place.filesystem(), atomic_rename=False)
    with acidstore.connect(s3_place.root, filesystem=fs, metastore=s3_place.metastore) as wh:
        yield Place(wh, handler, iter(range(10_000)))


def _chosen(count: int, middle: bool) -> list[int]:
    """The first, (a middle) and the last call of a kind."""
    return sorted({1, count, *([(count + 1) // 2] if middle else [])})


def _check_faults(place: Place, name: str, *, middle: bool = True) -> int:
    """Run ``OPS[name]`` with each chosen fault; the number of faults injected."""
    op = OPS[name]
    table = place.new_table()
    before = _rows(table)
    place.handler.arm(None)
    op(place.wh, table)
    counts = dict(place.handler.calls)
    after = _rows(table)
    assert counts, f"{name} made no filesystem call"
    injected = 0
    for kind, count in sorted(counts.items()):
        for nth in _chosen(count, middle):
            table = place.new_table()
            fault = Fault(kind, nth, CODES[kind])
            place.handler.arm(fault)
            try:
                op(place.wh, table)
            except StorageError as exc:
                assert fault.fired, exc
                assert exc.retry_safe and exc.path, exc
                assert exc.errno == fault.code, exc
                expected = {errno.ENOSPC: StorageFullError,
                            errno.EACCES: StoragePermissionError}.get(fault.code)
                assert expected is None or isinstance(exc, expected), exc
                place.handler.arm(None)
                assert _rows(table) == before, (name, kind, nth)
            else:
                place.handler.arm(None)
                assert _rows(table) == after, (name, kind, nth)
            injected += fault.fired
            table.insert(pa.table({"id": [1000], "p": ["b"], "v": ["next"]}))
            assert (1000, "b", "next") in _rows(table)
    place.handler.arm(None)
    Cleaner(place.wh, retention_seconds=0).run()
    assert place.wh.fsck().num_rows == 0, place.wh.fsck().to_pylist()
    return injected


@pytest.mark.parametrize("name", sorted(OPS))
def test_a_storage_fault_is_typed_and_leaves_nothing_partial(local: Place, name: str) -> None:
    assert _check_faults(local, name) > 0


@pytest.mark.parametrize("name", ["insert", "insert_streamed", "update", "merge",
                                  "major_compaction", "read"])
def test_an_object_store_fault_is_typed_and_leaves_nothing_partial(s3: Place,
                                                                   name: str) -> None:
    assert _check_faults(s3, name, middle=False) > 0


def test_create_and_drop_table_faults_are_typed(local: Place) -> None:
    local.handler.arm(Fault("mkdir", 1, errno.EACCES))
    with pytest.raises(StoragePermissionError, match=r"create the directory of table db\.c"):
        local.wh.create_table("db.c", SCHEMA)
    assert "db.c" not in local.wh.tables()
    local.handler.arm(None)
    table = local.wh.create_table("db.c", SCHEMA)
    table.insert(pa.table({"id": [1], "p": ["a"], "v": ["x"]}))
    local.handler.arm(Fault("delete", 1, errno.EACCES))
    with pytest.raises(StoragePermissionError, match="dropped from the catalogue") as caught:
        local.wh.drop_table("db.c")
    assert not caught.value.retry_safe and caught.value.path == table.location
    local.handler.arm(None)
    assert "db.c" not in local.wh.tables()
    with pytest.raises(LocationNotEmptyError):  # the leftover is never read as a new table
        local.wh.create_table("db.c", SCHEMA)


def test_a_write_error_inside_the_orc_writer_does_not_end_the_process(tmp_path: Path) -> None:
    """pyarrow's ORC writer calls the output stream from C++; an error raised there once
    ended the process (``std::terminate``, exit 134). In a real child process, so that a
    regression fails this test instead of ending the test run."""
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(Path(__file__).parents[1] / "support")!r})
        import numpy as np, pyarrow as pa, pyarrow.fs as pafs
        import acidstore
        from acidstore.errors import StorageFullError
        from fault_support import Fault, faulty
        fs, handler = faulty(pafs.LocalFileSystem(), atomic_rename=True)
        wh = acidstore.connect({str(tmp_path / "wh")!r}, filesystem=fs,
                               metastore="sqlite:///{tmp_path}/metastore.db")
        t = wh.create_table("db.t", pa.schema([("id", pa.int64()), ("s", pa.string())]))
        n = 300_000
        rows = pa.table({{"id": np.arange(n), "s": [f"value-{{i}}" for i in range(n)]}})
        handler.arm(Fault("write", 3))
        try:
            t.insert(rows.to_reader(max_chunksize=50_000))
        except StorageFullError as exc:
            print("typed", exc.path.rsplit("/", 2)[-2])
        handler.arm(None)
        t.insert(rows.slice(0, 5))
        print("rows", t.to_arrow().num_rows)
    """)
    (tmp_path / "wh").mkdir()
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["typed", "delta_0000001_0000001_0000", "rows", "5"]


@pytest.fixture(name="small_disk")
def small_disk_fixture(tmp_path: Path) -> Iterator[Path]:
    """An 8 MB tmpfs: a disk that really fills up (skipped where mounting is not allowed)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_typed_and_the_next_write_works(small_disk: Path,
                                                        tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    n = 400_000  # random text: about 10 MB of ORC, more than the disk holds

    def rows(start: int, count: int) -> pa.Table:
        return pa.table({"id": np.arange(start, start + count), "p": ["a"] * count,
                         "v": [rng.bytes(24).hex() for _ in range(count)]})

    with acidstore.connect(str(small_disk / "wh"),
                           metastore=f"sqlite:///{tmp_path}/metastore.db") as wh:
        table = wh.create_table("db.t", SCHEMA, partition_by=["p"])
        table.insert(rows(0, 50_000))  # about 1.3 MB
        with pytest.raises(StorageFullError) as caught:
            table.insert(rows(50_000, n).to_reader(max_chunksize=50_000))
        assert caught.value.retry_safe and "delta_0000002_0000002_0000" in str(caught.value.path)
        with pytest.raises(StorageFullError):
            table.insert(rows(50_000, n))  # gathered in memory, written in one piece
        assert table.to_arrow().num_rows == 50_000
        filler = small_disk / "filler"
        with filler.open("wb", buffering=0) as out, pytest.raises(OSError):
            while True:
                out.write(b"x" * 100_000)
        os.truncate(filler, filler.stat().st_size - 400_000)  # room for a delete only
        table.delete("id < 5")
        with pytest.raises(StorageFullError):
            compact(table, "major")  # its base is about as large as the table
        filler.unlink()
        table.insert(rows(n, 3))
        compact(table, "major")
        assert table.to_arrow().num_rows == 50_000 - 5 + 3
        Cleaner(wh, retention_seconds=0).run()
        assert wh.fsck().num_rows == 0


def test_a_full_disk_under_the_metastore_is_typed(small_disk: Path) -> None:
    """The default SQLite metastore inside a warehouse on a full disk: SQLite rolls the
    commit back, so the write did not land, whatever the abort could record."""
    with acidstore.connect(str(small_disk / "wh")) as wh:
        table = wh.create_table("db.t", SCHEMA)
        table.insert(pa.table({"id": [1], "p": ["a"], "v": ["x"]}))
        filler = small_disk / "filler"
        with filler.open("wb", buffering=0) as out, pytest.raises(OSError):
            while True:
                out.write(b"x" * 4096)
        with pytest.raises(StorageFullError) as caught:
            table.insert(pa.table({"id": [2], "p": ["a"], "v": ["y"]}))
        assert caught.value.retry_safe
        filler.unlink()
        assert table.to_arrow().column("id").to_pylist() == [1]
        table.insert(pa.table({"id": [3], "p": ["a"], "v": ["z"]}))
        assert sorted(table.to_arrow().column("id").to_pylist()) == [1, 3]
        assert wh.fsck().num_rows == 0
