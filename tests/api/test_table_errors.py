"""The public table API under bad input and failure: typed errors with clear messages, nothing
half visible, nothing committed lost (Hive's file format: test_hive_format.py; partition
values: test_partition_values.py).

Every refused request is checked three ways: the error type, a message that names the culprit
(column, table, transaction), and the table afterwards: the same rows through ``to_arrow`` and
through both readers at a fresh snapshot, and, where the request is refused before any file is
written, the same files on disk.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from table_errors_support import (
    FIRST,
    Unchanged,
    files_under,
    new_table,
    rows_table,
    visible,
)

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import TableHandle, handle_of
from acidstore.errors import (
    AcidStoreError,
    InvalidExpressionError,
    InvalidInputError,
    InvalidLayoutError,
    InvalidPartitionValueError,
    MergeCardinalityError,
    SchemaMismatchError,
    TableExistsError,
    TableNotFoundError,
    TransactionAbortedError,
    TransactionStateError,
)
from acidstore.format.orc.file_writer import write_event_file


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    warehouse = acidstore.connect(tmp_path / "wh")
    yield warehouse
    warehouse.close()


@pytest.fixture
def table(wh: Warehouse) -> Table:
    return new_table(wh)


# --- schema mismatch on insert --------------------------------------------------------------------


@pytest.mark.parametrize(("data", "message"), [
    ({"id": [9], "name": ["x"], "salary": [1]},
     "column 'dt' of table db.t is missing from the data (a partition column"),
    ({"id": [9], "name": ["x"], "salary": [1], "dt": ["d"], "bonus": [5]},
     "column(s) ['bonus'] are not in table db.t"),
    ({"id": [9], "name": ["x"], "salary": [2**40], "dt": ["d"]},
     "column 'salary' of table db.t is int32; the data has int64"),
    ({"id": [9], "name": ["x"], "salary": [1.5], "dt": ["d"]},
     "column 'salary' of table db.t is int32; the data has double"),
    ({"id": [9], "name": ["x"], "salary": ["many"], "dt": ["d"]},
     "column 'salary' of table db.t is int32; the data has string"),
    ({"id": pa.array([None], pa.int64()), "name": ["x"], "salary": [1], "dt": ["d"]},
     "column 'id' of table db.t is NOT NULL but the data has 1 null(s)"),
    ({"id": [9], "NAME": ["x"], "name": ["y"], "salary": [1], "dt": ["d"]},
     "duplicate column 'name'"),
])
def test_insert_schema_mismatch_names_the_column(table: Table, data: dict[str, Any],
                                                 message: str) -> None:
    before = Unchanged(table)
    with pytest.raises(SchemaMismatchError) as info:
        table.insert(pa.table(data))
    assert message in str(info.value)
    before.check()
    with pytest.raises(SchemaMismatchError):
        table.insert_overwrite(pa.table(data))
    before.check()


def test_insert_casts_what_converts_losslessly(table: Table) -> None:
    """The other side of the rule: int64 / float 7.0 / case-different names are accepted."""
    table.insert(pa.table({"ID": pa.array([5], pa.int64()), "name": ["e"],
                           "salary": pa.array([7.0], pa.float64()), "dt": ["2024-01-03"]}))
    assert {"id": 5, "name": "e", "salary": 7, "dt": "2024-01-03"} in visible(table)


def test_insert_refuses_what_is_not_a_table(table: Table) -> None:
    before = Unchanged(table)
    with pytest.raises(InvalidInputError, match="cannot insert a list"):
        table.insert([{"id": 1}])
    before.check()


# --- unknown columns ------------------------------------------------------------------------------


def test_update_of_an_unknown_column_names_it(table: Table) -> None:
    before = Unchanged(table)
    with pytest.raises(InvalidInputError,
                       match=re.escape("unknown column 'bonus' in update of db.t")):
        table.update("id = 1", {"bonus": "1"})
    with pytest.raises(InvalidInputError, match="update needs at least one column"):
        table.update("id = 1", {})
    before.check()


@pytest.mark.parametrize("columns", [["nope"], ["id", "nope"]])
def test_read_of_an_unknown_column_names_it(table: Table, columns: list[str]) -> None:
    with pytest.raises(InvalidInputError, match="unknown column 'nope'"):
        table.to_arrow(columns=columns)


def test_merge_insert_of_an_unknown_column_names_it(table: Table) -> None:
    with pytest.raises(InvalidInputError, match=r"unknown column\(s\) \['bonus'\]"):
        table.merge(rows_table(FIRST), "t.id = s.id").when_not_matched_insert({"bonus": "1"})


def test_merge_insert_all_needs_every_source_column(table: Table) -> None:
    before = Unchanged(table)
    source = pa.table({"id": [9], "name": ["x"], "dt": ["d"]})
    with pytest.raises(InvalidInputError, match="needs source column 'salary'"):
        table.merge(source, "t.id = s.id").when_not_matched_insert_all().execute()
    before.check()


# --- partition and bucket columns are fixed -------------------------------------------------------


@pytest.mark.parametrize("column", ["dt", "id", "DT", "Id"])
def test_update_of_partition_or_bucket_column_is_refused(table: Table, column: str) -> None:
    before = Unchanged(table)
    with pytest.raises(InvalidInputError,
                       match=f"cannot update {column!r} of db.t: partition and bucketing"):
        table.update("id = 1", {column: "2"})
    with pytest.raises(InvalidInputError, match=f"cannot update {column!r}"):
        table.merge(rows_table(FIRST), "t.id = s.id").when_matched_update({column: "s.id"})
    before.check()


# --- MERGE cardinality ----------------------------------------------------------------------------


@pytest.mark.parametrize("clauses", ["update", "delete", "update+insert"])
def test_merge_matching_a_row_twice_changes_nothing(wh: Warehouse, table: Table,
                                                    clauses: str) -> None:
    before = Unchanged(table)
    transactions = wh.show_transactions().num_rows
    source = rows_table([{"id": 1, "name": "x", "salary": 1, "dt": "2024-01-01"},
                         {"id": 9, "name": "new", "salary": 9, "dt": "2024-01-05"},
                         {"id": 1, "name": "y", "salary": 2, "dt": "2024-01-01"}])
    merge = table.merge(source, "t.id = s.id")
    if clauses == "delete":
        merge = merge.when_matched_delete()
    else:
        merge = merge.when_matched_update({"name": "s.name"})
    if clauses == "update+insert":
        merge = merge.when_not_matched_insert_all()
    with pytest.raises(MergeCardinalityError, match=re.escape(
            "MERGE into db.t: a target row matched more than one source row")):
        merge.execute()
    before.check()
    states = wh.show_transactions().column("state").to_pylist()
    assert states[transactions:] == ["aborted"]  # its own transaction, aborted


def test_merge_rows_of_two_partitions_with_equal_row_ids_is_no_violation(table: Table) -> None:
    """ids 1 (dt 2024-01-01) and 4 (dt 2024-01-02) were written by one insert into bucket 0 of
    their partitions: both have ROW__ID (1, bucket 0, row 0), yet they are different rows."""
    ids = table.to_arrow(with_row_id=True).to_pylist()
    row_id = {r["id"]: r["row__id"] for r in ids}
    assert row_id[1] == row_id[4]
    source = rows_table([{"id": 1, "name": "one", "salary": 1, "dt": "2024-01-01"},
                         {"id": 4, "name": "four", "salary": 4, "dt": "2024-01-02"}])
    result = table.merge(source, "t.id = s.id").when_matched_update({"name": "s.name"}).execute()
    assert result.metrics["num_target_rows_updated"] == 2
    assert {r["id"]: r["name"] for r in visible(table)} == {1: "one", 2: "bob", 3: "cy",
                                                             4: "four"}


def test_merge_source_rows_matching_no_target_twice_is_fine(table: Table) -> None:
    """Cardinality is about target rows: two unmatched source rows insert two rows."""
    source = rows_table([{"id": 9, "name": "a", "salary": 1, "dt": "2024-01-05"},
                         {"id": 9, "name": "b", "salary": 2, "dt": "2024-01-05"}])
    result = (table.merge(source, "t.id = s.id").when_matched_delete()
              .when_not_matched_insert_all().execute())
    assert result.metrics["num_target_rows_inserted"] == 2
    assert [r["name"] for r in visible(table) if r["id"] == 9] == ["a", "b"]


# --- catalog errors -------------------------------------------------------------------------------


def test_missing_table(wh: Warehouse) -> None:
    with pytest.raises(TableNotFoundError, match=re.escape("table db.nope does not exist")) as info:
        wh.table("db.nope")
    assert str(info.value) == "table db.nope does not exist"  # not KeyError's quoted repr
    with pytest.raises(TableNotFoundError, match=re.escape("db.nope")):
        wh.drop_table("db.nope")
    with pytest.raises(TableNotFoundError, match=re.escape("db.nope")), wh.transaction() as txn:
        txn.table("db.nope")


def test_create_existing_table(wh: Warehouse, table: Table) -> None:
    before = Unchanged(table)
    for name in ("db.t", "DB.T", "db.T"):
        with pytest.raises(TableExistsError, match=re.escape("table db.t already exists")):
            wh.create_table(name, pa.schema([("x", pa.int32())]))
    before.check()
    assert wh.tables() == ["db.t"]


@pytest.mark.parametrize("action", ["insert", "insert_overwrite", "delete", "update", "merge",
                                    "to_arrow", "to_batches", "snapshot", "history",
                                    "in_transaction"])
@pytest.mark.parametrize("recreate", [False, True])
def test_table_object_after_drop(wh: Warehouse, table: Table, action: str,
                                 recreate: bool) -> None:
    """A dropped table's object refuses every use, even once a new table took its name (and
    location): it must neither read nor write the newcomer."""
    wh.drop_table("db.t")
    assert not Path(table.location).exists()
    newcomer = None
    if recreate:
        newcomer = wh.create_table("db.t", pa.schema([("other", pa.string()),
                                                      ("dt", pa.string())]),
                                   partition_by=["dt"])
        newcomer.insert(pa.table({"other": ["kept"], "dt": ["2024-01-01"]}))
    actions: dict[str, Any] = {
        "insert": lambda: table.insert(rows_table(FIRST)),
        "insert_overwrite": lambda: table.insert_overwrite(rows_table(FIRST)),
        "delete": lambda: table.delete("id = 1"),
        "update": lambda: table.update("id = 1", {"salary": "1"}),
        "merge": lambda: (table.merge(rows_table(FIRST), "t.id = s.id")
                          .when_not_matched_insert_all().execute()),
        "to_arrow": table.to_arrow,
        "to_batches": table.to_batches,
        "snapshot": table.snapshot,
        "history": table.history,
    }
    with pytest.raises(TableNotFoundError, match=re.escape("db.t")):
        if action == "in_transaction":
            with wh.transaction() as txn:
                Table(TableHandle(handle_of(table).core, handle_of(table).info,
                                  txn._core)).insert(rows_table(FIRST))
        else:
            actions[action]()
    if newcomer is not None:
        assert newcomer.to_arrow().to_pylist() == [{"other": "kept", "dt": "2024-01-01"}]
        assert newcomer.history().num_rows == 1


# --- transactions refuse reuse --------------------------------------------------------------------


def test_committed_transaction_refuses_reuse(wh: Warehouse, table: Table) -> None:
    txn = wh.transaction()
    bound = txn.table("db.t")
    bound.insert(rows_table([{"id": 7, "name": "g", "salary": 7, "dt": "2024-01-01"}]))
    txn.commit()
    assert txn.state == "committed"
    rows = visible(table)
    message = f"transaction {txn.txn_id} is committed; start a new transaction"
    uses: list[Any] = [
        lambda: txn.table("db.t"), txn.commit, txn.abort,
        lambda: bound.insert(rows_table(FIRST)), lambda: bound.delete("id = 1"),
        lambda: bound.update("id = 1", {"salary": "1"}), bound.to_arrow, bound.snapshot,
    ]
    for use in uses:
        with pytest.raises(TransactionStateError, match=re.escape(message)):
            use()
    assert visible(table) == rows


def test_failed_transaction_refuses_reuse(wh: Warehouse, table: Table) -> None:
    before = Unchanged(table)
    txn = wh.transaction()
    bound = txn.table("db.t")
    bound.insert(rows_table([{"id": 7, "name": "g", "salary": 7, "dt": "2024-01-01"}]))
    with pytest.raises(InvalidExpressionError):
        bound.update("id = 1", {"salary": "nope"})
    assert txn.state == "aborted"
    # the refusal says why the transaction is over
    message = (re.escape(f"transaction {txn.txn_id} is aborted (a statement in it failed: "
                         "InvalidExpressionError: ") + "(?s:.*nope.*)"
               + re.escape("); start a new transaction"))
    uses: list[Any] = [lambda: txn.table("db.t"), txn.commit,
                       lambda: bound.insert(rows_table(FIRST)), bound.to_arrow]
    for use in uses:
        with pytest.raises(TransactionStateError, match=message):
            use()
    txn.abort()  # aborting an aborted transaction is a no-op
    before.check()  # the first statement's delta is gone too
    states = dict(zip(wh.show_transactions().column("txn_id").to_pylist(),
                      wh.show_transactions().column("state").to_pylist(), strict=True))
    assert states[txn.txn_id] == "aborted"


def test_with_block_that_raised_refuses_reuse(wh: Warehouse, table: Table) -> None:
    before = Unchanged(table)
    with pytest.raises(RuntimeError, match="boom"), wh.transaction() as txn:
        txn.table("db.t").delete("id = 1")
        raise RuntimeError("boom")
    assert txn.state == "aborted"
    with pytest.raises(TransactionStateError):
        txn.table("db.t")
    before.check()


def test_with_block_that_caught_a_failed_statement_does_not_pass_for_a_commit(
        wh: Warehouse, table: Table) -> None:
    """A statement that fails aborts its transaction; the caller catching that error inside
    the block must not then leave it as if everything committed."""
    before = Unchanged(table)
    with pytest.raises(TransactionAbortedError, match="a statement in it failed") as info, \
            wh.transaction() as txn:
        txn.table("db.t").insert(rows_table([{"id": 7, "name": "g", "salary": 7,
                                              "dt": "2024-01-01"}]))
        with pytest.raises(InvalidExpressionError):
            txn.table("db.t").delete("nope = 1")
    assert isinstance(info.value.__cause__, InvalidExpressionError)
    assert txn.state == "aborted"
    before.check()
    # aborting it explicitly is the caller's way to say it has dealt with the failure
    with wh.transaction() as txn:
        with pytest.raises(InvalidExpressionError):
            txn.table("db.t").delete("nope = 1")
        txn.abort()
    assert txn.state == "aborted"
    before.check()


# --- table names ----------------------------------------------------------------------------------

BAD_NAMES = ["../x", "a.b.c", "x y", "", ".x", "x.", "db/x", "db\\x", "..", "1abc", "db.1x",
             "x;y", "ta\x00ble", "é", "db.t\n", "t\n"]


@pytest.mark.parametrize("name", BAD_NAMES)
def test_bad_table_names_are_refused_and_create_nothing(tmp_path: Path, wh: Warehouse,
                                                        name: str) -> None:
    before = {p for p in files_under(tmp_path) if "_acidstore_metastore" not in p}
    dirs_before = sorted(d for d, _, _ in os.walk(tmp_path))
    with pytest.raises(InvalidInputError, match="table name"):
        wh.create_table(name, pa.schema([("x", pa.int32())]))
    for call in (wh.table, wh.drop_table):
        with pytest.raises(InvalidInputError, match="table name"):
            call(name)
    assert {p for p in files_under(tmp_path) if "_acidstore_metastore" not in p} == before
    assert sorted(d for d, _, _ in os.walk(tmp_path)) == dirs_before
    assert wh.tables() == []


def test_good_names_land_under_the_warehouse(tmp_path: Path, wh: Warehouse) -> None:
    t = wh.create_table("Sales_2024", pa.schema([("x", pa.int32())]))
    assert t.name == "default.sales_2024"
    assert Path(t.location) == tmp_path / "wh" / "default.db" / "sales_2024"
    assert wh.tables() == ["default.sales_2024"]


# --- failures part-way through --------------------------------------------------------------------


def test_failure_inside_a_transaction_hides_all_its_statements(wh: Warehouse,
                                                               table: Table) -> None:
    before = Unchanged(table)
    with pytest.raises(SchemaMismatchError), wh.transaction() as txn:
        bound = txn.table("db.t")
        bound.insert(rows_table([{"id": 8, "name": "h", "salary": 8, "dt": "2024-01-09"}]))
        bound.delete("id = 1")
        assert {r["id"] for r in bound.to_arrow().to_pylist()} == {2, 3, 4, 8}
        # partition 2024-01-01 casts fine, 2024-01-02 does not: fails half-way through
        bound.update("id > 1", {"salary": "CASE WHEN dt = '2024-01-01' THEN '5' "
                                          "ELSE 'x' END"})
    assert txn.state == "aborted"
    before.check()  # every directory the transaction wrote is gone again


def test_crash_while_writing_a_file_leaves_nothing_visible(
        wh: Warehouse, table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    """The third bucket file of a statement fails to write: the statement, and with it the
    transaction, fails; no row of it is visible; what it left on disk belongs to an aborted
    write id that the metastore lists for the cleaner."""
    before = Unchanged(table, files=False)
    calls: Counter[str] = Counter()

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError("disk full")
        return write_event_file(*args, **kwargs)

    monkeypatch.setattr("acidstore.write.files.write_event_file", flaky)
    many = rows_table([{"id": i, "name": "n", "salary": i, "dt": f"2024-02-0{i % 3 + 1}"}
                       for i in range(10, 40)])
    with pytest.raises(OSError, match="disk full"):
        table.insert(many)
    monkeypatch.undo()
    before.check()
    transactions = wh.show_transactions()
    assert transactions.column("state").to_pylist()[-1] == "aborted"
    aborted = {d for c in wh.metastore.aborted_components("db.t") for d in c.directories}
    committed = {w for w in table.history().column("write_id").to_pylist()}
    for directory, _, _ in os.walk(table.location):
        name = Path(directory).name
        match = re.fullmatch(r"(?:delete_)?delta_(\d+)_\d+_\d+|base_(\d+)", name)
        if match:
            write_id = int(match.group(1) or match.group(2))
            rel = str(Path(directory).relative_to(table.location))
            assert write_id in committed or rel in aborted, rel
    # and the table takes new writes as usual
    table.insert(rows_table([{"id": 50, "name": "z", "salary": 1, "dt": "2024-02-01"}]))
    assert len(visible(table)) == len(FIRST) + 1


def test_exception_in_with_block_removes_written_files(wh: Warehouse, table: Table) -> None:
    before = Unchanged(table)
    with pytest.raises(KeyError), wh.transaction() as txn:
        bound = txn.table("db.t")
        bound.insert(rows_table([{"id": 9, "name": "i", "salary": 9, "dt": "2024-01-01"}]))
        bound.update("id = 2", {"salary": "salary + 1"})
        (bound.merge(rows_table(FIRST), "t.id = s.id")
         .when_matched_delete(condition="s.id = 3").execute())
        raise KeyError("user code failed")
    before.check()


@pytest.mark.parametrize("then", ["insert", "delete", "update", "overwrite", "merge"])
def test_write_after_overwrite_of_the_same_partition_in_one_transaction(
        wh: Warehouse, table: Table, then: str) -> None:
    """base_w hides every delta of write id w, so a later statement of the same transaction in
    an overwritten partition would silently vanish (and a second base_w would mix with the
    first): such a statement is refused and the transaction aborts."""
    before = Unchanged(table)
    day = [{"id": 20, "name": "o", "salary": 1, "dt": "2024-01-01"}]
    later: dict[str, Any] = {
        "insert": lambda b: b.insert(rows_table([{**day[0], "id": 21}])),
        "delete": lambda b: b.delete("id = 20"),
        "update": lambda b: b.update("id = 20", {"salary": "2"}),
        "overwrite": lambda b: b.insert_overwrite(rows_table([{**day[0], "id": 22}])),
        "merge": lambda b: (b.merge(rows_table(day), "t.id = s.id")
                            .when_matched_update({"name": "s.name || 'x'"}).execute()),
    }
    with pytest.raises(InvalidInputError, match=re.escape(
            "already overwrote db.t partition dt=2024-01-01: a later write there would be "
            "hidden by base_0000002")), wh.transaction() as txn:
        bound = txn.table("db.t")
        bound.insert_overwrite(rows_table(day))
        bound.insert(rows_table([{**day[0], "id": 23, "dt": "2024-01-02"}]))  # other partition
        later[then](bound)
    assert txn.state == "aborted"
    before.check()


def test_overwrite_after_other_writes_in_one_transaction_replaces_them(wh: Warehouse,
                                                                       table: Table) -> None:
    with wh.transaction() as txn:
        bound = txn.table("db.t")
        bound.insert(rows_table([{"id": 30, "name": "gone", "salary": 1, "dt": "2024-01-01"}]))
        bound.delete("id = 3")  # the other partition: kept
        bound.insert_overwrite(rows_table([{"id": 31, "name": "o", "salary": 1,
                                            "dt": "2024-01-01"}]))
    assert [r["id"] for r in visible(table)] == [31, 4]


def test_every_error_is_an_acidstore_error() -> None:
    """Callers can catch one root; the input errors are also ValueErrors."""
    for error in (SchemaMismatchError, InvalidExpressionError, InvalidPartitionValueError,
                  MergeCardinalityError):
        assert issubclass(error, InvalidInputError)
        assert issubclass(error, ValueError)
    for catalog_error in (TableNotFoundError, TableExistsError, TransactionStateError):
        assert issubclass(catalog_error, AcidStoreError)


# --- arguments of the wrong kind ------------------------------------------------------------------


def test_arguments_of_the_wrong_kind_are_typed_errors(
        tmp_path: Path, wh: Warehouse, table: Table, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a user passes by mistake gets an InvalidInputError that says what was expected,
    not a TypeError or AttributeError from deep inside (or, worse, an answer)."""
    from compaction import Cleaner, compact

    (tmp_path / "notes.txt").write_text("not a warehouse")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # connect("") made the current directory a warehouse
    before = Unchanged(table)
    wrong_kind: list[Any] = [None, "0", "db.t"]
    calls: list[tuple[Any, str]] = [
        (lambda: table.to_arrow(filter=5), "a filter is a SQL string or a pyarrow expression"),
        (lambda: table.to_arrow(columns="id"), r"did you mean \['id'\]"),
        (lambda: wh.table(wrong_kind[0]), "a table name is a string, got None"),
        (lambda: acidstore.connect(""), "non-empty path"),
        (lambda: acidstore.connect(tmp_path / "notes.txt"), "is a file, not a directory"),
        (lambda: table.vacuum(retention_seconds=-1), "0 or more and finite, got -1"),
        (lambda: table.vacuum(retention_seconds=wrong_kind[1]), "must be a number, got '0'"),
        (lambda: Cleaner(wh, retention_seconds=float("nan")), "finite, got nan"),
        (lambda: compact(wrong_kind[2], "major"), "compact takes a Table"),
    ]
    for call, message in calls:
        with pytest.raises(InvalidInputError, match=message):
            call()
    assert (tmp_path / "notes.txt").read_text() == "not a warehouse"
    assert list((tmp_path / "cwd").iterdir()) == []
    before.check()


def test_reading_one_of_the_tables_acid_directories_names_it(wh: Warehouse,
                                                            table: Table) -> None:
    delta = next(p for p in Path(table.location, "dt=2024-01-01").iterdir()
                 if p.name.startswith("delta_"))
    with pytest.raises(InvalidLayoutError, match=rf"\({delta.name}\); read the table or"):
        acidstore.read_directory(delta)
    named_like_one = wh.create_table("db.base_rates", pa.schema([("x", pa.int32())]))
    named_like_one.insert(pa.table({"x": pa.array([1], pa.int32())}))
    assert acidstore.read_directory(named_like_one.location).num_rows == 1
