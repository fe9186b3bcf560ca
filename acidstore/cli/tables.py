"""``acidstore tables``, ``describe TABLE`` and ``history TABLE``: what a warehouse holds.

``describe`` counts deltas per partition at the current snapshot (what a read opens now), so
an operator sees where deltas pile up before reads slow down; ``advise`` says what the
scheduler will do about it. It also lists the committed version of each application id that
writes the table idempotently (``acidstore.engine.idempotent``): where a rerun job stands.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow.fs as pafs

from acidstore.cli.common import (
    add_warehouse_options,
    emit,
    format_rows,
    handle,
    open_warehouse,
    rows_of,
)
from acidstore.engine.core import core_of
from acidstore.engine.handle import TableHandle
from acidstore.format.directory import acid_state
from acidstore.io import fs as afs
from acidstore.read.scan import table_partitions

if TYPE_CHECKING:
    from acidstore.cli.common import Subparsers

__all__ = ["add_table_commands", "directory_usage", "run_describe", "run_history",
           "run_tables"]


def add_table_commands(sub: Subparsers) -> None:
    tables = sub.add_parser("tables", help="list the warehouse's tables")
    add_warehouse_options(tables)
    tables.add_argument("--database", default=None, help="only this database's tables")
    describe = sub.add_parser(
        "describe", help="a table's schema, partitioning, bucketing, properties, size and "
        "deltas per partition")
    describe.add_argument("table", help="table name: db.table, or table for db default")
    add_warehouse_options(describe)
    history = sub.add_parser("history", help="a table's committed writes, one per write id, "
                             "and its compactions")
    history.add_argument("table", help="table name: db.table, or table for db default")
    add_warehouse_options(history)


@dataclass(frozen=True)
class Usage:
    """Files and bytes under some directories of a partition."""

    files: int = 0
    bytes: int = 0


def directory_usage(fs: pafs.FileSystem, directory: str, names: list[str]) -> Usage:
    """What the directories ``names`` of ``directory`` hold on disk (side files included:
    they are what the filesystem bills)."""
    found = [size for name in names
             for _, size in afs.list_files_recursive(fs, afs.join(directory, name))]
    return Usage(len(found), sum(found))


def run_tables(args: argparse.Namespace) -> None:
    with open_warehouse(args) as wh:
        rows = []
        for name in wh.tables(args.database):
            info = core_of(wh).table_info(name)
            rows.append({"table": name, "partition_by": info.partition_schema.names,
                         "bucket_by": list(info.bucket_by), "buckets": info.buckets,
                         "location": info.location})
    emit(args, rows, lambda: format_rows(
        rows, ["table", "partition_by", "bucket_by", "buckets", "location"],
        empty=f"no tables in {args.warehouse}"))


def _partitions(table: TableHandle) -> list[dict[str, Any]]:
    """Per partition, what a read at the current snapshot opens and what waits for the
    cleaner."""
    fs = table.filesystem
    txns, write_ids = table.read_snapshot()
    out = []
    for part in table_partitions(fs, table.location, table.info.partition_schema.names):
        state = acid_state(part.path, write_ids, txns, filesystem=fs)
        every = afs.list_dir(fs, part.path)
        usage = directory_usage(fs, part.path, [e.name for e in every])
        out.append({
            "partition": afs.relative(table.location, part.path) or "(table)",
            "base": state.base,
            "insert_deltas": len(state.insert_deltas()),
            "delete_deltas": len(state.delete_deltas),
            "original_files": len(state.original_files),
            "obsolete": len(state.obsolete), "aborted": len(state.aborted),
            "files": usage.files, "bytes": usage.bytes,
        })
    return out


def run_describe(args: argparse.Namespace) -> None:
    with open_warehouse(args) as wh:
        table = handle(wh, args.table)
        info = table.info
        partitions = _partitions(table)
        apps = [{"app_id": a.app_id, "version": a.version, "txn_id": a.txn_id,
                 "commit_time": a.commit_time}
                for a in wh.metastore.app_versions(table.name)]
    document = {
        "table": table.name, "location": table.location,
        "columns": [{"name": f.name, "type": str(f.type), "nullable": f.nullable}
                    for f in info.schema],
        "partition_columns": [{"name": f.name, "type": str(f.type)}
                              for f in info.partition_schema],
        "bucket_by": list(info.bucket_by), "buckets": info.buckets,
        "properties": dict(info.properties), "created": info.created,
        "files": sum(p["files"] for p in partitions),
        "bytes": sum(p["bytes"] for p in partitions),
        "partitions": partitions,
        "app_versions": apps,
    }
    emit(args, document, lambda: _describe_text(document))


def _describe_text(doc: dict[str, Any]) -> str:
    columns = [{"column": c["name"], "type": c["type"],
                "nullable": "yes" if c["nullable"] else "no"} for c in doc["columns"]]
    partition_by = ", ".join(f"{c['name']} ({c['type']})" for c in doc["partition_columns"])
    buckets = f"{doc['buckets']} buckets by {', '.join(doc['bucket_by'])}" \
        if doc["buckets"] else "not bucketed"
    properties = ", ".join(f"{k}={v}" for k, v in sorted(doc["properties"].items()))
    lines = [
        f"table:        {doc['table']}",
        f"location:     {doc['location']}",
        f"partitioned:  {partition_by or 'no'}",
        f"bucketing:    {buckets}",
        f"properties:   {properties or '-'}",
        f"size:         {doc['bytes']} bytes in {doc['files']} files",
        "",
        format_rows(columns, ["column", "type", "nullable"], empty="(no columns)"),
        "",
        format_rows(doc["partitions"], ["partition", "base", "insert_deltas", "delete_deltas",
                                        "original_files", "obsolete", "aborted", "files",
                                        "bytes"], empty="(no partitions yet)"),
    ]
    if doc["app_versions"]:
        lines += ["", format_rows(doc["app_versions"],
                                  ["app_id", "version", "txn_id", "commit_time"], empty="")]
    return "\n".join(lines)


def run_history(args: argparse.Namespace) -> None:
    with open_warehouse(args) as wh:
        rows = rows_of(handle(wh, args.table).history())
    emit(args, rows, lambda: format_rows(
        rows, ["write_id", "txn_id", "commit_time", "operation", "rows_inserted",
               "rows_updated", "rows_deleted", "files", "bytes", "partitions"],
        empty=f"no committed writes in {args.table}"))
