"""Database and table names: the one rule the warehouse, the metastore and every caller
share. A name becomes a directory (``<db>.db/<table>``), so it holds no separator, dot or
anything a path could read otherwise, and it starts with a letter or '_' as SQL's plain
identifiers do."""

from __future__ import annotations

import re

from acidstore.errors import InvalidInputError

__all__ = ["DEFAULT_DATABASE", "MAX_NAME_LENGTH", "split_table_name"]

DEFAULT_DATABASE = "default"
#: a database or table name (``split_table_name``)
_TABLE_NAME = re.compile(r"[a-z_][a-z0-9_]*")
#: the longest database or table name, as Hive's metastore limits identifiers
MAX_NAME_LENGTH = 128


def split_table_name(name: str) -> tuple[str, str]:
    """``"db.t"`` -> ``("db", "t")``; ``"t"`` -> ``("default", "t")``; lower-cased. The one
    rule for table names, the warehouse's and every metastore call's: a name becomes a
    directory (``db.db/t``), so it holds no separator, dot or anything a path could read
    otherwise, and it starts with a letter or '_' as SQL's plain identifiers do."""
    if not isinstance(name, str):
        raise InvalidInputError(f"a table name is a string, got {name!r}")
    parts = name.lower().split(".")
    if len(parts) == 1:
        parts = [DEFAULT_DATABASE, parts[0]]
    if len(parts) != 2 or not all(_TABLE_NAME.fullmatch(p) for p in parts):
        raise InvalidInputError(
            f"table name {name!r} must be 'table' or 'database.table', each a letter or '_' "
            "followed by letters, digits and '_'")
    if any(len(p) > MAX_NAME_LENGTH for p in parts):
        raise InvalidInputError(
            f"table name {name!r} is too long: a database or table name has at most "
            f"{MAX_NAME_LENGTH} characters (each becomes a directory name)")
    return parts[0], parts[1]
