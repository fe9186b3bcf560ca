"""A process's memory of the committed components each table recorded (layer L3).

Every DML statement and read checks what it lists against the metastore's record of the
committed writes above each partition's base (``read.recorded``). Reloading that record for
every statement cost each one-row UPDATE of W12 a query whose rows grow with the writes since
the base (0.4-0.9 ms, more as deltas pile up), while between two statements of one process
only a commit or two is new. So a process keeps, per metastore object and table, what it
loaded and the commit sequence number it was loaded at, and asks the metastore only for the
commits numbered after it (``CommitLog.committed_log``).

It answers exactly what ``History.committed_components(table, min_write_id=floor)`` would:
- a committed component never changes (a commit writes its final components in the
  transaction that marks it committed) and is never removed (only an aborted write's are);
- an aborted or still open write has no committed component, and one that commits later is
  numbered after every commit seen so far, so the next load takes it, whatever its write id;
- a table dropped and created again under its name has a new table id: all is loaded again;
- a lower floor than the one loaded (a read selects an older base) loads all again from it.
Only a metastore whose commit numbers are seen in order offers ``committed_log`` (SQLite);
with any other every call loads as before.
"""

from __future__ import annotations

import bisect
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

from acidstore.config import RECORD_COMPONENTS_KEPT, RECORD_DERIVED_KEPT
from acidstore.metastore import History, WriteComponent
from acidstore.metastore.history import CommitLog
from acidstore.metastore.records import ComponentLog, LoggedComponent

__all__ = ["committed_components", "derived"]

T = TypeVar("T")


@dataclass
class _Remembered:
    """One table's committed components with write id >= ``floor``, by (txn, component)."""

    table_id: int
    floor: int
    seq: int
    components: dict[tuple[int, int], WriteComponent] = field(default_factory=dict)
    #: the keys of ``components`` in order (a new commit's usually go at the end)
    keys: list[tuple[int, int]] = field(default_factory=list)
    #: (floor, derive) -> what ``derived`` computed, until the next ``add``
    derived: dict[tuple[int, Callable[..., object]], object] = field(default_factory=dict)

    def add(self, logged: tuple[LoggedComponent, ...]) -> None:
        for item in logged:
            key = (item.txn_id, item.component_id)
            if item.component.write_id >= self.floor and key not in self.components:
                self.components[key] = item.component
                bisect.insort(self.keys, key)
                self.derived.clear()

    def at_or_above(self, floor: int) -> tuple[WriteComponent, ...]:
        found = (self.components[key] for key in self.keys)
        return tuple(found) if floor <= self.floor else \
            tuple(c for c in found if c.write_id >= floor)


_memory: weakref.WeakKeyDictionary[CommitLog, dict[str, _Remembered]] = \
    weakref.WeakKeyDictionary()
_lock = threading.Lock()


def _loaded(log: ComponentLog, floor: int) -> _Remembered:
    remembered = _Remembered(log.table_id, floor, log.seq)
    remembered.add(log.components)
    return remembered


def committed_components(metastore: History, table: str, floor: int
                         ) -> list[WriteComponent]:
    """``metastore.committed_components(table, min_write_id=floor or None)``, from what this
    process loaded before plus the commits since (see the module docstring)."""
    return list(derived(metastore, table, floor, tuple))


def derived(metastore: History, table: str, floor: int,
            derive: Callable[[Sequence[WriteComponent]], T]) -> T:
    """``derive`` of the components ``committed_components`` answers, computed once while no
    commit of the table is new (per floor and ``derive``): a reader that turns the record
    into its own lookups does so once, not per statement. ``derive`` must be a pure
    function and its result is shared, so it must not be changed."""
    if not isinstance(metastore, CommitLog):
        return derive(metastore.committed_components(table, min_write_id=floor or None))
    held = _current(metastore, table.lower(), table, floor)
    with _lock:
        key = (floor, derive)
        if key not in held.derived:
            if len(held.derived) >= RECORD_DERIVED_KEPT:
                held.derived.clear()
            held.derived[key] = derive(held.at_or_above(floor))
        return cast(T, held.derived[key])


def _current(metastore: CommitLog, key: str, table: str, floor: int) -> _Remembered:
    """The table's components from ``floor`` up, as of now (kept unless too many)."""
    with _lock:
        tables = _memory.setdefault(metastore, {})
        held = tables.get(key)
    if held is not None and floor >= held.floor:
        log = metastore.committed_log(table, after_seq=held.seq)
        # a lower sequence than the one held: the metastore's file was replaced by an older
        # one (a restored backup), so what is held may name commits it no longer has
        if log.table_id == held.table_id and log.seq >= held.seq:
            with _lock:
                # another thread may have moved it on meanwhile: both loads are complete up
                # to their own seq, and a component is the same whoever loaded it
                if log.seq > held.seq:
                    held.add(log.components)
                    held.seq = log.seq
                if len(held.components) > RECORD_COMPONENTS_KEPT:
                    tables.pop(key, None)
            return held
    fresh = _loaded(metastore.committed_log(table, min_write_id=floor), floor)
    with _lock:
        if len(fresh.components) <= RECORD_COMPONENTS_KEPT:
            tables[key] = fresh
    return fresh
