"""Helpers of the directory-selection tests: Hive's TestAcidUtils partitions rebuilt as real
directories (its MockFile lists become files under ``tmp_path``)."""

from __future__ import annotations

from pathlib import Path

LONG_MAX = 2**63 - 1
#: ValidReadTxnList(no exceptions, hwm 1000) as Hive's tests configure it
ALL_TXNS = f"1000:{LONG_MAX}::"
#: ValidReadTxnList({50} open, hwm 1000, minOpen 55): "txn 50 is open and writing write id 4"
TXN_50_OPEN = "1000:55:50:"
COMPACTED = '{"thisFileVersion":"0","dataFormat":"compacted"}'


def reader(hwm: int) -> str:
    """Hive's ``new ValidReaderWriteIdList("tbl:<hwm>:" + Long.MAX_VALUE + ":")``."""
    return f"tbl:{hwm}:{LONG_MAX}:"


def make(root: Path, *paths: str, size: int = 500) -> Path:
    """Create files (and their directories) below ``root``, like Hive's MockFile list."""
    for relative in paths:
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"x" * size)
    root.mkdir(parents=True, exist_ok=True)
    return root


def mark_compacted(part: Path, *bases: str) -> None:
    """What a pre-Hive-4 major compaction leaves in its base: a ``_metadata_acid`` marker."""
    for base in bases:
        (part / base / "_metadata_acid").write_text(COMPACTED)
