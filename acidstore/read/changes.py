"""The change feed (layer L4): ``Table.changes(start, end)``, the rows inserted, updated and
deleted by the committed write ids ``start..end`` (inclusive), read from the event files.

Hive's files already hold the feed: every insert event carries its row and ROW__ID, every
delete event the ROW__ID of the row it deletes and the write id that deleted it
(``currentTransaction``). A delete's row values (its *preimage*) come from the insert event of
the row it names, wherever that lives now (a base, an older or a minor-compacted delta).

The files do not link an update's delete event to its new row (Hive writes an UPDATE as a
delete plus an insert, "split update"), so the metastore's record of each write decides what
the events of a write id mean, per partition:
- a write that was an UPDATE (a component ``update``: UPDATE, or MERGE's WHEN MATCHED UPDATE)
  and no DELETE in that partition: its delete events are ``update_preimage`` rows, and the new
  rows of the statement that wrote the updates (the statement ids of the update's ``delta_``
  directories, which every insert event keeps in its bucket property, minor compaction or not)
  are ``update_postimage`` rows; its other new rows are ``insert`` rows;
- a write that both updated and deleted rows of one partition (a MERGE with WHEN MATCHED UPDATE
  and DELETE, or UPDATE and DELETE in one transaction): the files cannot tell which delete
  events were updates, so all of them are ``delete`` rows and the new rows ``insert`` rows. A
  consumer that applies deletes then inserts gets the same table either way;
- otherwise delete events are ``delete`` rows, insert events ``insert`` rows.
A row that a write id inserted and then deleted or updated itself (several statements of one
transaction) was never visible outside it: its insert and delete events are left out, and that
write's events in that partition are ``delete`` and ``insert`` rows (a postimage would have no
preimage).
Like Delta's change feed, a pre- and a postimage are not linked by a key: pair them by the
table's own key (its ``bucket_by`` columns, which an UPDATE cannot change, are one).

Write ids must be committed in the snapshot (an open one in the range is refused, an aborted
one has no changes). The feed is read at a snapshot as of ``end`` under a lease, so a later
compaction whose replaced directories are still there is read around, as time travel does.
If the range's events were folded into a base (a major compaction or an INSERT OVERWRITE at or
after ``start``: a base keeps no delete events, nor the rows deleted before it), the feed
raises ``NotEnoughHistoryError`` naming the range rather than return part of it.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections import defaultdict
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Protocol

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from acidstore.errors import (
    AcidStoreError,
    InvalidInputError,
    NotEnoughHistoryError,
    StrayPathError,
)
from acidstore.format.directory import AcidState, acid_state
from acidstore.format.layout import ParsedDelta
from acidstore.format.orc.codec import BucketCodec
from acidstore.format.orc.schema import ROW_ID_COLUMN, ROW_ID_TYPE
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.metastore import Metastore, TableInfo, WriteComponent
from acidstore.read.keys import current_write_ids, key_arrays, valid_write_id_mask
from acidstore.read.record_check import check_recorded, with_recorded_rows
from acidstore.read.record_plan import RecordPlan
from acidstore.read.recorded import SnapshotRecord
from acidstore.read.registry import delete_event_batches
from acidstore.read.scan import PartitionDir, Scan
from acidstore.read.splits import Listed, Split, plan_partition
from acidstore.sql.expressions import Predicate

__all__ = ["CHANGE_TYPES", "FeedPart", "FeedSource", "changes", "feed_table", "output_schema",
           "plan_feed"]

class FeedSource(Protocol):
    """What the change feed reads of a table (the engine's ``TableHandle`` is one)."""

    info: TableInfo

    @property
    def name(self) -> str: ...

    @property
    def schema(self) -> pa.Schema: ...

    @property
    def location(self) -> str: ...

    @property
    def filesystem(self) -> pafs.FileSystem: ...

    @property
    def metastore(self) -> Metastore: ...

    def snapshot(self) -> tuple[ValidTxnList, ValidWriteIdList]: ...

    def leased_snapshot(self, as_of: int | datetime | None = None, *,
                        ttl_seconds: float = ...) -> tuple[ValidTxnList, ValidWriteIdList, int]:
        ...

    def recorded_writes(self) -> SnapshotRecord: ...

    def partition_dirs(self, *, strays: list[StrayPathError] | None = None
                       ) -> list[PartitionDir]: ...

    def record_plan(self) -> RecordPlan | None: ...

    def read_partitions(self, plan: RecordPlan | None, filter: Predicate | None = None
                        ) -> list[PartitionDir]: ...


#: the values of ``_change_type``, in the order rows of one write id are returned
CHANGE_TYPES = ("delete", "update_preimage", "update_postimage", "insert")
_KEYS = ("writeid", "bucketid", "rowid")


@dataclasses.dataclass
class _Meaning:
    """What the recorded components say about one (write id, partition)."""

    operations: set[str] = dataclasses.field(default_factory=set)
    #: statement ids of the ``delta_`` directories an UPDATE wrote its new rows into
    postimage_statements: set[int] = dataclasses.field(default_factory=set)

    @property
    def updates(self) -> bool:
        """Whether its delete events are updates (see the module docstring)."""
        return "update" in self.operations and "delete" not in self.operations


def _meanings(components: Sequence[WriteComponent], start: int, end: int
              ) -> dict[tuple[int, str], _Meaning]:
    out: dict[tuple[int, str], _Meaning] = defaultdict(_Meaning)
    for c in components:
        if not start <= c.write_id <= end:
            continue
        meaning = out[(c.write_id, c.partition)]
        meaning.operations.add(c.operation)
        if c.operation != "update":
            continue
        for directory in c.directories:
            with contextlib.suppress(AcidStoreError):
                parsed = ParsedDelta.parse(directory.rsplit("/", 1)[-1])
                if not parsed.delete:
                    meaning.postimage_statements.add(max(parsed.statement_id, 0))
    return out


def _check_range(table: FeedSource, start: int, end: int, write_ids: ValidWriteIdList) -> None:
    for value, what in ((start, "start"), (end, "end")):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise InvalidInputError(f"changes of {table.name}: {what} must be a write id "
                                    f"(an int >= 1), not {value!r}")
    if start > end:
        raise InvalidInputError(f"changes of {table.name}: start {start} is after end {end}")
    if end > write_ids.high_watermark:
        raise InvalidInputError(f"changes of {table.name}: write id {end} is after its "
                                f"latest write id {write_ids.high_watermark}")
    unsettled = [w for w in range(start, end + 1)
                 if not write_ids.is_write_id_valid(w) and not write_ids.is_write_id_aborted(w)]
    if unsettled:
        raise InvalidInputError(f"changes of {table.name}: write id(s) {unsettled[:5]} are "
                                "not committed yet; their changes are not decided")


@dataclasses.dataclass(frozen=True)
class FeedPart:
    """One partition's share of a change-feed read, planned where the metastore is (its
    directories listed and checked against the record, ``plan_feed``) and read anywhere
    (``read``: files only, so a Spark task reads it). Picklable."""

    filesystem: pafs.FileSystem
    info: TableInfo
    location: str
    start: int
    end: int
    txns: ValidTxnList
    write_ids: ValidWriteIdList
    partition: PartitionDir
    state: AcidState
    splits: tuple[Split, ...]
    #: what the recorded components say of this partition's write ids of the range
    meanings: dict[tuple[int, str], _Meaning]
    #: the bucket files of each delete delta (by name) as the record names them, with the
    #: bytes to check when opened (None: not checked); None: list the directories
    delete_files: dict[str, tuple[tuple[str, int | None], ...]] | None = None

    @property
    def where(self) -> str:
        return f"changes {self.start}..{self.end} of {self.info.full_name}"

    def read(self) -> list[pa.Table]:
        """The changes of the partition: new rows, then deleted rows (without
        ``_commit_time``: ``feed_table`` adds it and orders the rows)."""
        relative = afs.relative(self.location, self.partition.path)
        deletes = self._delete_events(self.partition.path, self.state)
        # a row that its own write id inserted and deleted (an insert then a delete or an
        # update in one transaction) was never visible outside that write: neither its
        # insert nor its delete event is a change, and a consumer that applies a write's
        # deletes before its inserts would otherwise bring the row back
        own = pc.equal(deletes["writeid"], deletes["_write_id"])
        cancelled = deletes.filter(own).select(list(_KEYS))
        # an UPDATE's postimage of such a row would have no preimage: as with a MERGE that
        # updates and deletes, that write's events become plain deletes and inserts
        plain = set(cancelled["writeid"].to_pylist())
        partition, splits = self.partition, self.splits
        return [*self._inserted(partition, splits, relative, cancelled, plain),
                *self._deleted(partition, splits, relative, deletes.filter(pc.invert(own)),
                               plain)]

    def _rows(self, partition: PartitionDir, splits: Sequence[Split]) -> pa.Table:
        """Every row the insert events of ``splits`` hold (delete events not applied), with
        its ROW__ID, in the table's current columns (NULL for columns added since)."""
        bare = [(partition, dataclasses.replace(s, deletes=())) for s in splits]
        info = self.info
        return Scan(self.filesystem, [], self.write_ids, self.txns, schema=info.row_schema,
                    partition_schema=info.partition_schema, with_row_id=True, threads=1,
                    planned=bare).to_table()

    def _inserted(self, partition: PartitionDir, splits: Sequence[Split], relative: str,
                  cancelled: pa.Table, plain: set[int]) -> list[pa.Table]:
        """The insert events of the range: new rows and update postimages, less the rows
        ``cancelled`` names (deleted by the write id that inserted them)."""
        fresh = [s for s in splits if s.max_write_id >= self.start
                 and s.min_write_id <= self.end]
        if not fresh:
            return []
        rows = self._rows(partition, fresh)
        keys = _flat_keys(rows)
        inside = pc.and_(pc.greater_equal(keys["writeid"], self.start),
                         pc.less_equal(keys["writeid"], self.end))
        rows, keys = rows.filter(inside), keys.filter(inside)
        if cancelled.num_rows:
            kept = keys.append_column("_at", pa.array(np.arange(keys.num_rows))).join(
                cancelled, list(_KEYS), join_type="left anti").sort_by("_at")["_at"]
            rows, keys = rows.take(kept), keys.take(kept)
        kinds = []
        for w, bucket in zip(keys["writeid"].to_pylist(), keys["bucketid"].to_pylist(),
                             strict=True):
            meaning = self.meanings[(w, relative)]
            post = meaning.updates and w not in plain and BucketCodec.decode(bucket)[1] in \
                meaning.postimage_statements
            kinds.append("update_postimage" if post else "insert")
        return [_labelled(rows, kinds, keys["writeid"])]

    def _deleted(self, partition: PartitionDir, splits: Sequence[Split], relative: str,
                 deletes: pa.Table, plain: set[int]) -> list[pa.Table]:
        """The delete events ``deletes``, with the values of the rows they delete."""
        if not deletes.num_rows:
            return []
        buckets = {BucketCodec.decode(b)[0] for b in set(deletes["bucketid"].to_pylist())}
        lowest = pc.min(deletes["writeid"]).as_py()
        older = [s for s in splits if s.bucket_id in buckets and s.max_write_id >= lowest]
        rows = self._rows(partition, older)
        keys = _flat_keys(rows).append_column("_at", pa.array(np.arange(rows.num_rows)))
        found = deletes.append_column("_event", pa.array(np.arange(deletes.num_rows))).join(
            keys, list(_KEYS), join_type="left outer")
        missing = found.filter(pc.is_null(found["_at"]))
        if missing.num_rows:
            raise NotEnoughHistoryError(
                f"{self.where}: {missing.num_rows} delete event(s) in {partition.path} name "
                "rows whose insert events are no longer there (first: "
                f"{missing.slice(0, 1).to_pylist()[0]})")
        found = found.sort_by("_event")
        kinds = ["update_preimage" if self.meanings[(w, relative)].updates and w not in plain
                 else "delete"
                 for w in found["_write_id"].to_pylist()]
        return [_labelled(rows.take(found["_at"]), kinds, found["_write_id"])]

    def _delete_events(self, root: str, state: AcidState) -> pa.Table:
        """(writeid, bucketid, rowid, _write_id) of the valid delete events of the range."""
        fs, start, end = self.filesystem, self.start, self.end
        parts = [_DELETES_SCHEMA.empty_table()]
        for name in state.delete_deltas:
            parsed = state.delta_info[name]
            if parsed.max_write_id < start or parsed.min_write_id > end:
                continue
            files = None if self.delete_files is None else self.delete_files.get(name, ())
            for batch in delete_event_batches(fs, afs.join(root, name), files=files):
                keys, current = key_arrays(batch), current_write_ids(batch)
                keep = (current >= start) & (current <= end) & valid_write_id_mask(
                    current, self.write_ids)
                parts.append(pa.table({
                    "writeid": keys.write_id[keep], "bucketid": keys.bucket[keep],
                    "rowid": keys.row_id[keep], "_write_id": current[keep]},
                    schema=_DELETES_SCHEMA))
        return pa.concat_tables(parts)


#: a schema, not an empty table: pyarrow builds tables through its pandas shim, and
#: ``import acidstore`` must not load pandas
_DELETES_SCHEMA = pa.schema([("writeid", pa.int64()), ("bucketid", pa.int32()),
                             ("rowid", pa.int64()), ("_write_id", pa.int64())])


def _flat_keys(rows: pa.Table) -> pa.Table:
    ids = rows.column(ROW_ID_COLUMN).combine_chunks()
    return pa.table({k: ids.field(k) for k in _KEYS})


def _labelled(rows: pa.Table, kinds: list[str], write_ids: pa.ChunkedArray | pa.Array
              ) -> pa.Table:
    row_id = rows.column(ROW_ID_COLUMN)
    rows = rows.drop_columns([ROW_ID_COLUMN])
    return (rows.append_column("_change_type", pa.array(kinds, pa.string()))
            .append_column("_write_id", pa.chunked_array([write_ids], pa.int64())
                           if isinstance(write_ids, pa.Array) else write_ids.cast(pa.int64()))
            .append_column(ROW_ID_COLUMN, row_id))


def output_schema(table: FeedSource) -> pa.Schema:
    """The feed's columns: the table's, then ``_change_type``, ``_write_id``,
    ``_commit_time`` and ``row__id`` (the ROW__ID the event is about)."""
    return pa.schema([*table.schema, pa.field("_change_type", pa.string()),
                      pa.field("_write_id", pa.int64()),
                      pa.field("_commit_time", pa.timestamp("us", "UTC")),
                      pa.field(ROW_ID_COLUMN, ROW_ID_TYPE)])


def plan_feed(table: FeedSource, start: int, end: int, txns: ValidTxnList,
              write_ids: ValidWriteIdList) -> list[FeedPart]:
    """The change feed of write ids ``start..end`` as one ``FeedPart`` per partition, at the
    snapshot ``txns``/``write_ids`` (as of ``end``, which the caller leased): every listing
    and every check against the metastore's record happens here."""
    meanings = _meanings(table.metastore.committed_components(
        table.name, min_write_id=start, below_write_id=end + 1), start, end)
    plan = table.record_plan()
    recorded = table.recorded_writes() if plan is None else None
    partitions = table.read_partitions(plan)
    try:  # every partition from two metastore queries a batch, not two each
        planned = {} if plan is None else plan.plan_many(
            [p.path for p in partitions], write_ids, txns)
    except NotEnoughHistoryError as exc:
        raise NotEnoughHistoryError(f"changes {start}..{end} of {table.name}: {exc}") from exc
    parts = []
    for partition in partitions:
        known = planned.get(partition.path)
        deletes = None
        if known is not None:  # from the record, unlisted (``read.record_plan``)
            state = _checked(table, partition, start, end, known.state)
            splits = known.splits(table.filesystem, partition.path, write_ids)
            deletes = {name: known.files(afs.join(partition.path, name))
                       for name in state.delete_deltas}
        else:
            state = _state(table, partition, start, end, (txns, write_ids))
            splits = _listed_splits(table, partition, state, write_ids,
                                    recorded or table.recorded_writes())
        relative = afs.relative(table.location, partition.path)
        mine: dict[tuple[int, str], _Meaning] = defaultdict(_Meaning, {
            key: meaning for key, meaning in meanings.items() if key[1] == relative})
        parts.append(FeedPart(table.filesystem, table.info, table.location, start, end, txns,
                              write_ids, partition, state, tuple(splits), mine, deletes))
    return parts


def _listed_splits(table: FeedSource, partition: PartitionDir, state: AcidState,
                   write_ids: ValidWriteIdList, recorded: SnapshotRecord) -> list[Split]:
    """The partition's splits from its listing, checked against the metastore's record."""
    listed: Listed = {}
    splits = plan_partition(table.filesystem, partition.path, state, write_ids, listed)
    record = recorded.partition(partition.path, state)
    check_recorded(table.location, state, write_ids, record, listed)
    return with_recorded_rows(table.location, splits, record)


def _state(table: FeedSource, partition: PartitionDir, start: int, end: int,
           snapshot: tuple[ValidTxnList, ValidWriteIdList]) -> AcidState:
    """The directories the feed reads in ``partition``; NotEnoughHistoryError where a base
    folded events of the range away."""
    txns, write_ids = snapshot
    where = f"changes {start}..{end} of {table.name}"
    try:
        state = acid_state(partition.path, write_ids, txns, filesystem=table.filesystem)
    except NotEnoughHistoryError as exc:
        raise NotEnoughHistoryError(f"{where}: {exc}") from exc
    return _checked(table, partition, start, end, state)


def _checked(table: FeedSource, partition: PartitionDir, start: int, end: int,
             state: AcidState) -> AcidState:
    """``state``, unless a base folded away events of the range (NotEnoughHistoryError)."""
    where = f"changes {start}..{end} of {table.name}"
    if state.base_info is not None and state.base_info.write_id >= start:
        raise NotEnoughHistoryError(
            f"{where}: the events of write ids up to {state.base_info.write_id} in "
            f"{partition.path} were folded into {state.base} (a major compaction or an "
            "INSERT OVERWRITE); a base keeps no delete events, so the feed can start at "
            f"write id {state.base_info.write_id + 1} at the earliest there")
    return state


def feed_table(parts: Sequence[pa.Table], times: Mapping[int, datetime], schema: pa.Schema
               ) -> pa.Table:
    """Rows ``FeedPart.read`` returned as the feed returns them: with ``_commit_time`` (from
    ``times``, the commit time of each write id), ordered by write id, change type and
    ROW__ID, in ``output_schema``."""
    if not parts:
        return schema.empty_table()
    feed = pa.concat_tables(parts)
    feed = feed.add_column(feed.num_columns - 1, "_commit_time", pa.array(
        [times.get(w) for w in feed["_write_id"].to_pylist()], pa.timestamp("us", "UTC")))
    ids = feed.column(ROW_ID_COLUMN).combine_chunks()
    rank = pa.array([CHANGE_TYPES.index(k) for k in feed["_change_type"].to_pylist()])
    order = pc.sort_indices(pa.table({"w": feed["_write_id"], "k": rank,
                                      **{k: ids.field(k) for k in _KEYS}}),
                            sort_keys=[(n, "ascending") for n in ("w", "k", *_KEYS)])
    return feed.take(order).cast(schema)


def changes(table: FeedSource, start: int, end: int) -> pa.Table:
    """The change feed of write ids ``start..end`` of ``table`` (see the module docstring)."""
    _check_range(table, start, end, table.snapshot()[1])
    metastore = table.metastore
    txns, write_ids, lease = table.leased_snapshot(end)
    try:
        rows = [p for part in plan_feed(table, start, end, txns, write_ids)
                for p in part.read()]
    finally:
        with contextlib.suppress(AcidStoreError):
            metastore.release_lease(lease)
    return feed_table(rows, metastore.write_id_commit_times(table.name) if rows else {},
                      output_schema(table))
