"""What a write statement returns (shared by the embedded tables, idempotent writes and the
Spark adapter, which all hand the caller one ``WriteResult``)."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["WriteResult"]


@dataclass(frozen=True)
class WriteResult:
    """What one write statement did. ``committed`` is False inside an explicit transaction
    (the transaction's commit publishes it). ``skipped``: an idempotent write (``app_id`` and
    ``version``) whose version the table already held, so nothing was written; its
    ``txn_id`` is then the transaction that committed that version."""

    txn_id: int
    write_id: int | None
    operation: str
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    partitions: tuple[str, ...] = ()
    committed: bool = False
    metrics: dict[str, int] = field(default_factory=dict)
    skipped: bool = False
