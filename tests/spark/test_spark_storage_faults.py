"""A disk that fills up under Spark's tasks: the task's Python worker survives (pyarrow's ORC
writer never sees the error: ``acidstore.format.orc.stream``), the driver gets a typed
``StorageFullError`` naming the file, with ``retry_safe`` and the errno, the transaction is
aborted and nothing of it stays, and once there is room again the same write works.

The warehouse lives on a small tmpfs of its own (its metastore beside it on the ordinary
disk, so the commit and abort can be recorded); mounting needs root with CAP_SYS_ADMIN, and
the test is skipped where that is refused.
"""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from spark_support import SCHEMA, new_table, table_files, to_spark

import acidstore
from acidstore import Table
from acidstore.engine.handle import handle_of
from acidstore.errors import StorageError, StorageFullError
from acidstore.format.layout import STAGING_DIR
from acidstore.spark import AcidTable
from acidstore.write.files import STREAM_ROWS
from compaction import Cleaner

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: the tmpfs, and what is left free of it when a write must fail: room for directories and
#: small files, not for a bucket file of ROWS rows of WIDTH random hex characters, which
#: goes through the streaming ORC writer (more rows than STREAM_ROWS in one bucket)
DISK = "4m"
LEFT_FREE = 256 << 10
ROWS, WIDTH = STREAM_ROWS + 4000, 16


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK}", "tmpfs",
                               str(mount)], capture_output=True, text=True, check=False)
    except FileNotFoundError:
        pytest.skip("no mount command: a full disk needs a small tmpfs")
    if done.returncode != 0:
        pytest.skip(f"cannot mount a {DISK} tmpfs for a full disk (needs root with "
                    f"CAP_SYS_ADMIN): {done.stderr.strip()}")
    try:
        yield mount
    finally:
        if subprocess.run(["umount", str(mount)], check=False).returncode != 0:
            subprocess.run(["umount", "-l", str(mount)], check=False)


def _random_rows(start: int) -> pa.Table:
    """ROWS rows in dt=a whose names do not compress below about half their size."""
    ids = range(start, start + ROWS)
    return pa.table({"id": list(ids), "name": [os.urandom(WIDTH // 2).hex() for _ in ids],
                     "amount": [i * 10 for i in ids], "dt": ["a"] * ROWS}, schema=SCHEMA)


def _fill(disk: Path) -> Path:
    """Fill ``disk`` up to LEFT_FREE bytes (the filler file, to remove for room again)."""
    stats = os.statvfs(disk)
    filler = disk / "filler"
    with open(filler, "wb") as out:
        out.write(b"\0" * max(0, stats.f_bavail * stats.f_frsize - LEFT_FREE))
    return filler


def _state(t: Table) -> tuple[list[str], pa.Table]:
    """The table's files and its rows with their ROW__IDs."""
    return table_files(t), t.to_arrow(with_row_id=True).sort_by("id")


def _failed_full(caught: pytest.ExceptionInfo[StorageFullError], t: Table,
                 before: tuple[list[str], pa.Table], under: str) -> None:
    error = caught.value
    assert isinstance(error, StorageError)
    assert "cannot write an ORC file" in str(error), error  # the streaming writer's
    assert error.path is not None and error.path.startswith(under), error.path
    assert (error.retry_safe, error.errno) == (True, errno.ENOSPC)
    assert handle_of(t).metastore.show_transactions()[-1].state == "aborted"
    assert _state(t) == before
    assert not (Path(t.location) / STAGING_DIR).exists()


def test_a_full_disk_under_spark_tasks_is_a_typed_storage_error(
        spark: SparkSession, small_disk: Path, tmp_path: Path) -> None:
    metastore = f"sqlite:///{tmp_path / 'metastore.db'}"
    (small_disk / "wh").mkdir()
    with acidstore.connect(small_disk / "wh", metastore=metastore) as wh:
        t = new_table(wh, buckets=0)
        t.insert(_random_rows(0))
        at = AcidTable.forName(spark, t.name, warehouse=str(wh.location), metastore=metastore)
        before = _state(t)

        # UPDATE through the statement core: a unit's task writes into the table itself
        filler = _fill(small_disk)
        with pytest.raises(StorageFullError) as caught:
            at.update("TRUE", {"name": "name || name"})
        _failed_full(caught, t, before, t.location)
        filler.unlink()
        at.update("id < 10", {"name": "name || name"})
        names = t.to_arrow(filter="id < 10").column("name").to_pylist()
        assert len(names) == 10 and {len(name) for name in names} == {2 * WIDTH}
        before = _state(t)

        # df.write: a task writes into the staging area
        filler = _fill(small_disk)
        more = to_spark(spark, _random_rows(ROWS)).coalesce(1)  # one task, one bucket
        writer = more.write.format("acidstore").option("warehouse", str(wh.location)) \
            .option("metastore", metastore).mode("append")
        with pytest.raises(StorageFullError) as caught_write:
            writer.save(t.name)
        _failed_full(caught_write, t, before, str(Path(t.location) / STAGING_DIR))
        filler.unlink()
        writer.save(t.name)
        assert t.to_arrow().num_rows == 2 * ROWS

        Cleaner(wh, retention_seconds=0).run()
        assert wh.fsck().to_pylist() == []
