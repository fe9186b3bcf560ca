"""Warehouses on S3-compatible object storage, against a real S3 API server on loopback (moto's
server mode, ``s3_support``) with the PostgreSQL metastore.

Object stores differ from a disk where the library could have leaned on the disk: no atomic
rename, no empty directories (a "directory" is a key prefix; pyarrow keeps a zero-byte marker
object for the ones it creates), a write is a PUT (or a multipart upload) that becomes visible
whole or not at all. These tests run the embedded API end to end there and check that a write
killed midway leaves nothing a reader selects, and that the integrity checks (missing files,
stray directories, fsck) see S3 listings as they see local ones.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from s3_support import S3Place
from s3_workers import DIED, die_after_first_bucket_file

import acidstore
from acidstore.api.pairing import MARKER_FILE
from acidstore.engine.handle import handle_of
from acidstore.errors import (
    InvalidInputError,
    MetastoreMismatchError,
    MetastoreRequiredError,
    MissingDataError,
    WarehouseNotFoundError,
)
from compaction import Cleaner, compact

CONTEXT = multiprocessing.get_context("spawn")
ROOT = Path(__file__).resolve().parents[2]
TABLE = "shop.orders"
SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("status", pa.string()),
                    ("dt", pa.string())])


@pytest.fixture
def wh(s3_place: S3Place) -> Iterator[acidstore.Warehouse]:
    with acidstore.connect(s3_place.uri, metastore=s3_place.metastore,
                           filesystem=s3_place.filesystem()) as warehouse:
        yield warehouse


def rows(*items: tuple[int, float, str, str]) -> pa.Table:
    return pa.Table.from_pylist(
        [dict(zip(SCHEMA.names, item, strict=True)) for item in items], schema=SCHEMA)


def visible(table: acidstore.Table, **options: Any) -> list[tuple[Any, ...]]:
    return sorted(tuple(r.values()) for r in table.to_arrow(**options).to_pylist())


def new_table(wh: acidstore.Warehouse) -> acidstore.Table:
    return wh.create_table(TABLE, SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2)


# --- connecting -----------------------------------------------------------------------------


def test_every_connect_form_reaches_one_warehouse(s3_place: S3Place, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    fs = s3_place.filesystem()
    with acidstore.connect(s3_place.uri, metastore=s3_place.metastore, filesystem=fs) as wh:
        assert (wh.filesystem.type_name, wh.location) == ("s3", s3_place.root)
        new_table(wh).insert(rows((1, 1.0, "new", "2026-11-01")))
    # the path on the given filesystem (bucket/key), as pyarrow names it
    with acidstore.connect(s3_place.root, metastore=s3_place.metastore, filesystem=fs,
                           create=False) as wh:
        assert visible(wh.table(TABLE)) == [(1, 1.0, "new", "2026-11-01")]
    # the URI alone: pyarrow takes endpoint, region and credentials from the environment
    for name, value in s3_place.server.environ().items():
        monkeypatch.setenv(name, value)
    with acidstore.connect(s3_place.uri, metastore=s3_place.metastore, create=False) as wh:
        assert (wh.filesystem.type_name, wh.location) == ("s3", s3_place.root)
        wh.table(TABLE).insert(rows((2, 2.0, "new", "2026-11-01")))
        assert len(visible(wh.table(TABLE))) == 2
    # a SQLite metastore is allowed as a local file outside the warehouse (one machine)
    local = f"sqlite:///{tmp_path / 'catalogue.db'}"
    with acidstore.connect(f"s3://{s3_place.bucket}/other", metastore=local) as wh:
        wh.create_table("db.t", pa.schema([("x", pa.int64())])).insert(pa.table({"x": [7]}))
        assert wh.table("db.t").to_arrow().column("x").to_pylist() == [7]
    assert "other/db.db/t/delta_0000001_0000001_0000/bucket_00000" in [
        i.path[len(s3_place.bucket) + 1:] for i in fs.get_file_info(
            pafs.FileSelector(s3_place.bucket, recursive=True))]


def test_connect_refusals_are_typed(s3_place: S3Place, tmp_path: Path) -> None:
    fs = s3_place.filesystem()
    # the default metastore is a SQLite file inside the warehouse: not on S3
    for create in (True, False):
        with pytest.raises(MetastoreRequiredError, match="postgresql://"):
            acidstore.connect(s3_place.uri, filesystem=fs, create=create)
    # a URI of another kind than the filesystem given
    with pytest.raises(InvalidInputError, match="s3:// URI"):
        acidstore.connect(s3_place.uri, metastore=s3_place.metastore,
                          filesystem=pafs.LocalFileSystem())
    with pytest.raises(InvalidInputError, match="file:// URI"):
        acidstore.connect(f"file://{tmp_path}", metastore=s3_place.metastore, filesystem=fs)
    # a bucket that does not exist; a bucket that holds no warehouse
    with pytest.raises(WarehouseNotFoundError, match="no-such-bucket"):
        acidstore.connect("s3://no-such-bucket/wh", metastore=s3_place.metastore,
                          filesystem=fs)
    with pytest.raises(WarehouseNotFoundError):
        acidstore.connect(f"s3://{s3_place.bucket}/nothing", metastore=s3_place.metastore,
                          filesystem=fs, create=False)
    assert s3_place.objects() == []  # nothing was written by any refusal


def test_a_warehouse_on_s3_and_its_metastore_know_each_other(s3_place: S3Place,
                                                             tmp_path: Path) -> None:
    """The root records its metastore in a marker object, the metastore its root: a second
    prefix on the same metastore, or the warehouse without it, is refused; the root spelled
    as a URI or as the path on a given filesystem is one warehouse."""
    fs = s3_place.filesystem()
    with acidstore.connect(s3_place.uri + "/", metastore=s3_place.metastore,
                           filesystem=fs) as wh:
        new_table(wh).insert(rows((1, 1.0, "new", "2026-11-01")))
    assert MARKER_FILE in s3_place.objects()
    with acidstore.connect(s3_place.root, metastore=s3_place.metastore, filesystem=fs) as wh:
        assert visible(wh.table(TABLE)) == [(1, 1.0, "new", "2026-11-01")]
    with pytest.raises(MetastoreMismatchError, match="serves the warehouse") as refused:
        acidstore.connect(f"s3://{s3_place.bucket}/other", metastore=s3_place.metastore,
                          filesystem=fs)
    assert refused.value.expected == f"s3://{s3_place.root}"
    for create in (True, False):
        with pytest.raises(MetastoreMismatchError, match="keeps its catalogue in"):
            acidstore.connect(s3_place.uri, filesystem=fs, create=create)
    with pytest.raises(MetastoreMismatchError, match="keeps its catalogue in"):
        acidstore.connect(s3_place.uri, metastore=f"sqlite:///{tmp_path / 'new.db'}",
                          filesystem=fs)
    assert fs.get_file_info(f"{s3_place.bucket}/other").type == pafs.FileType.NotFound


# --- the embedded API, end to end -----------------------------------------------------------


def test_embedded_api_end_to_end(wh: acidstore.Warehouse, s3_place: S3Place) -> None:
    t = new_table(wh)
    first = t.insert(rows((1, 10.0, "new", "a"), (2, 20.0, "new", "a"), (3, 30.0, "new", "b"),
                          (4, 40.0, "new", "b")))
    after_insert = datetime.now(UTC)
    t.update("id = 2", {"amount": "amount + 1", "status": "'paid'"})
    t.delete("id = 3")
    (t.merge(rows((4, 44.0, "paid", "b"), (5, 50.0, "new", "c")), "t.id = s.id")
       .when_matched_update({"amount": "s.amount", "status": "s.status"})
       .when_not_matched_insert_all().execute())
    with wh.transaction() as txn:  # two statements, one commit
        txn.table(TABLE).insert(rows((6, 60.0, "new", "a")))
        txn.table(TABLE).delete("id = 1")
    expected = [(2, 21.0, "paid", "a"), (4, 44.0, "paid", "b"), (5, 50.0, "new", "c"),
                (6, 60.0, "new", "a")]
    assert visible(t) == expected
    assert visible(t, filter="dt = 'b'") == [(4, 44.0, "paid", "b")]
    assert sorted(r["id"] for r in t.to_arrow(as_of=first.write_id).to_pylist()) == [1, 2, 3, 4]
    assert len(visible(t, as_of=after_insert)) == 4
    assert sum(b.num_rows for b in t.to_batches()) == 4
    assert t.history().num_rows == 5

    minor = compact(t, "minor")
    assert minor.partitions
    major = compact(t, "major")
    assert {p.partition for p in major.partitions if p.outputs} >= {"dt=a", "dt=b"}
    assert visible(t) == expected
    report = Cleaner(wh, retention_seconds=0).run()
    assert report.removed
    assert visible(t) == expected
    # what is left is what the snapshot reads: one base per compacted partition, plus the
    # delta of the partition a single write made (nothing obsolete, nothing of a rename),
    # and the warehouse's marker naming its metastore
    left = {k.rsplit("/", 1)[0] for k in s3_place.objects()}
    bases = {f"shop.db/orders/{p.partition}/{o}" for p in major.partitions for o in p.outputs}
    assert left == {*bases, "shop.db/orders/dt=c/delta_0000004_0000004_0002",
                    MARKER_FILE}, left
    assert wh.fsck().num_rows == 0
    # time travel before the compaction's cleaning is gone, and says so
    with pytest.raises(acidstore.errors.NotEnoughHistoryError):
        t.to_arrow(as_of=first.write_id)


# --- failures midway ------------------------------------------------------------------------


def test_a_write_killed_midway_leaves_nothing_a_reader_selects(s3_place: S3Place) -> None:
    timeout = 3.0  # the metastore aborts a transaction whose heartbeat is older
    wh = acidstore.connect(s3_place.uri, metastore=s3_place.metastore,
                           filesystem=s3_place.filesystem(), txn_timeout=timeout)
    t = new_table(wh)
    t.insert(rows((1, 1.0, "new", "a"), (2, 2.0, "new", "a")))
    before = visible(t)
    keys_before = s3_place.objects()

    queue = CONTEXT.Queue()
    child = CONTEXT.Process(target=die_after_first_bucket_file, args=(
        s3_place.uri, s3_place.metastore, s3_place.filesystem(), TABLE,
        rows((10, 1.0, "ghost", "new"), (11, 2.0, "ghost", "new"), (12, 3.0, "ghost", "a"),
             (13, 4.0, "ghost", "a")), timeout, queue))
    child.start()
    dead_txn = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == DIED
    # it uploaded a bucket file (and its directory's version file) before it died...
    written = sorted(set(s3_place.objects()) - set(keys_before))
    assert any(k.endswith("/bucket_00000") or k.endswith("/bucket_00001") for k in written), \
        written
    # ...which no reader selects: the metastore never committed it
    assert visible(t) == before
    assert wh.fsck().filter(pa.compute.equal(pa.compute.field("severity"), "error")).num_rows \
        == 0

    # once it timed out the cleaner removes every object it wrote
    deadline = datetime.now(UTC).timestamp() + 6 * timeout
    while {r["txn_id"]: r["state"] for r in wh.show_transactions().to_pylist()}[dead_txn] \
            == "open":
        assert datetime.now(UTC).timestamp() < deadline, "the dead transaction never timed out"
        time.sleep(0.25)
        t.snapshot()  # a snapshot aborts transactions whose heartbeat timed out
    # fsck sees its leftovers on the listing (a warning: no reader selects them)...
    found = wh.fsck().to_pylist()
    assert {(f["check"], f["severity"]) for f in found} == {("aborted_leftover", "warning")}
    assert all("delta_0000002_0000002_0000" in f["path"] for f in found)
    # ...and the cleaner removes them
    Cleaner(wh, retention_seconds=0).run()
    assert s3_place.objects() == keys_before
    assert wh.fsck().num_rows == 0
    # the partition it began: on S3 at most a marker with no object under it, read as empty
    t.insert(rows((20, 5.0, "new", "new")))
    assert visible(t) == sorted([*before, (20, 5.0, "new", "new")])
    wh.close()


def test_a_failed_transaction_on_s3_leaves_nothing(wh: acidstore.Warehouse,
                                                   s3_place: S3Place) -> None:
    t = new_table(wh)
    t.insert(rows((1, 1.0, "new", "a")))
    keys_before = s3_place.objects()
    with pytest.raises(RuntimeError, match="midway"), wh.transaction() as txn:
        txn.table(TABLE).insert(rows((2, 2.0, "new", "a"), (3, 3.0, "new", "b")))
        txn.table(TABLE).delete("id = 1")
        raise RuntimeError("midway")
    assert visible(t) == [(1, 1.0, "new", "a")]
    assert s3_place.objects() == keys_before


# --- integrity checks on listings -----------------------------------------------------------


def test_integrity_checks_see_s3_listings(wh: acidstore.Warehouse, s3_place: S3Place) -> None:
    fs = s3_place.filesystem()
    t = new_table(wh)
    t.insert(rows((1, 1.0, "new", "a"), (2, 2.0, "new", "a")))
    t.delete("id = 1")
    assert visible(t) == [(2, 2.0, "new", "a")]
    partition = f"{t.location}/dt=a"

    # a removed delete_delta must not bring the deleted row back
    delete_delta = f"{partition}/delete_delta_0000002_0000002_0000"
    saved = {i.path: fs.open_input_stream(i.path).read() for i in fs.get_file_info(
        pafs.FileSelector(delete_delta, recursive=True)) if i.type == pafs.FileType.File}
    fs.delete_dir(delete_delta)
    with pytest.raises(MissingDataError, match="delete_delta_0000002_0000002_0000"):
        t.to_arrow()
    found = wh.fsck()
    assert "missing_directory" in found.column("check").to_pylist()
    for path, data in saved.items():
        with fs.open_output_stream(path) as out:
            out.write(data)
    assert visible(t) == [(2, 2.0, "new", "a")]

    # a removed bucket file of a committed delta
    bucket_file = next(p for p in saved if "bucket_" in p).replace(
        "delete_delta_0000002_0000002_0000", "delta_0000001_0000001_0000")
    data = fs.open_input_stream(bucket_file).read()
    fs.delete_file(bucket_file)
    with pytest.raises(MissingDataError, match="delta_0000001_0000001_0000"):
        t.to_arrow()
    assert "missing_file" in wh.fsck().column("check").to_pylist()
    with fs.open_output_stream(bucket_file) as out:
        out.write(data)
    assert wh.fsck().num_rows == 0

    # a file removed between a scan's planning and its reading
    scan = handle_of(t).scan()
    fs.delete_file(bucket_file)
    with pytest.raises(MissingDataError) as caught:
        list(scan.to_batches())
    assert caught.value.path is not None and caught.value.path.endswith(
        bucket_file.split("/", 1)[1])
    with fs.open_output_stream(bucket_file) as out:
        out.write(data)

    # a stray directory above the partitions: as an object under a prefix, or a bare marker.
    # Reads and compactions plan from the metastore's record and never see it; fsck does
    fs.create_dir(f"{t.location}/base_0000009")
    assert visible(t) == [(2, 2.0, "new", "a")]
    assert "stray_directory" in wh.fsck().column("check").to_pylist()
    fs.delete_dir(f"{t.location}/base_0000009")
    with fs.open_output_stream(f"{t.location}/base_0000009/bucket_00000") as out:
        out.write(b"not orc")
    assert visible(t) == [(2, 2.0, "new", "a")]
    compact(t, "major")
    assert visible(t) == [(2, 2.0, "new", "a")]
    assert "stray_directory" in wh.fsck().column("check").to_pylist()
    stray = fs.get_file_info(f"{t.location}/base_0000009/bucket_00000")
    assert stray.type == pafs.FileType.File and stray.size == len(b"not orc")
    fs.delete_dir(f"{t.location}/base_0000009")
    assert visible(t) == [(2, 2.0, "new", "a")]


def test_a_read_sends_the_requests_of_the_files_it_opens(wh: acidstore.Warehouse,
                                                         s3_place: S3Place) -> None:
    """A read plans from the metastore's record: no listing, and a one-partition read sends
    the same requests however many partitions (and directories) the table has."""
    t = new_table(wh)
    sent = {}
    for count, first in ((2, 0), (8, 2)):  # partitions d0, d1; then d2..d7 as well
        t.insert(rows(*[(i, float(i), "new", f"d{i}") for i in range(first, count)]))
        t.delete(f"dt = 'd{count - 1}'")  # a delete delta in another partition
        before = len(s3_place.server.requests())
        assert visible(t, filter="dt = 'd0'") == [(0, 0.0, "new", "d0")]
        sent[count] = s3_place.server.requests()[before:]
        assert not [line for line in sent[count] if "list-type=2" in line], sent[count]
        before = len(s3_place.server.requests())
        assert len(visible(t)) == 1 + (count == 8) * 5
        full = s3_place.server.requests()[before:]
        assert not [line for line in full if "list-type=2" in line], full
    assert len(sent[2]) == len(sent[8]) > 0, sent


def test_the_command_line_on_s3(wh: acidstore.Warehouse, s3_place: S3Place) -> None:
    t = new_table(wh)
    t.insert(rows((1, 1.0, "new", "a"), (2, 2.0, "new", "b")))
    env = {**os.environ, **s3_place.server.environ(),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    where = ["--warehouse", s3_place.uri, "--metastore", s3_place.metastore]
    for command, shows in ((["tables"], f"{s3_place.root}/shop.db/orders"),
                           (["read", TABLE], "2 row(s)"), (["fsck"], "0 finding(s)")):
        done = subprocess.run([sys.executable, "-m", "acidstore.cli.main", command[0], *where,
                               *command[1:]], env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        assert shows in done.stdout, done.stdout


def test_a_partition_filter_lists_only_the_partitions_it_reads(
        wh: acidstore.Warehouse, s3_place: S3Place) -> None:
    t = new_table(wh)
    t.insert(rows((1, 1.0, "new", "a"), (2, 2.0, "new", "b"), (3, 3.0, "new", "c")))
    before = len(s3_place.server.requests())
    assert visible(t, filter="dt = 'b'") == [(2, 2.0, "new", "b")]
    sent = s3_place.server.requests()[before:]
    # planned from the metastore's record: nothing listed, only the partition's file opened
    assert not [line for line in sent if "list-type=2" in line], sent
    assert any("dt%3Db" in line or "dt=b" in line for line in sent), sent
    assert not [line for line in sent if any(f"dt{eq}{v}" in line for eq in ("%3D", "=")
                                             for v in "ac")], sent
    # what is pruned is not checked either: a partition the filter excludes may be damaged
    fs = s3_place.filesystem()
    for info in fs.get_file_info(pafs.FileSelector(f"{t.location}/dt=c", recursive=True)):
        if info.type == pafs.FileType.File and "bucket_" in info.base_name:
            fs.delete_file(info.path)
    assert visible(t, filter="dt = 'b'") == [(2, 2.0, "new", "b")]
    with pytest.raises(MissingDataError, match="dt=c"):
        t.to_arrow()
