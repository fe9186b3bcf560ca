"""The maintenance provider behind ``Table.optimize()`` and ``Table.vacuum()``.

Registered in pyproject.toml under the ``acidstore.maintenance`` entry-point group, so the
library reaches the compactors and the cleaner without importing this package
(``acidstore/api/optimize.py`` says why).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, cast

from acidstore.engine.handle import TableHandle
from compaction.cleaner import Cleaner, CleanerReport
from compaction.compactor import CompactionResult, Engine, compact

__all__ = ["CompactionMaintenance"]


class CompactionMaintenance:
    """``compact`` for optimize, a one-table ``Cleaner`` pass for vacuum."""

    def optimize(self, table: TableHandle, kind: Literal["minor", "major"],
                 partition: str | Mapping[str, str | None] | None, engine: str,
                 spark: Any) -> CompactionResult:
        # compact() refuses a kind or engine it does not know, naming it
        return compact(table, kind, partition, cast(Engine, engine), spark=spark)

    def vacuum(self, table: TableHandle, retention_seconds: float) -> CleanerReport:
        return Cleaner(table.core, retention_seconds=retention_seconds,
                       tables=[table.name]).run()
