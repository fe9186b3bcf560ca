"""The public table: reads at a snapshot, and INSERT / UPDATE / DELETE / MERGE.

Every write runs in a transaction: the caller's (``wh.transaction()``) or one of its own per
call. Nothing a statement writes is visible until its transaction commits. ``Table`` shows
users their methods only; the engine works on the ``TableHandle`` behind it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal

import pyarrow as pa

from acidstore.api import frames
from acidstore.api import optimize as maintenance
from acidstore.config import RETENTION_SECONDS
from acidstore.engine import writes
from acidstore.engine.handle import TableHandle
from acidstore.engine.restore import restore
from acidstore.engine.results import WriteResult
from acidstore.engine.schema_change import add_columns, drop_columns, rename_column
from acidstore.errors import import_optional
from acidstore.format.writeids import ValidWriteIdList
from acidstore.io.fs import storage_boundary
from acidstore.read.changes import changes
from acidstore.sql.expressions import Predicate
from acidstore.write.conform import to_arrow_table

if TYPE_CHECKING:
    from acidstore.api.merge_builder import MergeBuilder

__all__ = ["Table", "WriteResult"]


@storage_boundary
class Table:
    """A table of a warehouse (``wh.table(name)``), or of a transaction
    (``txn.table(name)``), whose reads see the transaction's writes and whose writes are
    part of it."""

    def __init__(self, handle: TableHandle) -> None:
        self._handle = handle

    @property
    def name(self) -> str:
        """``database.table``."""
        return self._handle.name

    @property
    def schema(self) -> pa.Schema:
        """User columns followed by partition columns, as reads return them."""
        return self._handle.schema

    @property
    def location(self) -> str:
        """The table's directory (on the warehouse's filesystem)."""
        return self._handle.location

    @property
    def compression(self) -> str:
        """The ORC compression its writers use (property ``orc.compress``)."""
        return self._handle.compression

    def __repr__(self) -> str:
        return f"Table({self.name!r}, location={self.location!r})"

    # --- reads ---------------------------------------------------------------------------------

    def snapshot(self) -> ValidWriteIdList:
        """The ValidWriteIdList a read would use now."""
        return self._handle.snapshot()[1]

    def to_arrow(self, columns: Sequence[str] | None = None, filter: Predicate | None = None,
                 as_of: int | datetime | None = None, with_row_id: bool = False) -> pa.Table:
        """The table at a snapshot (now, or ``as_of`` a write id or a time); ``filter`` is
        a SQL predicate or a pyarrow expression; ``with_row_id`` adds Hive's ``row__id``."""
        return self._handle.read_table(columns, filter, as_of, with_row_id)

    def to_batches(self, columns: Sequence[str] | None = None, filter: Predicate | None = None,
                   as_of: int | datetime | None = None, with_row_id: bool = False
                   ) -> pa.RecordBatchReader:
        """Stream the table at a snapshot. The snapshot is leased (the cleaner keeps its
        files) until the reader is exhausted, closed or garbage-collected."""
        return self._handle.read_batches(columns, filter, as_of, with_row_id)

    def to_pandas(self, columns: Sequence[str] | None = None, filter: Predicate | None = None,
                  as_of: int | datetime | None = None) -> Any:
        """``to_arrow(...).to_pandas()``: a pandas DataFrame of the table at a snapshot
        (pandas is optional: ``acidstore[pandas]``; checked before anything is read)."""
        import_optional("pandas", "acidstore[pandas]", "Table.to_pandas()")
        return self.to_arrow(columns, filter, as_of).to_pandas()

    def to_polars(self, columns: Sequence[str] | None = None, filter: Predicate | None = None,
                  as_of: int | datetime | None = None) -> Any:
        """A Polars DataFrame of the table at a snapshot (needs the optional polars)."""
        return frames.to_polars(self.to_arrow(columns, filter, as_of))

    def to_duckdb(self, connection: Any = None, *, columns: Sequence[str] | None = None,
                  filter: Predicate | None = None, as_of: int | datetime | None = None) -> Any:
        """A DuckDB relation over the table at a snapshot (its rows read now)."""
        return frames.to_duckdb(self.to_arrow(columns, filter, as_of), connection)

    def history(self) -> pa.Table:
        """One row per committed write id (its transaction, commit time, the statements that
        wrote it and their counts) and per committed compaction (no write id)."""
        return self._handle.history()

    def changes(self, start_write_id: int, end_write_id: int) -> pa.Table:
        """The rows inserted, updated and deleted by the committed write ids
        ``start_write_id..end_write_id`` (inclusive): the table's columns plus
        ``_change_type`` (insert, delete, update_preimage, update_postimage), ``_write_id``,
        ``_commit_time`` and ``row__id``."""
        return changes(self._handle, start_write_id, end_write_id)

    # --- writes --------------------------------------------------------------------------------

    def insert(self, data: Any, *, app_id: str | None = None, version: int | None = None
               ) -> WriteResult:
        """Append rows (a pyarrow Table, RecordBatchReader or pandas DataFrame). With
        ``app_id`` and ``version`` the write is idempotent: if the table holds that version
        of ``app_id`` or a later one, nothing is written and the result says ``skipped``."""
        return writes.insert(self._handle, data, "insert", app_id=app_id, version=version)

    def insert_overwrite(self, data: Any, *, app_id: str | None = None,
                         version: int | None = None) -> WriteResult:
        """Replace the partitions present in ``data`` (the whole table if unpartitioned)
        with ``data`` (``app_id``/``version`` as for ``insert``)."""
        return writes.insert(self._handle, data, "overwrite", app_id=app_id, version=version)

    def delete(self, predicate: Predicate) -> WriteResult:
        """Delete the rows matching ``predicate`` (SQL string or pyarrow expression;
        ``"true"`` for every row)."""
        return writes.delete(self._handle, predicate)

    def update(self, predicate: Predicate, updates: Mapping[str, str] | None = None, *,
               new_values: Mapping[str, Any] | None = None) -> WriteResult:
        """Set columns of the rows matching ``predicate`` (``"true"`` for every row):
        ``updates`` to SQL expressions of the old row (``{"salary": "salary * 1.1"}``),
        ``new_values`` to Python values (``{"name": "bobby"}``, no SQL quoting). A column
        goes in one of the two."""
        return writes.update(self._handle, predicate, updates, new_values=new_values)

    def restore(self, version: int | datetime) -> WriteResult:
        """Delta's RESTORE: the rows become those of ``version`` (a committed write id, or a
        moment), exactly as ``to_arrow(as_of=version)`` reads them, as a new commit.
        Rows present now and not then get delete events, rows of then that are gone are
        written again (with new ROW__IDs), and the rest is left alone."""
        return restore(self._handle, version)

    def merge(self, source: Any, condition: str, *, source_alias: str = "s",
              target_alias: str = "t") -> MergeBuilder:
        """Start a MERGE of ``source`` into this table on ``condition``."""
        from acidstore.api.merge_builder import MergeBuilder

        rows = to_arrow_table(source, f"MERGE source of {self.name}")
        return MergeBuilder(self._handle, rows, condition, source_alias, target_alias)

    def add_columns(self, columns: Any) -> None:
        """Append nullable columns (a ``pa.Schema``); rows written before read them as NULL,
        and writers that planned against the old schema fail with MetadataChangedError."""
        add_columns(self._handle, columns)

    def rename_column(self, old: str, new: str) -> None:
        """Rename column ``old`` to ``new`` (Iceberg's rename: no file is rewritten; rows
        written before read the values under the new name, on every engine). Partition
        columns cannot be renamed; writers that planned against the old schema fail with
        MetadataChangedError."""
        rename_column(self._handle, old, new)

    def drop_columns(self, names: Sequence[str]) -> None:
        """Drop columns (Iceberg's drop: no file is rewritten, reads no longer return them).
        A column added later under a dropped name is a new column: rows written before
        read NULL for it, never the dropped values. Partition and bucketing columns cannot be
        dropped; writers that planned against the old schema fail with
        MetadataChangedError."""
        drop_columns(self._handle, names)

    # --- maintenance: the compaction package's compactors and cleaner, for this table ---------

    def optimize(self, kind: Literal["minor", "major"] = "major", *,
                 partition: str | Mapping[str, str | None] | None = None,
                 engine: str = "local", spark: Any = None) -> maintenance.OptimizeOutcome:
        """Delta's ``optimize()``: a compaction of the table now (major by default, as Delta
        rewrites into fewer files). What it replaced stays until ``vacuum``."""
        self._handle.outside_transaction("optimize")
        return maintenance.maintenance().optimize(self._handle, kind, partition, engine, spark)

    def vacuum(self, retention_seconds: float = RETENTION_SECONDS) -> maintenance.VacuumOutcome:
        """Delta's ``vacuum()``: a cleaner pass over this table only; what a live reader or
        a time travel within ``retention_seconds`` may need is kept."""
        self._handle.outside_transaction("vacuum")
        return maintenance.maintenance().vacuum(self._handle, retention_seconds)
