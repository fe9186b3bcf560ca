"""The metastore contract suite, one contract per role, for every backend to pass.

A backend's tests subclass ``MetastoreContract`` (or the contracts of the roles it implements)
and say how to open a client of a fresh store; pytest then runs every contract test against
it. SQLite's and PostgreSQL's are ``tests/metastore/test_metastore_contract.py``::

    class TestMyMetastore(MetastoreContract):
        @pytest.fixture(autouse=True)
        def _fresh_store(self, tmp_path: Path) -> None:
            self.path = tmp_path / "metastore.db"      # a new, empty store for each test

        def make_metastore(self, *, timeout_seconds: float | None = None) -> Metastore:
            return MyMetastore(self.path, timeout_seconds=timeout_seconds or 300)

The contracts, by role (``acidstore.metastore.protocol``):
- ``CatalogContract``: tables, partitions, original files, the warehouse binding;
- ``TransactionsContract`` (lifecycle, batches, timeouts), ``WriteIdsContract`` (write ids and
  snapshots) and ``CommitsContract`` (commits, conflicts, recorded writes, application
  versions): the ``Transactions`` role;
- ``LeasesContract``, ``CompactionQueueContract``, ``HistoryContract`` and
  ``PartitionRecordContract`` (its batched queries over many partitions).

The suite imports no test framework (plain ``assert`` and ``harness.raises``), so the package
needs none at run time; only test code imports this module. What stays under ``tests/``
needs more than a client of a store: spawned processes that open it by themselves, the
stateful hypothesis model, schema migrations and each backend's own facts.
"""

from __future__ import annotations

from acidstore.metastore.protocol import (
    Catalog,
    CompactionQueue,
    History,
    Leases,
    Metastore,
    Transactions,
)
from acidstore.metastore.testing.catalog_contract import CatalogContract
from acidstore.metastore.testing.commits_contract import CommitsContract
from acidstore.metastore.testing.harness import MetastoreHarness, raises
from acidstore.metastore.testing.history_contract import HistoryContract
from acidstore.metastore.testing.leases_contract import LeasesContract
from acidstore.metastore.testing.partitions_contract import PartitionRecordContract
from acidstore.metastore.testing.queue_contract import CompactionQueueContract
from acidstore.metastore.testing.transactions_contract import TransactionsContract
from acidstore.metastore.testing.write_ids_contract import WriteIdsContract

__all__ = ["CatalogContract", "CommitsContract", "CompactionQueueContract", "HistoryContract",
           "LeasesContract", "MetastoreContract", "MetastoreHarness", "PartitionRecordContract",
           "TransactionsContract", "WriteIdsContract", "raises"]


class MetastoreContract(CatalogContract, TransactionsContract, WriteIdsContract,
                        CommitsContract, LeasesContract, CompactionQueueContract,
                        HistoryContract, PartitionRecordContract):
    """Every role's contract: what a complete backend passes."""

    def test_backend_implements_the_protocol(self) -> None:
        metastore = self.metastore
        assert isinstance(metastore, Metastore)
        for role in (Catalog, Transactions, Leases, CompactionQueue, History):
            assert isinstance(metastore, role), role.__name__
