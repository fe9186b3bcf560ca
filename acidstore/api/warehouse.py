"""The warehouse (layer L4): ``acidstore.connect(path)`` and the catalog of ACID tables.

A warehouse is a directory of tables (``<warehouse>/<db>.db/<table>``) plus a metastore, by
default a SQLite file inside the warehouse, so one machine needs nothing else running. Table
and database names are plain identifiers, so no name can place files outside the warehouse.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.api.frames import schema_of
from acidstore.api.pairing import (
    DEFAULT_METASTORE_FILE,
    Pairing,
    chosen_pair,
    read_marker,
    refuse_default,
)
from acidstore.api.streaming import StreamingConnection
from acidstore.api.table import Table
from acidstore.engine.adopt import adopt_table
from acidstore.engine.transaction import Transaction
from acidstore.errors import (
    AcidStoreError,
    InvalidInputError,
    LocationNotEmptyError,
    MetastoreError,
    MetastoreRequiredError,
    TableExistsError,
    TableNotFoundError,
    WarehouseNotFoundError,
)
from acidstore.format.orc.acid_file import check_compression
from acidstore.format.orc.schema import RESERVED_PREFIX, ROW_ID_COLUMN
from acidstore.fsck import fsck
from acidstore.io import fs as afs
from acidstore.io.fs import storage_boundary
from acidstore.metastore import (
    Metastore,
    NewTable,
    PlannedWrite,
    SqliteMetastore,
    TableInfo,
    TxnKind,
)
from acidstore.metastore.conflicts import isolation_level
from acidstore.metastore.postgres import PostgresMetastore
from acidstore.metastore.task_guard import in_spark_task
from acidstore.metastore.validate import column_names, is_absolute_location, split_table_name
from acidstore.write.bucketing import check_bucketable

__all__ = ["DEFAULT_METASTORE_FILE", "Warehouse", "connect"]


@storage_boundary
class Warehouse:
    """A warehouse of ACID tables and its metastore."""

    def __init__(self, location: str | os.PathLike[str], metastore: Metastore, *,
                 filesystem: pafs.FileSystem | None = None,
                 heartbeat_interval: float = 150.0) -> None:
        self._fs, self.location = afs.resolve(location, filesystem)
        try:
            self._fs.create_dir(self.location, recursive=True)
        except OSError as exc:  # e.g. an S3 bucket that does not exist
            raise WarehouseNotFoundError(
                f"cannot create the warehouse directory {self.location}: {exc}",
                path=self.location) from exc
        self._metastore = metastore
        self._heartbeat_interval = heartbeat_interval

    @property
    def metastore(self) -> Metastore:
        return self._metastore

    @property
    def filesystem(self) -> pafs.FileSystem:
        return self._fs

    def close(self) -> None:
        self._metastore.close()

    def __enter__(self) -> Warehouse:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- catalog ---------------------------------------------------------------------------------

    def create_table(self, name: str, schema: pa.Schema | Any, *,
                     partition_by: Iterable[str] | None = (),
                     bucket_by: Iterable[str] | None = (), buckets: int | None = 0,
                     properties: Mapping[str, str] | None = None,
                     if_not_exists: bool = False) -> Table:
        """Create a transactional table; ``schema`` lists every column, partition ones too.

        ``schema`` may also be a pyarrow Table or pandas DataFrame whose schema the table takes
        (its rows are not inserted: ``t.insert(df)`` does that). With ``if_not_exists`` an
        existing table of that name is returned as it is, without comparing its schema or
        layout (as Delta's and SQL's ``CREATE TABLE IF NOT EXISTS`` do), so that a job can
        run the same setup code every time. ``partition_by``, ``bucket_by`` and ``buckets``
        may be None, meaning none (as their defaults do)."""
        split_table_name(name)  # a bad name is refused before anything else
        if if_not_exists:
            with contextlib.suppress(TableNotFoundError):
                return self.table(name)
        schema = schema_of(schema, f"table {name}")
        partitions = column_names(partition_by, "partition_by", name)
        bucketing = column_names(bucket_by, "bucket_by", name)
        if buckets is None:
            buckets = 0
        if isinstance(buckets, bool) or not isinstance(buckets, int):
            raise InvalidInputError(f"table {name}: buckets must be an int, got "
                                    f"{type(buckets).__name__} {buckets!r}")
        if properties is not None and not isinstance(properties, Mapping):
            raise InvalidInputError(f"table {name}: properties must be a mapping of names "
                                    f"to values or None, got {type(properties).__name__}")
        try:
            return self._create_table(name, schema, partition_by=partitions,
                                      bucket_by=bucketing, buckets=buckets,
                                      properties=properties)
        except TableExistsError:
            if not if_not_exists:
                raise
            return self.table(name)  # created by another client since we looked

    def _create_table(self, name: str, schema: pa.Schema, *, partition_by: Sequence[str],
                      bucket_by: Sequence[str], buckets: int,
                      properties: Mapping[str, str] | None) -> Table:
        database, table = split_table_name(name)
        for what, columns in (("partition_by", partition_by), ("bucket_by", bucket_by)):
            lowered = [str(c).lower() for c in columns]
            if len(set(lowered)) != len(lowered):
                raise InvalidInputError(f"table {name}: {what} names a column twice: "
                                        f"{list(columns)}")
        if buckets and not bucket_by:
            raise InvalidInputError(f"table {name}: buckets={buckets} needs bucket_by columns")
        by_lower = {f.name.lower(): f for f in schema}
        if len(by_lower) != len(schema):
            raise InvalidInputError(f"duplicate column names in {schema.names}")
        reserved = [n for n in schema.names
                    if n.lower() == ROW_ID_COLUMN or n.lower().startswith(RESERVED_PREFIX)]
        if reserved:
            raise InvalidInputError(
                f"column name(s) {reserved} of table {name} are reserved: {ROW_ID_COLUMN!r} is "
                f"Hive's ROW__ID (reads add it), names starting with {RESERVED_PREFIX!r} are "
                "acidstore's own working columns")
        for column in [*partition_by, *bucket_by]:
            if column.lower() not in by_lower:
                raise InvalidInputError(f"unknown column {column!r} in table {name}")
        parts = [by_lower[c.lower()] for c in partition_by]
        if len(parts) == len(schema):
            raise InvalidInputError(f"table {name} needs at least one non-partition column")
        user = pa.schema([f for f in schema if f.name.lower() not in
                          {p.name.lower() for p in parts}])
        bucket_cols = tuple(by_lower[c.lower()].name for c in bucket_by)
        if bucket_cols and buckets <= 0:
            raise InvalidInputError(f"table {name} is bucketed by {bucket_cols}; give buckets > 0")
        if bucket_cols and buckets > 4095:
            raise InvalidInputError(f"at most 4095 buckets (Hive's BucketCodec), got {buckets}")
        for column in bucket_cols:
            if column.lower() in {p.name.lower() for p in parts}:
                raise InvalidInputError(f"column {column!r} cannot both partition and bucket")
            check_bucketable(by_lower[column.lower()])
        relative = f"{database}.db/{table}"
        location = afs.join(self.location, relative)
        props = {"transactional": "true", **{str(k): str(v) for k, v in (properties or {}).items()}}
        isolation_level(props, name)  # an unknown level is refused, not ignored
        check_compression(props.get("orc.compress"), name)
        self._refuse_occupied(database, table, location)
        info = self._resolved(self._metastore.create_table(NewTable(
            database, table, user, pa.schema(parts), bucket_cols,
            buckets if bucket_cols else 0, props, relative)))
        try:
            self._fs.create_dir(location, recursive=True)
        except OSError as exc:
            # catalogue entry and directory both, or neither
            with contextlib.suppress(AcidStoreError):
                self._metastore.drop_table(info.full_name)
            raise afs.storage_error(
                exc, location, action=f"create the directory of table {info.full_name}"
            ) from exc
        return Table(self, info)

    def _refuse_occupied(self, database: str, table: str, location: str) -> None:
        """A new table's directory must be absent or empty (the name's owner, if it exists,
        is reported as TableExistsError by the metastore instead)."""
        name = f"{database}.{table}"
        kind = self._fs.get_file_info(location).type
        if kind == pafs.FileType.NotFound:
            return
        if kind != pafs.FileType.Directory:
            raise InvalidInputError(f"cannot create table {name}: {location} is a file")
        entries = afs.list_dir(self._fs, location)
        if not entries or name in self._metastore.list_tables(database):
            return
        shown = ", ".join(e.name + ("/" if e.is_dir else "") for e in entries[:5])
        more = f" and {len(entries) - 5} more" if len(entries) > 5 else ""
        raise LocationNotEmptyError(
            f"cannot create table {name}: its location {location} already holds files "
            f"({shown}{more}), e.g. from a lost metastore, an unfinished drop or a copied "
            "directory. A new table there would read them as its own rows; move them away "
            "or remove them first (Warehouse.adopt_table turns plain ORC/Parquet files into "
            "a table)", path=location)

    def table(self, name: str, *, transaction: Transaction | None = None) -> Table:
        """An existing table (``TableNotFoundError`` if there is none)."""
        database, table = split_table_name(name)
        return Table(self, self.table_info(f"{database}.{table}"), transaction)

    def tables(self, database: str | None = None) -> list[str]:
        return self._metastore.list_tables(database.lower() if database else None)

    def drop_table(self, name: str) -> None:
        """Remove a table and its files."""
        database, table = split_table_name(name)
        info = self._resolved(self._metastore.drop_table(f"{database}.{table}"))
        try:
            if self._fs.get_file_info(info.location).type == pafs.FileType.Directory:
                self._fs.delete_dir(info.location)
        except OSError as exc:
            # the catalogue entry is gone: a retry would not find the table, so say what is
            # left (a new table of the name is refused until the directory is removed)
            raise afs.storage_error(
                exc, info.location, retry_safe=False,
                action=f"remove the files of table {info.full_name}, which is dropped from "
                "the catalogue; remove its directory by hand") from exc

    def adopt_table(self, name: str, path: str | os.PathLike[str], *,
                    partition_by: Iterable[str] | None = (), schema: pa.Schema | None = None,
                    properties: Mapping[str, str] | None = None) -> Table:
        """Turn the plain ORC/Parquet files below ``path`` (``col=value`` directories for
        ``partition_by``; None: unpartitioned) into the new transactional table ``name``, as
        Hive converts a table to ACID: ORC files are moved in as pre-ACID originals, Parquet
        ones rewritten as ORC (``acidstore.engine.adopt``)."""
        split_table_name(name)
        return adopt_table(self, name, os.fspath(path),
                           partition_by=column_names(partition_by, "partition_by", name),
                           schema=schema, properties=properties)

    def location_of(self, table: str) -> str:
        try:
            return self.table_info(table).location
        except TableNotFoundError:
            database, name = split_table_name(table)
            return afs.join(self.location, f"{database}.db", name)

    def table_info(self, name: str) -> TableInfo:
        """The catalog entry of ``name``, its location resolved against this warehouse."""
        return self._resolved(self._metastore.get_table(".".join(split_table_name(name))))

    def _resolved(self, info: TableInfo) -> TableInfo:
        """The metastore keeps a table's location relative to the warehouse root
        (``<db>.db/<table>``), so a warehouse copied or moved with its metastore reads and
        writes its own files, never the original's; an absolute location (a table placed
        elsewhere through the metastore directly) is used as it is."""
        if is_absolute_location(info.location):
            return info
        return replace(info, location=afs.join(self.location, info.location))

    # --- transactions ----------------------------------------------------------------------------

    def transaction(self, *, kind: TxnKind = "default",
                    writes: Sequence[PlannedWrite] = ()) -> Transaction:
        """A new transaction; ``with wh.transaction() as txn:`` commits on a clean exit.
        Compactors open theirs with ``kind="compaction"`` (they allocate no write id).
        ``writes``: the INSERTs the transaction starts with, when they are known up front
        (their write ids are allocated and directories recorded as it opens, which saves
        two metastore round trips; see ``Metastore.open_transaction``)."""
        return Transaction(self, heartbeat_interval=self._heartbeat_interval, kind=kind,
                           writes=writes)

    def streaming_connection(self, table: str, *, app_id: str | None = None,
                             batch_size: int = 10,
                             partition: Mapping[str, str | None] | None = None
                             ) -> StreamingConnection:
        """A writer of many small transactions into ``table`` (README "Streaming ingest"):
        transactions are opened ``batch_size`` at a time in one metastore call and
        heartbeated together; with ``app_id``, each commit carries a version and is
        exactly-once. ``partition``: the one partition every row goes to."""
        return StreamingConnection(self, table, app_id=app_id, batch_size=batch_size,
                                   partition=partition,
                                   heartbeat_interval=self._heartbeat_interval)

    def show_transactions(self) -> pa.Table:
        rows = self._metastore.show_transactions()
        return pa.table({
            "txn_id": pa.array([r.txn_id for r in rows], pa.int64()),
            "state": pa.array([r.state for r in rows], pa.string()),
            "kind": pa.array([r.kind for r in rows], pa.string()),
            "user": pa.array([r.user for r in rows], pa.string()),
            "host": pa.array([r.host for r in rows], pa.string()),
            "started": pa.array([r.started for r in rows], pa.timestamp("us", "UTC")),
            "last_heartbeat": pa.array([r.last_heartbeat for r in rows],
                                       pa.timestamp("us", "UTC")),
            "finished": pa.array([r.finished for r in rows], pa.timestamp("us", "UTC")),
        })

    def show_compactions(self) -> pa.Table:
        """The compaction queue and its history (Hive's SHOW COMPACTIONS)."""
        rows = self._metastore.show_compactions()

        def times(name: str) -> pa.Array:
            return pa.array([getattr(r, name) for r in rows], pa.timestamp("us", "UTC"))

        return pa.table({
            "compaction_id": pa.array([r.compaction_id for r in rows], pa.int64()),
            "table": pa.array([r.table for r in rows], pa.string()),
            "partition": pa.array([r.partition for r in rows], pa.string()),
            "kind": pa.array([r.kind for r in rows], pa.string()),
            "state": pa.array([r.state for r in rows], pa.string()),
            "reason": pa.array([r.reason for r in rows], pa.string()),
            "worker": pa.array([r.worker for r in rows], pa.string()),
            "txn_id": pa.array([r.txn_id for r in rows], pa.int64()),
            "highest_write_id": pa.array([r.highest_write_id for r in rows], pa.int64()),
            "enqueued": times("enqueued"),
            "started": times("started"),
            "compacted": times("compacted"),
            "finished": times("finished"),
            "cleaning_started": times("cleaning_started"),
            "attempts": pa.array([r.attempts for r in rows], pa.int64()),
            "error": pa.array([r.error for r in rows], pa.string()),
        })

    def fsck(self, table: str | None = None, *, repair: bool = False) -> pa.Table:
        """Check that the files of ``table`` (default: every table) are what the metastore
        says they are; one row per finding, none for a sound table (``acidstore.fsck``).
        ``repair`` removes only directories of writes the metastore records as aborted."""
        return fsck(self, table, repair=repair)

    def show_locks(self) -> pa.Table:
        rows = self._metastore.show_locks()
        return pa.table({
            "lock_id": pa.array([r.lock_id for r in rows], pa.int64()),
            "txn_id": pa.array([r.txn_id for r in rows], pa.int64()),
            "database": pa.array([r.database for r in rows], pa.string()),
            "table": pa.array([r.table for r in rows], pa.string()),
            "partition": pa.array([r.partition for r in rows], pa.string()),
            "lock_type": pa.array([r.lock_type for r in rows], pa.string()),
            "state": pa.array([r.state for r in rows], pa.string()),
            "acquired": pa.array([r.acquired for r in rows], pa.timestamp("us", "UTC")),
        })

    def show_leases(self) -> pa.Table:
        """Unexpired reader leases of every table: snapshots the cleaner keeps readable. A
        Spark read's lease lasts ``leaseSeconds`` (an hour) past the job; ``lease_id`` is what
        ``metastore.release_lease`` (``acidstore clean --release-lease``) takes."""
        rows = [lease for name in self.tables()
                for lease in self._metastore.active_leases(name)]
        rows.sort(key=lambda r: r.lease_id)
        return pa.table({
            "lease_id": pa.array([r.lease_id for r in rows], pa.int64()),
            "table": pa.array([r.table for r in rows], pa.string()),
            "write_ids": pa.array([str(r.write_ids) for r in rows], pa.string()),
            "txns": pa.array([str(r.snapshot) for r in rows], pa.string()),
            "acquired": pa.array([r.acquired for r in rows], pa.timestamp("us", "UTC")),
            "expires": pa.array([r.expires for r in rows], pa.timestamp("us", "UTC")),
        })


def _refuse_emptied_metastore(root: Path) -> None:
    """A 0-byte metastore file beside table data is a lost catalogue (truncated, or replaced
    by an empty file), not a new warehouse: SQLite would open it as an empty catalogue and the
    next tables would write over files whose write ids it no longer knows."""
    path = root / DEFAULT_METASTORE_FILE
    if not path.is_file() or path.stat().st_size:
        return
    data = sorted(p.name for p in root.iterdir()
                  if not p.name.startswith(DEFAULT_METASTORE_FILE) and not p.name.startswith("."))
    if data:
        raise MetastoreError(
            f"the metastore file {path} is empty (0 bytes) but the warehouse holds {data}: "
            "its catalogue is lost. Restore the file from a backup; remove it only if those "
            "directories hold no tables")


def connect(location: str | os.PathLike[str], *, metastore: str | Metastore | None = None,
            filesystem: pafs.FileSystem | None = None, txn_timeout: float = 300.0,
            create: bool = True, relocate: bool = False) -> Warehouse:
    """Open (or create) a warehouse. The default metastore is a SQLite file inside a local
    warehouse; otherwise pass ``metastore``: a ``Metastore``, a ``sqlite:///path`` URL, or a
    PostgreSQL URL ``postgresql://user@host:5432/dbname`` (shared by clients on several
    machines; needs ``acidstore[postgresql]``). Without ``metastore``, ``ACIDSTORE_METASTORE``
    from the environment is taken when set. Transactions opened here heartbeat every
    ``txn_timeout / 2`` seconds and are aborted after ``txn_timeout`` without one (the
    metastore stores it with each, so other clients' timeouts do not apply to them).
    ``create=False`` opens an existing warehouse only (``WarehouseNotFoundError`` otherwise,
    and nothing is created): what tools that inspect or maintain a warehouse want, so a typo
    in the path is an error, not a new warehouse.

    A metastore serves one warehouse, and a warehouse root records its metastore
    (``acidstore.api.pairing``): a pair that does not belong together is refused with
    ``MetastoreMismatchError`` before anything is created or changed. A warehouse with its
    own SQLite file may be copied or moved as a directory; one whose metastore lives
    elsewhere and that was moved on purpose is connected once with ``relocate=True``, which
    records the pair as given (the metastore then serves the new root, not the old one)."""
    if not isinstance(location, str | os.PathLike) or not os.fspath(location).strip():
        raise InvalidInputError(
            f"a warehouse location is a non-empty path or URI, got {location!r}")
    # a Spark task (a sanctioned lease or heartbeat) opens what the driver resolved and
    # paired: it neither reads its own environment nor checks again
    checked = not in_spark_task()
    if checked:
        location, metastore = chosen_pair(location, metastore)
    fs, root = afs.resolve(location, filesystem)
    marker = read_marker(fs, root) if checked else None
    if metastore is None:
        refuse_default(marker, root, file_exists=isinstance(fs, pafs.LocalFileSystem) and (
            Path(root) / DEFAULT_METASTORE_FILE).is_file())
        if not isinstance(fs, pafs.LocalFileSystem):
            raise MetastoreRequiredError(
                f"the warehouse {location} is on a {fs.type_name!r} filesystem: give "
                "metastore='postgresql://user@host:5432/dbname' (shared by every client) or "
                "'sqlite:////local/path.db' (one machine's clients only); the default SQLite "
                "file inside the warehouse needs a local directory")
    if not create:
        _require_existing(location, metastore, filesystem)
    if metastore is None:
        if Path(root).exists() and not Path(root).is_dir():
            raise InvalidInputError(f"the warehouse location {root} is a file, not a directory")
        Path(root).mkdir(parents=True, exist_ok=True)
        _refuse_emptied_metastore(Path(root))
        store: Metastore = SqliteMetastore(Path(root) / DEFAULT_METASTORE_FILE,
                                           timeout_seconds=txn_timeout)
    elif isinstance(metastore, str):
        store = _metastore_from_url(metastore, txn_timeout)
    else:
        store = metastore
    try:
        pairing = Pairing(store, fs, root, marker, relocate=relocate) if checked else None
        warehouse = Warehouse(location, store, filesystem=filesystem,
                              heartbeat_interval=txn_timeout / 2)
        if pairing is not None:
            pairing.record()
        return warehouse
    except BaseException:
        if store is not metastore:
            store.close()  # ours: do not leave its connections behind
        raise


def _require_existing(location: str | os.PathLike[str], metastore: str | Metastore | None,
                      filesystem: pafs.FileSystem | None) -> None:
    """Refuse a location that holds no warehouse: the directory must exist, and so must the
    SQLite metastore file when that is where the catalogue lives (a PostgreSQL metastore is
    checked by connecting to it)."""
    fs, root = afs.resolve(location, filesystem)
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        raise WarehouseNotFoundError(f"no warehouse at {root}: the directory does not exist",
                                     path=root)
    if metastore is None:
        catalogue = Path(root) / DEFAULT_METASTORE_FILE
        if not catalogue.is_file():
            raise WarehouseNotFoundError(
                f"no warehouse at {root}: it has no metastore file {DEFAULT_METASTORE_FILE} "
                "(give --metastore if its catalogue lives elsewhere)", path=root)
    elif isinstance(metastore, str) and metastore.startswith("sqlite:///"):
        catalogue = Path(metastore[len("sqlite:///"):])
        if not catalogue.is_file():
            raise WarehouseNotFoundError(
                f"no metastore at {catalogue} (from {metastore}) for the warehouse {root}",
                path=str(catalogue))


def _metastore_from_url(url: str, txn_timeout: float) -> Metastore:
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresMetastore(url, timeout_seconds=txn_timeout)
    if url.startswith("sqlite:///"):
        # SQLAlchemy's convention: sqlite:///relative/path, sqlite:////absolute/path
        return SqliteMetastore(url[len("sqlite:///"):], timeout_seconds=txn_timeout)
    raise InvalidInputError(
        f"unsupported metastore URL {url!r}: use postgresql://user@host:5432/dbname or "
        "sqlite:///path")
