"""The small files of a directory read as one batch (``read.grouped``) against the streaming
heap merge, the plain reader, on the same snapshots: every row, ROW__ID and batch order.

Tables get many small statements (so most directories hold several small bucket files), with
every column type of the Hive type tests, NULLs, partitions, delete events, an aborted and an
open transaction's files on disk, a streaming delta holding an aborted write id's rows, and
original files. Broken files inside a group are still reported by their own path.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from acidfiles import (
    SCHEMA,
    bucket_property,
    delete_events,
    events_table,
    write_dir,
    write_original,
)

import acidstore
from acidstore.api.table import Table
from acidstore.api.warehouse import Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import DataError
from acidstore.format.orc.schema import DELETE, INSERT
from acidstore.format.writeids import ValidWriteIdList
from acidstore.read.scan import Scan

TYPES = pa.schema([
    pa.field("i", pa.int32()), pa.field("b", pa.int64()), pa.field("s", pa.string()),
    pa.field("d", pa.float64()), pa.field("ok", pa.bool_()), pa.field("day", pa.date32()),
    pa.field("at", pa.timestamp("us")), pa.field("amount", pa.decimal128(10, 2)),
    pa.field("dt", pa.string()),
])


def typed_rows(first: int, n: int) -> list[dict[str, Any]]:
    """Rows of every type, every fifth one NULL in all its columns but the keys."""
    out: list[dict[str, Any]] = []
    for b in range(first, first + n):
        empty = b % 5 == 4
        out.append({
            "i": b % 13, "b": b, "s": None if empty else f"s{b}é",
            "d": None if empty else b / 4, "ok": None if empty else b % 2 == 0,
            "day": None if empty else date(2024, 1, 1) + timedelta(days=b),
            "at": None if empty else datetime(2024, 2, 29, 23, 59, 59, b % 1_000_000),
            "amount": None if empty else Decimal(b) / 100, "dt": f"p{b % 2}"})
    return out


def grouped_units(scan: Scan) -> int:
    """How many units of the scan read several files as one (the path under test)."""
    return sum(1 for unit in scan._units() if len(unit) > 1)


def merge_twin(scan: Scan, schema: pa.Schema, partition_schema: pa.Schema,
               **kwargs: Any) -> Scan:
    """The same planned splits, read by the streaming merge."""
    return Scan(scan._fs, [], scan.write_ids, scan.txns, schema=schema,
                partition_schema=partition_schema, planned=scan.planned, reader="merge",
                **kwargs)


def assert_same_as_merge(table: Table, **kwargs: Any) -> pa.Table:
    scan = handle_of(table).scan(**kwargs)
    assert grouped_units(scan) > 0
    got = scan.to_table()
    want = merge_twin(scan, handle_of(table).info.schema, handle_of(table).info.partition_schema,
                      **kwargs).to_table()
    assert got.schema == want.schema
    assert got.to_pylist() == want.to_pylist()
    streamed = pa.Table.from_batches(list(scan.to_batches()), schema=scan.schema)
    assert streamed.to_pylist() == got.to_pylist()
    return got


def test_small_statements_every_type(wh: Warehouse) -> None:
    t = wh.create_table("db.g", TYPES, partition_by=["dt"], bucket_by=["i"], buckets=4)
    t.insert(pa.Table.from_pylist(typed_rows(0, 300), schema=TYPES))
    for step in range(4):
        t.update(f"b % 7 = {step}", {"d": "d + 1", "s": "'u'"})
        t.delete(f"b % 11 = {step}")
        t.insert(pa.Table.from_pylist(typed_rows(1000 + 50 * step, 50), schema=TYPES))
    with pytest.raises(RuntimeError), wh.transaction() as aborted:
        aborted.table("db.g").insert(pa.Table.from_pylist(typed_rows(5000, 40), schema=TYPES))
        aborted.table("db.g").delete("b < 100")
        raise RuntimeError("abort")
    pending = wh.transaction()  # its files are on disk, its write id open: none of it shows
    try:
        pending.table("db.g").insert(pa.Table.from_pylist(typed_rows(6000, 40), schema=TYPES))
        pending.table("db.g").delete("b >= 100 AND b < 200")
        full = assert_same_as_merge(t, with_row_id=True)
        visible = {r["b"] for r in full.to_pylist()}
        expected = {r["b"] for r in typed_rows(0, 300)
                    if all(r["b"] % 11 != s for s in range(4))}
        expected |= {r["b"] for s in range(4) for r in typed_rows(1000 + 50 * s, 50)
                     if all(r["b"] % 11 != later for later in range(s + 1, 4))}
        assert visible == expected
        assert full.num_rows == len(expected)  # an updated row is there once
        assert_same_as_merge(t, columns=["at", "b", "dt"])
        assert_same_as_merge(t, columns=["b", "amount"], filter="i < 5 AND s IS NOT NULL",
                             with_row_id=True)
        assert_same_as_merge(t, filter="b % 3 = 0 AND dt = 'p1'")
    finally:
        pending.abort()


def test_one_buckets_small_files_of_several_directories(wh: Warehouse) -> None:
    """A statement's unit reads one bucket: its small files, one per earlier statement's
    directory, are read as one group (bounded by ``GROUP_MAX_BYTES``), with the same rows,
    ROW__IDs and order as the merge, filtered or not; a group spans directories only where
    every directory is wholly valid (the row-level write-id check is then needed by none)."""
    t = wh.create_table("db.b", TYPES, bucket_by=["i"], buckets=2)
    t.insert(pa.Table.from_pylist(typed_rows(0, 400), schema=TYPES))
    for step in range(5):
        t.update(f"b % 5 = {step}", {"d": "d + 1"})
        t.delete(f"b % 13 = {step}")
        t.insert(pa.Table.from_pylist(typed_rows(2000 + 20 * step, 20), schema=TYPES))
        if step == 2:
            with pytest.raises(RuntimeError), wh.transaction() as aborted:
                aborted.table("db.b").insert(
                    pa.Table.from_pylist(typed_rows(9000, 30), schema=TYPES))
                raise RuntimeError("abort")
    handle = handle_of(t)
    whole = handle.scan(with_row_id=True)
    for bucket in range(2):
        cases: list[dict[str, Any]] = [{}, {"filter": "b % 3 = 0", "columns": ["b", "s", "at"]}]
        for kwargs in cases:
            planned = [(p, s) for p, s in whole.planned if s.bucket_id == bucket]
            one = Scan(whole._fs, [], whole.write_ids, whole.txns, schema=handle.info.schema,
                       partition_schema=handle.info.partition_schema, planned=planned,
                       with_row_id=True, **kwargs)
            units = one._units()
            directories = [{s.path.rsplit("/", 1)[0] for _, s in unit} for unit in units]
            assert any(len(d) > 1 for d in directories)
            for unit, dirs in zip(units, directories, strict=True):
                assert len(dirs) == 1 or all(s.rows_valid for _, s in unit)
            got = one.to_table()
            want = merge_twin(one, handle.info.schema, handle.info.partition_schema,
                              with_row_id=True, **kwargs).to_table()
            assert got.num_rows > 0
            assert got.to_pylist() == want.to_pylist()
            streamed = pa.Table.from_batches(list(one.to_batches()), schema=one.schema)
            assert streamed.to_pylist() == got.to_pylist()


def test_streaming_delta_with_aborted_write_id_and_originals(tmp_path: Path) -> None:
    """A delta_1_3 whose bucket files hold write id 2's rows, aborted (checked row by row),
    an open write id 4, original files beside, and delete events in a delete delta."""
    root = tmp_path / "t"

    def events(write_id: int, bucket: int, first: int, n: int) -> list[Any]:
        prop = bucket_property(bucket)
        return [(INSERT, write_id, prop, r, write_id,
                 {"id": 1000 * bucket + 10 * write_id + r,
                  "name": None if r % 3 == 0 else f"n{r}", "amount": r / 2})
                for r in range(first, first + n)]

    streamed = {b: events_table(events(1, b, 0, 4) + events(2, b, 0, 3) + events(3, b, 0, 5))
                for b in range(3)}
    write_dir(root, "delta_0000001_0000003", streamed)
    write_dir(root, "delta_0000004_0000004_0000", {b: events_table(events(4, b, 0, 2))
                                                   for b in range(3)})
    write_dir(root, "delta_0000005_0000005_0000", {b: events_table(events(5, b, 0, 3))
                                                   for b in range(3)})
    write_dir(root, "delete_delta_0000006_0000006_0000", {
        b: delete_events([(1, bucket_property(b), 1), (3, bucket_property(b), 4),
                          (5, bucket_property(b), 0)], 6) for b in range(3)})
    for bucket in range(2):
        write_original(root / f"00000{bucket}_0", [
            {"id": -10 * bucket - r, "name": None, "amount": float(r)} for r in range(4)])
    snapshot = ValidWriteIdList("default.t", 6, (4,), (2,))
    scan = acidstore.scan_directory(root, SCHEMA, write_ids=snapshot, with_row_id=True)
    assert grouped_units(scan) > 0
    # the partly valid streaming delta's files (checked row by row) are grouped apart from
    # delta_5's (wholly valid), though both are small and of one partition
    for unit in scan._units():
        assert len({s.rows_valid for _, s in unit}) == 1
    assert any(not s.rows_valid for s in scan.splits)
    got = scan.to_table()
    want = acidstore.read_directory(root, SCHEMA, write_ids=snapshot, with_row_id=True,
                                    reader="merge")
    assert got.to_pylist() == want.to_pylist()
    ids = sorted(r["id"] for r in got.to_pylist())
    inserted = [1000 * b + 10 * w + r for b in range(3) for w, n in ((1, 4), (3, 5), (5, 3))
                for r in range(n) if (w, r) not in ((1, 1), (3, 4), (5, 0))]
    originals = [-10 * b - r for b in range(2) for r in range(4)]
    assert ids == sorted(inserted + originals)


def test_broken_file_in_a_group_is_named(tmp_path: Path) -> None:
    """A file of a group whose events name another bucket, or go backwards, fails with its
    own path, as it does read alone."""
    root = tmp_path / "t"

    def rows(bucket_prop: int, row_ids: list[int]) -> pa.Table:
        return events_table([(INSERT, 1, bucket_prop, r, 1, {"id": r, "name": "x",
                                                             "amount": 1.0})
                             for r in row_ids])

    write_dir(root, "delta_0000001_0000001_0000", {
        0: rows(bucket_property(0), [0, 1, 2]), 1: rows(bucket_property(2), [0, 1])})
    with pytest.raises(DataError, match="bucket_00001"):  # keys are checked where decoded
        acidstore.read_directory(root, SCHEMA, with_row_id=True)
    write_dir(root, "delta_0000001_0000001_0000", {
        0: rows(bucket_property(0), [0, 1, 2]), 1: rows(bucket_property(1), [0, 2, 1])})
    with pytest.raises(DataError, match=r"out of ROW__ID order.*bucket_00001"):
        acidstore.read_directory(root, SCHEMA, with_row_id=True)
    # rows of two files that would be out of order read as one are each in order
    write_dir(root, "delta_0000001_0000001_0000", {
        0: rows(bucket_property(0), [5, 6, 7]), 1: rows(bucket_property(1), [0, 1])})
    assert acidstore.read_directory(root, SCHEMA, with_row_id=True).num_rows == 5


def test_small_delete_files_decoded_together(tmp_path: Path) -> None:
    """Several small delete files of a bucket, one of them holding an aborted write id's
    events (checked event by event), against the merge; a broken one is named."""
    root = tmp_path / "t"

    def inserts(write_id: int, bucket: int, n: int) -> pa.Table:
        return events_table([(INSERT, write_id, bucket_property(bucket), r, write_id,
                              {"id": 100 * write_id + 10 * bucket + r, "name": f"n{r}",
                               "amount": None}) for r in range(n)])

    write_dir(root, "delta_0000001_0000001_0000", {b: inserts(1, b, 8) for b in range(2)})
    write_dir(root, "delta_0000002_0000002_0000", {b: inserts(2, b, 5) for b in range(2)})
    # write ids 3 (aborted) and 4 in one delete delta: only 4's events count
    write_dir(root, "delete_delta_0000003_0000004", {b: events_table(
        [(DELETE, 1, bucket_property(b), r, w, None)
         for r, w in ((0, 3), (1, 4), (2, 3), (3, 4))]) for b in range(2)})
    write_dir(root, "delete_delta_0000005_0000005_0000", {
        b: delete_events([(1, bucket_property(b), 5), (2, bucket_property(b), 4)], 5)
        for b in range(2)})
    snapshot = ValidWriteIdList("default.t", 5, (), (3,))
    got = acidstore.read_directory(root, SCHEMA, write_ids=snapshot, with_row_id=True)
    want = acidstore.read_directory(root, SCHEMA, write_ids=snapshot, with_row_id=True,
                                    reader="merge")
    assert got.to_pylist() == want.to_pylist()
    assert sorted(r["id"] for r in got.to_pylist()) == sorted(
        [100 + 10 * b + r for b in range(2) for r in range(8) if r not in (1, 3, 5)]
        + [200 + 10 * b + r for b in range(2) for r in range(5) if r != 4])
    write_dir(root, "delete_delta_0000005_0000005_0000", {
        0: delete_events([(1, bucket_property(1), 5)], 5),
        1: delete_events([(1, bucket_property(1), 5)], 5)})
    with pytest.raises(DataError, match="delete_delta_0000005_0000005_0000/bucket_00000"):
        acidstore.read_directory(root, SCHEMA, write_ids=snapshot)
