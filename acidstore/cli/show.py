"""``acidstore show transactions|locks|leases|compactions``: the metastore's live state.

These answer "who is writing, who is reading, what is compaction doing": an open transaction
that never commits holds back compaction (never past the lowest open write id), and a reader
lease keeps the cleaner from removing what the lease's snapshot reads. ``--json`` prints every
column; the text view keeps the ones that fit a terminal.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from acidstore.cli.common import add_warehouse_options, emit, format_rows, open_warehouse, rows_of

if TYPE_CHECKING:
    from acidstore.cli.common import Subparsers

__all__ = ["add_show_command", "run_show"]

#: what to show -> (the columns of the text view, what to print when there is nothing)
_VIEWS: dict[str, tuple[list[str], str]] = {
    "transactions": (["txn_id", "state", "kind", "user", "host", "started", "last_heartbeat",
                      "finished"], "no transactions"),
    "locks": (["lock_id", "txn_id", "database", "table", "partition", "lock_type", "state",
               "acquired"], "no locks (no transaction is writing)"),
    "leases": (["lease_id", "table", "write_ids", "acquired", "expires"],
               "no reader leases (nothing keeps the cleaner waiting)"),
    "compactions": (["compaction_id", "table", "partition", "kind", "state", "reason",
                     "txn_id", "enqueued", "finished", "attempts", "error"],
                    "no compactions queued or run"),
}


def add_show_command(sub: Subparsers) -> None:
    cmd = sub.add_parser(
        "show", help="transactions, locks, reader leases or compactions of the warehouse",
        description="transactions: every transaction and its state (open ones hold back "
        "compaction). locks: what open transactions write. leases: readers' snapshots the "
        "cleaner keeps (release a stuck one with: acidstore clean --release-lease ID). "
        "compactions: the compaction queue and its history.")
    cmd.add_argument("what", choices=sorted(_VIEWS), metavar="WHAT",
                     help=f"what to list: {', '.join(sorted(_VIEWS))}")
    add_warehouse_options(cmd)
    cmd.add_argument("--open", action="store_true",
                     help="transactions: only the open ones")


def run_show(args: argparse.Namespace) -> None:
    with open_warehouse(args) as wh:
        shown = {"transactions": wh.show_transactions, "locks": wh.show_locks,
                 "leases": wh.show_leases, "compactions": wh.show_compactions}[args.what]()
    rows = rows_of(shown)
    if args.open and args.what == "transactions":
        rows = [r for r in rows if r["state"] == "open"]
    columns, empty = _VIEWS[args.what]
    emit(args, rows, lambda: format_rows(rows, columns, empty=empty))
