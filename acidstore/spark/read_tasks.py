"""Spark reads: the driver plans one snapshot's splits, executors read them.

The driver-side planning worker takes the snapshot (a ValidWriteIdList, leased in the metastore
so the cleaner keeps its files), plans the splits exactly as an embedded scan does, and packs
them into read tasks of about ``maxPartitionBytes`` each. A task carries everything its reader
needs (filesystem, schemas, write ids, splits), so executors never talk to the metastore: they
run the vectorized reader (or the heap merge) and stream Arrow batches to Spark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import cast

import pyarrow as pa
import pyarrow.fs as pafs
from pyspark.sql.datasource import CaseInsensitiveDict
from pyspark.sql.types import StructType

from acidstore.config import CPU_CORES, SPARK_LEASE_SECONDS, SPARK_PARTITION_BYTES
from acidstore.engine import idempotent
from acidstore.engine.handle import TableHandle
from acidstore.errors import InvalidInputError, SchemaMismatchError, UnknownOptionError
from acidstore.format.orc.schema import ROW_ID_COLUMN, ROW_ID_TYPE
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.read.grouped import groupable
from acidstore.read.scan import PartitionDir, Reader, Scan
from acidstore.read.splits import Split
from acidstore.spark.leases import task_lease
from acidstore.spark.options import Target
from acidstore.spark.packing import (
    OPEN_COST_BYTES,
    SMALL_OPEN_COST_BYTES,
    pack,
    split_bytes,
    task_count,
)
from acidstore.spark.schema_mapping import arrow_schema, spark_schema, to_spark_batch

__all__ = ["DRIVER_TXN_OPTIONS", "READ_OPTIONS", "WRITE_OPTIONS", "ReadOptions", "ReadTask",
           "check_options", "driver_transaction", "merge_schema", "plan_read", "read_options",
           "read_schema", "read_snapshot", "replaces_whole_table", "run_read", "write_app"]

DEFAULT_PARTITION_BYTES = SPARK_PARTITION_BYTES
#: the planning process's cores: the default ``minPartitions`` (local mode: the executors')
_CORES = CPU_CORES
DEFAULT_LEASE_SECONDS = SPARK_LEASE_SECONDS
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


@dataclass(frozen=True)
class ReadOptions:
    """The read options of ``spark.read.format("acidstore")`` (README lists them)."""

    columns: tuple[str, ...] | None = None
    filter: str | None = None
    as_of: int | datetime | None = None
    with_row_id: bool = False
    reader: Reader = "vectorized"
    partition_bytes: int = DEFAULT_PARTITION_BYTES
    #: tasks to spread a small table over (Spark's defaultParallelism; AcidTable passes it)
    min_partitions: int = _CORES
    lease_seconds: float = DEFAULT_LEASE_SECONDS
    #: a pinned snapshot (txns, write ids): DML reads the rows at its transaction's snapshot
    snapshot: tuple[str, str] | None = None


def _flag(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key, "false").strip().lower()
    if value not in _TRUE | _FALSE:
        raise InvalidInputError(f"option {key}={value!r} must be true or false")
    return value in _TRUE


def _number(options: Mapping[str, str], key: str, default: float) -> float:
    text = options.get(key)
    if text is None:
        return default
    try:
        value = float(text)
    except ValueError:
        raise InvalidInputError(f"option {key}={text!r} is not a number") from None
    if value <= 0:
        raise InvalidInputError(f"option {key}={text!r} must be positive")
    return value


#: options that name the table (every read and write takes them)
TARGET_OPTIONS = ("path", "table", "warehouse", "metastore")
#: every read option (README, "Spark options"); ``snapshotTxns``/``snapshotWriteIds`` pin the
#: snapshot of a DML statement's own read (``AcidTable`` sets them)
READ_OPTIONS = (*TARGET_OPTIONS, "columns", "filter", "asOf", "versionAsOf", "timestampAsOf",
                "withRowId", "reader", "maxPartitionBytes", "minPartitions", "leaseSeconds",
                "snapshotTxns", "snapshotWriteIds")
#: every write option: the target, Delta's idempotent-write pair
#: (``acidstore.engine.idempotent``) and
#: ``mergeSchema`` (add the DataFrame's new columns to the table first)
#: and ``partitionOverwriteMode`` (what ``mode("overwrite")`` replaces)
WRITE_OPTIONS = (*TARGET_OPTIONS, "txnAppId", "txnVersion", "mergeSchema",
                 "partitionOverwriteMode")
#: the transaction a ``df.write`` is to write in: opened by the user's driver process
#: (``saving``), which keeps it alive and aborts it if the job fails; set by acidstore only
DRIVER_TXN_OPTIONS = ("acidstoreDriverTxnId", "acidstoreDriverTxnSnapshot")


def check_options(options: Mapping[str, str], accepted: Sequence[str], what: str, *,
                  internal: Sequence[str] = ()) -> None:
    """Refuse options ``accepted`` (or ``internal``, which the message does not offer) does
    not name (any case: Spark lower-cases the keys)."""
    known = {name.lower() for name in (*accepted, *internal)}
    unknown = sorted(key for key in options if key.lower() not in known)
    if unknown:
        raise UnknownOptionError(
            f"unknown {what} option(s) {unknown} of format('acidstore'); it accepts "
            f"{', '.join(accepted)} (names in any case)")


def write_app(options: Mapping[str, str]) -> idempotent.AppWrite | None:
    """Check the write options; the application id and version of an idempotent write
    (``txnAppId`` and ``txnVersion``, both or neither, as Delta spells them), or None."""
    check_options(options, WRITE_OPTIONS, "write", internal=DRIVER_TXN_OPTIONS)
    options = cast("Mapping[str, str]", CaseInsensitiveDict(options))
    app_id, text = options.get("txnAppId"), options.get("txnVersion")
    if (app_id is None) != (text is None):
        raise InvalidInputError("an idempotent write needs both options txnAppId and "
                                f"txnVersion, got txnAppId={app_id!r}, txnVersion={text!r}")
    if text is None:
        return None
    if not text.strip().isdigit():
        raise InvalidInputError(f"option txnVersion={text!r} is not a version (an integer "
                                "from 0)")
    return idempotent.requested(app_id, int(text))


def driver_transaction(options: Mapping[str, str]) -> tuple[int, ValidTxnList] | None:
    """The id and snapshot of the transaction the driver opened for this write (the
    ``DRIVER_TXN_OPTIONS``), or None when the write came without one (``save`` without
    ``acidstore.spark`` imported in the driver): the data source then opens its own."""
    options = cast("Mapping[str, str]", CaseInsensitiveDict(options))
    txn_id, snapshot = (options.get(name) for name in DRIVER_TXN_OPTIONS)
    if txn_id is None or snapshot is None:
        return None
    return int(txn_id), ValidTxnList.parse(snapshot)


def merge_schema(options: Mapping[str, str]) -> bool:
    """The ``mergeSchema`` write option (Delta's name): add the DataFrame's columns the table
    lacks before writing."""
    return _flag(cast("Mapping[str, str]", CaseInsensitiveDict(options)), "mergeSchema")


def replaces_whole_table(options: Mapping[str, str]) -> bool:
    """``partitionOverwriteMode`` (Spark's and Delta's name): ``dynamic`` (the default, Hive's
    INSERT OVERWRITE) replaces the partitions the DataFrame has rows for; ``static`` replaces
    the whole table, emptying the other partitions too."""
    options = cast("Mapping[str, str]", CaseInsensitiveDict(options))
    value = options.get("partitionOverwriteMode", "dynamic").strip().lower()
    if value not in ("dynamic", "static"):
        raise InvalidInputError(f"option partitionOverwriteMode={value!r}: use 'dynamic' (the "
                                "partitions written) or 'static' (the whole table)")
    return value == "static"


def _as_of(options: Mapping[str, str]) -> int | datetime | None:
    """``asOf`` (a write id or an ISO date-time), or Delta's spellings of it: ``versionAsOf``
    (a write id, acidstore's version) and ``timestampAsOf`` (a date-time); at most one."""
    given = [(key, options[key]) for key in ("asOf", "versionAsOf", "timestampAsOf")
             if options.get(key) is not None]
    if not given:
        return None
    if len(given) > 1:
        raise InvalidInputError(f"give one of the options {[k for k, _ in given]}: they all "
                                "choose the snapshot to read")
    key, text = given[0]
    if key != "timestampAsOf" and text.strip().lstrip("-").isdigit():
        return int(text)
    if key != "versionAsOf":
        try:
            return datetime.fromisoformat(text.strip())
        except ValueError:
            pass
    wanted = {"asOf": "neither a write id nor an ISO date-time", "versionAsOf":
              "not a write id", "timestampAsOf": "not an ISO date-time"}[key]
    raise InvalidInputError(f"option {key}={text!r} is {wanted}")


def read_options(options: Mapping[str, str]) -> ReadOptions:
    """Parse (and check) the read options; option names are case-insensitive in Spark.

    Spark stores them lower-cased: a plain ``dict`` copy of a data source's options only has
    ``maxpartitionbytes``, so names are looked up case-insensitively here.
    """
    options = cast("Mapping[str, str]", CaseInsensitiveDict(options))
    check_options(options, READ_OPTIONS, "read")
    columns = options.get("columns")
    reader = options.get("reader", "vectorized")
    if reader not in ("vectorized", "merge"):
        raise InvalidInputError(f"option reader={reader!r}: use 'vectorized' or 'merge'")
    txns, write_ids = options.get("snapshotTxns"), options.get("snapshotWriteIds")
    return ReadOptions(
        columns=tuple(c.strip() for c in columns.split(",") if c.strip())
        if columns is not None else None,
        filter=options.get("filter") or None,
        as_of=_as_of(options),
        with_row_id=_flag(options, "withRowId"),
        reader=reader,  # type: ignore[arg-type]
        partition_bytes=int(_number(options, "maxPartitionBytes", DEFAULT_PARTITION_BYTES)),
        min_partitions=int(_number(options, "minPartitions", _CORES)),
        lease_seconds=_number(options, "leaseSeconds", DEFAULT_LEASE_SECONDS),
        snapshot=(txns, write_ids) if txns and write_ids else None,
    )


def read_schema(table: TableHandle, options: ReadOptions) -> StructType:
    """The Spark schema a read returns: the chosen columns (all by default), then ``row__id``."""
    full = table.schema
    if options.columns is None:
        fields = list(full)
    else:
        by_lower = {f.name.lower(): f for f in full}
        unknown = [c for c in options.columns if c.lower() not in by_lower]
        if unknown:
            raise InvalidInputError(
                f"unknown column(s) {unknown} for {table.name}; it has {full.names}")
        fields = [by_lower[c.lower()] for c in options.columns]
    if options.with_row_id:
        fields.append(pa.field(ROW_ID_COLUMN, ROW_ID_TYPE))
    return spark_schema(pa.schema(fields))


@dataclass(frozen=True)
class ReadTask:
    """One Spark input partition: a group of splits and how to read them."""

    filesystem: pafs.FileSystem
    schema: pa.Schema
    partition_schema: pa.Schema
    txns: ValidTxnList
    write_ids: ValidWriteIdList
    columns: tuple[str, ...]
    filter: str | None
    with_row_id: bool
    reader: Reader
    output: pa.Schema
    planned: tuple[tuple[PartitionDir, Split], ...]
    #: the task's snapshot lease (``acidstore.spark.leases``): where its metastore is, the
    #: table, the lease id and how long a renewal lasts; None for a pinned snapshot
    target: Target | None = None
    table: str = ""
    lease: int | None = None
    lease_seconds: float = DEFAULT_LEASE_SECONDS


def _requested(table: TableHandle, options: ReadOptions, requested: StructType) -> tuple[
        tuple[str, ...], bool]:
    """Columns and row-id flag of the schema Spark asks for (a user-given ``.schema()``
    selects columns: Spark's Python data sources get no column pruning of their own)."""
    available = read_schema(table, ReadOptions(with_row_id=True))
    by_lower = {f.name.lower(): f for f in available.fields}
    columns: list[str] = []
    with_row_id = False
    for field in requested.fields:
        known = by_lower.get(field.name.lower())
        if known is None:
            raise SchemaMismatchError(
                f"column {field.name!r} of the requested schema is not in {table.name} "
                f"(it has {[f.name for f in available.fields]})")
        if known.dataType != field.dataType:
            raise SchemaMismatchError(
                f"column {field.name!r} of {table.name} is {known.dataType.simpleString()}, "
                f"not {field.dataType.simpleString()}")
        if known.name == ROW_ID_COLUMN:
            with_row_id = True
        else:
            columns.append(known.name)
    return tuple(columns), with_row_id


def read_snapshot(table: TableHandle, options: ReadOptions
                  ) -> tuple[ValidTxnList, ValidWriteIdList]:
    """The snapshot a read uses: the pinned one (DML), or a fresh one (``asOf`` applied)."""
    if options.snapshot is not None:
        return (ValidTxnList.parse(options.snapshot[0]),
                ValidWriteIdList.parse(options.snapshot[1]))
    return table.read_snapshot(options.as_of)


def plan_read(table: TableHandle, options: ReadOptions, requested: StructType,
              snapshot: tuple[ValidTxnList, ValidWriteIdList], *,
              keep: Callable[[Split], bool] | None = None) -> tuple[list[ReadTask], Scan]:
    """Pack the splits ``snapshot`` selects into read tasks (on the driver; see
    ``acidstore.spark.packing``); ``keep``: only the splits it accepts (a stream reads
    those that can hold rows of its write ids)."""
    columns, with_row_id = _requested(table, options, requested)
    scan = table.scan(list(columns), options.filter, None, with_row_id, snapshot=snapshot)
    fs = table.filesystem
    planned = scan.planned if keep is None else [p for p in scan.planned if keep(p[1])]
    sizes = {i.path: i.size or 0 for i in fs.get_file_info([s.path for _, s in planned])}
    grouped = options.reader == "vectorized"
    costs = [sizes.get(s.path, 0) + (SMALL_OPEN_COST_BYTES if grouped and groupable(s)
                                     else OPEN_COST_BYTES) for _, s in planned]
    limit = split_bytes(options.partition_bytes, options.min_partitions, costs)
    count = task_count(costs, limit, options.min_partitions, len(planned))
    groups = pack(planned, costs, count, keys=[(p, s.bucket_id) for p, s in planned],
                  bundle_limit=limit // 2)
    output = arrow_schema(requested)
    tasks = [ReadTask(fs, table.info.row_schema, table.info.partition_schema, scan.txns,
                      scan.write_ids, columns, options.filter, with_row_id, options.reader,
                      output, tuple(group)) for group in groups]
    return tasks, scan


def run_read(task: ReadTask) -> Iterator[pa.RecordBatch]:
    """Read one task's splits (on an executor) as Arrow batches in Spark's types."""
    with task_lease(task.target, task.table, task.lease, (task.txns, task.write_ids),
                    task.lease_seconds):
        yield from _read_task(task)


def _read_task(task: ReadTask) -> Iterator[pa.RecordBatch]:
    if not task.planned:
        return
    scan = Scan(task.filesystem, [], task.write_ids, task.txns, schema=task.schema,
                partition_schema=task.partition_schema, columns=list(task.columns),
                filter=task.filter, with_row_id=task.with_row_id, reader=task.reader,
                planned=task.planned)
    for batch in scan.to_batches():
        yield to_spark_batch(batch, task.output)


def split_paths(tasks: Sequence[ReadTask]) -> list[str]:
    """Every file the tasks read (tests and ``explain``-style diagnostics use it)."""
    return [s.path for t in tasks for _, s in t.planned]
