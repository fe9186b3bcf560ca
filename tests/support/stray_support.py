"""What a compaction of a warehouse table does with a stray (a directory or file no write or
compaction recorded): it plans from the metastore's record, as reads do, so it neither
reads nor folds the stray; the stray stays on disk untouched (also through a cleaner pass),
and ``fsck`` keeps reporting it."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from acidstore import Table
from acidstore.engine.handle import handle_of
from acidstore.fsck import fsck

__all__ = ["assert_compaction_ignores", "contents", "fsck_checks"]


def contents(path: Path) -> dict[str, bytes]:
    """Every file at or below ``path`` (relative name -> bytes): what "untouched" compares."""
    if path.is_file():
        return {"": path.read_bytes()}
    return {str(p.relative_to(path)): p.read_bytes() for p in sorted(path.rglob("*"))
            if p.is_file()}


def fsck_checks(table: Table, path: Path) -> set[str]:
    """The fsck checks that name ``path``."""
    found = fsck(handle_of(table).core, table.name).to_pylist()
    return {f["check"] for f in found if f["path"] == str(path)}


def _rows(table: Table) -> pa.Table:
    rows = table.to_arrow(with_row_id=True)
    return rows.sort_by([(name, "ascending") for name in rows.column_names
                         if name != "row__id"])


def assert_compaction_ignores(table: Table, stray: Path, kinds: tuple[str, ...] = ("major",),
                              *, compacts: bool = True, clean: bool = True) -> None:
    """Compact ``table`` (each of ``kinds``; ``compacts``: at least one of them must have had
    something to compact, so the stray was next to real work) and clean it; then the rows
    (with their ROW__IDs) are those read before, the stray is there with the same bytes, and
    fsck still reports it."""
    from compaction import Cleaner, compact

    before = _rows(table)
    held = contents(stray)
    assert held or stray.is_dir()
    reported = fsck_checks(table, stray)
    assert reported, f"fsck does not report {stray}"
    results = [compact(table, kind) for kind in kinds]  # type: ignore[arg-type]
    if compacts:
        assert any(r.compacted for r in results), results
    assert _rows(table).equals(before)
    if clean:
        Cleaner(handle_of(table).core, retention_seconds=0).run()
        assert _rows(table).equals(before)
    assert stray.exists(), f"{stray} was removed"
    assert contents(stray) == held
    assert fsck_checks(table, stray), f"fsck no longer reports {stray}"
