"""The Initiator (spec §10.1): decides, per table and partition, whether to compact.

It looks at each partition the way the compactor will (the compactor write-id list), and
queues a compaction in the metastore when a threshold is crossed, in Hive's order:
too many aborted writes -> major; an aborted write older than the age threshold -> minor;
deltas larger than ``delta_pct`` of the base -> major; more than ``delta_num`` deltas ->
minor (major when there is no base yet). Table properties override the thresholds with Hive's
keys (``compactorthreshold.hive.compactor.delta.num.threshold`` ...), and
``NO_AUTO_COMPACTION=true`` opts a table out.

Where the table's record is complete (``read.record_plan``) the initiator decides from the
metastore alone, as the compactor plans: each partition's base and deltas and their bytes
come from the record of its writes and compactions, its aborted writes from the record of
aborted transactions, so a pass over a table of thousands of partitions lists no directory.
Only what the record cannot say is looked at on disk, with stats: whether an obsolete base
the record names is still there (the cleaner may have removed it), and how old an aborted
write's directories are, when an age decides. Elsewhere each partition is listed as before.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Literal

import pyarrow.fs as pafs

from acidstore.config import (
    ABORTED_AGE_THRESHOLD_PROPERTY,
    ABORTED_AGE_THRESHOLD_SECONDS,
    ABORTED_NUM_THRESHOLD,
    ABORTED_NUM_THRESHOLD_PROPERTY,
    COMPACTOR_THRESHOLD_PREFIX,
    DELTA_NUM_THRESHOLD,
    DELTA_NUM_THRESHOLD_PROPERTY,
    DELTA_PCT_THRESHOLD,
    DELTA_PCT_THRESHOLD_PROPERTY,
    NO_AUTO_COMPACTION_PROPERTIES,
)
from acidstore.engine.core import HasCore, WarehouseCore, core_of
from acidstore.engine.handle import TableHandle
from acidstore.errors import AcidStoreError, InvalidInputError
from acidstore.format.directory import AcidState, acid_state
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.io.fs import storage_boundary
from acidstore.metastore import CompactionInfo, History
from acidstore.read.record_plan import PlannedPartition, RecordPlan
from compaction.compactor import partition_dirs
from compaction.plan import still_there

__all__ = ["Assessment", "Initiator", "Thresholds", "assess_table", "decide", "opted_out"]


@dataclass(frozen=True)
class Thresholds:
    """Hive's defaults (spec §16)."""

    delta_num: int = DELTA_NUM_THRESHOLD
    delta_pct: float = DELTA_PCT_THRESHOLD
    aborted_num: int = ABORTED_NUM_THRESHOLD
    aborted_age_seconds: float = ABORTED_AGE_THRESHOLD_SECONDS

    _KEYS = {  # noqa: RUF012  (a class constant, not a field)
        DELTA_NUM_THRESHOLD_PROPERTY: "delta_num",
        DELTA_PCT_THRESHOLD_PROPERTY: "delta_pct",
        ABORTED_NUM_THRESHOLD_PROPERTY: "aborted_num",
        ABORTED_AGE_THRESHOLD_PROPERTY: "aborted_age_seconds",
    }

    def for_table(self, properties: dict[str, str]) -> Thresholds:
        """These thresholds with the table's ``compactorthreshold.*`` overrides."""
        found: dict[str, float] = {}
        for key, value in properties.items():
            lowered = key.lower()
            name = self._KEYS.get(lowered.removeprefix(COMPACTOR_THRESHOLD_PREFIX)) \
                if lowered.startswith(COMPACTOR_THRESHOLD_PREFIX) else None
            if name is None:
                continue
            try:
                found[name] = float(value)
            except ValueError:
                raise InvalidInputError(f"table property {key}={value!r} is not a number") \
                    from None
        return Thresholds(
            delta_num=int(found.get("delta_num", self.delta_num)),
            delta_pct=found.get("delta_pct", self.delta_pct),
            aborted_num=int(found.get("aborted_num", self.aborted_num)),
            aborted_age_seconds=found.get("aborted_age_seconds", self.aborted_age_seconds))


def _size(fs: pafs.FileSystem, directory: str, names: list[str]) -> int:
    return sum(size for name in names
               for _, size in afs.list_files_recursive(fs, afs.join(directory, name)))


def _oldest_age(fs: pafs.FileSystem, directory: str, names: list[str]) -> float:
    infos = fs.get_file_info([afs.join(directory, n) for n in names]) if names else []
    times = [i.mtime.timestamp() for i in infos if i.mtime is not None]
    return time.time() - min(times) if times else 0.0


def decide(state: AcidState, base_size: int, delta_size: int, oldest_abort_age: float,
           limits: Thresholds) -> tuple[Literal["minor", "major"] | None, str]:
    """The compaction a partition needs (or None) and why, in Hive's order."""
    aborts = len(state.aborted_write_ids)
    if aborts >= limits.aborted_num:
        return "major", f"{aborts} aborted writes >= {limits.aborted_num}"
    if aborts and oldest_abort_age > limits.aborted_age_seconds:
        return "minor", (f"an aborted write is {oldest_abort_age:.0f} s old > "
                         f"{limits.aborted_age_seconds:.0f} s")
    deltas = len(state.deltas)
    if base_size > 0 and delta_size / base_size > limits.delta_pct:
        return "major", (f"deltas are {delta_size / base_size:.0%} of the base > "
                         f"{limits.delta_pct:.0%}")
    # Hive's multiBase: an obsolete *base* (an obsolete delta only waits for the cleaner; a
    # major compaction of it would be refused, and queued again on every pass until cleaned)
    if base_size > 0 and delta_size == 0 and any(
            name.startswith("base_") for name in state.obsolete):
        return "major", "an obsolete base is left"
    if deltas > limits.delta_num:
        kind: Literal["minor", "major"] = "minor" if state.base else "major"
        return kind, f"{deltas} deltas > {limits.delta_num}"
    return None, "no threshold crossed"


@dataclass(frozen=True)
class Assessment:
    """One partition as the initiator sees it and what it decides there: the queue entry it
    would make, or why not (``acidstore advise`` shows exactly this, so what an operator
    reads is what the scheduler does). ``state`` is None when the partition's directories
    could not be resolved (``reason`` says why: the initiator logs it as did not initiate)."""

    partition: str
    directory: str
    state: AcidState | None
    base_size: int
    delta_size: int
    kind: Literal["minor", "major"] | None
    reason: str


def opted_out(properties: dict[str, str]) -> bool:
    """``NO_AUTO_COMPACTION=true`` (any case, either of Hive's spellings)."""
    lowered = {k.lower(): v for k, v in properties.items()}
    return any(lowered.get(k, "").lower() == "true" for k in NO_AUTO_COMPACTION_PROPERTIES)


def _aborted_by_partition(metastore: History, table: str, write_ids: ValidWriteIdList
                          ) -> dict[str, dict[int, list[str]]]:
    """partition -> aborted write id -> its directories' names there, from the record of
    aborted transactions (one query per table): the write ids the list still holds as
    aborted (the cleaner forgets one once its files are gone)."""
    out: dict[str, dict[int, list[str]]] = defaultdict(lambda: defaultdict(list))
    for component in metastore.aborted_components(table):
        if not write_ids.is_write_id_aborted(component.write_id):
            continue
        names = out[component.partition][component.write_id]
        for path in component.directories:
            parent, _, name = path.rpartition("/")
            if parent == component.partition:
                names.append(name)
    return out


def _recorded_facts(fs: pafs.FileSystem, directory: str, planned: PlannedPartition,
                    aborted: dict[int, list[str]], limits: Thresholds
                    ) -> tuple[AcidState, int, int, float]:
    """What ``decide`` needs of a partition planned from the record: its state (with the
    aborted writes the record names, and only the obsolete bases still there), the bytes
    of its base and deltas as recorded, and the age of its oldest aborted write (stat'ed
    only when an age can decide)."""
    state = planned.state
    base_size = planned.size(afs.join(directory, state.base)) if state.base else 0
    delta_size = sum(planned.size(afs.join(directory, d)) for d in state.deltas)
    names = sorted({n for found in aborted.values() for n in found})
    state = replace(state, aborted=names, aborted_write_ids=frozenset(aborted))
    bases = [n for n in state.obsolete if n.startswith("base_")]
    if base_size > 0 and delta_size == 0 and bases:
        state = replace(state, obsolete=still_there(fs, directory, planned, bases))
    age = 0.0
    if aborted and len(aborted) < limits.aborted_num:
        age = _oldest_age(fs, directory, names)
    return state, base_size, delta_size, age


def _plan_many(plan: RecordPlan | None, directories: list[str],
               write_ids: ValidWriteIdList, txns: ValidTxnList
               ) -> dict[str, PlannedPartition | None] | None:
    """Every partition's plan from the record in two metastore queries a batch (not two a
    partition), empty without a record (each partition is listed); None when the batch
    fails, so that each partition is planned alone and the one at fault reported as its own
    assessment."""
    if plan is None:
        return {}
    try:
        return plan.plan_many(directories, write_ids, txns)
    except AcidStoreError:
        return None


def assess_table(table: TableHandle, limits: Thresholds) -> list[Assessment]:
    """Every partition of ``table`` with the initiator's decision, under the compactor's
    write-id list (never past the lowest open write id); nothing is queued."""
    metastore = table.metastore
    fs = table.filesystem
    txns = metastore.valid_txns()
    write_ids = metastore.valid_write_ids(table.name, txns).to_compactor()
    plan = table.record_plan()
    aborted = _aborted_by_partition(metastore, table.name, write_ids) if plan else {}
    dirs = partition_dirs(table, plan=plan)
    batch = _plan_many(plan, [directory for _, directory in dirs], write_ids, txns)
    out = []
    for relative, directory in dirs:
        try:
            if batch is None and plan is not None:  # the batch failed: this one alone
                planned = plan.plan(directory, write_ids, txns)
            else:
                planned = (batch or {}).get(directory)
            if planned is not None:
                state, base_size, delta_size, age = _recorded_facts(
                    fs, directory, planned, aborted.get(relative, {}), limits)
            else:
                state = acid_state(directory, write_ids, txns, filesystem=fs)
                base = [state.base] if state.base else [
                    p.split("/", 1)[0] for p in state.original_files]
                base_size = _size(fs, directory, base)
                delta_size = _size(fs, directory, state.deltas)
                age = _oldest_age(fs, directory, state.aborted)
        except AcidStoreError as exc:
            out.append(Assessment(relative, directory, None, 0, 0, None,
                                  f"{type(exc).__name__}: {exc}"))
            continue
        kind, reason = decide(state, base_size, delta_size, age, limits)
        out.append(Assessment(relative, directory, state, base_size, delta_size, kind, reason))
    return out


@storage_boundary
class Initiator:
    """One pass over the warehouse: ``Initiator(wh).run()`` returns the queued entries."""

    def __init__(self, warehouse: WarehouseCore | HasCore,
                 thresholds: Thresholds | None = None) -> None:
        self._wh = core_of(warehouse)
        self._thresholds = thresholds or Thresholds()

    def run(self) -> list[CompactionInfo]:
        queued: list[CompactionInfo] = []
        for name in self._wh.metastore.list_tables():
            table = TableHandle.open(self._wh, name)
            if opted_out(table.info.properties):
                continue
            queued.extend(self._check_table(
                table, self._thresholds.for_table(dict(table.info.properties))))
        return queued

    def _check_table(self, table: TableHandle, limits: Thresholds) -> list[CompactionInfo]:
        metastore = self._wh.metastore
        out = []
        for found in assess_table(table, limits):
            if found.state is None:
                metastore.log_compaction(table.name, found.partition, "major",
                                         "did not initiate", found.reason)
            elif found.kind is not None:
                entry = metastore.enqueue_compaction(table.name, found.partition, found.kind,
                                                     found.reason)
                if entry is not None:
                    out.append(entry)
        return out
