"""A write id's own deletes after a compaction merged its statements (spec §8.2, §10.3).

A transaction of several statements may update or delete rows an earlier statement of it
wrote. Before compaction each statement has its own ``delta_w_w_s``/``delete_delta_w_w_s``,
and the reader applies a delete delta of statement s to the deltas of statements below s. A
minor compaction over write id w writes ``delta_w_w_vT`` and ``delete_delta_w_w_vT`` with no
statement id, holding every statement of w: the deletes among them that hit w's own rows must
still be applied, by every reader and by the major compaction that follows (else the deleted
or replaced rows come back, and the major compaction makes it permanent).

Also here: the same histories across several write ids (``delta_x_y``), and the layout as
Hive's compactor writes it, read by both directory readers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from acidfiles import bucket_property, delete_events, insert_events, read, rid, row, write_dir

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of
from acidstore.format.layout import delta_name
from compaction import compact

Row = dict[str, Any]
SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.int64())])


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    warehouse = acidstore.connect(tmp_path / "wh")
    yield warehouse
    warehouse.close()


def rows(t: Table) -> list[Row]:
    """The table's rows by id; ``to_arrow`` and both directory readers must agree."""
    got = sorted(t.to_arrow().to_pylist(), key=lambda r: (r["id"], r["k"]))
    for reader in ("vectorized", "merge"):
        direct = acidstore.read_directory(t.location, handle_of(t).info.schema, reader=reader)
        assert sorted(direct.to_pylist(), key=lambda r: (r["id"], r["k"])) == got, reader
    return got


def two_rows_then_base(wh: Warehouse) -> Table:
    """The repro's start: write ids 1 and 2 insert ids 1 and 2, made one base."""
    t = wh.create_table("db.t", SCHEMA)
    t.insert(pa.table({"id": [1], "k": [0]}, schema=SCHEMA))
    t.insert(pa.table({"id": [2], "k": [0]}, schema=SCHEMA))
    assert compact(t, "major").partitions[0].outputs[0].startswith("base_0000002_v")
    return t


def compacted_keeps(t: Table, expected: list[Row], outputs: tuple[str, ...]) -> None:
    """A minor then a major compaction change no row."""
    assert rows(t) == expected
    minor = compact(t, "minor").partitions[0].outputs
    assert tuple(o.rsplit("_v", 1)[0] for o in minor) == outputs
    assert rows(t) == expected
    compact(t, "major")
    assert rows(t) == expected


def twice_updated(txn: Table) -> None:
    txn.update("id = 1", {"k": "k + 1"})
    txn.update("id = 1", {"k": "k + 1"})


def updated_then_deleted(txn: Table) -> None:
    txn.update("id = 1", {"k": "k + 1"})
    txn.delete("id = 1")


@pytest.mark.parametrize(("statements", "expected"), [
    (twice_updated, [{"id": 1, "k": 2}, {"id": 2, "k": 0}]),
    (updated_then_deleted, [{"id": 2, "k": 0}]),
])
def test_minor_compaction_of_one_multi_statement_write(
        wh: Warehouse, statements: Callable[[Table], None], expected: list[Row]) -> None:
    """The bug report's two repros: write id 3 updates a row twice, or updates then deletes
    it; the minor compaction over write id 3 alone brought back the row versions its later
    statement had replaced or deleted."""
    t = two_rows_then_base(wh)
    with wh.transaction() as txn:
        statements(txn.table("db.t"))
    compacted_keeps(t, expected, (delta_name(3, 3), delta_name(3, 3, delete=True)))


def test_minor_compaction_of_several_multi_statement_writes(wh: Warehouse) -> None:
    """Write ids 3-5 each change their own rows in later statements (insert then update,
    update twice, update then delete), compacted into one ``delta_3_5``; then write id 6 does
    the same and a second minor compaction folds ``delta_3_5`` and write id 6 together."""
    t = two_rows_then_base(wh)
    with wh.transaction() as txn:
        bound = txn.table("db.t")
        bound.insert(pa.table({"id": [3, 4], "k": [0, 0]}, schema=SCHEMA))
        bound.update("id >= 3", {"k": "k + 10"})
    with wh.transaction() as txn:
        twice_updated(txn.table("db.t"))
    with wh.transaction() as txn:
        bound = txn.table("db.t")
        bound.update("id = 4", {"k": "k + 1"})
        bound.delete("id = 4")
    expected = [{"id": 1, "k": 2}, {"id": 2, "k": 0}, {"id": 3, "k": 10}]
    assert rows(t) == expected
    assert compact(t, "minor").partitions[0].outputs[0].startswith(delta_name(3, 5) + "_v")
    assert rows(t) == expected
    with wh.transaction() as txn:
        bound = txn.table("db.t")
        bound.update("id = 3", {"k": "k + 1"})
        bound.delete("id = 3")
        bound.insert(pa.table({"id": [5], "k": [0]}, schema=SCHEMA))
        bound.update("id = 5", {"k": "k + 1"})
    compacted_keeps(t, [{"id": 1, "k": 2}, {"id": 2, "k": 0}, {"id": 5, "k": 1}],
                    (delta_name(3, 6), delta_name(3, 6, delete=True)))


# --- the layout as Hive's compactor writes it -------------------------------------------------


def test_hive_minor_compacted_write_applies_its_own_deletes(tmp_path: Path) -> None:
    """Write id 2 inserts two rows (statement 0) and deletes one (statement 1); Hive's minor
    compactor merges the statements into ``delta_2_2_vT`` and ``delete_delta_2_2_vT``, events
    unchanged. The delete names the row by its ROW__ID (bucket property with statement 0), so
    it applies to the compacted delta as it applied to ``delta_2_2_0000``; Hive's vectorized
    reader skips it (a missing statement id read as 0, and 0 > 0 fails)."""
    p0 = bucket_property(0, 0)
    inserts = insert_events(2, 0, [row(1, "a"), row(2, "b")])
    deletes = delete_events([(2, p0, 0)], 2)
    root = tmp_path / "t"
    write_dir(root, delta_name(1, 1, 0), {0: insert_events(1, 0, [row(0, "z")])})
    for stmt_or_v, insert_name, delete_name in (
            ("per statement", delta_name(2, 2, 0), delta_name(2, 2, 1, delete=True)),
            ("compacted", delta_name(2, 2, visibility_txn_id=9),
             delta_name(2, 2, delete=True, visibility_txn_id=9))):
        write_dir(root, insert_name, {0: inserts})
        write_dir(root, delete_name, {0: deletes})
        assert read(root, with_row_id=True) == [
            {**row(0, "z"), "row__id": rid(1, p0, 0)},
            {**row(2, "b"), "row__id": rid(2, p0, 1)}], stmt_or_v


def test_hive_minor_compacted_range_applies_its_own_deletes(tmp_path: Path) -> None:
    """The same across write ids: ``delta_2_3_vT`` and ``delete_delta_2_3_vT`` hold write id
    2 (insert, then a delete of one of its rows in statement 1) and write id 3 (a delete of
    write id 2's other row, and an insert). Only write id 3's row is left."""
    p0, p1 = bucket_property(0, 0), bucket_property(0, 1)
    root = tmp_path / "t"
    write_dir(root, delta_name(2, 3, visibility_txn_id=9), {0: pa.concat_tables([
        insert_events(2, 0, [row(1, "a"), row(2, "b")]),
        insert_events(3, 0, [row(3, "c")], statement_id=1)])})
    write_dir(root, delta_name(2, 3, delete=True, visibility_txn_id=9), {0: pa.concat_tables([
        delete_events([(2, p0, 0)], 2), delete_events([(2, p0, 1)], 3)])})
    assert read(root, with_row_id=True) == [{**row(3, "c"), "row__id": rid(3, p1, 0)}]
