"""Arguments of the PostgreSQL metastore's one-round-trip calls (``postgres_functions``).

The server functions take their input as JSON; building it, and checking it first with the
same rules the general path applies (``validate``), is kept here so ``postgres`` keeps to
connections and transactions. A call whose input these rules cannot vouch for (a component
the fast commit does not handle, one offered twice, a catalog entry that no longer checks
out) is not sent: the caller takes the general path, which decides and reports.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass

from acidstore.errors import InvalidInputError
from acidstore.metastore.history_rows import history_rows
from acidstore.metastore.records import PlannedWrite, StatementSummary, WriteComponent
from acidstore.metastore.sql_txn import encode_bucket_files
from acidstore.metastore.validate import check_component, split_table_name

__all__ = ["CatalogEntry", "commit_arguments", "open_plans"]


@dataclass(frozen=True)
class CatalogEntry:
    """What the calls need of a table's catalog row, cached per store: the server checks the
    id still names the table (a dropped or replaced table fails the call, which re-reads)."""

    table_id: int
    db_name: str
    name: str
    partition_columns: tuple[str, ...]

    @property
    def full_name(self) -> str:
        return f"{self.db_name}.{self.name}"


def open_plans(planned: Sequence[tuple[PlannedWrite, CatalogEntry]]) -> str:
    """``acid_open_v9``'s plans: the server allocates each write id and names the directories
    ``PlannedWrite.components`` names (checked here with write id 1, which stands for any)."""
    plans = []
    for plan, entry in planned:
        for component in plan.components(1):
            check_component(component, list(entry.partition_columns))
        plans.append({"table_id": entry.table_id, "db": entry.db_name, "name": entry.name,
                      "operation": plan.operation, "partitions": list(plan.partitions)})
    return json.dumps(plans)


def commit_arguments(components: Sequence[WriteComponent], catalog: dict[str, CatalogEntry],
                     *, inserts_only: bool = True,
                     statements: Sequence[StatementSummary] = ()) -> tuple[str, str] | None:
    """``acid_commit_v15``'s components and history rows (``history_rows``: the rule of the
    general path), or None for the general path: a component that is not a plain insert (an
    update, delete or overwrite, or a Serializable read: the conflict check runs there;
    ``inserts_only=False`` for a record, which checks no conflict), one offered twice, a
    statement the checks refuse, or a component these checks refuse against the cached
    catalog (the general path checks the current row and says why)."""
    rows: list[dict[str, object]] = []
    seen: set[WriteComponent] = set()
    written: list[tuple[str, WriteComponent]] = []
    for component in components:
        if not isinstance(component, WriteComponent) or (inserts_only and (
                component.operation != "insert" or component.read)):
            return None
        try:
            entry = catalog.get(".".join(split_table_name(component.table)))
            if entry is None:
                return None
            table = check_component(component, list(entry.partition_columns))
        except InvalidInputError:
            return None
        key = WriteComponent(table, component.partition, component.operation,
                             component.write_id, component.directories,
                             component.rows_inserted, component.rows_deleted, component.files,
                             component.bytes, bucket_files=component.bucket_files)
        if table != entry.full_name or key in seen:
            return None
        seen.add(key)
        rows.append({"table_name": table, "part": component.partition,
                     "operation": component.operation, "write_id": component.write_id,
                     "directories": json.dumps(list(component.directories)),
                     "rows_inserted": component.rows_inserted,
                     "rows_deleted": component.rows_deleted, "files": component.files,
                     "bytes": component.bytes, "metadata_version": component.metadata_version,
                     "bucket_files": encode_bucket_files(component.bucket_files)})
        written.append((table, component))
    try:
        summed = history_rows(written, statements)
    except InvalidInputError:
        return None
    history = [{"table_name": table, **dataclasses.asdict(row),
                "partitions": json.dumps(row.partitions)} for table, row in summed.items()]
    return json.dumps(rows), json.dumps(history)
