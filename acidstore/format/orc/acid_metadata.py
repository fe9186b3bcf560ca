"""Hive's ACID user metadata of an event file (spec §3): the per-stripe key index and the
event counts, as a writer records them and a reader parses them back.

The key index lets a reader bound the delete events it needs for a range of stripes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "ACID_VERSION",
    "ACID_VERSION_KEY",
    "AcidStats",
    "KEY_INDEX_KEY",
    "RowKey",
    "STATS_KEY",
    "acid_metadata",
    "format_key_index",
    "parse_acid_stats",
    "parse_key_index",
]

KEY_INDEX_KEY = "hive.acid.key.index"
STATS_KEY = "hive.acid.stats"
ACID_VERSION_KEY = "hive.acid.version"
ACID_VERSION = b"2"

RowKey = tuple[int, int, int]
"""A ROW__ID as (originalTransaction/writeId, bucket property, rowId)."""


@dataclass(frozen=True)
class AcidStats:
    """Event counts recorded in ``hive.acid.stats``."""

    inserts: int
    updates: int
    deletes: int


def parse_key_index(text: str) -> list[RowKey]:
    """Parse ``hive.acid.key.index``: per stripe, the last key written, as ``w,b,r;``."""
    keys: list[RowKey] = []
    for entry in text.split(";"):
        if not entry:
            continue
        parts = entry.split(",")
        if len(parts) != 3:
            raise ValueError(f"bad key index entry {entry!r}")
        keys.append((int(parts[0]), int(parts[1]), int(parts[2])))
    return keys


def format_key_index(keys: Sequence[RowKey]) -> str:
    """The ``hive.acid.key.index`` text for per-stripe last keys."""
    return "".join(f"{w},{b},{r};" for w, b, r in keys)


def parse_acid_stats(text: str) -> AcidStats:
    """Parse ``hive.acid.stats`` (``inserts,updates,deletes``)."""
    parts = [int(p) for p in text.split(",")]
    if len(parts) != 3:
        raise ValueError(f"bad acid stats {text!r}")
    return AcidStats(*parts)


def acid_metadata(stripe_keys: Sequence[RowKey], stats: AcidStats) -> dict[str, bytes]:
    """Hive's ACID user metadata of an event file: per-stripe last keys and event counts."""
    return {
        KEY_INDEX_KEY: format_key_index(stripe_keys).encode(),
        STATS_KEY: f"{stats.inserts},{stats.updates},{stats.deletes}".encode(),
        ACID_VERSION_KEY: ACID_VERSION,
    }
