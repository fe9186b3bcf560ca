"""``df.writeStream.format("acidstore")``: each micro-batch one transaction, exactly once.

How PySpark runs a Python streaming sink: for every micro-batch a driver-side worker calls
``DataSource.streamWriter`` and pickles the writer for the batch's tasks, which call
``write``; then another worker calls ``streamWriter`` again and, on that fresh writer,
``commit(messages, batchId)`` or ``abort(messages, batchId)``. No call names the query, and
the first does not know the batch id. So:

- the batch's transaction is opened when the writer is pickled for the tasks
  (``__getstate__``): the commit worker's writer is never pickled and opens none;
- each task reads the query's id from its Spark properties (``sql.streaming.queryId``: the
  id Spark keeps in the checkpoint, the same across restarts) and returns it with its files;
- the commit makes the batch an idempotent write (``engine.idempotent``): application id
  ``spark-stream-<query id>``, version the batch id, checked and recorded in the commit's own
  metastore transaction. A batch Spark runs again after a crash (committed here, but the
  crash came before Spark recorded it) finds its version in the table: it commits nothing,
  and its staged files go;
- a marker in the staging area of the batch's transaction names the query (its
  checkpoint location, or its name under ``spark.sql.streaming.checkpointLocation``). An
  abort whose tasks all failed (no message names the transaction) finds the transaction by
  it, and so does the query's next batch, or the first batch of a restarted query: a
  transaction left open by a driver that died is aborted then and its files removed, not
  only at its timeout. One query's batches run one after another, so a transaction of the
  same query that is still there when a batch starts is dead.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping
from typing import Any, cast

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    CaseInsensitiveDict,
    DataSourceStreamArrowWriter,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

from acidstore.api.streaming import STREAMING_INSERT
from acidstore.api.warehouse import Warehouse
from acidstore.engine import idempotent
from acidstore.engine.core import core_of
from acidstore.engine.handle import TableHandle
from acidstore.engine.task_writes import (
    TaskPlan,
    TaskResult,
    make_staging_dir,
    staging_of,
    task_plan,
)
from acidstore.engine.transaction import TransactionCore
from acidstore.engine.worker_gc import freeze_long_lived
from acidstore.errors import AcidStoreError, UnsupportedOperationError
from acidstore.format.layout import STAGING_DIR
from acidstore.format.writeids import ValidTxnList
from acidstore.io import fs as afs
from acidstore.spark.options import open_target, target_of
from acidstore.spark.read_tasks import merge_schema
from acidstore.spark.staged_writes import abort_open, abort_staged, commit_staged, write_staged
from acidstore.spark.stream_options import check_stream_write
from acidstore.spark.typed_errors import reported_errors
from acidstore.spark.write_columns import add_new_columns, check_columns

__all__ = ["APP_PREFIX", "AcidStreamWriter", "StreamMessage", "stream_app"]

#: the application id of a query's batches: this, then the query's id
APP_PREFIX = "spark-stream-"
#: the Spark property that holds a streaming query's id in its tasks
_QUERY_ID = "sql.streaming.queryId"
_MARKER = "_stream_"


def stream_app(query_id: str | None, batch_id: int, table: str) -> idempotent.AppWrite:
    """The idempotent identity of one micro-batch of a query."""
    if not query_id:
        raise UnsupportedOperationError(
            f"a streaming write to {table} ran without a streaming query id, so its batch "
            "cannot be committed exactly once; write through df.writeStream...start()")
    return idempotent.AppWrite(APP_PREFIX + query_id, batch_id)


class StreamMessage(WriterCommitMessage):
    """A task's files, the plan it wrote them for, and the query it ran in."""

    def __init__(self, plan: TaskPlan, output: TaskResult, query_id: str | None) -> None:
        self.plan = plan
        self.output = output
        self.query_id = query_id


def _query_marker(options: Mapping[str, str]) -> str | None:
    """The marker file name of a query's transactions (None: the query has no stable
    name: no checkpoint location given, and no query name)."""
    given = cast("Mapping[str, str]", CaseInsensitiveDict(dict(options)))
    location, name = given.get("checkpointLocation"), given.get("queryName")
    key = f"checkpoint:{location}" if location else f"query:{name}" if name else None
    if key is None:
        return None
    return _MARKER + hashlib.sha256(key.encode()).hexdigest()[:24]


class AcidStreamWriter(DataSourceStreamArrowWriter):
    """The writer of one micro-batch (see the module docstring)."""

    def __init__(self, options: Mapping[str, str], schema: StructType) -> None:
        self._target = target_of(options)
        check_stream_write(options, self._target.describe())
        self._schema = schema
        self._merge_schema = merge_schema(options)
        self._marker = _query_marker(options)
        self._plan: TaskPlan | None = None

    def __getstate__(self) -> dict[str, Any]:
        """Pickled for the batch's tasks: the batch's transaction opens now (once)."""
        if self._plan is None:
            with reported_errors():
                self._plan = self._open_batch()
        return dict(self.__dict__)

    def _open_batch(self) -> TaskPlan:
        if self._merge_schema:
            add_new_columns(self._target, self._schema)
        wh, table = open_target(self._target)
        try:
            check_columns(table.schema, self._schema, table.name,
                          table.info.partition_schema.names)
            self._abort_left(wh, table)
            txn = TransactionCore(core_of(wh), heartbeat_interval=None)
            try:
                plan = task_plan(table, txn, "insert")
                if self._marker is not None:
                    staging = staging_of(table.location, txn.txn_id)
                    make_staging_dir(table.filesystem, staging)
                    afs.write_bytes(table.filesystem, afs.join(staging, self._marker),
                                    json.dumps({"txn_id": txn.txn_id,
                                                "snapshot": str(txn.snapshot)}).encode())
            except BaseException:
                txn.abort("planning the streaming write failed")
                raise
            return plan
        finally:
            wh.close()

    def _abort_left(self, wh: Warehouse, table: TableHandle) -> None:
        """Abort the transactions of this query that a failed batch or a dead driver left
        (found by the query's marker), and remove their staged files."""
        if self._marker is None:
            return
        fs, root = table.filesystem, afs.join(table.location, STAGING_DIR)
        markers = [afs.join(root, entry.name, self._marker)
                   for entry in afs.list_dir(fs, root) if entry.is_dir
                   and entry.name.startswith("txn_")]
        for info in fs.get_file_info(markers) if markers else []:
            if not info.is_file:
                continue
            with contextlib.suppress(ValueError, KeyError, OSError, AcidStoreError):
                left = json.loads(afs.read_bytes(fs, info.path))
                abort_open(wh, fs, table.location, int(left["txn_id"]),
                           ValidTxnList.parse(left["snapshot"]),
                           why="a micro-batch of the streaming query failed")

    def write(self, iterator: Iterator[pa.RecordBatch]) -> WriterCommitMessage:
        freeze_long_lived()
        plan = self._plan
        assert plan is not None, "the writer was pickled for its tasks"
        context = TaskContext.get()
        query = context.getLocalProperty(_QUERY_ID) if context is not None else None
        with reported_errors():
            return StreamMessage(plan, write_staged(self._target, plan, iterator), query)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        with reported_errors():
            mine = [m for m in messages if isinstance(m, StreamMessage)]
            if not mine:  # no task reported: nothing can be committed
                self._abort_all(mine)
                return
            plan = mine[0].plan
            app = stream_app(mine[0].query_id, batchId, plan.target.name)
            commit_staged(self._target, plan, [m.output for m in mine], app=app,
                          statement=STREAMING_INSERT)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803
        with reported_errors():
            self._abort_all([m for m in messages if isinstance(m, StreamMessage)])

    def _abort_all(self, messages: list[StreamMessage]) -> None:
        """Abort the batch's transaction: the one its messages name, or, when no task
        reported, the one its marker names."""
        for plan in {m.plan.txn_id: m.plan for m in messages}.values():
            abort_staged(self._target, plan, "a task of the micro-batch failed")
        wh, table = open_target(self._target)
        try:
            self._abort_left(wh, table)
        finally:
            wh.close()
