"""The contract of the ``Leases`` role: a reader's lease on its snapshot, the live snapshots a
cleaner keeps, and the replacements a snapshot taken before its lease may have missed."""

from __future__ import annotations

import time
from datetime import UTC

from acidstore.errors import InvalidInputError, TableNotFoundError, TransactionStateError
from acidstore.metastore.records import CompactionOutput
from acidstore.metastore.testing.harness import MetastoreHarness, begin, new_table, raises, write

__all__ = ["LeasesContract"]


class LeasesContract(MetastoreHarness):
    """Leases live until released or expired; the cleaner sees them and the open txns."""

    def test_leases_live_until_released_or_expired(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table())
        snapshot = metastore.valid_txns()
        write_ids = metastore.valid_write_ids("t", snapshot)
        short = metastore.acquire_lease("t", snapshot, write_ids, ttl_seconds=0.5)
        long = metastore.acquire_lease("default.t", snapshot, write_ids, ttl_seconds=60)
        renewed = metastore.acquire_lease("t", snapshot, write_ids, ttl_seconds=0.5)
        assert len({short, long, renewed}) == 3
        leases = metastore.active_leases("t")
        assert [lease.lease_id for lease in leases] == sorted([short, long, renewed])
        first = leases[0]
        assert (first.table, first.snapshot, first.write_ids) == ("default.t", snapshot, write_ids)
        assert first.expires > first.acquired and first.acquired.tzinfo == UTC
        metastore.renew_lease(renewed, ttl_seconds=60)
        time.sleep(0.7)
        assert [lease.lease_id for lease in metastore.active_leases("t")] == [long, renewed]
        with raises(TransactionStateError):
            metastore.renew_lease(short, ttl_seconds=60)  # expired leases cannot be revived
        metastore.release_lease(long)
        metastore.release_lease(long)
        assert [lease.lease_id for lease in metastore.active_leases("t")] == [renewed]
        with raises(InvalidInputError):
            metastore.acquire_lease("t", snapshot, write_ids, ttl_seconds=0)
        with raises(TableNotFoundError):
            metastore.acquire_lease("missing", snapshot, write_ids, ttl_seconds=1)

    def test_unseen_replacements_are_what_replaced_directories_after_a_snapshot(self) -> None:
        """A leased read asks, once its lease is in place, which compactions and INSERT
        OVERWRITEs of its table committed without its snapshot seeing them (the cleaner may have
        removed what they replaced before the lease existed). Decided by txn ids, not times: a
        commit in flight when the snapshot was taken (listed open in it) counts however early
        its time, one the snapshot sees never does, nor an aborted one or another table's."""
        metastore = self.metastore
        metastore.create_table(new_table())
        metastore.create_table(new_table("other"))
        seen = begin(metastore)
        metastore.commit(seen, [write(metastore, seen, "overwrite")])
        in_flight = begin(metastore)
        flight_write = write(metastore, in_flight, "overwrite")
        snapshot = metastore.valid_txns()
        assert metastore.unseen_replacements("t", snapshot) == []
        metastore.commit(in_flight, [flight_write])
        inserted, overwritten, aborted = begin(metastore), begin(metastore), begin(metastore)
        metastore.commit(inserted, [write(metastore, inserted, "insert")])
        metastore.commit(overwritten, [write(metastore, overwritten, "overwrite")])
        write(metastore, aborted, "overwrite")
        metastore.abort(aborted)
        other = begin(metastore)
        metastore.commit(other, [write(metastore, other, "overwrite", table="default.other")])
        compactor = metastore.open_transaction(user="tester", host="h", kind="compaction").txn_id
        metastore.record_compaction(
            "t", "", "major", "test", txn_id=compactor, worker="tester",
            compactor_write_ids=metastore.valid_write_ids("t", metastore.valid_txns(compactor)))
        metastore.commit(compactor, [], outputs=[CompactionOutput(
            "default.t", "", f"base_0000004_v{compactor:07d}", 1, 1, 10, (("bucket_00000", 1),),
            compactor)])
        assert metastore.unseen_replacements("t", snapshot) == [in_flight, overwritten, compactor]
        assert metastore.unseen_replacements("other", snapshot) == [other]
        assert metastore.unseen_replacements("t", metastore.valid_txns()) == []

    def test_live_snapshots_are_the_leased_ones_and_those_of_open_transactions(self) -> None:
        """What the cleaner keeps: every unexpired lease of the table and the snapshot of
        every open transaction (whatever table it writes), each with the table's write-id
        list under it; nothing once the lease is released and the transaction finished."""
        metastore = self.metastore
        metastore.create_table(new_table())
        metastore.create_table(new_table("other"))
        first = begin(metastore)
        metastore.commit(first, [write(metastore, first, "insert")])
        reader = metastore.open_transaction(user="tester", host="h")
        snapshot = metastore.valid_txns()
        write_ids = metastore.valid_write_ids("t", snapshot)
        lease = metastore.acquire_lease("t", snapshot, write_ids, ttl_seconds=60)
        elsewhere = metastore.acquire_lease(
            "other", snapshot, metastore.valid_write_ids("other", snapshot), ttl_seconds=60)
        live = metastore.live_snapshots("t")
        opened = (reader.snapshot,
                  metastore.valid_write_ids("t", reader.snapshot, reader.txn_id))
        assert len(live) == 2 and (snapshot, write_ids) in live and opened in live
        assert metastore.opens_in_flight() == []  # every open has returned
        metastore.release_lease(lease)
        metastore.release_lease(elsewhere)
        metastore.commit(reader.txn_id, [])
        assert metastore.live_snapshots("t") == []
