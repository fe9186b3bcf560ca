"""What the table-error tests share: a small partitioned, bucketed table, and ``Unchanged``,
which checks that a refused request changed neither the rows (through ``to_arrow`` and both
readers) nor, where nothing should have been written, the files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa

import acidstore
from acidstore import Table, Warehouse
from acidstore.engine.handle import handle_of

SCHEMA = pa.schema([
    pa.field("id", pa.int64(), nullable=False),
    pa.field("name", pa.string()),
    pa.field("salary", pa.int32()),
    pa.field("dt", pa.string()),
])
BUCKETS = 4
FIRST: list[dict[str, Any]] = [
    {"id": 1, "name": "ann", "salary": 100, "dt": "2024-01-01"},
    {"id": 2, "name": "bob", "salary": 200, "dt": "2024-01-01"},
    {"id": 3, "name": "cy", "salary": 300, "dt": "2024-01-02"},
    {"id": 4, "name": None, "salary": None, "dt": "2024-01-02"},
]
V1 = 1 << 29  # BucketCodec V1: version 1 in bits 29..31


def rows_table(rows: list[dict[str, Any]], schema: pa.Schema = SCHEMA) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=schema)


def row_key(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(repr(row[c]) for c in sorted(row))


def sorted_rows(table: pa.Table) -> list[dict[str, Any]]:
    return sorted(table.to_pylist(), key=row_key)


def visible(table: Table) -> list[dict[str, Any]]:
    """The table's rows, the same through ``to_arrow`` and both readers at its snapshot."""
    rows = sorted_rows(table.to_arrow())
    snapshot = table.snapshot()
    for reader in ("vectorized", "merge"):
        got = acidstore.read_directory(table.location, handle_of(table).info.schema, reader=reader,
                                       write_ids=snapshot)
        assert sorted_rows(got.select(table.schema.names)) == rows, reader
    return rows


def files_under(root: str | Path) -> dict[str, int]:
    """Every file below ``root``: relative path -> size."""
    out: dict[str, int] = {}
    for directory, _, names in os.walk(root):
        for name in names:
            path = Path(directory, name)
            out[str(path.relative_to(root))] = path.stat().st_size
    return out


def new_table(wh: Warehouse) -> Table:
    """db.t partitioned by ``dt`` and bucketed by ``id``, holding ``FIRST``."""
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=BUCKETS)
    t.insert(rows_table(FIRST))
    return t


class Unchanged:
    """Records a table's rows and files; ``check()`` asserts neither changed."""

    def __init__(self, table: Table, *, files: bool = True) -> None:
        self.table = table
        self.rows = visible(table)
        self.files = files_under(table.location) if files else None
        assert self.rows == sorted(FIRST, key=row_key)

    def check(self) -> None:
        assert visible(self.table) == self.rows
        if self.files is not None:
            assert files_under(self.table.location) == self.files


def opened_table(tmp_path: Path) -> Iterator[Table]:
    """``new_table`` in a warehouse of its own under ``tmp_path``, closed afterwards (the body
    of a fixture that needs the table alone)."""
    with acidstore.connect(tmp_path / "wh") as wh:
        yield new_table(wh)
