"""``acidstore abort TXNID ...``: Hive's ABORT TRANSACTIONS.

An operator aborts a transaction whose writer hangs, or holds what a compaction or another
writer waits for, without waiting for its heartbeat to time out. The metastore marks it
aborted: its writer's commit then fails with ``TransactionAbortedError`` and writes nothing
visible, and its files go with the next cleaner pass. A committed transaction cannot be
aborted, and an id that names no transaction is refused: every id is checked before any is
aborted, so a typo aborts nothing.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from acidstore.cli.common import add_warehouse_options, emit, format_rows, open_warehouse
from acidstore.errors import TransactionStateError

if TYPE_CHECKING:
    from acidstore.cli.common import Subparsers

__all__ = ["add_abort_command", "run_abort"]

#: the reason the metastore records (``acidstore show transactions`` prints it)
REASON = "aborted by an operator (acidstore abort)"


def add_abort_command(sub: Subparsers) -> None:
    cmd = sub.add_parser(
        "abort", description="Abort open transactions, as Hive's ABORT TRANSACTIONS: their "
        "writers' commits fail with TransactionAbortedError and the cleaner removes their "
        "files. Ids come from `acidstore show transactions --open`.")
    cmd.add_argument("txn_ids", metavar="TXNID", type=int, nargs="+",
                     help="a transaction id (several may be given)")
    add_warehouse_options(cmd)


def run_abort(args: argparse.Namespace) -> None:
    with open_warehouse(args) as wh:
        states = {t.txn_id: t.state for t in wh.metastore.show_transactions()}
        unknown = [str(i) for i in args.txn_ids if i not in states]
        committed = [str(i) for i in args.txn_ids if states.get(i) == "committed"]
        problems = []
        if unknown:
            problems.append(f"no transaction {', '.join(unknown)} in {wh.location}")
        if committed:
            problems.append(f"transaction {', '.join(committed)} committed already (a "
                            "committed write is undone only by a new write)")
        if problems:
            raise TransactionStateError("nothing was aborted: " + "; ".join(problems))
        done: list[dict[str, Any]] = []
        for txn_id in dict.fromkeys(args.txn_ids):
            was = states[txn_id]
            if was == "open":
                wh.metastore.abort(txn_id, REASON)
            done.append({"txn_id": txn_id, "was": was, "now": "aborted"})
    emit(args, done, lambda: format_rows(done, ["txn_id", "was", "now"], empty=""))
