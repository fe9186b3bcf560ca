"""The metastore's value objects: what its calls take and return (layer L2).

Frozen, so that a snapshot or record handed out can never change under a reader; the role
protocols that pass them are named in ``protocol``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal

import pyarrow as pa

from acidstore.format.layout import base_name, delta_name
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.io.fs import join
from acidstore.metastore.names import split_table_name

__all__ = [
    "MAX_OPEN_BATCH",
    "AppVersion",
    "CommitCheck",
    "CommitInfo",
    "CommittedWrite",
    "CompactionOutput",
    "HistoryEntry",
    "LeaseInfo",
    "LockInfo",
    "LockType",
    "NewTable",
    "Operation",
    "OriginalFile",
    "PlannedWrite",
    "StatementSummary",
    "TableInfo",
    "TxnInfo",
    "TxnKind",
    "TxnState",
    "WarehouseBinding",
    "WriteComponent",
]

#: the most transactions one batch opens (Hive's ``hive.txn.max.open.batch``)
MAX_OPEN_BATCH = 1000

TxnState = Literal["open", "committed", "aborted"]
TxnKind = Literal["default", "compaction"]
Operation = Literal["insert", "update", "delete", "overwrite"]
LockType = Literal["shared_read", "shared_write", "exclusive"]


def _frozen_dict(obj: object, name: str, value: dict[str, str]) -> None:
    """Copy a caller's dict so that mutating it later cannot change a stored value object."""
    object.__setattr__(obj, name, dict(value))


@dataclass(frozen=True)
class NewTable:
    """What a caller supplies to ``create_table``; the metastore adds the id and the time.

    ``schema`` holds the user columns only; partition columns live in ``partition_schema``
    (Hive keeps them apart too: they are directory names, not file columns). ``buckets`` 0 or 1
    with an empty ``bucket_by`` means unbucketed. Names are folded to lower case, as Hive does.
    """

    database: str
    name: str
    schema: pa.Schema
    partition_schema: pa.Schema
    bucket_by: tuple[str, ...]
    buckets: int
    properties: dict[str, str]
    location: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "database", self.database.lower())
        object.__setattr__(self, "name", self.name.lower())
        object.__setattr__(self, "bucket_by", tuple(self.bucket_by))
        _frozen_dict(self, "properties", self.properties)

    @property
    def full_name(self) -> str:
        return f"{self.database}.{self.name}"


@dataclass(frozen=True)
class TableInfo:
    """A table as the catalog records it (see ``NewTable`` for the field meanings)."""

    database: str
    name: str
    schema: pa.Schema
    partition_schema: pa.Schema
    bucket_by: tuple[str, ...]
    buckets: int
    properties: dict[str, str]
    location: str
    table_id: int
    created: datetime
    #: bumped by every change of the table's metadata (``add_columns``): a writer that planned
    #: against an older version fails at commit with ``MetadataChangedError``
    metadata_version: int = 0
    #: ``original_files`` lists every original file the table may hold (created at metastore
    #: schema 12 or later): one it does not list is no data of the table. False for tables
    #: created before, which may have been adopted without a record
    originals_recorded: bool = False
    #: the ``row`` struct every file of the table is read and written with, when it differs
    #: from ``schema``: dropped columns (``Table.drop_columns``) keep their places in it under
    #: placeholder names (``format.orc.schema.dropped_name``); None: ``schema`` itself
    file_schema: pa.Schema | None = None

    def __post_init__(self) -> None:
        _frozen_dict(self, "properties", self.properties)

    @property
    def row_schema(self) -> pa.Schema:
        """The ``row`` struct of the table's files (``file_schema``, else ``schema``): what
        readers map file fields by position against, and writers write."""
        return self.file_schema if self.file_schema is not None else self.schema

    @property
    def full_name(self) -> str:
        """``db.name``: the form used in write-id lists, components and error messages."""
        return f"{self.database}.{self.name}"


@dataclass(frozen=True)
class TxnInfo:
    """One transaction. ``snapshot`` is the ``ValidTxnList`` taken when it opened: every read
    inside the transaction uses it, which is what gives snapshot isolation."""

    txn_id: int
    state: TxnState
    kind: TxnKind
    user: str
    host: str
    started: datetime
    last_heartbeat: datetime
    finished: datetime | None
    snapshot: ValidTxnList
    #: table -> write id allocated when the transaction opened (``open_transaction(writes=)``);
    #: empty in every other answer (``show_transactions`` lists transactions, not write ids)
    write_ids: dict[str, int] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class PlannedWrite:
    """A write a transaction knows when it opens: the first statement of the transaction on
    ``table``, into ``partitions``. An INSERT writes ``delta_w_w_0000``, an INSERT OVERWRITE
    ``base_w``; a DELETE its delete events in ``delete_delta_w_w_0000`` and an UPDATE those
    and its new rows in ``delta_w_w_0001`` (Hive 4's statement ids, as the statement core
    names them). ``open_transaction(writes=...)`` allocates its write id and records its
    directories in the open's own metastore transaction (see ``open_transaction``)."""

    table: str
    partitions: tuple[str, ...]
    operation: Literal["insert", "overwrite", "update", "delete"]

    def __post_init__(self) -> None:
        object.__setattr__(self, "table", ".".join(split_table_name(self.table)))
        object.__setattr__(self, "partitions", tuple(self.partitions))

    def components(self, write_id: int) -> list[WriteComponent]:
        """The components ``record_write`` would record for it, one per partition: the
        directories its writer names (``Table`` and the statement core write exactly
        these, in this order)."""
        return [WriteComponent(self.table, partition, self.operation, write_id,
                               tuple(join(partition, name) if partition else name
                                     for name in self.directory_names(write_id)))
                for partition in self.partitions]

    def directory_names(self, write_id: int) -> tuple[str, ...]:
        """The directories it writes in each partition."""
        if self.operation == "overwrite":
            return (base_name(write_id),)
        if self.operation == "insert":
            return (delta_name(write_id, write_id, 0),)
        events = delta_name(write_id, write_id, 0, delete=True)
        return (events,) if self.operation == "delete" else (
            events, delta_name(write_id, write_id, 1))


@dataclass(frozen=True)
class WriteComponent:
    """What one transaction wrote to one partition of one table.

    ``partition`` is the relative partition directory (``""`` when unpartitioned) and
    ``directories`` are the delta/base dirs written, relative to the table location. Writers
    register components with ``record_write`` *before* writing files, so a crash leaves a record
    of what to clean, and pass the final ones (with counts) to ``commit``.
    """

    table: str
    partition: str
    operation: Operation
    write_id: int
    directories: tuple[str, ...]
    rows_inserted: int = 0
    rows_deleted: int = 0
    files: int = 0
    bytes: int = 0
    #: the statement read this partition to decide what it wrote (a DELETE, UPDATE or MERGE
    #: on a table with isolation level Serializable): then any write committed to the same
    #: partition after the transaction's snapshot conflicts, inserts included. Not stored.
    read: bool = False
    #: the table's ``metadata_version`` the writer planned against (None: not checked); the
    #: commit fails with ``MetadataChangedError`` if the table's has changed since. Not stored.
    metadata_version: int | None = None
    #: (path relative to the table, bytes) of every bucket file written in ``directories``
    #: (schema 11 on; None: not recorded, as for commits before it, a record made before the
    #: files exist, or a component whose files another component of the same directories
    #: lists). Counts and total bytes cannot tell a bucket file renamed to another bucket
    #: id (a delete delta's events then never meet the rows they delete) from the real one;
    #: names and sizes can, from the listing a reader takes anyway
    bucket_files: tuple[tuple[str, int], ...] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "table", self.table.lower())
        object.__setattr__(self, "directories", tuple(self.directories))
        if self.bucket_files is not None:
            object.__setattr__(self, "bucket_files",
                               tuple((str(n), int(b)) for n, b in self.bucket_files))


@dataclass(frozen=True)
class CompactionOutput:
    """One directory a compaction wrote (``directory`` relative to the table location, its
    name carrying the compaction's ``_v<txn_id>``), with the non-empty bucket files and rows
    in it. Stored by the compaction's commit, in the same metastore transaction: from then on
    a reader that selects the directory must find every one of those files, as it must find a
    write's (a bucket file removed from a base would otherwise drop its rows silently), each
    holding the events ``file_rows`` says (a file grown by a copied event would otherwise
    read a row twice). ``txn_id`` is filled in when read back."""

    table: str
    partition: str
    directory: str
    files: int
    rows: int = 0
    bytes: int = 0
    #: (bucket file name, events in it) of each non-empty file
    file_rows: tuple[tuple[str, int], ...] = ()
    txn_id: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "table", self.table.lower())
        object.__setattr__(self, "file_rows", tuple(self.file_rows))


@dataclass(frozen=True)
class OriginalFile:
    """A pre-ACID original file (``N_0``) that ``adopt_table`` placed at the root of a
    partition (``partition`` relative to the table, "" when unpartitioned). Hive's originals
    have no write that records them, so without this record fsck could not tell an adopted
    file from one copied in later; ``bytes`` tells it from one replaced since."""

    partition: str
    name: str
    bytes: int


@dataclass(frozen=True)
class CommittedWrite:
    """A component of an already committed transaction, as the conflict check sees it."""

    txn_id: int
    commit_seq: int
    table: str
    partition: str
    operation: Operation
    write_id: int
    directories: tuple[str, ...]


@dataclass(frozen=True)
class CommitInfo:
    """The outcome of a successful commit; ``write_ids`` maps ``db.name`` to its write id."""

    txn_id: int
    commit_seq: int
    commit_time: datetime
    write_ids: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "write_ids", dict(self.write_ids))


@dataclass(frozen=True)
class StatementSummary:
    """One statement a transaction ran on ``table``, as ``history()`` names and counts it:
    ``statement`` is what the user did (``insert``, ``insert_overwrite``, ``update``,
    ``delete``, ``merge``, ``restore``, ``streaming_insert``) and the counts are rows as the
    user sees them (an UPDATE of 5 rows updated 5, though it wrote 5 delete events and 5 new
    rows). Passed to ``commit`` beside the components, since a statement that changed
    nothing (a DELETE that matched no row) has no component to carry its name."""

    table: str
    statement: str
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0


@dataclass(frozen=True)
class HistoryEntry:
    """One committed write id of a table, or one committed compaction of it.

    ``operation`` of a write is the transaction's statements on the table, distinct, in the
    order they ran (``"insert,delete"``), with user-level counts (``StatementSummary``); a
    commit that named none (an older client) shows its components' operations, sorted, with
    their event counts. A compaction's is ``compaction_minor`` or ``compaction_major``: it has
    no write id of its own (``write_id`` None), changes no row (counts 0), and its ``files``
    and ``bytes`` are what it wrote."""

    write_id: int | None
    txn_id: int
    commit_time: datetime
    operation: str
    rows_inserted: int
    rows_deleted: int
    files: int
    bytes: int
    partitions: tuple[str, ...]
    rows_updated: int = 0

    @staticmethod
    def table(entries: Sequence[HistoryEntry]) -> pa.Table:
        """``entries`` as ``Table.history()`` returns them: one row each, a column per field
        (typed even when there are none, so an empty history has the same schema)."""
        return pa.table({
            "write_id": pa.array([e.write_id for e in entries], pa.int64()),
            "txn_id": pa.array([e.txn_id for e in entries], pa.int64()),
            "commit_time": pa.array([e.commit_time for e in entries],
                                    pa.timestamp("us", "UTC")),
            "operation": pa.array([e.operation for e in entries], pa.string()),
            "rows_inserted": pa.array([e.rows_inserted for e in entries], pa.int64()),
            "rows_updated": pa.array([e.rows_updated for e in entries], pa.int64()),
            "rows_deleted": pa.array([e.rows_deleted for e in entries], pa.int64()),
            "files": pa.array([e.files for e in entries], pa.int64()),
            "bytes": pa.array([e.bytes for e in entries], pa.int64()),
            "partitions": pa.array([list(e.partitions) for e in entries],
                                   pa.list_(pa.string())),
        })


@dataclass(frozen=True)
class AppVersion:
    """The newest version of an application's idempotent writes committed to a table (Delta's
    ``txn`` action: ``appId``, ``version``), and the transaction that committed it. A write
    of that application with this version or a lower one is already in the table."""

    table: str
    app_id: str
    version: int
    txn_id: int
    commit_time: datetime


@dataclass(frozen=True)
class LockInfo:
    """Informational lock: writers are optimistic (conflicts are found at commit, §12.2), so
    these are never waited on; they show who is writing where, as Hive's SHOW LOCKS does.
    ``partition`` is ``None`` for a table-level lock (unpartitioned table)."""

    lock_id: int
    txn_id: int
    database: str
    table: str
    partition: str | None
    lock_type: LockType
    state: Literal["acquired"]
    acquired: datetime


@dataclass(frozen=True)
class LeaseInfo:
    """A reader's promise that its snapshot is still in use: the cleaner must not delete any
    directory that snapshot can see until the lease is released or expires."""

    lease_id: int
    table: str
    snapshot: ValidTxnList
    write_ids: ValidWriteIdList
    acquired: datetime
    expires: datetime


@dataclass(frozen=True)
class WarehouseBinding:
    """The warehouse a metastore serves: ``root``, the warehouse root as
    ``acidstore.api.pairing`` spells it (``.`` for a SQLite file inside the root it serves), and
    ``pairing_id``, an id the warehouse's marker file records too, so that each side can
    tell the other is its own."""

    root: str
    pairing_id: str


#: ``check(components, overlapping)`` raises ``WriteConflictError`` if rows really overlap.
CommitCheck = Callable[[Sequence[WriteComponent], Sequence[CommittedWrite]], None]


@dataclass(frozen=True)
class LoggedComponent:
    """A committed component with where it sits in the commit log: ``txn_id`` and
    ``component_id`` order components as ``committed_components`` does (commit, then write
    order), which a reader merging later commits into what it holds must keep."""

    txn_id: int
    component_id: int
    component: WriteComponent


@dataclass(frozen=True)
class ComponentLog:
    """Committed components of one table read in one metastore snapshot, and ``seq``, the
    last commit sequence number that snapshot holds: every commit at or below it is in
    (or below the asked write id), none above it is. ``table_id`` tells a table from one
    dropped and created again under its name (whose write ids start over)."""

    table_id: int
    seq: int
    components: tuple[LoggedComponent, ...]
