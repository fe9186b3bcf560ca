"""A commit flushes what it publishes to disk first (``acidstore.io.durable``): every file of every
directory its components and compaction outputs name, those directories, and each directory up
to the table's location, all before the metastore's commit. The real ``os.fsync`` runs; the
tests only record which paths it was given (through ``/proc/self/fd``) and when."""

from __future__ import annotations

import errno
import multiprocessing
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

from acidstore import Warehouse, config
from acidstore.errors import StorageError
from acidstore.io import durable
from acidstore.io import fs as afs
from acidstore.write.files import STREAM_ROWS
from compaction import compact

SCHEMA = pa.schema([("id", pa.int64()), ("dt", pa.string())])


class Recorder:
    """What was flushed, and where the metastore's commit fell among the flushes."""

    def __init__(self) -> None:
        self.events: list[str] = []

    def flushed_before_commit(self) -> set[str]:
        return set(self.events[:self.events.index("COMMIT")])


@pytest.fixture
def recorded(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> Iterator[Recorder]:
    recorder = Recorder()
    real_fsync, real_commit = os.fsync, wh.metastore.commit

    def fsync(descriptor: int) -> None:
        recorder.events.append(os.readlink(f"/proc/self/fd/{descriptor}"))
        real_fsync(descriptor)

    def commit(*args: Any, **kwargs: Any) -> Any:
        recorder.events.append("COMMIT")
        return real_commit(*args, **kwargs)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(wh.metastore, "commit", commit)
    yield recorder
    durable.set_flush(True)


def published(location: Path, directories: list[str]) -> set[str]:
    """What a commit of ``directories`` must flush."""
    wanted: set[str] = set()
    for relative in directories:
        directory = location / relative
        wanted |= {str(p) for p in directory.iterdir() if p.is_file()}
        wanted.add(str(directory))
        parent = directory.parent
        while True:
            wanted.add(str(parent))
            if parent == location:
                break
            parent = parent.parent
    return wanted


def new_directories(location: Path, before: set[Path]) -> list[str]:
    return sorted(str(p.relative_to(location)) for p in location.rglob("*")
                  if p.is_dir() and p not in before and not p.name.startswith("dt="))


def snapshot_dirs(location: Path) -> set[Path]:
    return {p for p in location.rglob("*") if p.is_dir()}


def run_and_check(location: Path, recorder: Recorder, action: Callable[[], object]) -> None:
    before = snapshot_dirs(location)
    recorder.events.clear()
    action()
    made = new_directories(location, before)
    assert made, "the action wrote no directory"
    wanted = published(location, made)
    assert wanted <= recorder.flushed_before_commit(), \
        sorted(wanted - recorder.flushed_before_commit())


def test_insert_update_delete_and_compaction_flush_what_they_publish_first(
        wh: Warehouse, recorded: Recorder) -> None:
    table = wh.create_table("t", SCHEMA, partition_by=["dt"])
    location = Path(wh.table("t").location)
    rows = pa.table({"id": [1, 2, 3], "dt": ["a", "a", "b"]})
    run_and_check(location, recorded, lambda: table.insert(rows))
    run_and_check(location, recorded, lambda: table.update("id = 1", {"id": "11"}))
    run_and_check(location, recorded, lambda: table.delete("id = 3"))
    run_and_check(location, recorded, lambda: compact(table, "major"))
    assert sorted(table.to_arrow().column("id").to_pylist()) == [2, 11]


def test_a_forked_child_flushes_with_a_pool_of_its_own(tmp_path: Path) -> None:
    """The flushes run on a process-wide pool; a child forked after the parent used it has
    none of its threads, and must start its own rather than wait on a queue nobody serves."""
    # the parent's flush has more paths than the pool has threads, so all of them start
    for name, files in (("parent", 2 * config.FLUSH_THREADS), ("child", 3)):
        (tmp_path / "t" / f"delta_{name}").mkdir(parents=True)
        for i in range(files):
            (tmp_path / "t" / f"delta_{name}" / f"bucket_{i:05d}").write_bytes(b"x")
    local = pafs.LocalFileSystem()
    durable.flush_written(local, str(tmp_path / "t"), ["delta_parent"])
    child = multiprocessing.get_context("fork").Process(
        target=durable.flush_written, args=(local, str(tmp_path / "t"), ["delta_child"]))
    child.start()
    child.join(30)
    if child.is_alive():
        child.kill()
        pytest.fail("the forked child's flush never returned")
    assert child.exitcode == 0


def test_turned_off_nothing_is_flushed(wh: Warehouse, recorded: Recorder) -> None:
    durable.set_flush(False)
    table = wh.create_table("t", SCHEMA, partition_by=["dt"])
    table.insert(pa.table({"id": [1], "dt": ["a"]}))
    assert recorded.events == ["COMMIT"]
    assert table.to_arrow().num_rows == 1


def _drain_pool() -> None:
    """Let every flush submitted so far finish (the pool is shut down; the next use starts
    a new one)."""
    durable._POOL.get().shutdown(wait=True)
    durable._POOL.forget()


@pytest.mark.parametrize("enabled", [True, False])
def test_a_large_bucket_file_is_flushed_early_and_again_at_commit(
        wh: Warehouse, recorded: Recorder, enabled: bool) -> None:
    """A bucket file streamed in slices starts flushing as soon as it is written, and the
    commit flushes it again (the early flush may have failed or not finished): twice in all.
    Turned off, neither happens."""
    durable.set_flush(enabled)
    table = wh.create_table("big", pa.schema([("id", pa.int64())]))
    rows = STREAM_ROWS + 1
    table.insert(pa.table({"id": pa.array(range(rows), pa.int64())}))
    _drain_pool()
    flushed = Counter(e for e in recorded.events if Path(e).name.startswith("bucket_"))
    if enabled:
        assert len(flushed) == 1 and set(flushed.values()) == {2}, flushed
    else:
        assert recorded.events == ["COMMIT"]
    assert table.to_arrow().num_rows == rows


def test_a_failed_flush_aborts_and_publishes_nothing(
        wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    table = wh.create_table("t", SCHEMA, partition_by=["dt"])
    table.insert(pa.table({"id": [1], "dt": ["a"]}))

    def failing(descriptor: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", failing)
    with pytest.raises(StorageError, match="flush the files of transaction") as caught:
        table.insert(pa.table({"id": [2], "dt": ["b"]}))
    monkeypatch.undo()
    assert caught.value.retry_safe and caught.value.errno == errno.EIO
    assert table.to_arrow().column("id").to_pylist() == [1]
    assert wh.metastore.show_transactions()[-1].state == "aborted"


def test_only_local_filesystems_are_flushed(tmp_path: Path) -> None:
    inner = tmp_path / "table" / "delta_1"
    inner.mkdir(parents=True)
    (inner / "bucket_00000").write_bytes(b"x")
    subtree = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    assert afs.local_path(subtree, "table") == str(tmp_path / "table")
    durable.flush_written(subtree, "table", ["delta_1", "missing_2"])  # no error
    s3 = pafs.S3FileSystem(anonymous=True, region="us-east-1")
    assert afs.local_path(s3, "bucket/table") is None
    durable.flush_written(s3, "bucket/table", ["delta_1"])  # nothing to do, no request


def test_the_environment_turns_it_off_for_a_new_process() -> None:
    """``ACIDSTORE_FLUSH=0`` reaches every process started with it (unset, the other tests of
    this module see it on)."""
    code = "from acidstore.io import durable; print(durable.flush_enabled())"
    env = {**os.environ, config.FLUSH_ENV: "0"}
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True,
                         capture_output=True, text=True).stdout.strip()
    assert out == "False"
    assert durable.flush_enabled()
