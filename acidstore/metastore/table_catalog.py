"""The metastore's ``Catalog`` role: tables, partitions, original files, and the store itself
(its URL, whether it may be written, the warehouse it serves).

Callers: the warehouse creates, lists and drops tables and pairs itself with the store; a
reader or a statement plans from a table's schema, location and partitions; adoption records
the original files it placed, which fsck, readers and compaction must then accept.

What it promises (checked by ``acidstore.metastore.testing.CatalogContract``):
- table names are ``db.name`` or ``name`` (meaning ``default.name``), case-insensitive;
  the warehouse's naming rule is the one rule (no leading digit, no newline);
- a refused call writes nothing (an invalid table, a bad partition or original file);
- a table's schema changes by ``add_columns``, ``rename_column`` and ``drop_columns``, each
  one metastore transaction ordered with commits that bumps ``metadata_version`` (commits
  planned against an older version fail); its file schema (``TableInfo.row_schema``) only
  grows, since files map row fields by position: a dropped column keeps its place;
- a dropped table's name starts afresh: a new table id, no partitions, no original files;
- a renamed table keeps its id, and with it everything recorded of it (write ids, history,
  partitions, original files, leases); its old name is free, and no two tables ever share a
  location (a renamed one keeps its own).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol, runtime_checkable

import pyarrow as pa

from acidstore.metastore.records import NewTable, OriginalFile, TableInfo, WarehouseBinding

__all__ = ["Catalog"]


@runtime_checkable
class Catalog(Protocol):
    """Tables, their partitions and original files, and the warehouse the store serves."""

    def create_table(self, info_without_id: NewTable) -> TableInfo:
        """Register a table (and its database, implicitly); ``TableExistsError`` if taken."""
        ...

    def get_table(self, name: str) -> TableInfo:
        """The table, or ``TableNotFoundError``."""
        ...

    def table_at(self, location: str) -> str | None:
        """The full name of the table whose location is ``location`` (compared as stored),
        or None: where a new table may not go (``create_table`` refuses a location another
        table has with ``LocationNotEmptyError``)."""
        ...

    def rename_table(self, old: str, new: str) -> TableInfo:
        """Give table ``old`` the name ``new`` (any database) and bump its
        ``metadata_version``, in one metastore transaction ordered with commits; its id,
        location and record stay. ``TableNotFoundError`` for ``old``, ``TableExistsError`` if
        ``new`` is taken, ``TableBusyError`` while a transaction that may still commit
        writes the table (holds a write id on it, or compacts it)."""
        ...

    def list_tables(self, database: str | None = None) -> list[str]:
        """Full names, sorted; all databases when ``database`` is None."""
        ...

    def drop_table(self, name: str) -> TableInfo:
        """Remove the catalog entry and return what it was; history rows may stay."""
        ...

    def add_columns(self, table: str, columns: pa.Schema) -> TableInfo:
        """Append nullable ``columns`` to the table's schema and bump its
        ``metadata_version``, in one metastore transaction ordered with commits (a commit
        either precedes it or sees the new version)."""
        ...

    def rename_column(self, table: str, old: str, new: str) -> TableInfo:
        """Rename the user column ``old`` to ``new`` (bucketing columns follow) and bump
        ``metadata_version``, as ``add_columns`` does; the column keeps its position in the
        files, so none is rewritten. Partition columns cannot be renamed."""
        ...

    def drop_columns(self, table: str, names: Sequence[str]) -> TableInfo:
        """Drop user columns (not partition or bucketing ones, not all) and bump
        ``metadata_version``: each keeps its position in ``TableInfo.file_schema`` under a
        placeholder name and is never read again (a column added later under the same name
        is a new one, reading NULL for every row written before)."""
        ...

    def add_partitions(self, table: str, partitions: Iterable[str]) -> None:
        """Register partition directories (idempotent)."""
        ...

    def list_partitions(self, table: str) -> list[str]:
        """Registered partition directories, sorted."""
        ...

    def record_originals(self, table: str, files: Iterable[OriginalFile]) -> None:
        """Record the original files adoption placed in ``table`` (idempotent per file):
        they belong to no write, and fsck must accept them and nothing else of their kind.
        Their partitions join ``list_partitions``, as a commit's do."""
        ...

    def original_files(self, table: str) -> list[OriginalFile]:
        """The original files recorded for ``table``, ordered by partition and name."""
        ...

    # --- the store itself and the warehouse it serves ---------------------------------------------

    @property
    def url(self) -> str:
        """The store as a URL without a password (``sqlite:///path``,
        ``postgresql://user@host:port/db``), as messages and a warehouse's marker name it."""
        ...

    def check_writable(self) -> None:
        """Raise ``ReadOnlyWarehouseError`` when the store is read-only (an archived copy):
        asked by callers that remove files before (or without) any metastore write."""
        ...

    def warehouse_binding(self) -> WarehouseBinding | None:
        """The warehouse this store serves, as recorded by ``bind_warehouse``; None if no
        warehouse has bound it yet (a new store, or one made before schema version 13)."""
        ...

    def bind_warehouse(self, binding: WarehouseBinding, *, replacing: WarehouseBinding | None,
                       warehouse: str) -> WarehouseBinding | None:
        """Record ``binding`` if the recorded one is ``replacing`` (None: none), atomically;
        return the binding in place afterwards, which the caller compares with its own (a
        client binding the same new store at the same moment may have won). Once the store
        holds ``binding``, this object creates and drops tables only while it still does:
        a store relocated to another warehouse since refuses them with
        ``MetastoreMismatchError`` naming ``warehouse`` (the root ``binding`` stands for)."""
        ...
