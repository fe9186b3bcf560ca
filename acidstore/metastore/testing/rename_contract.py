"""The contract of ``Catalog.rename_table`` (part of ``CatalogContract``): a renamed table
keeps its id and everything recorded of it, every call that names a table by name finds it
under the new name only, the old name is free, and a rename under a writer is refused."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import pyarrow as pa

from acidstore.errors import (
    InvalidInputError,
    LocationNotEmptyError,
    MetadataChangedError,
    TableBusyError,
    TableExistsError,
    TableNotFoundError,
)
from acidstore.metastore.records import CommittedWrite, OriginalFile, WriteComponent
from acidstore.metastore.testing.harness import (
    MetastoreHarness,
    begin,
    component,
    new_table,
    raises,
    write,
)

__all__ = ["TableRenameContract"]


class _RefusedError(Exception):
    """What the commit check of ``test_commits_after_a_rename_meet_the_writes_before_it``
    raises, after noting what it was shown."""


class TableRenameContract(MetastoreHarness):
    """Renames: the record follows the table id, the name moves everywhere at once."""

    def test_a_renamed_table_keeps_its_id_schema_partitions_and_record(self) -> None:
        metastore = self.metastore
        created = metastore.create_table(new_table("t", partition_by=("dt",)))
        metastore.record_originals("t", [OriginalFile("dt=a", "000000_0", 7)])
        committed = []
        for partition in ("dt=a", "dt=b"):
            txn = begin(metastore)
            written = write(metastore, txn, "insert", partition=partition)
            metastore.commit(txn, [written])
            committed.append(written)
        widened = metastore.add_columns("t", pa.schema([("score", pa.float64())]))
        history = metastore.history("t")
        renamed = metastore.rename_table("T", "Other.U")
        assert (renamed.full_name, renamed.table_id) == ("other.u", created.table_id)
        assert renamed.schema.equals(widened.schema)
        assert renamed.partition_schema.equals(created.partition_schema)
        assert (renamed.location, renamed.created) == (created.location, created.created)
        assert renamed.metadata_version == widened.metadata_version + 1
        other = self.another_client()
        assert other.get_table("other.u") == renamed
        assert other.list_tables() == ["other.u"]
        assert other.list_partitions("other.u") == ["dt=a", "dt=b"]
        assert other.original_files("other.u") == [OriginalFile("dt=a", "000000_0", 7)]
        assert other.history("other.u") == history
        assert [(c.table, c.partition, c.write_id) for c in
                other.committed_components("other.u")] == [
            ("other.u", c.partition, c.write_id) for c in committed]
        write_ids = other.valid_write_ids("other.u", other.valid_txns())
        assert (write_ids.table_name, write_ids.high_watermark) == ("other.u", 2)
        for call in (other.get_table, other.list_partitions, other.history,
                     other.original_files, other.committed_components):
            with raises(TableNotFoundError, match=r"default\.t"):
                call("t")
        with raises(TableNotFoundError):
            other.rename_table("t", "v")
        # write ids go on where they were, under the new name only
        txn = begin(other)
        with raises(TableNotFoundError):
            other.allocate_write_id(txn, "t")
        assert other.allocate_write_id(txn, "other.u") == 3

    def test_a_taken_or_bad_new_name_is_refused_and_nothing_changes(self) -> None:
        metastore = self.metastore
        t = metastore.create_table(new_table("t"))
        metastore.create_table(new_table("u", "db"))
        with raises(TableExistsError, match=r"db\.u"):
            metastore.rename_table("t", "DB.U")
        with raises(TableExistsError):
            metastore.rename_table("t", "default.t")
        for bad in ("1t", "a.b.c", "t-2", ""):
            with raises(InvalidInputError, match="table name"):
                metastore.rename_table("t", bad)
        with raises(TableNotFoundError, match=r"default\.missing"):
            metastore.rename_table("missing", "v")
        assert metastore.list_tables() == ["db.u", "default.t"]
        assert metastore.get_table("t") == t

    def test_the_old_name_starts_afresh_and_locations_are_never_shared(self) -> None:
        metastore = self.metastore
        old = metastore.create_table(new_table("t"))
        txn = begin(metastore)
        metastore.commit(txn, [write(metastore, txn, "insert")])
        metastore.rename_table("t", "u")
        assert metastore.table_at(old.location) == "default.u"
        assert metastore.table_at("/nowhere/t") is None
        with raises(LocationNotEmptyError, match=r"default\.u"):
            metastore.create_table(new_table("t"))  # the renamed table's location
        assert metastore.list_tables() == ["default.u"]
        fresh = metastore.create_table(new_table("t", location=old.location + "-2"))
        assert fresh.table_id != old.table_id and fresh.metadata_version == 0
        assert metastore.history("t") == [] and metastore.list_partitions("t") == []
        assert metastore.allocate_write_id(begin(metastore), "t") == 1
        assert [e.write_id for e in metastore.history("u")] == [1]
        metastore.drop_table("u")
        assert metastore.table_at(old.location) is None
        assert metastore.get_table("t") == fresh

    def test_a_rename_is_refused_while_a_transaction_writes_the_table(self) -> None:
        """A transaction holding a write id on the table (or compacting it) would commit
        under a name that no longer exists: the rename waits for it to end. One that has
        not written the table yet finds it under its new name only."""
        writer, renamer = self.another_client(), self.another_client()
        writer.create_table(new_table())
        txn = begin(writer)
        written = write(writer, txn, "insert")
        reader = begin(writer)  # open, but no write id on the table
        with raises(TableBusyError, match=f"txnid:{txn}") as caught:
            renamer.rename_table("t", "u")
        assert (caught.value.table, caught.value.txn_ids) == ("default.t", (txn,))
        assert renamer.list_tables() == ["default.t"]
        writer.commit(txn, [written])
        renamer.rename_table("t", "u")
        with raises(TableNotFoundError):
            writer.allocate_write_id(reader, "t")
        late = replace(write(writer, reader, "insert", table="default.u"), metadata_version=1)
        writer.commit(reader, [late])
        assert [e.write_id for e in renamer.history("u")] == [written.write_id, late.write_id]
        assert [c.table for c in renamer.committed_components("u")] == ["default.u"] * 2

    def test_a_rename_is_refused_while_a_worker_compacts_the_table(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        assert metastore.enqueue_compaction("t", "", "major", "r") is not None
        claimed = metastore.claim_compaction("w", stale_seconds=60)
        assert claimed is not None
        compactor = metastore.open_transaction(user="w", host="h", kind="compaction").txn_id
        snapshot = metastore.valid_txns(compactor)
        metastore.heartbeat_compaction(
            claimed.compaction_id, "w", txn_id=compactor,
            compactor_write_ids=metastore.valid_write_ids("t", snapshot, compactor)
            .to_compactor())
        with raises(TableBusyError, match=f"txnid:{compactor}"):
            metastore.rename_table("t", "u")
        metastore.abort(compactor)
        metastore.rename_table("t", "u")
        (entry,) = metastore.show_compactions()
        assert (entry.compaction_id, entry.table) == (claimed.compaction_id, "default.u")

    def test_the_queue_leases_and_locks_follow_the_new_name(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        queued = metastore.enqueue_compaction("p", "dt=1", "minor", "deltas")
        assert queued is not None
        snapshot = metastore.valid_txns()
        lease = metastore.acquire_lease("p", snapshot, metastore.valid_write_ids("p", snapshot),
                                        ttl_seconds=60)
        metastore.rename_table("p", "q")
        other = self.another_client()
        claimed = other.claim_compaction("w", stale_seconds=60)
        assert claimed is not None
        assert (claimed.compaction_id, claimed.table) == (queued.compaction_id, "default.q")
        assert [(x.lease_id, x.table) for x in other.active_leases("q")] == [(lease, "default.q")]
        assert snapshot in [s for s, _ in other.live_snapshots("q")]
        txn = begin(other)
        write(other, txn, "update", table="q", partition="dt=1")
        assert [(x.database, x.table, x.partition) for x in other.show_locks()] == [
            ("default", "q", "dt=1")]

    def test_commits_after_a_rename_meet_the_writes_before_it(self) -> None:
        """The committed writes a commit's check is shown carry the table's current name
        (the check matches them with its own components by name), and a write planned
        against the metadata from before the rename fails as after ``add_columns``."""
        metastore = self.metastore
        metastore.create_table(new_table())
        txn = begin(metastore)
        metastore.commit(txn, [write(metastore, txn, "insert")])
        late = begin(metastore)  # its snapshot is from before the delete below
        deleting = begin(metastore)
        metastore.commit(deleting, [write(metastore, deleting, "delete")])
        metastore.rename_table("t", "u")
        shown: list[CommittedWrite] = []

        def check(mine: Sequence[WriteComponent], theirs: Sequence[CommittedWrite]) -> None:
            shown.extend(theirs)
            raise _RefusedError("the check saw a conflict")

        mine = write(metastore, late, "delete", table="u")
        with raises(_RefusedError):
            metastore.commit(late, [mine], check=check)
        assert [(w.txn_id, w.table) for w in shown] == [(deleting, "default.u")]
        stale = begin(metastore)
        planned = replace(component(metastore.allocate_write_id(stale, "u"), table="default.u"),
                          metadata_version=0)
        metastore.record_write(stale, planned)
        with raises(MetadataChangedError, match="metadata changed"):
            metastore.commit(stale, [planned])
