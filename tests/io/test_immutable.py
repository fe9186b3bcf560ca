"""The per-process memory of committed directories and small files (``acidstore.io.immutable``,
``acidstore.format.orc.cache``) answers exactly as the plain reads: after statements, compaction and
cleaning, a file replaced under the same name, size and time, a file truncated in place, and
a file or directory removed (which still fails as it did, naming it)."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import acidstore
from acidstore import config
from acidstore.api.warehouse import Warehouse
from acidstore.errors import MissingDataError
from acidstore.format.orc import cache
from acidstore.format.orc.file_reader import OrcFile
from acidstore.format.orc.file_writer import write_event_file
from acidstore.io import fs as afs
from acidstore.io import immutable
from acidstore.write.files import delete_events
from compaction import Cleaner, compact

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.float64())])
FS = pafs.LocalFileSystem()
T = TypeVar("T")


@pytest.fixture(autouse=True)
def fresh_cache() -> Iterator[None]:
    """Each test starts with nothing remembered and the default bound."""
    previous = immutable.set_cache_bytes(0)
    immutable.set_cache_bytes(config.FILE_CACHE_BYTES)
    yield
    immutable.set_cache_bytes(previous)


def _settle(root: Path, seconds: float = 10.0) -> None:
    """Date everything under ``root`` ``seconds`` back, as files of earlier statements are
    (nothing changed within ``SETTLE_NS`` is remembered)."""
    when = time.time_ns() - int(seconds * 1e9)
    for path in [*root.rglob("*"), root]:
        os.utime(path, ns=(when, when))


def _uncached(fn: Callable[[], T]) -> T:
    """``fn()`` with caching off (which also forgets everything remembered)."""
    previous = immutable.set_cache_bytes(0)
    try:
        return fn()
    finally:
        immutable.set_cache_bytes(previous)


def _rows(n: int) -> pa.Table:
    ids = np.arange(n, dtype=np.int64)
    return pa.table({"id": ids, "v": ids * 0.5}, schema=SCHEMA)


def _sorted(table: pa.Table) -> pa.Table:
    return table.sort_by([("id", "ascending")])


# --- listings ------------------------------------------------------------------------------


def _counting(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths ``list_dirs`` lists for real from now on."""
    listed: list[str] = []
    plain = afs.list_dir

    def counted(fs: pafs.FileSystem, path: str) -> list[afs.Entry]:
        listed.append(path)
        return plain(fs, path)

    monkeypatch.setattr(immutable, "list_dir", counted)
    return listed


def test_listing_is_remembered_and_always_current(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    dirs = []
    for i in range(3):
        d = tmp_path / f"delta_{i}_{i}_0000"
        d.mkdir()
        (d / "bucket_00000").write_bytes(b"x" * (10 + i))
        (d / "_orc_acid_version").write_bytes(b"2")
        dirs.append(str(d))
    _settle(tmp_path)
    listed = _counting(monkeypatch)
    assert immutable.list_dirs(FS, dirs) == {d: afs.list_dir(FS, d) for d in dirs}
    assert len(listed) == 3
    assert immutable.list_dirs(FS, dirs) == {d: afs.list_dir(FS, d) for d in dirs}
    assert len(listed) == 3  # answered from memory

    # truncated in place: the directory's time does not change, the size must
    target = Path(dirs[0]) / "bucket_00000"
    before = os.stat(dirs[0]).st_mtime_ns
    os.truncate(target, 0)
    os.utime(dirs[0], ns=(before, before))
    assert immutable.list_dirs(FS, dirs) == {d: afs.list_dir(FS, d) for d in dirs}
    assert [e.size for e in immutable.list_dirs(FS, dirs)[dirs[0]]
            if e.name == "bucket_00000"] == [0]

    # an added file changes the directory's time: listed again
    (Path(dirs[1]) / "bucket_00001").write_bytes(b"y")
    assert immutable.list_dirs(FS, dirs) == {d: afs.list_dir(FS, d) for d in dirs}
    assert "bucket_00001" in [e.name for e in immutable.list_dirs(FS, dirs)[dirs[1]]]

    # a removed directory lists as nothing, as the plain listing does
    for child in Path(dirs[2]).iterdir():
        child.unlink()
    Path(dirs[2]).rmdir()
    assert immutable.list_dirs(FS, dirs)[dirs[2]] == [] == afs.list_dir(FS, dirs[2])


def test_hidden_files_are_not_checked_again(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A hidden file (``_orc_acid_version``, never read as rows) changed in place leaves the
    remembered listing as it was; a bucket file changed the same way does not."""
    d = tmp_path / "delta_1_1_0000"
    d.mkdir()
    (d / "bucket_00000").write_bytes(b"x" * 10)
    (d / "_orc_acid_version").write_bytes(b"2")
    _settle(tmp_path)
    immutable.list_dirs(FS, [str(d)])
    listed = _counting(monkeypatch)
    before = os.stat(d).st_mtime_ns
    os.truncate(d / "_orc_acid_version", 0)
    os.utime(d, ns=(before, before))
    assert [e.size for e in immutable.list_dirs(FS, [str(d)])[str(d)]] == [1, 10]
    assert listed == []
    os.truncate(d / "bucket_00000", 0)
    os.utime(d, ns=(before, before))
    assert immutable.list_dirs(FS, [str(d)])[str(d)] == afs.list_dir(FS, str(d))
    assert listed == [str(d)]


def test_a_child_directory_replaced_by_nothing_is_seen(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """A child directory reads with no size, as a vanished file does: a listing holding one
    is checked child by child, so its removal (kept from the parent's time) is seen."""
    d = tmp_path / "delta_1_1_0000"
    (d / "sub").mkdir(parents=True)
    (d / "bucket_00000").write_bytes(b"x")
    _settle(tmp_path)
    immutable.list_dirs(FS, [str(d)])
    listed = _counting(monkeypatch)
    assert immutable.list_dirs(FS, [str(d)])[str(d)] == afs.list_dir(FS, str(d))
    assert listed == []
    before = os.stat(d).st_mtime_ns
    (d / "sub").rmdir()
    os.utime(d, ns=(before, before))
    assert [e.name for e in immutable.list_dirs(FS, [str(d)])[str(d)]] == ["bucket_00000"]
    assert listed == [str(d)]


def test_recent_directories_are_not_remembered(tmp_path: Path) -> None:
    d = tmp_path / "delta_1_1_0000"
    d.mkdir()
    (d / "bucket_00000").write_bytes(b"x")
    immutable.list_dirs(FS, [str(d)])
    assert immutable._LISTINGS.get(str(d)) is None
    _settle(tmp_path)
    immutable.list_dirs(FS, [str(d)])
    assert immutable._LISTINGS.get(str(d)) is not None


# --- small files ---------------------------------------------------------------------------


def _delete_file(path: str, row_id: int) -> None:
    events = delete_events(np.array([1], np.int64), np.array([536870912], np.int32),
                           np.array([row_id], np.int64), 2, SCHEMA)
    write_event_file(FS, path, events, compression="uncompressed")


def _row_ids(path: str) -> list[int]:
    orc = OrcFile(FS, path)
    columns = orc.physical_columns(["rowId"], [])
    ids: list[int] = orc.canonical(orc.read_stripe(0, columns)).column("rowId").to_pylist()
    return ids


def test_recent_files_are_not_held(tmp_path: Path) -> None:
    path = str(tmp_path / "bucket_00000")
    _delete_file(path, 5)
    assert cache.small_key(FS, path) is None  # changed within SETTLE_NS: could change unseen
    assert _row_ids(path) == [5]
    assert len(cache._FILES) == 0
    _settle(tmp_path)
    assert cache.small_key(FS, path) is not None


def test_replaced_file_is_read_again(tmp_path: Path) -> None:
    """Another file renamed over the same name, with the same size and time: only the inode
    tells them apart, and it must."""
    path = str(tmp_path / "bucket_00000")
    _delete_file(path, 5)
    _settle(tmp_path)
    assert _row_ids(path) == [5]
    key = cache.small_key(FS, path)
    assert key is not None and cache.held(key) is not None
    first = os.stat(path)
    other = str(tmp_path / "other")
    _delete_file(other, 6)
    os.replace(other, path)
    os.utime(path, ns=(first.st_atime_ns, first.st_mtime_ns))
    second = os.stat(path)
    assert (second.st_size, second.st_mtime_ns) == (first.st_size, first.st_mtime_ns)
    assert second.st_ino != first.st_ino
    assert _row_ids(path) == [6] == _uncached(lambda: _row_ids(path))


def test_missing_file_still_fails_naming_it(tmp_path: Path) -> None:
    path = str(tmp_path / "bucket_00000")
    _delete_file(path, 5)
    _settle(tmp_path)
    assert _row_ids(path) == [5]
    os.unlink(path)
    with pytest.raises(MissingDataError) as cached_error:
        _row_ids(path)
    with pytest.raises(MissingDataError) as plain_error:
        _uncached(lambda: _row_ids(path))
    assert cached_error.value.path == plain_error.value.path == path
    assert str(cached_error.value) == str(plain_error.value)


def test_one_held_file_read_by_many_threads(tmp_path: Path) -> None:
    path = str(tmp_path / "bucket_00000")
    _delete_file(path, 7)
    _settle(tmp_path)
    results: list[list[int]] = []

    def read() -> None:
        for _ in range(50):
            results.append(_row_ids(path))

    threads = [threading.Thread(target=read) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [[7]] * 400


def test_held_bytes_stay_within_the_bound(tmp_path: Path) -> None:
    immutable.set_cache_bytes(64 << 10)
    for i in range(60):
        _delete_file(str(tmp_path / f"bucket_{i:05d}"), i)
    _settle(tmp_path)
    for i in range(60):
        assert _row_ids(str(tmp_path / f"bucket_{i:05d}")) == [i]
    assert 0 < cache._FILES.nbytes <= immutable.cache_bytes()
    assert len(cache._FILES) < 60


# --- a table through statements, compaction and cleaning -------------------------------------


def _read(wh: Warehouse) -> pa.Table:
    return _sorted(wh.table("db.t").to_arrow(with_row_id=True))


def test_table_reads_match_uncached_reads(tmp_path: Path) -> None:
    wh = acidstore.connect(tmp_path / "wh")
    table = wh.create_table("db.t", SCHEMA, bucket_by=["id"], buckets=4)
    table.insert(_rows(200))
    location = Path(table.location)
    for step in range(12):
        _settle(location)
        if step % 3 == 0:
            table.delete(f"id = {step}")
        elif step % 3 == 1:
            table.update(f"id = {step + 50}", {"v": "v + 100"})
        else:
            table.insert(_rows(3).set_column(0, "id", pa.array([1000 + step, 2000 + step,
                                                                3000 + step], pa.int64())))
        _settle(location)
        _read(wh)  # remembered from here
        cached = _read(wh)
        # a warehouse table's reads plan from the metastore's record: nothing is listed
        assert len(cache._FILES) > 0 and len(immutable._LISTINGS) == 0
        assert cached.equals(_uncached(lambda: _read(wh)))
    expected = _uncached(lambda: _read(wh))

    compact(table, "minor")
    _settle(location)
    assert _read(wh).equals(expected)
    compact(table, "major")
    Cleaner(wh, retention_seconds=0).run()
    _settle(location)
    assert _read(wh).equals(expected)
    table.delete("id = 100")
    _settle(location)
    assert _read(wh).equals(_uncached(lambda: _read(wh)))


@pytest.mark.parametrize("how", ["removed", "emptied in place"])
def test_removed_or_emptied_committed_file_still_fails(tmp_path: Path, how: str) -> None:
    """A committed bucket file removed, or truncated to nothing with its directory's time
    kept: the remembered listing, and the planner's facts derived from it, give way to
    what is there now, so the read names the directory as the uncached read does (it would
    otherwise plan the emptied file as it was)."""
    wh = acidstore.connect(tmp_path / "wh")
    table = wh.create_table("db.t", SCHEMA, bucket_by=["id"], buckets=2)
    table.insert(_rows(20))
    table.delete("id = 3")
    location = Path(table.location)
    _settle(location)
    _read(wh)
    assert _read(wh).num_rows == 19  # planned from what is remembered
    victim = next(p for p in sorted(location.glob("delta_*/bucket_*")))
    if how == "removed":
        victim.unlink()
    else:
        before = os.stat(victim.parent).st_mtime_ns
        os.truncate(victim, 0)
        os.utime(victim.parent, ns=(before, before))
    with pytest.raises(MissingDataError) as cached_error:
        _read(wh)
    with pytest.raises(MissingDataError) as plain_error:
        _uncached(lambda: _read(wh))
    assert str(cached_error.value) == str(plain_error.value)
    assert victim.parent.name in str(cached_error.value)
