"""``spark.readStream.format("acidstore")``: a table's new rows, micro-batch by micro-batch.

Offsets are write ids (``stream_options.Offset``; how far a batch goes: ``stream_batches``).
Spark keeps one stream reader per query in a long-lived driver-side worker, which asks it for
offsets and plans each batch; the batch's rows are read by tasks on executors. A batch is
read through the same machinery as a batch read:

- inserted rows (and the first snapshot's rows) are a snapshot read as of the batch's last
  write id (``plan_read``, one lease per task), of the splits that can hold rows of the
  batch's write ids, keeping the rows whose ROW__ID carries one of them;
- with ``readChangeFeed``, the change feed of the batch's write ids (``read.changes``),
  planned per partition on the driver and read by the tasks.

A batch whose files the cleaner has removed since (a compaction folded them into a base)
fails with ``NotEnoughHistoryError`` naming the stream's position, never with part of it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxFiles,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from acidstore.api.warehouse import Warehouse
from acidstore.engine.handle import TableHandle
from acidstore.engine.worker_gc import freeze_long_lived
from acidstore.errors import NotEnoughHistoryError, SchemaMismatchError
from acidstore.format.orc.schema import ROW_ID_COLUMN, ROW_ID_TYPE
from acidstore.read.changes import FeedPart, feed_table, output_schema, plan_feed
from acidstore.read.splits import Split
from acidstore.spark.leases import leased_plan, task_lease
from acidstore.spark.options import Target, open_target, target_of
from acidstore.spark.packing import pack
from acidstore.spark.read_tasks import ReadOptions, ReadTask, plan_read, read_schema, run_read
from acidstore.spark.schema_mapping import arrow_schema, spark_schema, to_spark_batch
from acidstore.spark.stream_batches import change_writes, frontier, next_end, refuse_changes
from acidstore.spark.stream_options import Offset, StreamReadOptions, stream_read_options
from acidstore.spark.typed_errors import reported_errors

__all__ = ["AcidStreamReader", "stream_schema"]


#: the columns a change-feed stream adds to the table's
_FEED_COLUMNS = ("_change_type", "_write_id", "_commit_time", ROW_ID_COLUMN)
_ROW_ID_FIELD = spark_schema(pa.schema([pa.field(ROW_ID_COLUMN, ROW_ID_TYPE)])).fields[0]


def stream_schema(table: TableHandle, options: StreamReadOptions) -> StructType:
    """The columns a stream of ``table`` emits: the table's, and with the change feed its
    ``_change_type``, ``_write_id``, ``_commit_time`` and ``row__id``."""
    if options.change_feed:
        return spark_schema(output_schema(table))
    return read_schema(table, ReadOptions())


@dataclass(frozen=True)
class _Rows:
    """The rows a scanned batch keeps: ROW__ID write id in ``low < w <= high``, not one of
    ``skipped`` (change writes passed over)."""

    low: int
    high: int
    skipped: tuple[int, ...] = ()

    def overlaps(self, split: Split) -> bool:
        return split.max_write_id > self.low and split.min_write_id <= self.high


@dataclass(frozen=True)
class ScanTask:
    """A task of a scanned batch: a snapshot read task, and which of its rows to keep."""

    read: ReadTask
    rows: _Rows
    #: the rows go out as change-feed ``insert`` rows (a change-feed stream's first snapshot)
    as_feed: bool
    times: Mapping[int, datetime]
    output: pa.Schema

    def run(self) -> Iterator[pa.RecordBatch]:
        for batch in run_read(self.read):
            ids = batch.column(ROW_ID_COLUMN).field("writeid")
            keep = pc.and_(pc.greater(ids, self.rows.low), pc.less_equal(ids, self.rows.high))
            if self.rows.skipped:
                keep = pc.and_(keep, pc.invert(pc.is_in(ids, pa.array(self.rows.skipped,
                                                                      pa.int64()))))
            kept = batch.filter(keep)
            if kept.num_rows:
                yield to_spark_batch(self._shaped(kept), self.output)

    def _shaped(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        row_id = batch.column(ROW_ID_COLUMN)
        data = batch.drop_columns([ROW_ID_COLUMN])
        if not self.as_feed:
            return data
        ids = row_id.field("writeid")
        return pa.RecordBatch.from_arrays(
            [*data.columns, pa.array(["insert"] * batch.num_rows, pa.string()), ids,
             pa.array([self.times.get(w) for w in ids.to_pylist()],
                      pa.timestamp("us", "UTC")), row_id],
            names=[*data.schema.names, "_change_type", "_write_id", "_commit_time",
                   ROW_ID_COLUMN])


@dataclass(frozen=True)
class FeedTask:
    """A task of a change-feed batch: some partitions' planned feed, under a lease."""

    parts: tuple[FeedPart, ...]
    times: Mapping[int, datetime]
    schema: pa.Schema
    output: pa.Schema
    target: Target
    table: str
    lease: int
    lease_seconds: float

    def run(self) -> Iterator[pa.RecordBatch]:
        first = self.parts[0]
        with task_lease(self.target, self.table, self.lease, (first.txns, first.write_ids),
                        self.lease_seconds):
            rows = feed_table([t for part in self.parts for t in part.read()], self.times,
                              self.schema)
        # the stream's columns: a column added since it started is not one
        for batch in rows.select(self.output.names).to_batches():
            yield to_spark_batch(batch, self.output)


class _Partition(InputPartition):
    def __init__(self, task: ScanTask | FeedTask) -> None:
        super().__init__(task)
        self.task = task


class AcidStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader of one query (see the module docstring). Made in several of
    Spark's workers, so making one opens nothing; the worker that serves the query's
    offsets keeps its warehouse open while the query runs."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self._options = stream_read_options(options)
        self._target = target_of(options)
        self._schema = schema
        self._opened: tuple[Warehouse, TableHandle] | None = None
        self._initial: Offset | None = None
        self._ceiling: int | None = None

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_opened"] = None  # a connection stays in its process
        return state

    def _table(self) -> TableHandle:
        if self._opened is None:
            self._opened = open_target(self._target)
        return self._opened[1]

    def stop(self) -> None:
        if self._opened is not None:
            self._opened[0].close()
            self._opened = None

    def initialOffset(self) -> dict[str, Any]:  # noqa: N802  (Spark's name)
        """Where a new query starts (Spark asks more than once: the first answer stays)."""
        with reported_errors():
            if self._initial is None:
                starting = self._options.starting_version
                if starting is None:
                    self._initial = Offset(0, initial=True)
                elif starting == "latest":
                    self._initial = Offset(frontier(self._table().snapshot()[1]))
                else:
                    self._initial = Offset(starting - 1)
            return self._initial.to_json()

    def getDefaultReadLimit(self) -> ReadLimit:  # noqa: N802
        """``maxWritesPerTrigger``, as the one limit PySpark lets a source name that counts
        items: each write id counts as one "file"."""
        limit = self._options.max_writes
        return ReadAllAvailable() if limit is None else ReadMaxFiles(limit)

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        """``Trigger.AvailableNow``: never go past the frontier of now."""
        with reported_errors():
            self._ceiling = frontier(self._table().snapshot()[1])

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:  # noqa: N802
        with reported_errors():
            table = self._table()
            writes = limit.max_files if isinstance(limit, ReadMaxFiles) else None
            return next_end(table, Offset.of(start, table.name), self._options, writes,
                            self._ceiling).to_json()

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        with reported_errors():
            name = self._target.describe()
            first, last = Offset.of(start, name), Offset.of(end, name)
            if last.write_id <= first.write_id:
                return []
            wh, table = open_target(self._target)
            try:
                tasks = self._planned(table, first, last)
            except NotEnoughHistoryError as exc:
                raise NotEnoughHistoryError(
                    f"the stream of {table.name} cannot read write ids {first.write_id + 1} "
                    f"to {last.write_id}: {exc} Restart the query with a new "
                    "checkpointLocation and startingVersion 'latest' (or a later write id), "
                    "and keep streams ahead of the cleaner's retention") from exc
            finally:
                wh.close()
        return [_Partition(task) for task in tasks]

    def _planned(self, table: TableHandle, first: Offset, last: Offset
                 ) -> list[ScanTask] | list[FeedTask]:
        gone = [f.name for f in self._schema.fields
                if f.name not in output_schema(table).names]
        if gone:
            raise SchemaMismatchError(
                f"the stream of {table.name} emits column(s) {gone}, which the table no "
                "longer has (renamed or dropped since the query started): start the query "
                "again, from its checkpoint, to stream the table's columns as they are now")
        if last.snapshot is not None:  # the first snapshot: its rows by the write that wrote
            # them (a first batch also takes the rows of pre-ACID files, write id 0)
            low = first.write_id if first.write_id > 0 else -1
            return self._scan(table, last.snapshot, _Rows(low, last.write_id))
        if self._options.change_feed:
            return self._feed(table, first.write_id + 1, last.write_id)
        changed = change_writes(table, first.write_id + 1, last.write_id)
        if changed and not self._options.skip_change_commits:
            refuse_changes(table.name, changed)
        if len(changed) == last.write_id - first.write_id:
            return []  # change writes passed over: nothing to emit
        return self._scan(table, last.write_id,
                          _Rows(first.write_id, last.write_id, tuple(sorted(changed))))

    def _times(self, table: TableHandle, low: int, high: int) -> dict[int, datetime]:
        if not self._options.change_feed:
            return {}
        return {w: t for w, t in table.metastore.write_id_commit_times(table.name).items()
                if low < w <= high}

    def _scan(self, table: TableHandle, as_of: int, rows: _Rows) -> list[ScanTask]:
        options = self._options.read
        # the stream's columns (a column added since it started is not one), and ROW__IDs
        requested = StructType([f for f in self._schema.fields if f.name not in _FEED_COLUMNS]
                               + [_ROW_ID_FIELD])
        ttl = options.lease_seconds
        planned = leased_plan(table, as_of, ttl, lambda snapshot: plan_read(
            table, options, requested, snapshot, keep=rows.overlaps)[0])
        times = self._times(table, rows.low, rows.high)
        output = arrow_schema(self._schema)
        return [ScanTask(dataclasses.replace(task, target=self._target, table=table.name,
                                             lease=lease, lease_seconds=ttl),
                         rows, self._options.change_feed, times, output)
                for task, lease in planned]

    def _feed(self, table: TableHandle, first: int, last: int) -> list[FeedTask]:
        options = self._options.read

        def grouped(snapshot: Any) -> list[list[FeedPart]]:
            parts = plan_feed(table, first, last, *snapshot)
            if not parts:
                return []
            return pack(parts, [1 + len(p.splits) for p in parts], options.min_partitions)

        ttl = options.lease_seconds
        planned = leased_plan(table, last, ttl, grouped)
        times = self._times(table, first - 1, last)
        schema, output = output_schema(table), arrow_schema(self._schema)
        return [FeedTask(tuple(group), times, schema, output, self._target, table.name, lease,
                         ttl) for group, lease in planned if group]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        freeze_long_lived()
        task: ScanTask | FeedTask = partition.value
        with reported_errors():
            yield from task.run()

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: Spark's checkpoint holds the offset, and the tasks released their
        leases."""
