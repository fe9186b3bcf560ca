"""``Table.optimize()`` and ``Table.vacuum()``: the compaction package reached from the table.

They go through the installed ``acidstore.api.optimize`` entry point (no mock of it): optimize
is ``compact``, vacuum a cleaner pass over one table only, which keeps what a live reader
selects and never touches another table's files or queue entries.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from compaction_support import (
    children,
    compactions,
    make_rows,
    new_table,
    read_exact,
    values,
)

from acidstore import Table, Warehouse
from acidstore.api import optimize as maintenance_module
from acidstore.errors import InvalidInputError, UnsupportedOperationError
from compaction import CleanerReport, CompactionResult


def with_deltas(wh: Warehouse, name: str) -> Table:
    t = new_table(wh, name)
    for i in range(4):
        t.insert(make_rows([2 * i, 2 * i + 1]))
    t.delete("id = 3")
    return t


def partition(t: Table) -> Path:
    return Path(t.location) / "dt=a"


def test_optimize_compacts_and_vacuum_removes_what_it_replaced(wh: Warehouse) -> None:
    t = with_deltas(wh, "db.t")
    before = values(read_exact(t))
    result = t.optimize()
    assert isinstance(result, CompactionResult)
    assert result.compacted and result.kind == "major"
    assert values(read_exact(t)) == before
    assert any(name.startswith("base_0000005_v") for name in children(partition(t)))
    assert any(name.startswith("delta_") for name in children(partition(t)))  # until vacuum

    report = t.vacuum(retention_seconds=0)
    assert isinstance(report, CleanerReport)
    assert report.removed
    assert [name for name in children(partition(t))] == [f"base_0000005_v{result.txn_id:07d}"]
    assert values(read_exact(t)) == before
    assert [e["state"] for e in compactions(wh)] == ["succeeded"]


def test_optimize_minor_of_one_partition(wh: Warehouse) -> None:
    t = with_deltas(wh, "db.t")
    t.insert(make_rows([100], dt="b"))
    t.insert(make_rows([101], dt="b"))
    result = t.optimize("minor", partition={"dt": "a"})
    assert isinstance(result, CompactionResult)
    assert [p.partition for p in result.partitions] == ["dt=a"]
    assert any(n.startswith("delta_0000001_0000005_v") for n in children(partition(t)))
    assert not any("_v" in n for n in children(Path(t.location) / "dt=b"))


def test_vacuum_cleans_only_its_own_table(wh: Warehouse) -> None:
    mine, other = with_deltas(wh, "db.mine"), with_deltas(wh, "db.other")
    mine.optimize()
    other.optimize()
    mine.vacuum(retention_seconds=0)
    assert len(children(partition(mine))) == 1
    assert len(children(partition(other))) == 6  # 4 deltas, 1 delete delta, the base
    states = {e["table"]: e["state"] for e in compactions(wh)}
    assert states == {"db.mine": "succeeded", "db.other": "ready for cleaning"}


def test_vacuum_keeps_what_a_live_reader_selects(wh: Warehouse) -> None:
    t = with_deltas(wh, "db.t")
    reader = t.to_batches()  # leases the pre-compaction snapshot until it is closed
    t.optimize()
    report = t.vacuum(retention_seconds=0)
    assert report.kept_for_readers and not report.removed
    assert sorted(r["id"] for r in reader.read_all().to_pylist()) == [0, 1, 2, 4, 5, 6, 7]
    reader.close()
    assert t.vacuum(retention_seconds=0).removed


def test_inside_a_transaction_refused(wh: Warehouse) -> None:
    with_deltas(wh, "db.t")
    with wh.transaction() as txn:
        with pytest.raises(UnsupportedOperationError, match=r"optimize.*db\.t.*transaction"):
            txn.table("db.t").optimize()
        with pytest.raises(UnsupportedOperationError, match=r"vacuum.*db\.t"):
            txn.table("db.t").vacuum()


def test_bad_arguments_refused(wh: Warehouse) -> None:
    t = with_deltas(wh, "db.t")
    with pytest.raises(InvalidInputError, match="kind"):
        t.optimize("full")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="engine"):
        t.optimize(engine="duckdb")
    with pytest.raises(InvalidInputError, match="partition"):
        t.optimize(partition={"nope": "x"})
    assert compactions(wh) == []


def test_without_a_provider_a_typed_error_names_the_way_out(
        wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    """A broken install (no entry point registered) says what is missing, and nothing runs."""
    t = with_deltas(wh, "db.t")
    monkeypatch.setattr(maintenance_module, "entry_points", lambda group: [])
    with pytest.raises(UnsupportedOperationError, match=r"acidstore\.maintenance"):
        t.optimize()
    assert compactions(wh) == []
