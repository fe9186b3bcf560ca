"""``acidstore inspect`` and ``acidstore read``: what a snapshot reads, and its rows.

Both take a path or, with ``--warehouse``, a table name. For a table of a warehouse the
snapshot is the metastore's (open and aborted transactions invisible, and ``read`` leases it
so the cleaner keeps its files); ``--write-ids`` / ``--txns`` replace it, in Hive's own
strings, to look at a Hive directory as a particular query would have, or at the past.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.api.pairing import WAREHOUSE_ENV
from acidstore.cli.common import (
    METASTORE_HELP,
    emit,
    format_rows,
    handle,
    value_cell,
)
from acidstore.cli.target import Located, locate, table_partition_dirs
from acidstore.errors import InvalidInputError, TableNotFoundError
from acidstore.format.directory import acid_state
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.read.hive_directory import scan_directory
from acidstore.read.scan import PartitionDir, Scan, discover_partitions

if TYPE_CHECKING:
    from acidstore.cli.common import Subparsers
    from acidstore.engine.handle import TableHandle
    from acidstore.read.record_plan import RecordPlan

__all__ = ["add_read_commands", "run_inspect", "run_read"]

_WRITE_IDS_HELP = (
    "which writes of the table count as committed, as Hive passes it to a query "
    "(hive.txn.valid.writeids): table:high-water-mark:lowest-open:open-or-aborted-ids:"
    "aborted-ids, e.g. db.t:5:9223372036854775807::3 (writes up to 5 except the aborted 3). "
    "Default: the warehouse's current snapshot, or every write present for a plain directory")
_TXNS_HELP = (
    "which transactions count as committed (hive.txn.valid.txns): high-water-mark:"
    "lowest-open:open-ids:aborted-ids, e.g. 11:11:11: (txn 11 open). It decides which "
    "compactions' output is visible. Default as for --write-ids")


def add_read_commands(sub: Subparsers) -> None:
    for name, helptext in (
            ("inspect", "the directories a snapshot reads in each partition, and what the "
                        "cleaner may remove"),
            ("read", "the rows of a table or partition as of a snapshot")):
        cmd = sub.add_parser(name, help=helptext, description=helptext + ". TARGET is a "
                             "directory (a table or partition of a warehouse, or a Hive "
                             "directory) or, with --warehouse, a table name.")
        cmd.add_argument("target", metavar="TARGET", help="a directory, or a table name "
                         "(db.table) with --warehouse")
        cmd.add_argument("--warehouse", default=None, metavar="PATH",
                         help=f"the warehouse of the table TARGET names (it must exist; "
                         f"default: ${WAREHOUSE_ENV} when TARGET is a table name, not a "
                         "directory)")
        cmd.add_argument("--metastore", default=None, metavar="URL", help=METASTORE_HELP)
        cmd.add_argument("--partition", default=None,
                         help="with --warehouse: one partition, e.g. dt=2024-01-01")
        cmd.add_argument("--write-ids", help=_WRITE_IDS_HELP)
        cmd.add_argument("--txns", help=_TXNS_HELP)
        cmd.add_argument("--json", action="store_true", help="print one JSON document")
    read = sub.choices["read"]
    read.add_argument("--columns", help="comma-separated column names")
    read.add_argument("--filter", help="SQL predicate, e.g. \"amount < 0\"")
    read.add_argument("--row-id", action="store_true",
                      help="add Hive's row__id column (write id, bucket, row id)")
    read.add_argument("--reader", choices=["vectorized", "merge"], default="vectorized",
                      help="vectorized (default) or merge: Hive's two ways of applying "
                      "deletes; both return the same rows")
    read.add_argument("--limit", type=_row_count, default=50,
                      help="rows to print (default 50)")


def _row_count(text: str) -> int:
    """``--limit``'s value: a negative one would slice rows off the end and print "(no
    rows)" above the count of rows read, so it is refused with the usage."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def _given(args: argparse.Namespace) -> tuple[ValidWriteIdList | None, ValidTxnList | None]:
    return (ValidWriteIdList.parse(args.write_ids) if args.write_ids else None,
            ValidTxnList.parse(args.txns) if args.txns else None)


def _given_for(table: TableHandle, given: ValidWriteIdList | None) -> ValidWriteIdList | None:
    """``--write-ids`` for a warehouse table must be that table's: write ids are numbered per
    table, so another table's list names other writes (and reads the wrong rows)."""
    if given is not None and given.table_name and given.table_name.lower() != table.name:
        raise InvalidInputError(f"--write-ids is a snapshot of {given.table_name}, not of "
                                f"{table.name}: write ids are numbered per table")
    return given


def _partition_report(fs: pafs.FileSystem, part: PartitionDir, base: str,
                      ids: ValidWriteIdList, txns: ValidTxnList | None) -> dict[str, Any]:
    state = acid_state(part.path, ids, txns, filesystem=fs)
    return {"partition": afs.relative(base, part.path) or "(table)", "base": state.base,
            "insert_deltas": state.insert_deltas(),
            "delete_deltas": state.delete_deltas,
            "originals": state.original_files, "obsolete": state.obsolete,
            "aborted": state.aborted}


def _inspect_tables(found: Located, args: argparse.Namespace) -> list[dict[str, Any]]:
    wh = found.warehouse
    tables = [found.table] if found.table else [handle(wh, n) for n in wh.tables()]
    given_ids, given_txns = _given(args)
    out = []
    for table in tables:
        txns, ids = table.read_snapshot()
        ids, txns = _given_for(table, given_ids) or ids, given_txns or txns
        out.append({"table": table.name, "location": table.location,
                    "write_ids": str(ids), "txns": str(txns),
                    "partitions": [_partition_report(table.filesystem, p, table.location, ids,
                                                     txns)
                                   for p in table_partition_dirs(table, found.partition)]})
    return out


def run_inspect(args: argparse.Namespace) -> None:
    found = locate(args)
    if found is None:
        fs, root = afs.resolve(args.target)
        if fs.get_file_info(root).type != pafs.FileType.Directory:
            raise TableNotFoundError(f"no table directory at {root}")
        given_ids, txns = _given(args)
        ids = given_ids or ValidWriteIdList.all_valid()
        tables = [{"table": None, "location": root,
                   "write_ids": str(ids) if given_ids else None,
                   "txns": str(txns) if txns else None,
                   "partitions": [_partition_report(fs, p, root, ids, txns)
                                  for p in discover_partitions(fs, root)]}]
    else:
        with found.warehouse:
            tables = _inspect_tables(found, args)
    emit(args, tables, lambda: _inspect_text(tables))


def _inspect_text(tables: list[dict[str, Any]]) -> str:
    if not tables:
        return "the warehouse has no tables"
    lines: list[str] = []
    for t in tables:
        lines.append(f"{t['table'] or t['location']}")
        if t["table"] is not None:
            lines.append(f"snapshot (from the warehouse's metastore): write ids {t['write_ids']}; "
                         f"txns {t['txns']}")
        elif t["write_ids"] is None and t["txns"] is None:
            lines.append("snapshot: every write present (a directory outside a warehouse has "
                         "no metastore; --write-ids and --txns choose one)")
        else:
            lines.append(f"snapshot (given): write ids {t['write_ids'] or 'every one'}; "
                         f"txns {t['txns'] or 'all committed'}")
        for p in t["partitions"]:
            lines.append(f"\npartition {p['partition']}")
            for label, key in (("base", "base"), ("insert deltas", "insert_deltas"),
                               ("delete deltas", "delete_deltas"), ("originals", "originals"),
                               ("obsolete", "obsolete"), ("aborted", "aborted")):
                value = p[key]
                shown = ", ".join(value) if isinstance(value, list) else value
                lines.append(f"  {label + ':':<15}{shown or '-'}")
        lines.append("")
    return "\n".join(lines).rstrip()


def _warehouse_scan(found: Located, args: argparse.Namespace) -> tuple[Scan, int | None]:
    """A scan of the located table at the metastore's snapshot, leased so the cleaner keeps
    its files until the read is done (no lease when the snapshot is given by hand). The
    caller releases the lease it gets back; a scan refused while planning releases it here."""
    table = found.table
    if table is None:
        raise TableNotFoundError(
            f"{found.warehouse.location} is a warehouse; read one of its tables: "
            f"{', '.join(found.warehouse.tables()) or 'it has none'}")
    given_ids, given_txns = _given(args)
    given_ids = _given_for(table, given_ids)
    lease = None
    if given_ids is None and given_txns is None:
        txns, ids, lease = table.leased_snapshot()
    else:
        txns, ids = table.read_snapshot()
        ids, txns = given_ids or ids, given_txns or txns
    try:
        info = table.info
        plan = table.record_plan()
        scan = Scan(table.filesystem, _read_partitions(table, found.partition, plan,
                                                       args.filter), ids, txns,
                    schema=info.row_schema, partition_schema=info.partition_schema,
                    columns=args.columns.split(",") if args.columns else None,
                    filter=args.filter, with_row_id=args.row_id, reader=args.reader,
                    recorded=table.recorded_writes(), record_plan=plan)
    except BaseException:
        # refused while planning (no such partition or column, a bad filter): the caller
        # never gets the lease to release, and a lease left behind would keep the cleaner
        # away from everything this snapshot selects until it expires
        if lease is not None:
            found.warehouse.metastore.release_lease(lease)
        raise
    return scan, lease


def _read_partitions(table: TableHandle, partition: str, plan: RecordPlan | None,
                     filter: str | None) -> list[PartitionDir]:
    """The partitions a read of the table (at or below ``partition``) plans over: as the
    API's reads find them, from the metastore's record where it is complete (nothing is
    listed, and a directory nobody recorded is not read: ``fsck`` reports it), else from
    the table's listing."""
    if plan is None:
        return table_partition_dirs(table, partition)
    every = table.read_partitions(plan, filter)
    if not partition:
        return every
    target = afs.join(table.location, partition.strip("/"))
    chosen = [p for p in every if p.path == target or p.path.startswith(target + "/")]
    # none recorded there: the listing names the error (or finds what no write recorded,
    # which the record plans as holding no rows, as the API's reads do)
    return chosen or table_partition_dirs(table, partition)


def run_read(args: argparse.Namespace) -> None:
    found = locate(args)
    if found is None:
        ids, txns = _given(args)
        scan = scan_directory(args.target, write_ids=ids, txns=txns,
                              columns=args.columns.split(",") if args.columns else None,
                              filter=args.filter, with_row_id=args.row_id, reader=args.reader)
        table = scan.to_table()
    else:
        with found.warehouse as wh:
            scan, lease = _warehouse_scan(found, args)
            try:
                table = scan.to_table()
            finally:
                if lease is not None:
                    wh.metastore.release_lease(lease)
    shown = table.slice(0, args.limit)
    document = {"rows": shown.to_pylist(), "total_rows": table.num_rows,
                "splits": len(scan.splits)}
    emit(args, document, lambda: _read_text(shown, table.num_rows, len(scan.splits)))


def _read_text(shown: pa.Table, total: int, splits: int) -> str:
    rows = format_rows(shown.to_pylist(), shown.column_names, empty="(no rows)",
                       cell=value_cell)
    return f"{rows}\n\n{total} row(s) from {splits} split(s)"
