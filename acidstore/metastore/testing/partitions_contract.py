"""The contract of the batched record queries of the ``History`` role
(``History.*_by_partition``): a read of many partitions plans from two queries per batch, so
each partition's answer must be exactly the one-partition query's, from its own floor, and
what is no partition list is refused."""

from __future__ import annotations

from acidstore.errors import InvalidInputError
from acidstore.metastore.records import CompactionOutput
from acidstore.metastore.testing.harness import MetastoreHarness, begin, new_table, raises, write

__all__ = ["PartitionRecordContract"]


class PartitionRecordContract(MetastoreHarness):
    """Committed components and compaction outputs of many partitions at once."""

    def test_committed_components_by_partition_are_each_partitions_from_its_floor(self) -> None:
        """Each partition's answer is exactly ``committed_components`` of it from its own
        floor, in the same (txn) order, also where write ids were allocated out of txn
        order; aborted writes, other tables and partitions not asked for stay out."""
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        metastore.create_table(new_table("other", partition_by=("dt",)))
        for i in range(6):
            txn = begin(metastore)
            metastore.commit(txn, [write(metastore, txn, "insert", table="default.p",
                                         partition=f"dt={i % 3}")])
        late, early = begin(metastore), begin(metastore)
        second = write(metastore, early, "insert", table="default.p", partition="dt=0")
        first = write(metastore, late, "delete", table="default.p", partition="dt=0")
        metastore.commit(early, [second])
        metastore.commit(late, [first])
        crashed, other = begin(metastore), begin(metastore)
        write(metastore, crashed, "insert", table="default.p", partition="dt=1")
        metastore.abort(crashed)
        metastore.commit(other, [write(metastore, other, "insert", table="default.other",
                                       partition="dt=0")])

        floors = {"dt=0": 4, "dt=1": 0, "dt=2": 9, "dt=7": 0}
        found = metastore.committed_components_by_partition("p", floors)
        assert found == {part: metastore.committed_components(
            "p", partition=part, min_write_id=low) for part, low in floors.items()}
        assert [c.write_id for c in found["dt=0"]] == [4, 8, 7]  # txn order
        assert [c.write_id for c in found["dt=1"]] == [2, 5]
        assert found["dt=2"] == found["dt=7"] == []
        assert metastore.committed_components_by_partition("p", {"dt=1": 3}) == {
            "dt=1": metastore.committed_components("p", partition="dt=1", min_write_id=3)}
        assert metastore.committed_components_by_partition("p", {}) == {}

    def test_compaction_outputs_by_partition_are_each_partitions(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        for part in ("dt=0", "dt=1", "dt=2"):
            txn = begin(metastore)
            metastore.commit(txn, [write(metastore, txn, "insert", table="default.p",
                                         partition=part)])
        for parts in (["dt=0", "dt=1"], ["dt=1"], ["dt=0"]):
            txn = metastore.open_transaction(user="tester", host="h", kind="compaction").txn_id
            metastore.commit(txn, [], outputs=[CompactionOutput(
                "default.p", part, f"{part}/base_0000003_v{txn:07d}", 1, 1, 10,
                (("bucket_00000", 1),), txn) for part in parts])
        crashed = metastore.open_transaction(user="tester", host="h", kind="compaction").txn_id
        metastore.abort(crashed)

        asked = ["dt=1", "dt=0", "dt=2", "dt=9", "dt=1"]
        found = metastore.compaction_outputs_by_partition("p", asked)
        assert found == {part: metastore.compaction_outputs("p", partition=part)
                         for part in asked}
        assert list(found) == ["dt=1", "dt=0", "dt=2", "dt=9"]
        assert [len(found[part]) for part in found] == [2, 2, 0, 0]
        assert metastore.compaction_outputs_by_partition("p", []) == {}

    def test_the_record_of_many_partitions_refuses_what_is_no_partition_list(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        with raises(InvalidInputError):
            metastore.compaction_outputs_by_partition("p", "dt=0")
        with raises(InvalidInputError):
            metastore.compaction_outputs_by_partition("p", [0])  # type: ignore[list-item]
        for floors in ({"dt=0": -1}, {"dt=0": True}, {0: 1}, [("dt=0", 1)]):
            with raises(InvalidInputError):
                metastore.committed_components_by_partition("p", floors)  # type: ignore[arg-type]
