"""``acidstore fsck``: check a warehouse's files against its metastore from the shell.

Exit code 0 when nothing is wrong (warnings allowed), 1 when some finding is an error, 2 when
the command itself failed (``acidstore.cli.main``). ``--repair`` removes only directories of
writes the metastore records as aborted; ``--json`` prints the findings as a JSON array.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pyarrow.fs as pafs

from acidstore import fs as afs
from acidstore.errors import InvalidInputError
from acidstore.fsck.findings import CHECKS
from acidstore.warehouse import DEFAULT_METASTORE_FILE, Warehouse, connect

__all__ = ["add_fsck_command", "run_fsck"]

#: the exit code when fsck found an error-severity problem
EXIT_ERRORS = 1


def add_fsck_command(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    codes = "\n".join(f"  {code:<22}{meaning}" for code, meaning in CHECKS.items())
    cmd = sub.add_parser(
        "fsck", help="check that table files are what the metastore says (exit 1 on errors)",
        description=f"Checks, by code:\n{codes}",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_argument("--warehouse", required=True,
                     help="the warehouse directory (it must exist: nothing is created)")
    cmd.add_argument("--metastore", default=None, help="metastore URL, e.g. "
                     "postgresql://user@host:5432/db (default: the warehouse's SQLite file)")
    cmd.add_argument("--table", default=None, help="check only this table (default: all)")
    cmd.add_argument("--repair", action="store_true",
                     help="remove directories of writes the metastore records as aborted "
                          "(nothing else is ever changed)")
    cmd.add_argument("--json", action="store_true", help="print the findings as JSON")


def _open_existing(location: str, metastore: str | None) -> Warehouse:
    """The warehouse at ``location``; refused (not created) when it or, without
    ``--metastore``, its SQLite metastore file does not exist."""
    fs, root = afs.resolve(location)
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        raise InvalidInputError(f"no warehouse at {location}: the directory does not exist")
    if metastore is None and isinstance(fs, pafs.LocalFileSystem) and \
            not (Path(root) / DEFAULT_METASTORE_FILE).is_file():
        raise InvalidInputError(f"no warehouse at {location}: it holds no "
                                f"{DEFAULT_METASTORE_FILE} (give --metastore for a shared one)")
    return connect(location, metastore=metastore)


def run_fsck(args: argparse.Namespace) -> int:
    """Run fsck; returns the exit code (0 sound or warnings only, 1 errors found)."""
    with _open_existing(args.warehouse, args.metastore) as wh:
        findings = wh.fsck(args.table, repair=args.repair)
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
