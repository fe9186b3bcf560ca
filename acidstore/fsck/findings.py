"""What fsck reports: one ``Finding`` per problem, and the Arrow table they make.

Check codes are short and stable (scripts match on them); the message says what and where in
words. Severity says whether readers can answer wrongly or fail (``error``) or whether the
table reads correctly and the thing only wastes space or needs a look (``warning``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import pyarrow as pa

__all__ = ["CHECKS", "FINDINGS_SCHEMA", "Check", "Finding", "Severity", "findings_table"]

Severity = Literal["error", "warning"]
Check = Literal[
    "missing_directory", "missing_file", "empty_file", "unreadable_file",
    "missing_acid_metadata", "key_index_mismatch", "bucket_mismatch", "write_id_range",
    "row_id_order", "duplicate_row_id", "dangling_delete", "aborted_selectable",
    "unknown_write", "aborted_leftover", "foreign_file", "stray_directory", "invalid_layout",
]

#: every check code with what it means (README and ``acidstore fsck --help`` list them)
CHECKS: dict[str, str] = {
    "missing_directory": "a directory a committed write made, which the snapshot must read, "
                         "is gone",
    "missing_file": "a committed directory holds fewer bucket files than its write made, a "
                    "bucket file its write recorded is gone (renamed?) or of other bytes, or "
                    "an original file adoption placed is gone while no base holds its rows",
    "empty_file": "a bucket file the snapshot reads is 0 bytes (truncated)",
    "unreadable_file": "a bucket file does not open or decode as ORC",
    "missing_acid_metadata": "an ORC file lacks Hive's ACID columns or hive.acid.key.index",
    "key_index_mismatch": "hive.acid.key.index does not name the last ROW__ID of each stripe",
    "bucket_mismatch": "events whose bucket property names another bucket than their file",
    "write_id_range": "events whose write id lies outside their directory's range",
    "row_id_order": "events out of ROW__ID order within a file",
    "duplicate_row_id": "one ROW__ID inserted twice (in one file or in two files read together)",
    "dangling_delete": "a delete event whose ROW__ID no insert the snapshot reads has",
    "aborted_selectable": "a directory of a write the metastore says aborted is read",
    "unknown_write": "a directory of a write the metastore has no committed record of is "
                     "read, or will be once its write id is allocated",
    "aborted_leftover": "a directory of an aborted write still on disk (no reader selects it; "
                        "--repair and the cleaner remove it)",
    "foreign_file": "a file that is no part of the layout, or a bucket file its directory's "
                    "write or compaction did not record",
    "stray_directory": "a directory where only partitions or ACID directories belong",
    "invalid_layout": "the partition cannot be read at all (unparsable names, lost history)",
}

FINDINGS_SCHEMA = pa.schema([
    pa.field("table", pa.string(), nullable=False),
    pa.field("partition", pa.string(), nullable=False),
    pa.field("path", pa.string(), nullable=False),
    pa.field("check", pa.string(), nullable=False),
    pa.field("severity", pa.string(), nullable=False),
    pa.field("message", pa.string(), nullable=False),
    pa.field("repaired", pa.bool_(), nullable=False),
])


@dataclass(frozen=True)
class Finding:
    """One problem: in which table and partition (relative, "" when unpartitioned), at which
    path (absolute), which check found it, how bad it is, and whether ``--repair`` fixed it."""

    table: str
    partition: str
    path: str
    check: Check
    severity: Severity
    message: str
    repaired: bool = False


def findings_table(findings: Iterable[Finding]) -> pa.Table:
    """The findings as an Arrow table of ``FINDINGS_SCHEMA`` (zero rows: a sound warehouse)."""
    rows = list(findings)
    return pa.table({name: [getattr(f, name) for f in rows] for name in FINDINGS_SCHEMA.names},
                    schema=FINDINGS_SCHEMA)
