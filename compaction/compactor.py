"""``compact(table, "minor" | "major")``: plan -> execute (here or on Spark) -> one commit.

The compaction runs in a transaction of its own (kind ``compaction``): its snapshot gives the
compactor write-id list (§6.4: never past the lowest open write id, so writers running now are
never covered), its id is the ``_v<txn>`` suffix of every output directory (invisible to
readers until the commit, §7.1), and its commit carries no write components, so it can never
conflict with a writer: inserts, updates and deletes keep running and committing meanwhile.
Rows keep their ROW__IDs, which is what lets a writer's delete events (taken before the
compaction) still find their rows in the compacted output.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from acidstore.config import LOCAL_THREADS
from acidstore.engine.executors import spark_session, spark_tasks
from acidstore.engine.handle import HasHandle, TableHandle, handle_of
from acidstore.engine.transaction import TransactionCore
from acidstore.errors import AcidStoreError, InvalidInputError, StrayPathError
from acidstore.format.orc.file_writer import WrittenFile
from acidstore.format.partitions import parse_partition_path, partition_path
from acidstore.format.writeids import ValidCompactorWriteIdList
from acidstore.io import fs as afs
from acidstore.io.fs import storage_guarded
from acidstore.metastore import CompactionInfo, CompactionOutput
from acidstore.read.record_plan import RecordPlan
from compaction.execute import BucketOutput, prepare_outputs, run_bucket
from compaction.plan import BucketWork, Kind, PartitionPlan, plan_partition_compaction

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

__all__ = ["CompactionResult", "Engine", "PartitionResult", "compact", "partition_dirs"]

Engine = Literal["local", "spark"]
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class PartitionResult:
    """One partition's compaction: what went in, what came out (empty: nothing to do)."""

    partition: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    rows: int = 0
    files: int = 0
    bytes: int = 0
    reason: str = ""
    needs_cleaning: bool = False


@dataclass(frozen=True)
class CompactionResult:
    """What ``compact`` did. ``txn_id`` is None when no partition had enough to compact."""

    table: str
    kind: Kind
    txn_id: int | None
    partitions: tuple[PartitionResult, ...]

    @property
    def compacted(self) -> bool:
        return self.txn_id is not None

    @property
    def needs_cleaning(self) -> bool:
        return self.compacted or any(p.needs_cleaning for p in self.partitions)


def partition_dirs(table: TableHandle, partition: str | Mapping[str, str | None] | None = None,
                   plan: RecordPlan | None = None, *,
                   strays: list[StrayPathError] | None = None) -> list[tuple[str, str]]:
    """(relative, absolute) directories of the table's partitions, or of the one named.
    With ``plan`` (a table whose record is complete) the partitions are those the record
    knows, unlisted, as a read finds them: a partition directory nobody recorded is not
    compacted (``fsck`` reports it). Else the table's tree is listed, and an entry that
    breaks its layout raises StrayPathError, or is appended to ``strays`` when given."""
    names = list(table.info.partition_schema.names)
    if not names:
        if partition not in (None, "", {}):
            raise InvalidInputError(f"{table.name} is not partitioned; partition must be None")
        return [("", table.location)]
    if partition is not None:
        if isinstance(partition, Mapping):
            lowered = {k.lower(): v for k, v in partition.items()}
            if set(lowered) != {n.lower() for n in names}:
                raise InvalidInputError(
                    f"partition {dict(partition)} must give exactly {names} of {table.name}")
            partition = partition_path(names, [lowered[n.lower()] for n in names])
        else:
            # rebuilt from its parsed values, so that it can only name a partition directory
            # of this table ("../other/dt=x" used to be joined to the location as it was)
            pairs = parse_partition_path(partition)
            if [c.lower() for c, _ in pairs] != [n.lower() for n in names]:
                raise InvalidInputError(
                    f"partition {partition!r} of {table.name} must be "
                    f"{'/'.join(n + '=VALUE' for n in names)}, each value escaped as in Hive's "
                    "directory names ('/' as %2F)")
            partition = partition_path(names, [v for _, v in pairs])
        directory = afs.join(table.location, partition)
        if partition not in table.metastore.list_partitions(table.name) and \
                table.filesystem.get_file_info(directory).type.name != "Directory":
            # (a partition commits wrote whose directory is gone is planned, and stops on
            # its missing data)
            raise InvalidInputError(f"{table.name} has no partition {partition!r}")
        return [(partition, directory)]
    if plan is not None:
        return [(relative, afs.join(table.location, relative)) for relative in plan.partitions()]
    prefix = table.location.rstrip("/") + "/"
    return [(p.path[len(prefix):], p.path)
            for p in table.partition_dirs(strays=strays)
            if p.path.startswith(prefix)]


def _run_local(work: Sequence[BucketWork], progress: Progress | None) -> list[BucketOutput]:
    out: list[BucketOutput] = []
    threads = LOCAL_THREADS
    with ThreadPoolExecutor(max_workers=threads) as pool:
        for output in pool.map(run_bucket, work):
            out.append(output)
            if progress is not None:
                progress(len(out), len(work))
    return out


def _run_buckets(share: Sequence[BucketWork]) -> list[BucketOutput]:
    return [run_bucket(work) for work in share]


def _run_spark(work: Sequence[BucketWork], spark: SparkSession | None,
               progress: Progress | None) -> list[BucketOutput]:
    """One Spark task per bucket (``engine.executors.spark_tasks``, the runner of DML units
    too); executors need only the filesystem, never the metastore."""
    session = spark_session(spark)
    outputs = spark_tasks(session, work, _run_buckets, slots=len(work))
    if progress is not None and work:
        progress(len(outputs), len(work))
    return outputs


def _remove_outputs(plans: Sequence[PartitionPlan], table: TableHandle) -> None:
    for plan in plans:
        for name in plan.outputs:
            path = afs.join(plan.directory, name)
            with contextlib.suppress(OSError):
                table.filesystem.delete_dir(path)


@storage_guarded
def compact(table: TableHandle | HasHandle, kind: Kind,
            partition: str | Mapping[str, str | None] | None = None,
            engine: Engine = "local", *, spark: SparkSession | None = None,
            progress: Progress | None = None,
            on_start: Callable[[int, ValidCompactorWriteIdList], None] | None = None,
            record: bool = True) -> CompactionResult:
    """Compact ``table`` (or one partition: its relative path or a {column: value} dict).

    ``progress(done, total)`` is called as buckets finish; ``on_start(txn_id, write_ids)``
    once the compaction's transaction and compactor list exist (the worker records them in
    the queue, so a crash can be cleaned up). Returns what was compacted; a partition with
    too little to compact is left alone and its ``reason`` says why. With ``record`` each
    compacted partition is recorded in the queue before the commit (so time travel and
    readers' lease checks know the compaction from its commit on, whatever crashes after)
    and moved to ready for cleaning after it (the Worker passes False: its claimed entry is
    the record).
    """
    if not isinstance(table, TableHandle) and not hasattr(table, "_handle"):
        raise InvalidInputError(f"compact takes a Table (wh.table(name)), not {table!r}")
    table = handle_of(table)
    if kind not in ("minor", "major"):
        raise InvalidInputError(f"compaction kind must be 'minor' or 'major', not {kind!r}")
    if engine not in ("local", "spark"):
        raise InvalidInputError(f"engine must be 'local' or 'spark', not {engine!r}")
    record_plan = table.record_plan()
    targets = partition_dirs(table, partition, record_plan)
    wh = table.core
    txn = TransactionCore.begin(wh, kind="compaction")
    plans: list[PartitionPlan] = []
    entries: list[CompactionInfo] = []
    worker = f"compact() {socket.gethostname()}-{os.getpid()}-{threading.get_ident()}"
    try:
        write_ids = wh.metastore.valid_write_ids(table.name, txn.snapshot,
                                                 txn.txn_id).to_compactor()
        if on_start is not None:
            on_start(txn.txn_id, write_ids)
        codec, recorded = table.compression, table.recorded_writes()
        for relative, directory in targets:
            plans.append(plan_partition_compaction(
                table.filesystem, relative, directory, kind, schema=table.info.row_schema,
                write_ids=write_ids, txns=txn.snapshot, txn_id=txn.txn_id, compression=codec,
                recorded=recorded, record_plan=record_plan))
        work = [unit for plan in plans for unit in plan.work]
        prepare_outputs(work)
        outputs = _run_local(work, progress) if engine == "local" else _run_spark(
            work, spark, progress)
        if not any(plan.enough for plan in plans):
            txn.abort("nothing to compact")
            return CompactionResult(table.name, kind, None, _summaries(plans, work, outputs))
        # still the table it planned from (its outputs are recorded by name): renamed or
        # dropped meanwhile, and another table may have that name now
        table.check_exists()
        txn.compacted(_records(table, plans, work, outputs))
        if record:  # before the commit: a committed compaction is never missing from the queue
            entries = [wh.metastore.record_compaction(
                table.name, plan.partition, kind, "requested by compact()", txn_id=txn.txn_id,
                compactor_write_ids=write_ids, worker=worker) for plan in plans if plan.enough]
        txn.commit()
    except BaseException as exc:
        if txn.state == "open":
            with contextlib.suppress(AcidStoreError):  # the compaction's error is raised
                txn.abort(f"compaction failed: {type(exc).__name__}: {exc}")
        if txn.state == "aborted":  # only what the metastore says is aborted is removed
            _remove_outputs(plans, table)
            for entry in entries:
                with contextlib.suppress(AcidStoreError):  # a stale entry is taken over
                    wh.metastore.finish_compaction(entry.compaction_id, "failed",
                                                   f"{type(exc).__name__}: {exc}")
        raise
    # after the commit: a failure here leaves a stale entry that a Worker moves on
    for entry in entries:
        wh.metastore.compaction_compacted(entry.compaction_id, worker)
    return CompactionResult(table.name, kind, txn.txn_id, _summaries(plans, work, outputs))


def _records(table: TableHandle, plans: Sequence[PartitionPlan], work: Sequence[BucketWork],
             outputs: Sequence[BucketOutput]) -> list[CompactionOutput]:
    """What the commit records of each output directory: its non-empty bucket files, rows
    and bytes (``outputs[i]`` is what ``work[i]`` produced)."""
    files: dict[tuple[str, str], list[WrittenFile]] = {
        (plan.directory, name): [] for plan in plans if plan.enough for name in plan.outputs}
    for unit, output in zip(work, outputs, strict=True):
        for file in output.files:
            if file.size > 0:
                files[(unit.partition_dir, file.path.rsplit("/", 2)[-2])].append(file)
    records = []
    for plan in plans:
        for name in plan.outputs if plan.enough else ():
            written = files[(plan.directory, name)]
            records.append(CompactionOutput(
                table.name, plan.partition, f"{plan.partition}/{name}" if plan.partition
                else name, len(written), sum(f.rows for f in written),
                sum(f.size for f in written),
                tuple((f.path.rsplit("/", 1)[-1], f.rows) for f in written)))
    return records


def _summaries(plans: Sequence[PartitionPlan], work: Sequence[BucketWork],
               outputs: Sequence[BucketOutput]) -> tuple[PartitionResult, ...]:
    """Per-partition totals; ``outputs[i]`` is what ``work[i]`` produced."""
    totals: dict[str, list[int]] = {p.directory: [0, 0, 0] for p in plans}
    for unit, output in zip(work, outputs, strict=True):
        entry = totals[unit.partition_dir]
        entry[0] += output.rows
        entry[1] += len(output.files)
        entry[2] += sum(f.size for f in output.files)
    return tuple(PartitionResult(p.partition, p.inputs, p.outputs, rows=totals[p.directory][0],
                                 files=totals[p.directory][1], bytes=totals[p.directory][2],
                                 reason=p.reason, needs_cleaning=p.needs_cleaning)
                 for p in plans)
