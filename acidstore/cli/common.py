"""What every operator command shares: opening an existing warehouse, and printing a result
as aligned text for a person or as one JSON document for a script.

Commands that only look at a warehouse must never create one, so a misspelled ``--warehouse``
is a ``WarehouseNotFoundError`` (exit status 2), not a new empty warehouse that answers
"no tables".
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeAlias

import pyarrow as pa

from acidstore.api.connect import connect
from acidstore.api.pairing import METASTORE_ENV, WAREHOUSE_ENV, chosen_pair
from acidstore.api.warehouse import Warehouse
from acidstore.engine.core import core_of
from acidstore.engine.handle import TableHandle
from acidstore.errors import InvalidInputError

__all__ = ["METASTORE_HELP", "WAREHOUSE_HELP", "DefaultsFormatter", "add_table_argument",
           "add_warehouse_options", "emit", "format_rows", "jsonable", "open_warehouse",
           "rows_of", "RawDefaultsFormatter", "table_argument"]

if TYPE_CHECKING:
    #: what ``add_subparsers`` returns (argparse gives it no public name)
    Subparsers: TypeAlias = argparse._SubParsersAction[argparse.ArgumentParser]

#: one result row: column name -> value (None, numbers, strings, datetimes, lists)
Row = Mapping[str, Any]

METASTORE_HELP = (f"metastore URL when the catalogue is not the SQLite file inside the "
                  f"warehouse, e.g. postgresql://user@host:5432/db or sqlite:///path/meta.db "
                  f"(default: ${METASTORE_ENV})")
WAREHOUSE_HELP = (f"the warehouse directory or URI (default: ${WAREHOUSE_ENV}; it must exist: "
                  "nothing is created)")


class DefaultsFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, unless the text already names it or there
    is none to name (no default, a flag that is off)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help
        default = action.default
        if (text is None or text == argparse.SUPPRESS or "default" in text
                or default in (None, False, [], argparse.SUPPRESS) or not action.option_strings):
            return text
        return f"{text} (default: %(default)s)"


class RawDefaultsFormatter(DefaultsFormatter, argparse.RawDescriptionHelpFormatter):
    """``DefaultsFormatter`` for a command whose description is laid out by hand."""


def add_table_argument(cmd: argparse.ArgumentParser, help: str) -> None:
    """The table a command acts on, as its positional argument like every other command's
    (``--table`` stays as an alias: scripts written for it keep working). Optional: without
    it the command covers every table. ``table_argument`` reads it."""
    cmd.add_argument("table", nargs="?", default=None, metavar="TABLE", help=help)
    cmd.add_argument("--table", dest="table_option", default=None, metavar="TABLE",
                     help="the same as the positional TABLE (kept for older scripts)")


def table_argument(args: argparse.Namespace) -> str | None:
    """The table ``add_table_argument``'s positional or ``--table`` names (the two may not
    disagree)."""
    given = {name for name in (args.table, args.table_option) if name is not None}
    if len(given) > 1:
        raise InvalidInputError(f"two tables given: {args.table!r} and --table "
                                f"{args.table_option!r}; give one")
    return given.pop() if given else None


def add_warehouse_options(cmd: argparse.ArgumentParser, *, json_output: bool = True) -> None:
    """``--warehouse`` (or ``ACIDSTORE_WAREHOUSE``), ``--metastore`` (or
    ``ACIDSTORE_METASTORE``) and, for commands that print data, ``--json``."""
    cmd.add_argument("--warehouse", default=None, metavar="PATH", help=WAREHOUSE_HELP)
    cmd.add_argument("--metastore", default=None, metavar="URL", help=METASTORE_HELP)
    if json_output:
        cmd.add_argument("--json", action="store_true",
                         help="print one JSON document instead of text (for scripts)")


def open_warehouse(args: argparse.Namespace) -> Warehouse:
    """The existing warehouse ``--warehouse`` names, with ``--metastore`` (each, when not
    given, from the environment: ``pairing.chosen_pair``); ``WarehouseNotFoundError`` if
    there is none there. ``args.warehouse`` is set to the one opened, for messages."""
    args.warehouse, metastore = chosen_pair(args.warehouse, getattr(args, "metastore", None))
    return connect(args.warehouse, metastore=metastore, create=False)


def jsonable(value: Any) -> Any:
    """``value`` with datetimes as ISO 8601 strings (UTC offsets kept) and result
    dataclasses as objects, recursively."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return jsonable({f.name: getattr(value, f.name) for f in dataclasses.fields(value)})
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [jsonable(v) for v in value]
    return value


def rows_of(table: pa.Table) -> list[dict[str, Any]]:
    """A pyarrow Table (as ``wh.show_*`` return them) as plain rows."""
    rows: list[dict[str, Any]] = table.to_pylist()
    return rows


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, list | tuple):
        return ",".join(_cell(v) for v in value) or "-"
    return str(value)


def value_cell(value: Any) -> str:
    """A table's value as ``acidstore read`` shows it: exact (no rounding, full timestamps),
    NULL for a null."""
    if value is None:
        return "NULL"
    if isinstance(value, datetime):
        return value.isoformat(sep=" ")
    if isinstance(value, float):
        return repr(value)
    return str(value)


def format_rows(rows: Sequence[Row], columns: Sequence[str], *, empty: str,
                cell: Callable[[Any], str] = _cell) -> str:
    """Rows as a table of left-aligned columns under a header; ``empty`` when there are
    none (a blank output would look like a failure). ``cell`` renders a value: by default
    compactly, for the metastore's listings."""
    if not rows:
        return empty
    cells = [[cell(row.get(c)) for c in columns] for row in rows]
    widths = [max(len(c), *(len(line[i]) for line in cells)) for i, c in enumerate(columns)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)).rstrip()]
    lines += ["  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip()
              for line in cells]
    return "\n".join(lines)


def emit(args: argparse.Namespace, document: Any, text: Callable[[], str]) -> None:
    """Print ``document`` as JSON with ``--json``, else the text ``text()`` renders."""
    if getattr(args, "json", False):
        json.dump(jsonable(document), sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print(text())


def handle(wh: Warehouse, name: str) -> TableHandle:
    """The engine's handle of table ``name``: what the operator commands inspect (its
    partitions, snapshots and files), which the public ``Table`` does not show."""
    return TableHandle.open(core_of(wh), name)
