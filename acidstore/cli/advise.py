"""``acidstore advise``: per partition, how costly reads have become and what compaction will
do about it, and why.

The decision is the Initiator's own (``compaction.initiator.assess_table``, the same
thresholds and table overrides), so what this prints is what ``acidstore compact --auto``
would queue; the queue's entries for the partition say whether one is already waiting or
what happened to the last one (refused, failed). Row counts come from the ORC file footers
of the directories a read opens now; nothing is decompressed.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from acidstore.cli.common import (
    add_table_argument,
    add_warehouse_options,
    emit,
    format_rows,
    handle,
    open_warehouse,
    table_argument,
)
from acidstore.cli.progress import ProgressBar
from acidstore.engine.handle import TableHandle
from acidstore.format.directory import AcidState
from acidstore.format.orc.file_reader import OrcFile
from acidstore.io import fs as afs
from acidstore.metastore import CompactionInfo
from acidstore.metastore.queue import ACTIVE_STATES
from compaction.initiator import Assessment, Thresholds, assess_table, opted_out

if TYPE_CHECKING:
    from acidstore.cli.common import Subparsers

__all__ = ["add_advise_command", "run_advise"]


def add_advise_command(sub: Subparsers) -> None:
    cmd = sub.add_parser(
        "advise", help="per partition: deltas, delete ratio, read amplification, and whether "
        "compaction will start (and why)",
        description="For every partition: how many delta directories a read opens (delete "
        "deltas among them), the delete ratio (delete events / rows written), the estimated "
        "read amplification (rows a read decodes / rows it returns), and the compaction the "
        "scheduler (acidstore compact --auto) would start there, with its reason, using the "
        "same thresholds and table properties. Nothing is changed.")
    add_table_argument(cmd, "only this table (db.table; default: every table)")
    add_warehouse_options(cmd)


def _rows(fs: pafs.FileSystem, directory: str, names: list[str]) -> int:
    """Rows (or events) in the bucket files of the directories ``names`` (footers only)."""
    total = 0
    for name in names:
        path = afs.join(directory, name)
        files = [path] if fs.get_file_info(path).type == pafs.FileType.File else [
            afs.join(path, f) for f, _ in afs.list_files_recursive(fs, path)
            if f.rsplit("/", 1)[-1].startswith("bucket_") and not f.endswith("_flush_length")]
        total += sum(OrcFile(fs, f).nrows for f in files)
    return total


def _amounts(fs: pafs.FileSystem, directory: str, state: AcidState) -> dict[str, Any]:
    base_rows = _rows(fs, directory, [state.base] if state.base else state.original_files)
    inserted = _rows(fs, directory, state.insert_deltas())
    deleted = _rows(fs, directory, state.delete_deltas)
    written = base_rows + inserted
    live = max(written - deleted, 0)
    return {
        "base": state.base, "deltas": len(state.deltas), "delete_deltas": len(state.delete_deltas),
        "rows_in_base": base_rows, "rows_in_deltas": inserted, "delete_events": deleted,
        "delete_ratio": round(deleted / written, 4) if written else 0.0,
        "read_amplification": round((written + deleted) / live, 2) if live else
        (float(written + deleted) if written + deleted else 1.0),
    }


def _queue_note(entries: list[CompactionInfo]) -> tuple[str | None, str | None]:
    """(an entry waiting or running, what the last finished entry was) for one partition."""
    active = next((e for e in reversed(entries) if e.state in ACTIVE_STATES), None)
    done = next((e for e in reversed(entries) if e.state not in ACTIVE_STATES), None)
    waiting = f"compaction {active.compaction_id} ({active.kind}) is {active.state}" \
        if active else None
    last = None
    if done is not None:
        why = done.error or done.reason
        last = f"compaction {done.compaction_id} ({done.kind}) {done.state}" + (
            f": {why}" if why else "")
    return waiting, last


def _advice(found: Assessment, table: TableHandle, off: bool, limits: Thresholds,
            entries: list[CompactionInfo]) -> dict[str, Any]:
    waiting, last = _queue_note(entries)
    row: dict[str, Any] = {"table": table.name, "partition": found.partition or "(table)"}
    if found.state is None:
        row.update(decision=None, why=f"cannot be assessed: {found.reason}")
    else:
        row.update(_amounts(table.filesystem, found.directory, found.state))
        row["base_bytes"], row["delta_bytes"] = found.base_size, found.delta_size
        if off:
            row.update(decision=None, why="auto-compaction is off for this table "
                       "(NO_AUTO_COMPACTION=true)" + (f"; otherwise {found.kind}: "
                                                      f"{found.reason}" if found.kind else ""))
        elif found.kind is None:
            row.update(decision=None, why=(
                f"{found.reason} (more than {limits.delta_num} deltas, deltas over "
                f"{limits.delta_pct:.0%} of the base, or {limits.aborted_num} aborted writes "
                "would start one)"))
        else:
            row.update(decision=found.kind, why=found.reason)
    row["queued"], row["last_compaction"] = waiting, last
    return row


def run_advise(args: argparse.Namespace) -> None:
    rows: list[dict[str, Any]] = []
    with open_warehouse(args) as wh:
        only = table_argument(args)
        names = [handle(wh, only).name] if only else wh.tables()
        queue = wh.metastore.show_compactions()
        bar = ProgressBar("tables")  # footers of every partition: long on a big warehouse
        for done, name in enumerate(names, start=1):
            bar("advise", done - 1, len(names))
            table = handle(wh, name)
            limits = Thresholds().for_table(dict(table.info.properties))
            off = opted_out(dict(table.info.properties))
            for found in assess_table(table, limits):
                entries = [e for e in queue
                           if e.table == table.name and e.partition == found.partition]
                rows.append(_advice(found, table, off, limits, entries))
            bar("advise", done, len(names))
    emit(args, rows, lambda: _text(rows))


def _text(rows: list[dict[str, Any]]) -> str:
    if not rows:
        return "no tables to advise on"
    summary = format_rows(rows, ["table", "partition", "deltas", "delete_deltas",
                                 "delete_ratio", "read_amplification", "decision"],
                          empty="")
    reasons = []
    for row in rows:
        where = row["table"] + ("" if row["partition"] == "(table)" else "/" + row["partition"])
        what = f"will start a {row['decision']} compaction" if row["decision"] else \
            "no compaction"
        reasons.append(f"{where}: {what}: {row['why']}")
        reasons += [f"{' ' * len(where)}  {note}" for note in
                    (row["queued"], row["last_compaction"]) if note]
    return summary + "\n\n" + "\n".join(reasons)
