"""Files an embedded table writes follow Hive's ACID format (spec: directory names, the
``_orc_acid_version`` marker, bucket files, event columns, statement ids in the bucket
property, dense row ids), checked file by file after a workload of every statement kind."""

from __future__ import annotations

import os
import re
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pytest
from table_errors_support import BUCKETS, FIRST, SCHEMA, V1, rows_table

from acidstore import Table, Warehouse
from acidstore.write.bucketing import bucket_ids


@pytest.fixture
def table(wh: Warehouse) -> Table:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=BUCKETS)
    t.insert(rows_table(FIRST))
    return t


# --- Hive's format --------------------------------------------------------------------------------

_DIR = re.compile(r"^(?:(?P<kind>delta|delete_delta)_(?P<min>\d{7})_(?P<max>\d{7})_(?P<stmt>\d{4})"
                  r"|base_(?P<base>\d{7}))$")


def _hive_workload(wh: Warehouse, table: Table) -> None:
    table.insert(rows_table([{"id": i, "name": f"n{i}", "salary": i,
                              "dt": f"2024-01-0{i % 2 + 1}"} for i in range(10, 30)]))
    table.update("id % 3 = 0", {"salary": "salary * 2"})
    table.delete("id % 5 = 0")
    source = rows_table([{"id": i, "name": f"m{i}", "salary": -i, "dt": "2024-01-01"}
                         for i in (2, 12, 14, 40, 41)])
    (table.merge(source, "t.id = s.id").when_matched_delete(condition="s.id = 12")
     .when_matched_update({"name": "s.name"}).when_not_matched_insert_all().execute())
    with wh.transaction() as txn:
        bound = txn.table("db.t")
        bound.insert(rows_table([{"id": 50, "name": "x", "salary": 1, "dt": "2024-01-03"}]))
        bound.insert(rows_table([{"id": 51, "name": "y", "salary": 2, "dt": "2024-01-03"}]))
        bound.update("id = 50", {"name": "'xx'"})
        bound.delete("id = 51")
    table.insert_overwrite(rows_table([{"id": 60, "name": "o", "salary": 6, "dt": "2024-01-02"},
                                       {"id": 61, "name": "p", "salary": 7,
                                        "dt": "2024-01-02"}]))


def test_written_files_follow_hive_acid_format(wh: Warehouse, table: Table) -> None:
    _hive_workload(wh, table)
    committed = set(table.history().column("write_id").to_pylist())
    assert committed == {1, 2, 3, 4, 5, 6, 7}
    seen_kinds: Counter[str] = Counter()
    statements: set[tuple[int, int]] = set()
    for directory, dirs, names in os.walk(table.location):
        here = Path(directory)
        match = _DIR.match(here.name)
        if match is None:
            # the table root and partition directories hold only directories
            assert names == [], here
            continue
        assert dirs == [], here
        assert "_orc_acid_version" in names, here
        assert (here / "_orc_acid_version").read_bytes() == b"2"
        buckets = sorted(n for n in names if n != "_orc_acid_version")
        assert buckets and all(re.fullmatch(r"bucket_\d{5}", n) for n in buckets), names
        kind = match.group("kind") or "base"
        seen_kinds[kind] += 1
        write_id = int(match.group("min") or match.group("base"))
        assert write_id in committed
        if kind != "base":
            assert match.group("max") == match.group("min")
        stmt = int(match.group("stmt") or 0)
        statements.add((write_id, stmt))
        for name in buckets:
            _check_bucket_file(here / name, kind, write_id, stmt, int(name[len("bucket_"):]))
    assert seen_kinds == {"delta": seen_kinds["delta"], "delete_delta": seen_kinds["delete_delta"],
                          "base": 1}
    assert seen_kinds["delta"] > 0 and seen_kinds["delete_delta"] > 0
    # the multi-statement transaction numbered its statements: insert 0, insert 1, the
    # update's delete events 2 and new rows 3 (Hive 4's split update), delete 4
    assert {s for w, s in statements if w == 6} == {0, 1, 2, 3, 4}
    # ROW__IDs are unique across the table
    ids = table.to_arrow(with_row_id=True).column("row__id").to_pylist()
    assert len({(r["writeid"], r["bucketid"], r["rowid"]) for r in ids}) == len(ids)


def _check_bucket_file(path: Path, kind: str, write_id: int, stmt: int, bucket: int) -> None:
    assert path.stat().st_size > 0, path
    orc = po.ORCFile(str(path))
    meta = {k.decode(): v.decode() for k, v in orc.metadata.items()}
    assert meta["hive.acid.version"] == "2"
    events = orc.read()
    n = events.num_rows
    assert n > 0, f"empty bucket file {path}"
    assert events.column_names == ["operation", "originalTransaction", "bucket", "rowId",
                                   "currentTransaction", "row"]
    # hive.acid.key.index: the last key of every stripe, "w,b,r;" each
    last_keys = []
    for i in range(orc.nstripes):
        stripe = orc.read_stripe(i)
        last = {c: stripe.column(c)[stripe.num_rows - 1].as_py()
                for c in ("originalTransaction", "bucket", "rowId")}
        last_keys.append(f"{last['originalTransaction']},{last['bucket']},{last['rowId']};")
    assert meta["hive.acid.key.index"] == "".join(last_keys)
    ops = events.column("operation").to_pylist()
    current = set(events.column("currentTransaction").to_pylist())
    assert current == {write_id}
    props = events.column("bucket").to_numpy()
    if kind == "delete_delta":
        assert set(ops) == {2}
        assert meta["hive.acid.stats"] == f"0,0,{n}"
        # each event sits in the file of the bucket its deleted row lives in
        assert {(p >> 16) & 0xFFF for p in props.tolist()} == {bucket}
        keys = list(zip(events.column("originalTransaction").to_pylist(), props.tolist(),
                        events.column("rowId").to_pylist(), strict=True))
        assert keys == sorted(keys) and len(set(keys)) == n
        assert events.column("row").null_count == n
        return
    assert set(ops) == {0}
    assert meta["hive.acid.stats"] == f"{n},0,0"
    assert set(events.column("originalTransaction").to_pylist()) == {write_id}
    # row ids dense from 0 per (write id, bucket, statement), bucket property = V1(bucket, stmt)
    assert events.column("rowId").to_pylist() == list(range(n))
    assert set(props.tolist()) == {V1 | (bucket << 16) | stmt}
    # the file is named after the Hive bucket of every row in it
    rows = pa.Table.from_struct_array(events.column("row").combine_chunks())
    assert set(bucket_ids(rows, ["id"], BUCKETS).tolist()) == {bucket}


def test_unbucketed_table_writes_bucket_zero(wh: Warehouse) -> None:
    t = wh.create_table("db.u", pa.schema([("id", pa.int64()), ("v", pa.string())]))
    t.insert(pa.table({"id": [1, 2, 3], "v": ["a", "b", "c"]}))
    t.update("id = 2", {"v": "'B'"})
    names = sorted(str(Path(d, n).relative_to(t.location)) for d, _, ns in os.walk(t.location)
                   for n in ns)
    assert names == ["delete_delta_0000002_0000002_0000/_orc_acid_version",
                     "delete_delta_0000002_0000002_0000/bucket_00000",
                     "delta_0000001_0000001_0000/_orc_acid_version",
                     "delta_0000001_0000001_0000/bucket_00000",
                     "delta_0000002_0000002_0001/_orc_acid_version",
                     "delta_0000002_0000002_0001/bucket_00000"]
    # Hive 4's split update: delete events statement 0, new rows statement 1 (in the bucket
    # property's low bits)
    rows = po.ORCFile(str(Path(t.location, "delta_0000002_0000002_0001/bucket_00000"))).read()
    assert rows.column("rowId").to_pylist() == [0]
    assert rows.column("bucket").to_pylist() == [V1 | 1]
