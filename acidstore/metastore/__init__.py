"""The metastore (layer L2): catalog, transactions, write ids, commit log and snapshot leases.

``Metastore`` is the protocol every backend implements, the union of its roles (``Catalog``,
``Transactions``, ``Leases``, ``CompactionQueue``, ``History``: ``protocol`` says what each is
for); a caller depends on the roles it uses. ``SqliteMetastore`` is the one-machine
backend (a SQLite file in the warehouse), ``PostgresMetastore`` the one shared by several
machines (a PostgreSQL server; psycopg is imported only when one is opened). The value
objects are frozen dataclasses so that what the metastore hands out cannot be changed behind
its back.
"""

from __future__ import annotations

from acidstore.metastore.postgres import PostgresMetastore
from acidstore.metastore.protocol import (
    Catalog,
    CompactionQueue,
    History,
    Leases,
    Metastore,
    SnapshotLeasing,
    TableRecord,
    Transactions,
)
from acidstore.metastore.queue import (
    CompactionCommit,
    CompactionInfo,
    CompactionKind,
    CompactionState,
)
from acidstore.metastore.records import (
    AppVersion,
    CommitCheck,
    CommitInfo,
    CommittedWrite,
    CompactionOutput,
    HistoryEntry,
    LeaseInfo,
    LockInfo,
    LockType,
    NewTable,
    Operation,
    OriginalFile,
    PlannedWrite,
    StatementSummary,
    TableInfo,
    TxnInfo,
    TxnKind,
    TxnState,
    WarehouseBinding,
    WriteComponent,
)
from acidstore.metastore.sqlite import SqliteMetastore

__all__ = [
    "AppVersion",
    "Catalog",
    "CommitCheck",
    "CommitInfo",
    "CommittedWrite",
    "CompactionCommit",
    "CompactionInfo",
    "CompactionKind",
    "CompactionOutput",
    "CompactionQueue",
    "CompactionState",
    "History",
    "HistoryEntry",
    "LeaseInfo",
    "Leases",
    "LockInfo",
    "LockType",
    "Metastore",
    "NewTable",
    "Operation",
    "OriginalFile",
    "PlannedWrite",
    "PostgresMetastore",
    "SnapshotLeasing",
    "SqliteMetastore",
    "StatementSummary",
    "TableInfo",
    "TableRecord",
    "Transactions",
    "TxnInfo",
    "TxnKind",
    "TxnState",
    "WarehouseBinding",
    "WriteComponent",
]
