"""The ``acidstore`` command: builds the parser from each command's module and runs one.

Each ``cli_*`` module adds its commands (``add_*``) and runs them (``run_*``); this module
only wires them together and turns an acidstore error into one line on stderr and exit
status 2, so scripts can tell "the request failed" (2) from "argparse refused it" (also 2,
with usage) and from success (0).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from acidstore.cli.abort import add_abort_command, run_abort
from acidstore.cli.advise import add_advise_command, run_advise
from acidstore.cli.clean import add_clean_command, run_clean
from acidstore.cli.common import DefaultsFormatter, RawDefaultsFormatter
from acidstore.cli.compact import add_compact_command, run_compact
from acidstore.cli.example import add_example_commands, run_demo_command, run_example
from acidstore.cli.integrity import add_fsck_command, run_fsck
from acidstore.cli.rows import add_read_commands, run_inspect, run_read
from acidstore.cli.show import add_show_command, run_show
from acidstore.cli.tables import add_table_commands, run_describe, run_history, run_tables
from acidstore.errors import AcidStoreError

if TYPE_CHECKING:
    from acidstore.cli.common import Subparsers

__all__ = ["build_parser", "main", "version"]

DESCRIPTION = """\
Look after Hive ACID tables from the shell.

Looking at a warehouse (each takes --warehouse PATH, and --json for scripts):
  tables                 the tables of a warehouse
  describe TABLE         columns, partitioning, bucketing, properties, size and deltas
  history TABLE          a table's committed writes (one per write id) and compactions
  show WHAT              transactions, locks, reader leases or compactions
  advise [TABLE]         per partition: what compaction will do, and why

Maintaining it:
  compact [TABLE]        compact a table now, or run scheduled passes (--auto, --every 5m)
  clean                  remove what compactions replaced and what aborted writes left
  abort TXNID ...        abort open transactions (Hive's ABORT TRANSACTIONS)
  fsck [TABLE]           check that files and metastore agree (exit 1 when not)

Reading data (a directory, or a table name with --warehouse PATH):
  inspect TARGET         which directories a read uses in each partition
  read TARGET            the rows

Trying it out:
  example DIR            write a small example table to look at
  demo                   an order pipeline on Spark (the spark extra)

`acidstore COMMAND --help` describes a command and its options. A warehouse must exist for
every command except demo: a misspelled --warehouse is an error, never a new empty
warehouse. $ACIDSTORE_WAREHOUSE and $ACIDSTORE_METASTORE stand in for --warehouse and
--metastore. Errors print "acidstore: ErrorType: message" and exit with 2.
"""

#: runs one command; may return its exit status (fsck: 1 when it found errors)
Handler = Callable[[argparse.Namespace], int | None]


def version() -> str:
    """The installed distribution's version (pyproject's; ``acidstore.__version__`` is the
    same number, but the CLI may not import the package facade)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as installed

    try:
        return installed("acidstore")
    except PackageNotFoundError:
        return "unknown (not installed: pip install -e .)"


#: each command module's ``add_*`` (adds its sub-commands) and the function running each;
#: a new command is one line here
COMMANDS: list[tuple[Callable[[Subparsers], None], dict[str, Handler]]] = [
    (add_table_commands, {"tables": run_tables, "describe": run_describe,
                          "history": run_history}),
    (add_show_command, {"show": run_show}),
    (add_advise_command, {"advise": run_advise}),
    (add_compact_command, {"compact": run_compact}),
    (add_clean_command, {"clean": run_clean}),
    (add_abort_command, {"abort": run_abort}),
    (add_fsck_command, {"fsck": run_fsck}),
    (add_read_commands, {"inspect": run_inspect, "read": run_read}),
    (add_example_commands, {"example": run_example, "demo": run_demo_command}),
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="acidstore", description=DESCRIPTION,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"acidstore {version()}")
    # the description lists the commands, once each: argparse's own list is hidden
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                help=argparse.SUPPRESS)
    for add, _ in COMMANDS:
        add(sub)
    for listed in sub._choices_actions:  # a command's --help opens with its one line
        command = sub.choices[listed.dest]
        command.description = command.description or listed.help
    for command in sub.choices.values():  # every option's help states its default
        raw = command.formatter_class is argparse.RawDescriptionHelpFormatter
        command.formatter_class = RawDefaultsFormatter if raw else DefaultsFormatter
    return parser


def _chosen(parser: argparse.ArgumentParser, args: argparse.Namespace
            ) -> argparse.ArgumentParser:
    """The innermost (sub)command parser ``args`` went through (``show`` -> ``leases``)."""
    while True:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        name = getattr(args, subs[0].dest, None) if subs else None
        if name not in (subs[0].choices if subs else {}):
            return parser
        parser = subs[0].choices[name]


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        # argparse reports them with the top-level usage; the subcommand's says what it takes
        _chosen(parser, args).error(f"unrecognized arguments: {' '.join(unknown)}")
    try:
        handlers = {name: run for _, runs in COMMANDS for name, run in runs.items()}
        code = handlers[args.command](args)
        sys.stdout.flush()  # a pipe closed after the last print fails here, not at exit
    except AcidStoreError as exc:
        print(f"acidstore: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        # the reader of a pipe stopped early (``acidstore read ... | head``): not an error of
        # ours; stdout is pointed at /dev/null so the interpreter's final flush stays quiet
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return code or 0


if __name__ == "__main__":
    sys.exit(main())
