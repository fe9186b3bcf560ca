"""The metastore contract, part 1: catalog, transaction lifecycle, write ids and snapshots,
timeouts. Every backend must pass it unchanged.

Backends are plugged in through the ``backend`` fixture of ``metastore_support`` (today SQLite
files under ``tmp_path``). No mocks: real databases. Parts 2 and 3 are
``test_metastore_commit.py`` (commit and write-write conflicts),
``test_metastore_concurrency.py`` (threads, spawned processes, a stateful model) and
``test_metastore_records.py`` (recorded writes, locks, introspection, snapshot leases).

Facts checked come from Hive (the § numbers: docs/format.md, "The sections the code cites"):
§6.5 (a table's ValidWriteIdList from a txn snapshot), §12.1 (write-id allocation), §14 (timeouts).
"""

from __future__ import annotations

import time
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa
import pytest
from metastore_support import (
    MAX,
    Backend,
    backend_fixture,  # noqa: F401  (the `backend` fixture, parametrised over backends)
    begin,
    component,
    metastore_fixture,  # noqa: F401  (the `metastore` fixture)
    new_table,
    states,
    write,
)

from acidstore.errors import (
    InvalidInputError,
    MetadataChangedError,
    TableExistsError,
    TableNotFoundError,
    TransactionAbortedError,
    TransactionStateError,
)
from acidstore.metastore import (
    Metastore,
    NewTable,
    OriginalFile,
    PlannedWrite,
    WriteComponent,
)

# --- catalog ----------------------------------------------------------------------------------


def test_backend_implements_the_protocol(metastore: Metastore) -> None:
    assert isinstance(metastore, Metastore)


def test_create_and_get_round_trip_every_field(metastore: Metastore) -> None:
    schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False, metadata={b"doc": b"key"}),
        ("amount", pa.decimal128(18, 4)),
        ("at", pa.timestamp("us", tz="UTC")),
        ("tags", pa.list_(pa.struct([("k", pa.string()), ("v", pa.int32())]))),
    ])
    partitions = pa.schema([("dt", pa.date32()), ("country", pa.string())])
    before = datetime.now(UTC)
    created = metastore.create_table(NewTable(
        "Sales", "Events", schema, partitions, ("id",), 4, {"owner": "x"}, "s3://b/sales.db/ev"))
    after = datetime.now(UTC)
    assert (created.database, created.name, created.full_name) == ("sales", "events",
                                                                   "sales.events")
    assert created.schema.equals(schema, check_metadata=True)
    assert created.partition_schema.equals(partitions, check_metadata=True)
    assert (created.bucket_by, created.buckets) == (("id",), 4)
    assert (created.properties, created.location) == ({"owner": "x"}, "s3://b/sales.db/ev")
    assert isinstance(created.table_id, int)
    assert created.created.tzinfo == UTC and before <= created.created <= after
    fetched = metastore.get_table("SALES.events")
    assert fetched == created
    assert fetched.schema.equals(schema, check_metadata=True)


def test_a_location_relative_to_the_warehouse_root_is_kept_as_given(
        metastore: Metastore) -> None:
    """Warehouses store ``<db>.db/<table>`` so that a copied warehouse reads its own files;
    the metastore keeps the string and never resolves it (only the warehouse knows its root)."""
    created = metastore.create_table(new_table("t", location="default.db/t"))
    assert created.location == metastore.get_table("t").location == "default.db/t"


def test_table_names_default_database_and_case(metastore: Metastore) -> None:
    metastore.create_table(new_table("t"))
    assert metastore.get_table("t").full_name == "default.t"
    assert metastore.get_table("DEFAULT.T").full_name == "default.t"
    with pytest.raises(TableExistsError, match=r"default\.t"):
        metastore.create_table(new_table("T"))
    with pytest.raises(TableNotFoundError, match=r"other\.t"):
        metastore.get_table("other.t")
    with pytest.raises(InvalidInputError):
        metastore.get_table("a.b.c")
    # the warehouse's rule, the one rule: a digit may not start a name (a warehouse refused
    # "1t" while its metastore took it), and a newline never ends one
    for bad in ("1t", "db.1t", "t\n", "db.t\n"):
        with pytest.raises(InvalidInputError, match="table name"):
            metastore.create_table(new_table(bad))
    assert metastore.create_table(new_table("_t")).full_name == "default._t"


def test_list_tables_sorted_and_filtered(metastore: Metastore) -> None:
    for database, name in [("b", "z"), ("a", "y"), ("b", "a"), ("default", "m")]:
        metastore.create_table(new_table(name, database))
    assert metastore.list_tables() == ["a.y", "b.a", "b.z", "default.m"]
    assert metastore.list_tables("b") == ["b.a", "b.z"]
    assert metastore.list_tables("B") == ["b.a", "b.z"]
    assert metastore.list_tables("nothing") == []


def test_drop_table_and_recreate_starts_a_fresh_history(metastore: Metastore) -> None:
    old = metastore.create_table(new_table("t"))
    txn = begin(metastore)
    metastore.commit(txn, [write(metastore, txn, "insert")])
    assert metastore.drop_table("default.t") == old
    assert metastore.list_tables() == []
    with pytest.raises(TableNotFoundError):
        metastore.get_table("t")
    with pytest.raises(TableNotFoundError):
        metastore.drop_table("t")
    fresh = metastore.create_table(new_table("t"))
    assert fresh.table_id != old.table_id
    assert metastore.history("t") == []
    assert metastore.allocate_write_id(begin(metastore), "t") == 1


@pytest.mark.parametrize("changes", [
    {"name": "bad-name"},
    {"database": ""},
    {"location": "../outside/t"},
    {"location": ""},
    {"bucket_by": ("nope",), "buckets": 2},
    {"bucket_by": ("id",), "buckets": 0},
    {"buckets": 4},
    {"buckets": -1},
    {"partition_schema": pa.schema([("ID", pa.string())])},
    {"properties": {"k": 1}},
], ids=["bad-name", "empty-database", "relative-location-outside", "empty-location",
        "unknown-bucket-column",
        "bucket-by-without-buckets", "buckets-without-bucket-by", "negative-buckets",
        "partition-column-repeats-a-column", "non-string-property"])
def test_invalid_tables_are_refused_and_nothing_is_written(
        metastore: Metastore, changes: dict[str, Any]) -> None:
    with pytest.raises(InvalidInputError):
        metastore.create_table(new_table(**changes))
    assert metastore.list_tables() == []


def test_stored_properties_do_not_alias_the_callers_dict(metastore: Metastore) -> None:
    props = {"a": "1"}
    created = metastore.create_table(new_table(properties=props))
    props["a"] = "2"
    assert created.properties == {"a": "1"}
    assert metastore.get_table("t").properties == {"a": "1"}


def test_add_columns_appends_nullable_columns_and_bumps_the_metadata_version(
        metastore: Metastore) -> None:
    created = metastore.create_table(new_table(partition_by=["dt"]))
    assert created.metadata_version == 0
    info = metastore.add_columns("t", pa.schema([("score", pa.float64()),
                                                 ("tags", pa.list_(pa.string()))]))
    assert info.schema.names == ["id", "name", "score", "tags"]
    assert info.schema.field("tags").type == pa.list_(pa.string())
    assert (info.metadata_version, info.table_id) == (1, created.table_id)
    assert metastore.get_table("t") == info
    for bad, message in [
        (pa.schema([("NAME", pa.string())]), "already a column"),
        (pa.schema([("dt", pa.string())]), "already a column"),
        (pa.schema([pa.field("n", pa.int32(), nullable=False)]), "must be nullable"),
        (pa.schema([("x", pa.null())]), "needs a type"),
        (pa.schema([("bad name", pa.int32())]), "letters, digits"),
        (pa.schema([]), "non-empty"),
    ]:
        with pytest.raises(InvalidInputError, match=message):
            metastore.add_columns("t", bad)
    assert metastore.get_table("t") == info  # nothing changed by a refusal
    with pytest.raises(TableNotFoundError):
        metastore.add_columns("nope", pa.schema([("x", pa.int32())]))


def test_a_commit_planned_against_older_metadata_fails(backend: Backend) -> None:
    """Two clients (connections): a writer planned against metadata version 0, another
    added a column before it committed; its commit fails and leaves nothing."""
    writer, other = backend.open(), backend.open()
    try:
        writer.create_table(new_table())
        txn = begin(writer)
        planned = replace(write(writer, txn, "insert"), metadata_version=0)
        unchecked = begin(writer)
        legacy = write(writer, unchecked, "insert")  # names no version: not checked
        other.add_columns("t", pa.schema([("extra", pa.string())]))
        with pytest.raises(MetadataChangedError, match="metadata changed") as caught:
            writer.commit(txn, [planned])
        assert (caught.value.txn_id, caught.value.table) == (txn, "default.t")
        assert states(other)[txn] == "aborted"
        assert [w.write_id for w in other.aborted_components("t")] == [planned.write_id]
        writer.commit(unchecked, [legacy])
        again = begin(writer)
        current = replace(write(writer, again, "insert"), metadata_version=1)
        writer.commit(again, [current])
        assert [e.write_id for e in other.history("t")] == [legacy.write_id,
                                                            current.write_id]
    finally:
        writer.close()
        other.close()


def test_partitions_are_idempotent_sorted_and_canonical(metastore: Metastore) -> None:
    metastore.create_table(new_table("p", partition_by=("dt", "c")))
    metastore.add_partitions("p", ["dt=2024-01-02/c=US", "dt=2024-01-01/c=a%2Fb"])
    metastore.add_partitions("p", ["dt=2024-01-02/c=US"])
    assert metastore.list_partitions("p") == ["dt=2024-01-01/c=a%2Fb", "dt=2024-01-02/c=US"]
    for bad in ["c=US/dt=2024-01-01", "dt=2024-01-01", "dt=x/c=a/b", "/dt=x/c=y", ""]:
        with pytest.raises(InvalidInputError):
            metastore.add_partitions("p", [bad])
    assert len(metastore.list_partitions("p")) == 2
    metastore.create_table(new_table("u"))
    with pytest.raises(InvalidInputError):
        metastore.add_partitions("u", ["dt=x"])
    with pytest.raises(TableNotFoundError):
        metastore.list_partitions("missing")


def test_original_files_are_recorded_checked_and_dropped_with_the_table(
        metastore: Metastore) -> None:
    metastore.create_table(new_table("p", partition_by=("dt",)))
    metastore.record_originals("p", [OriginalFile("dt=b", "000000_0", 7),
                                     OriginalFile("dt=a", "000001_0", 5)])
    metastore.record_originals("p", [OriginalFile("dt=a", "000001_0", 6)])  # again: new size
    assert metastore.original_files("p") == [OriginalFile("dt=a", "000001_0", 6),
                                             OriginalFile("dt=b", "000000_0", 7)]
    for bad in [OriginalFile("dt=a", "part-0.orc", 1), OriginalFile("", "000000_0", 1),
                OriginalFile("dt=a", "000000_0", -1), OriginalFile("c=a", "000000_0", 1)]:
        with pytest.raises(InvalidInputError):
            metastore.record_originals("p", [bad])
    assert len(metastore.original_files("p")) == 2  # a refusal writes nothing
    metastore.drop_table("p")
    metastore.create_table(new_table("p", partition_by=("dt",)))
    assert metastore.original_files("p") == []  # a new table of the name starts afresh
    with pytest.raises(TableNotFoundError):
        metastore.original_files("missing")


# --- transaction lifecycle --------------------------------------------------------------------


def test_open_transaction_records_ids_state_and_snapshot(metastore: Metastore) -> None:
    before = datetime.now(UTC)
    first = metastore.open_transaction(user="alice", host="h1")
    second = metastore.open_transaction(user="bob", host="h2", kind="compaction")
    assert (first.txn_id, second.txn_id) == (1, 2)
    assert (first.state, first.kind, first.user, first.host) == ("open", "default", "alice", "h1")
    assert (second.kind, second.user, second.host) == ("compaction", "bob", "h2")
    assert first.finished is None and first.started == first.last_heartbeat
    assert first.started.tzinfo == UTC and before <= first.started <= second.started
    # §6.5: hwm = own id; other open/aborted txns below it are exceptions; own txn is not.
    assert str(first.snapshot) == f"1:{MAX}::"
    assert str(second.snapshot) == "2:1:1:"
    assert metastore.valid_txns(1) == first.snapshot
    assert metastore.valid_txns(2) == second.snapshot
    assert str(metastore.valid_txns()) == "2:1:1,2:"
    with pytest.raises(InvalidInputError):
        metastore.open_transaction(user="x", host="y", kind="bogus")  # type: ignore[arg-type]


def test_fresh_snapshot_of_an_empty_store(metastore: Metastore) -> None:
    assert str(metastore.valid_txns()) == f"0:{MAX}::"


def test_snapshot_lists_aborted_and_open_but_not_committed(metastore: Metastore) -> None:
    metastore.create_table(new_table())
    committed, aborted, still_open = begin(metastore), begin(metastore), begin(metastore)
    metastore.commit(committed, [])
    metastore.abort(aborted, "test")
    txn = metastore.open_transaction(user="u", host="h")
    assert str(txn.snapshot) == f"4:{still_open}:{still_open}:{aborted}"
    assert states(metastore) == {1: "committed", 2: "aborted", 3: "open", 4: "open"}


def test_unknown_transactions_are_state_errors(metastore: Metastore) -> None:
    metastore.create_table(new_table())
    with pytest.raises(TransactionStateError):
        metastore.valid_txns(99)
    with pytest.raises(TransactionStateError):
        metastore.heartbeat(99)
    with pytest.raises(TransactionStateError):
        metastore.allocate_write_id(99, "t")
    with pytest.raises(TransactionStateError):
        metastore.commit(99, [])
    with pytest.raises(TransactionStateError):
        metastore.abort(99)


def test_heartbeat_refreshes_and_rejects_finished_txns(metastore: Metastore) -> None:
    txn = metastore.open_transaction(user="u", host="h")
    time.sleep(0.01)
    metastore.heartbeat(txn.txn_id)
    (shown,) = metastore.show_transactions()
    assert shown.last_heartbeat > txn.last_heartbeat and shown.started == txn.started
    metastore.commit(txn.txn_id, [])
    with pytest.raises(TransactionStateError):
        metastore.heartbeat(txn.txn_id)
    aborted = begin(metastore)
    metastore.abort(aborted)
    with pytest.raises(TransactionAbortedError):
        metastore.heartbeat(aborted)


def test_abort_is_idempotent_and_refused_after_commit(metastore: Metastore) -> None:
    txn = begin(metastore)
    metastore.abort(txn, "first")
    metastore.abort(txn, "again")
    (info,) = metastore.show_transactions()
    assert info.state == "aborted" and info.finished is not None
    done = begin(metastore)
    metastore.commit(done, [])
    with pytest.raises(TransactionStateError):
        metastore.abort(done)
    with pytest.raises(TransactionAbortedError):
        metastore.commit(txn, [])
    with pytest.raises(TransactionStateError):
        metastore.commit(done, [])


# --- write ids (§12.1) and snapshots (§6.5) ---------------------------------------------------


def test_write_ids_are_per_table_contiguous_and_reused_within_a_txn(
        metastore: Metastore) -> None:
    metastore.create_table(new_table("a"))
    metastore.create_table(new_table("b"))
    t1, t2, t3 = begin(metastore), begin(metastore), begin(metastore)
    got = [metastore.allocate_write_id(t2, "a"), metastore.allocate_write_id(t1, "a"),
           metastore.allocate_write_id(t1, "b"), metastore.allocate_write_id(t3, "a"),
           metastore.allocate_write_id(t1, "A"), metastore.allocate_write_id(t3, "b")]
    assert got == [1, 2, 1, 3, 2, 2]
    with pytest.raises(TableNotFoundError):
        metastore.allocate_write_id(t1, "missing")


def test_open_with_planned_writes_allocates_and_records_in_the_open(
        metastore: Metastore) -> None:
    """One call does what open, allocate_write_id and record_write do one after another:
    the same write ids (contiguous with other allocations), the same recorded components
    (locks shown; listed for cleaning if the txn aborts), and the commit is unchanged."""
    metastore.create_table(new_table("p", partition_by=("dt",)))
    metastore.create_table(new_table("u"))
    first = begin(metastore)
    assert metastore.allocate_write_id(first, "p") == 1
    opened = metastore.open_transaction(user="tester", host="localhost", writes=[
        PlannedWrite("P", ("dt=1", "dt=2"), "insert"), PlannedWrite("default.u", ("",),
                                                                    "overwrite")])
    assert opened.write_ids == {"default.p": 2, "default.u": 1}
    assert metastore.allocate_write_id(opened.txn_id, "p") == 2  # the same, reused
    assert opened.snapshot == metastore.valid_txns(opened.txn_id)
    assert [(lk.table, lk.partition, lk.lock_type) for lk in metastore.show_locks()] == [
        ("p", "dt=1", "shared_write"), ("p", "dt=2", "shared_write"), ("u", None, "exclusive")]
    plan = PlannedWrite("p", ("dt=1",), "insert")
    assert plan.components(2) == [WriteComponent("default.p", "dt=1", "insert", 2,
                                                 ("dt=1/delta_0000002_0000002_0000",))]
    assert PlannedWrite("u", ("",), "overwrite").components(1)[0].directories == (
        "base_0000001",)
    metastore.abort(opened.txn_id)
    assert sorted(c.directories[0] for c in metastore.aborted_components("p")) == [
        "dt=1/delta_0000002_0000002_0000", "dt=2/delta_0000002_0000002_0000"]
    again = metastore.open_transaction(user="tester", host="localhost",
                                       writes=[PlannedWrite("p", ("dt=3",), "insert")])
    metastore.commit(again.txn_id, [component(3, table="p", partition="dt=3", rows_inserted=5)])
    assert [(h.write_id, h.rows_inserted) for h in metastore.history("p")] == [(3, 5)]


def test_open_with_planned_updates_and_deletes(metastore: Metastore) -> None:
    """A single-statement UPDATE or DELETE opens with its planned write, beside an insert
    into another table: each table's write id allocated, the statement core's directories
    recorded (delete events in statement 0, an UPDATE's new rows in statement 1), listed
    for cleaning if the txn aborts; a commit replaces them with what was written."""
    for name in ("u", "d", "i"):
        metastore.create_table(new_table(name))
    assert metastore.allocate_write_id(begin(metastore), "u") == 1
    opened = metastore.open_transaction(user="tester", host="localhost", writes=[
        PlannedWrite("u", ("",), "update"), PlannedWrite("i", ("",), "insert"),
        PlannedWrite("d", ("",), "delete")])
    assert opened.write_ids == {"default.u": 2, "default.i": 1, "default.d": 1}
    assert metastore.allocate_write_id(opened.txn_id, "u") == 2  # the same, reused
    assert sorted((lk.table, lk.lock_type) for lk in metastore.show_locks()) == [
        ("d", "shared_write"), ("i", "shared_write"), ("u", "shared_write")]
    assert PlannedWrite("u", ("",), "update").components(2) == [WriteComponent(
        "default.u", "", "update", 2,
        ("delete_delta_0000002_0000002_0000", "delta_0000002_0000002_0001"))]
    assert PlannedWrite("d", ("dt=1",), "delete").components(1)[0].directories == (
        "dt=1/delete_delta_0000001_0000001_0000",)
    metastore.abort(opened.txn_id)
    assert [c.directories for c in metastore.aborted_components("u")] == [
        ("delete_delta_0000002_0000002_0000", "delta_0000002_0000002_0001")]
    assert [c.directories for c in metastore.aborted_components("d")] == [
        ("delete_delta_0000001_0000001_0000",)]
    again = metastore.open_transaction(user="tester", host="localhost",
                                       writes=[PlannedWrite("d", ("",), "delete")])
    metastore.commit(again.txn_id, [WriteComponent(
        "d", "", "delete", 2, ("delete_delta_0000002_0000002_0000",), rows_deleted=1)])
    assert [(h.write_id, h.operation, h.rows_deleted) for h in metastore.history("d")] == [
        (2, "delete", 1)]
    assert metastore.show_locks() == []


def test_planned_writes_are_checked_and_a_refused_open_leaves_nothing(
        metastore: Metastore) -> None:
    metastore.create_table(new_table("p", partition_by=("dt",)))
    before = metastore.valid_txns()
    for writes, error in [([PlannedWrite("missing", ("",), "insert")], TableNotFoundError),
                          ([PlannedWrite("p", ("",), "insert")], InvalidInputError),
                          (["p"], InvalidInputError)]:
        with pytest.raises(error):
            metastore.open_transaction(user="tester", host="localhost",
                                       writes=writes)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError):
        metastore.open_transaction(user="tester", host="localhost", kind="compaction",
                                   writes=[PlannedWrite("p", ("dt=1",), "insert")])
    assert metastore.valid_txns() == before and metastore.show_transactions() == []
    assert metastore.allocate_write_id(begin(metastore), "p") == 1


def test_allocation_is_refused_for_finished_txns(metastore: Metastore) -> None:
    metastore.create_table(new_table())
    aborted, committed = begin(metastore), begin(metastore)
    metastore.abort(aborted)
    metastore.commit(committed, [])
    with pytest.raises(TransactionAbortedError):
        metastore.allocate_write_id(aborted, "t")
    with pytest.raises(TransactionStateError):
        metastore.allocate_write_id(committed, "t")
    assert metastore.allocate_write_id(begin(metastore), "t") == 1


def test_write_id_lists_follow_spec_6_5(metastore: Metastore) -> None:
    """Txn 1 opens, txn 2 opens and takes write id 1, txn 1 takes write id 2."""
    metastore.create_table(new_table())
    t1, t2 = begin(metastore), begin(metastore)
    assert metastore.allocate_write_id(t2, "t") == 1
    assert metastore.allocate_write_id(t1, "t") == 2
    t3 = metastore.open_transaction(user="u", host="h")
    assert str(t3.snapshot) == "3:1:1,2:"
    assert str(metastore.valid_write_ids("t", t3.snapshot, t3.txn_id)) == "default.t:2:1:1,2:"
    # txn 1's own snapshot (hwm 1) counts its own write id 2 and sees it; write id 1 belongs to
    # txn 2, above its hwm, so it is an open exception.
    assert str(metastore.valid_write_ids("t", metastore.valid_txns(t1), t1)) == \
        "default.t:2:1:1:"
    # txn 2's snapshot (hwm 2, txn 1 open): write id 2 is txn 1's, invalid; its own 1 is valid.
    assert str(metastore.valid_write_ids("t", metastore.valid_txns(t2), t2)) == \
        "default.t:2:2:2:"
    metastore.commit(t2, [component(1, "insert")])
    metastore.abort(t1)
    t4 = metastore.open_transaction(user="u", host="h")
    assert str(t4.snapshot) == "4:3:3:1"
    assert str(metastore.valid_write_ids("t", t4.snapshot, t4.txn_id)) == \
        f"default.t:2:{MAX}::2"
    # A snapshot taken earlier does not change when the txns it saw open finish later.
    assert str(metastore.valid_write_ids("t", t3.snapshot, t3.txn_id)) == "default.t:2:1:1,2:"
    # Without a txn: a fresh snapshot. A table never written has hwm 0.
    assert str(metastore.valid_write_ids("t", metastore.valid_txns())) == f"default.t:2:{MAX}::2"
    metastore.create_table(new_table("empty"))
    assert str(metastore.valid_write_ids("empty", t4.snapshot)) == f"default.empty:0:{MAX}::"
    with pytest.raises(TableNotFoundError):
        metastore.valid_write_ids("missing", t4.snapshot)


def test_read_your_writes_but_not_others(metastore: Metastore) -> None:
    metastore.create_table(new_table())
    mine, other = begin(metastore), begin(metastore)
    metastore.allocate_write_id(other, "t")
    assert metastore.allocate_write_id(mine, "t") == 2
    own = metastore.valid_write_ids("t", metastore.valid_txns(mine), mine)
    assert own.is_write_id_valid(2) and not own.is_write_id_valid(1)
    # A fresh snapshot (a reader outside any txn) sees neither uncommitted write...
    fresh = metastore.valid_txns()
    assert str(metastore.valid_write_ids("t", fresh)) == "default.t:2:1:1,2:"
    # ...but passing txn_id with it makes the caller's own write visible.
    assert str(metastore.valid_write_ids("t", fresh, mine)) == "default.t:2:1:1:"


def test_own_writes_count_even_under_an_older_snapshot(metastore: Metastore) -> None:
    metastore.create_table(new_table())
    before = metastore.valid_txns()
    txn = begin(metastore)
    assert metastore.allocate_write_id(txn, "t") == 1
    assert str(metastore.valid_write_ids("t", before, txn)) == f"default.t:1:{MAX}::"
    assert str(metastore.valid_write_ids("t", before)) == f"default.t:0:{MAX}::"


def test_commits_after_the_snapshot_stay_invisible(metastore: Metastore) -> None:
    metastore.create_table(new_table())
    reader = metastore.open_transaction(user="u", host="h")
    writer = begin(metastore)
    metastore.commit(writer, [write(metastore, writer, "insert")])
    assert str(metastore.valid_write_ids("t", reader.snapshot, reader.txn_id)) == \
        f"default.t:0:{MAX}::"
    # The reader writes later and gets write id 2: the hwm rises to 2, and write id 1 (txn 2,
    # above the reader's snapshot hwm) is an open exception although it committed.
    assert metastore.allocate_write_id(reader.txn_id, "t") == 2
    assert str(metastore.valid_write_ids("t", reader.snapshot, reader.txn_id)) == \
        "default.t:2:1:1:"
    latest = metastore.open_transaction(user="u", host="h")
    assert str(metastore.valid_write_ids("t", latest.snapshot, latest.txn_id)) == \
        "default.t:2:2:2:"


# --- timeouts (§14) ---------------------------------------------------------------------------


def test_timed_out_transactions_are_aborted_by_the_next_call(backend: Backend) -> None:
    store = backend.open(timeout_seconds=1.0)
    try:
        store.create_table(new_table())
        stale = begin(store)
        store.allocate_write_id(stale, "t")
        time.sleep(1.3)
        assert str(store.valid_txns()) == f"1:{MAX}::1"  # a snapshot builder reaps too
        fresh = store.open_transaction(user="u", host="h")
        assert str(fresh.snapshot) == f"2:{MAX}::1"
        assert states(store) == {1: "aborted", 2: "open"}
        assert store.show_locks() == []
        with pytest.raises(TransactionAbortedError, match="txnid:1"):
            store.heartbeat(stale)
        with pytest.raises(TransactionAbortedError):
            store.allocate_write_id(stale, "t")
        with pytest.raises(TransactionAbortedError):
            store.commit(stale, [component(1)])
        assert str(store.valid_write_ids("t", fresh.snapshot)) == f"default.t:1:{MAX}::1"
    finally:
        store.close()


def test_heartbeats_keep_a_transaction_alive(backend: Backend) -> None:
    store = backend.open(timeout_seconds=1.0)
    try:
        store.create_table(new_table())
        txn = begin(store)
        for _ in range(8):  # 2 s in all, twice the timeout
            time.sleep(0.25)
            store.heartbeat(txn)
        written = write(store, txn, "insert")
        assert store.commit(txn, [written]).write_ids == {"default.t": 1}
    finally:
        store.close()
