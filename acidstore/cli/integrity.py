"""``acidstore fsck``: check a warehouse's files against its metastore from the shell.

Exit code 0 when nothing is wrong (warnings allowed), 1 when some finding is an error, 2 when
the command itself failed (``acidstore.cli.main.main``). ``--repair`` removes only directories of
writes the metastore records as aborted; ``--json`` prints the findings as a JSON array.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from acidstore.cli.common import (
    add_table_argument,
    add_warehouse_options,
    open_warehouse,
    table_argument,
)
from acidstore.fsck.findings import CHECKS

if TYPE_CHECKING:
    from acidstore.cli.common import Subparsers

__all__ = ["add_fsck_command", "run_fsck"]

#: the exit code when fsck found an error-severity problem
EXIT_ERRORS = 1


def add_fsck_command(sub: Subparsers) -> None:
    codes = "\n".join(f"  {code:<22}{meaning}" for code, meaning in CHECKS.items())
    cmd = sub.add_parser(
        "fsck", help="check that table files are what the metastore says (exit 1 on errors)",
        description=f"Checks, by code:\n{codes}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_table_argument(cmd, "check only this table (default: every table)")
    add_warehouse_options(cmd)
    cmd.add_argument("--repair", action="store_true",
                     help="remove directories of writes the metastore records as aborted "
                          "(nothing else is ever changed)")


def run_fsck(args: argparse.Namespace) -> int:
    """Run fsck; returns the exit code (0 sound or warnings only, 1 errors found)."""
    with open_warehouse(args) as wh:
        findings = wh.fsck(table_argument(args), repair=args.repair)
    rows = findings.to_pylist()
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        for row in rows:
            mark = " (repaired)" if row["repaired"] else ""
            print(f"{row['severity']:<7} {row['check']:<20} {row['path']}{mark}\n"
                  f"        {row['message']}")
        errors = sum(1 for r in rows if r["severity"] == "error")
        print(f"{len(rows)} finding(s): {errors} error(s), {len(rows) - errors} warning(s), "
              f"{sum(1 for r in rows if r['repaired'])} repaired")
    sys.stdout.flush()
    return EXIT_ERRORS if any(r["severity"] == "error" and not r["repaired"] for r in rows) \
        else 0
