"""Finding the table a Spark read or write names, from data source options alone.

Everything Spark hands a Python data source is a string option, and the driver-side worker
that plans the read or write is a fresh process: it reconnects to the warehouse from these
options. A table is named either as ``db.table`` plus the ``warehouse`` option, or by the path
of its directory (``forPath``), whose warehouse is found by walking up to the metastore file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from acidstore.errors import InvalidInputError, TableNotFoundError
from acidstore.table import Table
from acidstore.warehouse import DEFAULT_METASTORE_FILE, Warehouse, connect

__all__ = ["Target", "open_target", "target_of"]


@dataclass(frozen=True)
class Target:
    """Where a table is: a warehouse plus a name, or a table directory."""

    warehouse: str | None
    metastore: str | None
    name: str | None
    path: str | None

    def options(self) -> dict[str, str]:
        """The data source options that name this table again."""
        out = {k: v for k, v in (("warehouse", self.warehouse), ("metastore", self.metastore))
               if v is not None}
        out["path"] = self.name if self.name is not None else str(self.path)
        return out

    def describe(self) -> str:
        return self.name if self.name is not None else f"the table at {self.path}"


def _looks_like_name(value: str) -> bool:
    return "/" not in value and "\\" not in value and value.count(".") <= 1


def target_of(options: Mapping[str, str]) -> Target:
    """The table named by ``load(x)``/``save(x)`` (the ``path`` option) or ``table``."""
    value = options.get("table") or options.get("path")
    if not value:
        raise InvalidInputError(
            "name the acidstore table: .load('db.table') with .option('warehouse', ...), or "
            "the table's directory path")
    warehouse = options.get("warehouse")
    metastore = options.get("metastore")
    if warehouse is not None and _looks_like_name(value):
        return Target(warehouse, metastore, value, None)
    if _looks_like_name(value) and not Path(value).exists():
        raise InvalidInputError(
            f"table {value!r} needs the warehouse option: "
            f".option('warehouse', '/path/to/warehouse')")
    return Target(warehouse, metastore, None, str(Path(value).absolute()))


def _find_warehouse(path: Path) -> Path:
    for candidate in [path, *path.parents]:
        if (candidate / DEFAULT_METASTORE_FILE).is_file():
            return candidate
    raise TableNotFoundError(
        f"no acidstore warehouse above {path}: no {DEFAULT_METASTORE_FILE} in it or its parents")


def open_target(target: Target) -> tuple[Warehouse, Table]:
    """Connect to the target's warehouse and look its table up (TableNotFoundError if none).

    A path is never created: naming a directory that is not a table is an error, not a new
    warehouse.
    """
    if target.name is not None:
        assert target.warehouse is not None
        wh = connect(target.warehouse, metastore=target.metastore)
        try:
            return wh, wh.table(target.name)
        except BaseException:
            wh.close()
            raise
    assert target.path is not None
    path = Path(target.path)
    root = Path(target.warehouse) if target.warehouse else _find_warehouse(path)
    wh = connect(root, metastore=target.metastore)
    wanted = str(path.resolve())
    for name in wh.tables():
        table = wh.table(name)
        if str(Path(table.location).resolve()) == wanted:
            return wh, table
    wh.close()
    raise TableNotFoundError(f"no acidstore table is located at {path} (warehouse {root})")
