"""The metastore (layer L2): catalog, transactions, write ids, commit log and snapshot leases.

``Metastore`` is the protocol every backend implements; ``SqliteMetastore`` is the one-machine
backend (a SQLite file in the warehouse), ``PostgresMetastore`` the one shared by several
machines (a PostgreSQL server; psycopg is imported only when one is opened). The value
objects are frozen dataclasses so that what the metastore hands out cannot be changed behind
its back.
"""

from __future__ import annotations

from acidstore.metastore.postgres import PostgresMetastore
from acidstore.metastore.protocol import Metastore
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
    "CommitCheck",
    "CommitInfo",
    "CommittedWrite",
    "CompactionCommit",
    "CompactionInfo",
    "CompactionKind",
    "CompactionOutput",
    "CompactionState",
    "HistoryEntry",
    "LeaseInfo",
    "LockInfo",
    "LockType",
    "Metastore",
    "NewTable",
    "Operation",
    "OriginalFile",
    "PlannedWrite",
    "PostgresMetastore",
    "SqliteMetastore",
    "TableInfo",
    "TxnInfo",
    "TxnKind",
    "TxnState",
    "WarehouseBinding",
    "WriteComponent",
]
