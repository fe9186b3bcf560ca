"""Partition directory names (``col=value``) with Hive's path escaping (layer L1, stdlib only).

Hive escapes a fixed set of characters as ``%XX`` (upper-case hex) in partition names, so a
value can never contain a path separator: ``a/b`` becomes ``a%2Fb``. A NULL value is stored as
``__HIVE_DEFAULT_PARTITION__``. Because the name is always ``col=value`` a value of ``..`` or
``.`` is a harmless literal (``dt=..``), never a path step.
"""

from __future__ import annotations

from collections.abc import Sequence

from acidstore.errors import InvalidPartitionValueError
from acidstore.io.fs import is_text

__all__ = [
    "DEFAULT_PARTITION_NAME",
    "MAX_NAME_BYTES",
    "escape_path_name",
    "parse_partition_path",
    "partition_path",
    "unescape_path_name",
]

DEFAULT_PARTITION_NAME = "__HIVE_DEFAULT_PARTITION__"
#: Longest file name most filesystems accept, in bytes of UTF-8.
MAX_NAME_BYTES = 255

_ESCAPED = frozenset(
    [chr(c) for c in range(0x01, 0x20)]
    + ['"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "\x7f", "{", "[", "]", "^"]
)


def escape_path_name(text: str) -> str:
    """Hive's ``FileUtils.escapePathName``: escape separators and special characters."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED or c == "\x00" else c for c in text)


def unescape_path_name(text: str) -> str:
    """Hive's ``FileUtils.unescapePathName``: ``%XX`` back to the character; a ``%`` not
    followed by two hex digits stays as it is."""
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char == "%" and _is_hex(text[i + 1:i + 3]):
            out.append(chr(int(text[i + 1:i + 3], 16)))
            i += 3
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _is_hex(pair: str) -> bool:
    return len(pair) == 2 and all(c in "0123456789abcdefABCDEF" for c in pair)


def _component(column: str, value: str | None) -> str:
    if not column:
        raise InvalidPartitionValueError("empty partition column name")
    if value is not None and not is_text(value):
        raise InvalidPartitionValueError(
            f"partition column {column!r} has the value {value!r}, which is no valid text "
            "(it holds a lone surrogate) and so cannot name a directory")
    name = escape_path_name(column) + "=" + (
        DEFAULT_PARTITION_NAME if value is None else escape_path_name(value))
    if value == "":
        raise InvalidPartitionValueError(
            f"partition column {column!r} has an empty value; use NULL instead")
    if value == DEFAULT_PARTITION_NAME:  # it would read back as NULL
        raise InvalidPartitionValueError(
            f"partition column {column!r} has the value {DEFAULT_PARTITION_NAME!r}, which "
            "Hive reserves for NULL")
    if len(name.encode("utf-8")) > MAX_NAME_BYTES:
        raise InvalidPartitionValueError(
            f"partition {column!r} value is too long for a directory name "
            f"({len(name.encode('utf-8'))} > {MAX_NAME_BYTES} bytes)")
    return name


def partition_path(columns: Sequence[str], values: Sequence[str | None]) -> str:
    """The relative directory of a partition, e.g. ``dt=2024-01-01/country=US``."""
    if len(columns) != len(values):
        raise InvalidPartitionValueError(
            f"{len(values)} partition values for {len(columns)} partition columns")
    return "/".join(_component(c, v) for c, v in zip(columns, values, strict=True))


def parse_partition_path(relative: str) -> list[tuple[str, str | None]]:
    """(column, value) pairs of a relative partition directory such as ``a=1/b=x%2Fy``."""
    pairs: list[tuple[str, str | None]] = []
    for part in relative.strip("/").split("/"):
        if "=" not in part:
            raise InvalidPartitionValueError(f"not a partition directory name: {part!r}")
        column, value = part.split("=", 1)
        text = unescape_path_name(value)
        pairs.append((unescape_path_name(column), None if text == DEFAULT_PARTITION_NAME
                      else text))
    return pairs
