"""fsck: check that a warehouse's files are what its metastore says they are (layer L4).

``Warehouse.fsck(table=None, *, repair=False)`` and ``acidstore fsck`` return one finding per
problem (``findings.CHECKS`` lists the codes); a sound table gives none. Per table, under a
fresh snapshot leased from the cleaner, and per partition:

- the metastore's record: every directory a committed write made that the snapshot must read
  is there with as many bucket files as the write made (``missing_directory``,
  ``missing_file``; so is every original ``adopt_table`` placed, until a base holds its
  rows), and every directory the snapshot selects was made by a committed write or
  a committed compaction (``unknown_write``, ``aborted_selectable``); a directory of a write id
  never allocated is an error too, since it is read as soon as some write gets that id;
- every bucket file the snapshot reads opens (``empty_file``, ``unreadable_file``), is an ACID
  event file with ``hive.acid.key.index`` (``missing_acid_metadata``) naming the last ROW__ID
  of each stripe (``key_index_mismatch``), holds only events of its bucket
  (``bucket_mismatch``) and of its directory's write ids (``write_id_range``), in ROW__ID order
  (``row_id_order``), and no ROW__ID is inserted twice, within a file or by two files read
  together (``duplicate_row_id``);
- dangling deletes (``dangling_delete``): a valid delete event of a delete delta the snapshot
  reads must name the ROW__ID of a valid insert event the snapshot reads too: of the base, of
  an insert delta, or of an original file by its synthetic ROW__ID (spec §9). This is Hive's
  semantics, not a simplification: a statement only deletes rows its snapshot sees, and
  whatever replaces the directories holding those rows keeps their ROW__IDs (a minor
  compaction copies every event; a major compaction keeps surviving rows under their
  ROW__IDs and folds in, and so makes obsolete, every delete delta up to its base). So a
  delete delta still selected always finds its rows among the selected inserts; one folded
  into a base is obsolete and not checked (its rows are legitimately gone). Events of
  aborted or open writes are ignored on both sides, as readers ignore them;
- leftovers and strangers: directories of aborted writes (``aborted_leftover``, a warning:
  no reader selects them), files and directories outside the layout (``foreign_file``,
  ``stray_directory``; errors where readers would take their contents for rows), partitions
  that cannot be read at all (``invalid_layout``). The pre-ACID originals ``adopt_table``
  placed are no strangers: the metastore records each (name and size), and only a file that
  matches its record is accepted. Where the record names everything the table holds (tables
  created at metastore schema 12 or later) an ACID directory no record names is reported even
  when no snapshot selects it (``unknown_write``, a warning then): reads and compactions plan
  from the record and never use it, and the cleaner does not remove it.

Only the four ROW__ID / write-id columns are decoded, a stripe at a time; memory is one
stripe plus the delete events of one partition bucket (as Hive's delete registry).

``repair=True`` removes only aborted leftovers, by the cleaner's rule (``fsck.aborted``): the
metastore records the transaction as aborted, so no reader can select the directory. Every
other finding is reported, never "fixed": guessing would turn a visible error into silently
wrong rows.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.config import LEASE_TTL_SECONDS
from acidstore.engine.aborted_files import aborted_directories
from acidstore.engine.core import WarehouseCore
from acidstore.engine.handle import TableHandle
from acidstore.errors import AcidStoreError, StrayPathError, TableNotFoundError
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.fsck.findings import CHECKS, FINDINGS_SCHEMA, Finding, findings_table
from acidstore.fsck.partition import TableFacts, check_partition
from acidstore.io import fs as afs
from acidstore.read.recorded import RecordedWrites

__all__ = ["CHECKS", "FINDINGS_SCHEMA", "Finding", "check_table", "fsck"]


def fsck(warehouse: WarehouseCore, table: str | None = None, *, repair: bool = False
         ) -> pa.Table:
    """Findings of one table (``TableNotFoundError`` if there is none) or of every table."""
    if repair:  # removes files, and writes nothing a read-only store would refuse first
        warehouse.metastore.check_writable()
    if table is not None:
        return findings_table(check_table(TableHandle.open(warehouse, table), repair=repair))
    findings: list[Finding] = []
    for name in warehouse.metastore.list_tables():
        try:
            found = TableHandle.open(warehouse, name)
        except TableNotFoundError:
            continue  # dropped meanwhile: its files went with it
        findings.extend(check_table(found, repair=repair))
    return findings_table(findings)


def check_table(table: TableHandle, *, repair: bool = False) -> list[Finding]:
    """Every finding of ``table``; with ``repair``, aborted leftovers are removed (and their
    findings say so)."""
    metastore = table.metastore
    if repair:
        metastore.check_writable()
    txns, write_ids, lease = table.leased_snapshot()
    try:
        findings = list(_findings(table, txns, write_ids, lease))
    finally:
        with contextlib.suppress(AcidStoreError):
            metastore.release_lease(lease)
    if repair:
        findings = [_repaired(table.filesystem, f) if f.check == "aborted_leftover" else f
                    for f in findings]
    return findings


def _findings(table: TableHandle, txns: ValidTxnList, write_ids: ValidWriteIdList, lease: int
              ) -> Iterator[Finding]:
    fs, metastore, name = table.filesystem, table.metastore, table.name
    committed = metastore.committed_components(name)
    facts = TableFacts(
        name, table.location, metastore, txns, write_ids,
        RecordedWrites.of(metastore, name, table.location, components=committed),
        frozenset(d for c in committed for d in c.directories),
        frozenset(c.write_id for c in metastore.aborted_components(name)),
        frozenset((o.partition, o.name, o.bytes) for o in metastore.original_files(name)),
        complete=table.info.originals_recorded)
    strays: list[StrayPathError] = []
    partitions = table.partition_dirs(strays=strays)
    for stray in strays:
        path = stray.path or table.location
        yield Finding(name, _relative(table, path.rsplit("/", 1)[0]), path, "stray_directory",
                      "error", str(stray))

    def later() -> ValidWriteIdList:
        return metastore.valid_write_ids(name, metastore.valid_txns())

    reported: set[str] = set()
    for partition in partitions:
        metastore.renew_lease(lease, LEASE_TTL_SECONDS)
        for finding in check_partition(fs, facts, _relative(table, partition.path),
                                       partition.path, later):
            if finding.check == "aborted_leftover":
                reported.add(finding.path)
            yield finding
    for relative, path in aborted_directories(fs, metastore, name, table.location):
        if path not in reported:
            yield Finding(name, relative, path, "aborted_leftover", "warning",
                          "a directory an aborted write registered (no reader selects it)")


def _relative(table: TableHandle, path: str) -> str:
    return afs.relative(table.location, path) if path != table.location else ""


def _repaired(fs: pafs.FileSystem, finding: Finding) -> Finding:
    """Remove an aborted write's directory; the finding stays, marked repaired if it went."""
    try:
        fs.delete_dir(finding.path)
    except OSError as exc:
        return Finding(finding.table, finding.partition, finding.path, finding.check,
                       finding.severity, f"{finding.message}; removing it failed: {exc}")
    return Finding(finding.table, finding.partition, finding.path, finding.check,
                   finding.severity, f"{finding.message}; removed", repaired=True)
