"""Spark writes: executors write bucket files into a staging area, the driver publishes them.

Every Spark task writes its rows with a statement id of its own (``first + task * clauses +
clause``), so tasks never write the same file and the result is plain Hive layout: a
multi-statement transaction's ``delta_w_w_s`` / ``delete_delta_w_w_s`` directories with
``bucket_N`` files of dense row ids. An INSERT OVERWRITE writes ``base_w`` (no statement id):
there each task writes ``bucket_<task>`` of an unbucketed table, as Hive's writers do, and a
bucketed table's rows arrive grouped so that one task holds each bucket.

A task attempt writes below ``<table>/_acidstore_staging/txn_<id>/attempt_<n>/`` (hidden from
readers, like Hive's staging dirs) and returns what it wrote. Only the driver moves files into
place, for the attempts Spark reports as successful, so a failed or retried task never
duplicates rows; then one metastore commit publishes everything. When the write ends,
committed or aborted, its ``txn_<id>`` directory goes, and ``_acidstore_staging`` with it
if no other write is staging there.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from acidstore.engine.handle import TableHandle
from acidstore.engine.transaction import TransactionCore
from acidstore.errors import InvalidInputError, MergeCardinalityError
from acidstore.format.layout import STAGING_DIR
from acidstore.format.orc.codec import MAX_BUCKET_ID, MAX_STATEMENT_ID
from acidstore.io import fs as afs
from acidstore.metastore import Operation, WriteComponent
from acidstore.read.keys import KeyArrays
from acidstore.write.bucketing import bucket_ids
from acidstore.write.conform import conform, split_partitions
from acidstore.write.files import WrittenDirectory, write_deletes, write_inserts

__all__ = ["BUCKET_COLUMN", "CLAUSE_COLUMN", "DELETE_COLUMN", "INSERT_COLUMN", "STAGING_DIR",
           "TaskOutput", "WriteJob", "make_staging_dir", "publish", "remove_staging",
           "remove_staging_of", "run_write", "staging_of", "write_job"]

#: DML input columns: which clause a row belongs to, the ROW__ID it deletes (null: none) and
#: whether its values are a new row. Plain inserts have none of them.
CLAUSE_COLUMN, DELETE_COLUMN, INSERT_COLUMN = "__acid_clause", "__acid_delete", "__acid_insert"
#: the Hive bucket of a row, added where rows are shuffled so that one task holds a bucket
BUCKET_COLUMN = "__acid_bucket"


@dataclass(frozen=True)
class WriteJob:
    """Everything an executor needs to write its part of one statement (picklable)."""

    table: str
    location: str
    filesystem: pafs.FileSystem
    schema: pa.Schema
    partition_schema: pa.Schema
    bucket_by: tuple[str, ...]
    buckets: int
    compression: str
    txn_id: int
    write_id: int
    first_statement: int
    #: the operation of each clause (index = the value of ``__acid_clause``)
    clauses: tuple[Operation, ...] = ("insert",)
    #: a DELETE/UPDATE/MERGE on a Serializable table: its components read their partitions
    reads: bool = False
    #: the table's metadata version the job planned against (checked at commit)
    metadata_version: int | None = None
    #: an overwrite of the whole table (``partitionOverwriteMode=static``): the partitions it
    #: empties unless the job writes rows into them
    emptied: tuple[str, ...] = ()

    @property
    def staging(self) -> str:
        return staging_of(self.location, self.txn_id)

    @property
    def full_schema(self) -> pa.Schema:
        return pa.schema(list(self.schema) + list(self.partition_schema))


def write_job(table: TableHandle, txn: TransactionCore, clauses: tuple[Operation, ...]) -> WriteJob:
    """The job of one statement of ``txn`` on ``table`` (allocates the write id)."""
    if "overwrite" in clauses and len(clauses) > 1:
        raise InvalidInputError("an overwrite is a statement of its own")
    info = table.info
    job = WriteJob(table.name, table.location, table.filesystem, info.schema,
                   info.partition_schema, tuple(info.bucket_by), info.buckets,
                   table.compression, txn.txn_id,
                   txn.write_id(table.name), txn.next_statement_id(table.name), clauses,
                   reads=table.isolation_level == "Serializable"
                   and any(c not in ("insert", "overwrite") for c in clauses),
                   metadata_version=info.metadata_version)
    # A crashed job's staging files are found by name (``txn_<id>`` of a transaction that
    # is no longer open), so nothing is recorded for them here.
    return job


@dataclass(frozen=True)
class PartitionOutput:
    """What one task wrote into one partition for one clause."""

    partition: str
    operation: Operation
    directories: tuple[str, ...]
    rows_inserted: int = 0
    rows_deleted: int = 0
    files: int = 0
    bytes: int = 0
    #: (path relative to the table, bytes) of each file (``WriteComponent.bucket_files``)
    bucket_files: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class TaskOutput:
    """A task attempt's commit message: where its files wait and what they are."""

    task: int
    attempt: int
    root: str
    last_statement: int
    partitions: tuple[PartitionOutput, ...] = field(default=())


def _statement(job: WriteJob, task: int, clause: int) -> int:
    statement = job.first_statement + task * len(job.clauses) + clause
    if statement > MAX_STATEMENT_ID:
        raise InvalidInputError(
            f"Spark task {task} of the write to {job.table} would need statement id "
            f"{statement} > {MAX_STATEMENT_ID} (one per task and clause): coalesce() the "
            "DataFrame to fewer partitions")
    return statement


def _buckets(job: WriteJob, rows: pa.Table, operation: Operation, task: int
             ) -> npt.NDArray[np.int32]:
    if job.bucket_by and job.buckets > 0:
        return bucket_ids(rows, list(job.bucket_by), job.buckets)
    if operation == "overwrite":  # base_w has no statement id: the writer id tells tasks apart
        if task > MAX_BUCKET_ID:
            raise InvalidInputError(
                f"an overwrite of {job.table} from {task + 1}+ Spark tasks exceeds "
                f"{MAX_BUCKET_ID + 1} writers: coalesce() the DataFrame")
        return np.full(rows.num_rows, task, dtype=np.int32)
    return np.zeros(rows.num_rows, dtype=np.int32)


def _row_keys(column: pa.ChunkedArray) -> KeyArrays:
    ids = column.combine_chunks()
    return KeyArrays(
        np.asarray(ids.field("writeid").to_numpy(zero_copy_only=False), dtype=np.int64),
        np.asarray(ids.field("bucketid").to_numpy(zero_copy_only=False), dtype=np.int32),
        np.asarray(ids.field("rowid").to_numpy(zero_copy_only=False), dtype=np.int64))


class _TaskWriter:
    def __init__(self, job: WriteJob, task: int, attempt: int) -> None:
        self.job = job
        self.task = task
        self.root = afs.join(job.staging, f"attempt_{attempt}")
        self.outputs: list[PartitionOutput] = []
        self.last_statement = -1
        self._made = False

    def _make_root(self) -> None:
        """Make the attempt's directory before its first file (a task with no rows makes
        none)."""
        if not self._made:
            make_staging_dir(self.job.filesystem, self.root)
            self._made = True

    def _record(self, partition: str, operation: Operation,
                written: Sequence[WrittenDirectory | None], inserted: int, deleted: int) -> None:
        done = [w for w in written if w is not None]
        if done:
            self.outputs.append(PartitionOutput(
                partition, operation, tuple(w.path for w in done), inserted, deleted,
                sum(len(w.files) for w in done), sum(w.bytes for w in done),
                tuple(f for w in done for f in w.bucket_files)))

    def deletes(self, rows: pa.Table, operation: Operation, statement: int) -> None:
        job = self.job
        self._make_root()
        names = list(job.partition_schema.names)
        keyed = conform(rows.select([*names, DELETE_COLUMN]), pa.schema(
            [*job.partition_schema, rows.schema.field(DELETE_COLUMN)]),
            where=f"the rows deleted from {job.table}")
        for part in split_partitions(keyed, names):
            keys = _row_keys(part.rows.column(DELETE_COLUMN))
            written = write_deletes(job.filesystem, self.root, part.path,
                                    (keys.write_id, keys.bucket, keys.row_id),
                                    write_id=job.write_id, statement_id=statement,
                                    schema=job.schema, compression=job.compression)
            self._record(part.path, operation, [written], 0, len(keys))

    def inserts(self, rows: pa.Table, operation: Operation, statement: int) -> None:
        job = self.job
        self._make_root()
        data = conform(rows, job.full_schema, where=f"table {job.table}")
        user = [f.name for f in job.schema]
        kind: Literal["base", "delta"] = "base" if operation == "overwrite" else "delta"
        for part in split_partitions(data, list(job.partition_schema.names)):
            values = part.rows.select(user)
            written = write_inserts(job.filesystem, self.root, part.path, values,
                                    _buckets(job, values, operation, self.task),
                                    write_id=job.write_id, statement_id=statement,
                                    schema=job.schema, kind=kind, compression=job.compression)
            self._record(part.path, operation, [written], values.num_rows, 0)

    def clause(self, rows: pa.Table, index: int) -> None:
        operation = self.job.clauses[index]
        statement = _statement(self.job, self.task, index)
        self.last_statement = max(self.last_statement, statement)
        if DELETE_COLUMN in rows.column_names:
            deleting = rows.filter(pc.is_valid(rows.column(DELETE_COLUMN)))
            if deleting.num_rows:
                self.deletes(deleting, operation, statement)
        if INSERT_COLUMN in rows.column_names:
            inserting = rows.filter(pc.fill_null(rows.column(INSERT_COLUMN), False))
        elif DELETE_COLUMN in rows.column_names:  # a DELETE: no new rows
            inserting = rows.slice(0, 0)
        else:  # an INSERT: every row is new
            inserting = rows
        extra = [c for c in (CLAUSE_COLUMN, DELETE_COLUMN, INSERT_COLUMN, BUCKET_COLUMN)
                 if c in inserting.column_names]
        if inserting.num_rows:
            self.inserts(inserting.drop_columns(extra), operation, statement)


def run_write(job: WriteJob, batches: Iterable[pa.RecordBatch], task: int, attempt: int
              ) -> TaskOutput:
    """Write one Spark task's rows (on an executor) into its attempt's staging directory."""
    writer = _TaskWriter(job, task, attempt)
    collected = list(batches)
    if collected:
        rows = pa.Table.from_batches(collected)
        _check_deleted_once(rows, job)
        if CLAUSE_COLUMN not in rows.column_names:
            writer.clause(rows, 0)
        else:
            clause_of = rows.column(CLAUSE_COLUMN).to_numpy(zero_copy_only=False)
            for index in sorted({int(c) for c in clause_of if c is not None and c >= 0}):
                writer.clause(rows.filter(pa.array(clause_of == index)), index)
    return TaskOutput(task, attempt, writer.root, writer.last_statement,
                      tuple(writer.outputs))


def _check_deleted_once(rows: pa.Table, job: WriteJob) -> None:
    """A ROW__ID that comes twice (a MERGE sends one row per matched pair, taken by a clause
    or not) is a target row that matched two source rows. The MERGE sends every pair of a
    target row to one task (hashed on its partition and ROW__ID), so the check runs in the
    writing job itself, not in a second scan."""
    if DELETE_COLUMN not in rows.column_names:
        return
    deleted = rows.filter(pc.is_valid(rows.column(DELETE_COLUMN)))
    if deleted.num_rows < 2:
        return
    key = deleted.column(DELETE_COLUMN).combine_chunks()
    keys = pa.table({**{p: deleted.column(p) for p in job.partition_schema.names},
                     **{f"__k{i}": key.field(i) for i in range(key.type.num_fields)}})
    counts = keys.group_by(keys.column_names).aggregate([([], "count_all")])
    if pc.max(counts.column("count_all")).as_py() > 1:
        raise MergeCardinalityError(
            f"MERGE into {job.table}: a target row matched more than one source row "
            "(cardinality violation); nothing was written")


def _merged(outputs: Sequence[TaskOutput]) -> dict[tuple[str, Operation], PartitionOutput]:
    merged: dict[tuple[str, Operation], PartitionOutput] = {}
    for output in outputs:
        for part in output.partitions:
            key = (part.partition, part.operation)
            old = merged.get(key)
            if old is None:
                merged[key] = part
                continue
            merged[key] = PartitionOutput(
                part.partition, part.operation,
                tuple(dict.fromkeys(old.directories + part.directories)),
                old.rows_inserted + part.rows_inserted, old.rows_deleted + part.rows_deleted,
                old.files + part.files, old.bytes + part.bytes,
                old.bucket_files + part.bucket_files)
    return merged


def _move_tree(fs: pafs.FileSystem, source: str, target: str) -> None:
    """Move every file below ``source`` to the same relative place below ``target``."""
    made: set[str] = set()
    for relative, _ in afs.list_files_recursive(fs, source):
        parent = relative.rpartition("/")[0]
        if parent not in made:
            fs.create_dir(afs.join(target, parent) if parent else target, recursive=True)
            made.add(parent)
        fs.move(afs.join(source, relative), afs.join(target, relative))


def publish(txn: TransactionCore, job: WriteJob, outputs: Sequence[TaskOutput]
            ) -> list[WriteComponent]:
    """Move the successful attempts' files into the table and register them with ``txn``
    (on the driver). The caller commits; on any error it aborts, which removes them."""
    merged = _merged(outputs)
    if "overwrite" in job.clauses:
        # an INSERT OVERWRITE of an unpartitioned table replaces its rows even when it writes
        # none, and one of a whole partitioned table empties the partitions it writes none to
        emptied = [p for p in (job.emptied if job.partition_schema.names else [""])
                   if (p, "overwrite") not in merged]
        root = afs.join(job.staging, "empty")
        if emptied:
            make_staging_dir(job.filesystem, root)
        for partition in emptied:
            written = write_inserts(job.filesystem, root, partition, job.schema.empty_table(),
                                    np.zeros(0, np.int32), write_id=job.write_id,
                                    statement_id=0, schema=job.schema, kind="base",
                                    compression=job.compression)
            assert written is not None
            merged[(partition, "overwrite")] = PartitionOutput(
                partition, "overwrite", (written.path,), 0, 0, len(written.files),
                written.bytes, written.bucket_files)
        if emptied:
            outputs = [*outputs, TaskOutput(-1, -1, root, -1)]
    components = []
    for (partition, operation), part in sorted(merged.items()):
        component = WriteComponent(job.table, partition, operation, job.write_id,
                                   part.directories, rows_inserted=part.rows_inserted,
                                   rows_deleted=part.rows_deleted, files=part.files,
                                   bytes=part.bytes, read=job.reads,
                                   metadata_version=job.metadata_version,
                                   bucket_files=part.bucket_files)
        txn.will_write(component)
        components.append(component)
    for output in outputs:
        _move_tree(job.filesystem, output.root, job.location)
    for component in components:
        txn.wrote(component)
    last = max((o.last_statement for o in outputs), default=-1)
    if last >= 0:
        txn.used_statement_ids(job.table, last)
    remove_staging(job)
    return components


def staging_of(location: str, txn_id: int) -> str:
    """The staging area of transaction ``txn_id`` in the table at ``location``: one per
    transaction, so that only its owner ever removes it."""
    return afs.join(location, STAGING_DIR, f"txn_{txn_id}")


#: how often a task makes its staging directory again when a parent vanished meanwhile
_MAKE_ATTEMPTS = 5


def make_staging_dir(fs: pafs.FileSystem, path: str) -> None:
    """Make ``path`` and its parents below the table's staging root. Another job's writer
    removes that root when it finds it empty (``remove_staging``), which can happen between
    making the root and making the directory inside it: the directory is then made again
    from the root. Once it exists the root is not empty, and nobody else removes it."""
    for _ in range(_MAKE_ATTEMPTS - 1):
        try:
            fs.create_dir(path, recursive=True)
            return
        except FileNotFoundError:
            continue
    fs.create_dir(path, recursive=True)


def remove_staging(job: WriteJob) -> None:
    """Drop the transaction's staging area (``remove_staging_of``)."""
    remove_staging_of(job.filesystem, job.location, job.txn_id)


def remove_staging_of(fs: pafs.FileSystem, location: str, txn_id: int) -> None:
    """Drop transaction ``txn_id``'s staging area (failed attempts' files included), then
    the table's staging root if that is empty now (``fs.remove_empty_directory``: never
    another job's files; that job removes the root itself when it ends). Best effort:
    leftovers are hidden from readers, and the cleaner removes the staging areas of
    transactions that are no longer open."""
    with contextlib.suppress(OSError):
        fs.delete_dir(staging_of(location, txn_id))
    afs.remove_empty_directory(fs, afs.join(location, STAGING_DIR))
