"""``Table.optimize()`` and ``Table.vacuum()``: the table's door to the compaction package.

Delta and Iceberg users look for compaction and cleaning on the table. The compactors and
the cleaner live in the ``compaction`` package, which builds on this library, so the library
cannot import it without a cycle (docs/dev/architecture.md, "Layers").
The dependency is inverted instead: this module says what a maintenance provider offers, and
``compaction`` registers one under the ``acidstore.maintenance`` entry-point group of the
installed distribution. The provider is looked up when a method is called, never at import.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any, Literal, Protocol

from acidstore.engine.handle import TableHandle
from acidstore.errors import UnsupportedOperationError

__all__ = ["ENTRY_POINT_GROUP", "Maintenance", "OptimizeOutcome", "VacuumOutcome",
           "maintenance"]

#: the entry-point group a maintenance provider registers under (pyproject.toml)
ENTRY_POINT_GROUP = "acidstore.maintenance"


class OptimizeOutcome(Protocol):
    """What an optimize did (``compaction.CompactionResult`` has these and more)."""

    @property
    def table(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def txn_id(self) -> int | None: ...

    @property
    def compacted(self) -> bool: ...


class VacuumOutcome(Protocol):
    """What a vacuum removed (``compaction.CleanerReport`` has these and more)."""

    @property
    def removed(self) -> Sequence[str]: ...

    @property
    def kept_for_readers(self) -> Sequence[str]: ...


class Maintenance(Protocol):
    """A provider of compaction and cleaning for one table at a time."""

    def optimize(self, table: TableHandle, kind: Literal["minor", "major"],
                 partition: str | Mapping[str, str | None] | None, engine: str,
                 spark: Any) -> OptimizeOutcome: ...

    def vacuum(self, table: TableHandle, retention_seconds: float) -> VacuumOutcome: ...


def maintenance() -> Maintenance:
    """The installed provider; ``UnsupportedOperationError`` when none is installed (the
    ``compaction`` package ships with acidstore, so only a broken install lacks it)."""
    found = list(entry_points(group=ENTRY_POINT_GROUP))
    if not found:
        raise UnsupportedOperationError(
            f"no compaction provider is installed (entry-point group {ENTRY_POINT_GROUP!r}): "
            "reinstall acidstore (`pip install -e .`), or call compaction.compact and "
            "compaction.Cleaner directly")
    provider: Maintenance = found[0].load()()
    return provider
