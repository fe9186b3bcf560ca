"""Write-id snapshots, in Hive's own string forms (spec sections 6.2 and 6.4).

A reader decides which ``delta_*``/``base_*`` directories and which rows it may see from a
``ValidWriteIdList``; the compactor uses ``ValidCompactorWriteIdList`` so it never folds a write
id that is still unresolved into its output. Both travel through Hive configuration as strings, so
they parse and print exactly like Hive's ``ValidReaderWriteIdList`` / ``ValidReadTxnList``:
a list written by Hive reads back here unchanged and prints back byte for byte.

Readers call these per directory rather than per row, but the single-id checks are still O(1)
(set lookups) and range checks O(log n) (bisect over the sorted exceptions); ``invalid_write_ids``
is exposed so readers can build vectorised row masks.

Where the spec and Hive differ, this module follows Hive and says so next to the code.
``ValidTxnList`` is defined in ``txn_list`` and re-exported here, so that the three lists users
and other engines pass around come from one module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Self

from acidstore.errors import InvalidInputError
from acidstore.format.id_lists import (
    LONG_MAX,
    RangeResponse,
    check_disjoint,
    check_long,
    java_split,
    merge_ids,
    normalise_ids,
    parse_id_list,
    parse_long,
    range_aborted,
    range_valid,
    resolve_min_open,
    set_field,
)
from acidstore.format.txn_list import ValidTxnList

__all__ = [
    "LONG_MAX",
    "RangeResponse",
    "ValidCompactorWriteIdList",
    "ValidTxnList",
    "ValidTxnWriteIdList",
    "ValidWriteIdList",
]


@dataclass(frozen=True)
class ValidWriteIdList:
    """One table's write-id snapshot (Hive's ``ValidReaderWriteIdList``).

    A write id is visible iff it is at or below the high watermark and is neither open nor
    aborted. Prints as ``<db.table>:<hwm>:<minOpen>:<open,...>:<aborted,...>``.
    """

    table_name: str | None
    high_watermark: int
    open_write_ids: tuple[int, ...] = ()
    aborted_write_ids: tuple[int, ...] = ()
    min_open_write_id: int | None = None
    _exceptions: tuple[int, ...] = field(init=False, repr=False, compare=False)
    _invalid: frozenset[int] = field(init=False, repr=False, compare=False)
    _open_set: frozenset[int] = field(init=False, repr=False, compare=False)
    _aborted_set: frozenset[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        name = self.table_name
        if name is not None:
            if not isinstance(name, str):
                raise InvalidInputError(f"table name must be a string, got {name!r}")
            # Hive names are lower-case db.table; "null" is how Hive spells a missing name, so
            # a table literally called "null" could not survive a round trip anyway.
            name = name.lower()
            if ":" in name or "$" in name:
                raise InvalidInputError(f"table name {name!r} cannot contain ':' or '$'")
            set_field(self, "table_name", None if name == "null" else name)
        check_long(self.high_watermark, "high watermark")
        open_ids = normalise_ids(self.open_write_ids, "open write id")
        aborted_ids = normalise_ids(self.aborted_write_ids, "aborted write id")
        check_disjoint(open_ids, aborted_ids, "write id")
        open_ids, aborted_ids = self._keep_exceptions(open_ids, aborted_ids)
        set_field(self, "open_write_ids", open_ids)
        set_field(self, "aborted_write_ids", aborted_ids)
        set_field(self, "min_open_write_id",
             resolve_min_open(self.min_open_write_id, open_ids, "min open write id"))
        exceptions = merge_ids(open_ids, aborted_ids)
        set_field(self, "_exceptions", exceptions)
        set_field(self, "_invalid", frozenset(exceptions))
        set_field(self, "_open_set", frozenset(open_ids))
        set_field(self, "_aborted_set", frozenset(aborted_ids))

    def _keep_exceptions(
        self, open_ids: tuple[int, ...], aborted_ids: tuple[int, ...]
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        """Hook for the compactor list, which drops exceptions above its watermark."""
        return open_ids, aborted_ids

    # --- construction -------------------------------------------------------------------------

    @classmethod
    def all_valid(cls, table_name: str | None = None) -> Self:
        """What Hive uses when no list is configured: every write id is committed."""
        return cls(table_name, LONG_MAX)

    @classmethod
    def parse(cls, text: str | None) -> Self:
        """Read Hive's string form (``readFromString``).

        Empty or ``None`` means everything is valid. After Java's split (which drops trailing
        empty fields): fewer than 4 fields => no exceptions, 4 => open ids only, 5 => open and
        aborted ids. Hive ignores fields past the fifth; they cannot come from Hive's writer, so
        they are rejected here rather than silently dropped.
        """
        if not text:
            return cls.all_valid()
        if not isinstance(text, str):
            raise InvalidInputError(f"write id list must be a string, got {text!r}")
        values = java_split(text, ":")
        if len(values) < 3:
            raise InvalidInputError(
                f"write id list needs <table>:<hwm>:<minOpen>[:<open>[:<aborted>]]: {text!r}"
            )
        if len(values) > 5:
            raise InvalidInputError(f"write id list has more than 5 ':' fields: {text!r}")
        name: str | None = values[0]
        if values[0].lower() == "null":
            name = None
        hwm = parse_long(values[1], "high watermark", text)
        min_open = parse_long(values[2], "min open write id", text)
        open_ids = parse_id_list(values[3], "open write id", text) if len(values) > 3 else []
        aborted = parse_id_list(values[4], "aborted write id", text) if len(values) > 4 else []
        return cls(name, hwm, tuple(open_ids), tuple(aborted), min_open)

    def __str__(self) -> str:
        name = "null" if self.table_name is None else self.table_name
        min_open = LONG_MAX if self.min_open_write_id is None else self.min_open_write_id
        open_ids = ",".join(map(str, self.open_write_ids))
        aborted = ",".join(map(str, self.aborted_write_ids))
        return f"{name}:{self.high_watermark}:{min_open}:{open_ids}:{aborted}"

    # --- views --------------------------------------------------------------------------------

    @property
    def exceptions(self) -> tuple[int, ...]:
        """Open and aborted ids together, sorted (Hive's ``getInvalidWriteIds``)."""
        return self._exceptions

    @property
    def invalid_write_ids(self) -> frozenset[int]:
        """The exceptions as a set, for vectorised row masks (``isin`` over a write-id column).

        Ids above the high watermark are invalid too but are not in this set.
        """
        return self._invalid

    # --- questions ----------------------------------------------------------------------------

    def is_write_id_valid(self, write_id: int) -> bool:
        """Committed in this snapshot: at or below the watermark and not an exception."""
        return write_id <= self.high_watermark and write_id not in self._invalid

    def is_valid_base(self, write_id: int) -> bool:
        """A compacted ``base_N`` is usable only if no write id up to N is still open.

        Strictly below the minimum open id: a base equal to it would contain the open write.
        """
        below_open = self.min_open_write_id is None or write_id < self.min_open_write_id
        return below_open and write_id <= self.high_watermark

    def is_write_id_range_valid(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """Whether a delta ``delta_a_b`` is wholly, partly or not at all committed."""
        hwm = self.high_watermark
        if not self._exceptions and min_write_id <= hwm and max_write_id <= hwm:
            # the usual answer, asked about every directory of a partition per statement
            return RangeResponse.ALL
        return range_valid(self._exceptions, hwm, min_write_id, max_write_id)

    def is_write_id_aborted(self, write_id: int) -> bool:
        return write_id in self._aborted_set

    def is_write_id_range_aborted(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """ALL means a delta holds nothing but aborted writes, so it can be skipped and cleaned."""
        if not self.aborted_write_ids:
            return RangeResponse.NONE
        return range_aborted(
            self.aborted_write_ids, self.high_watermark, min_write_id, max_write_id
        )

    def is_write_id_open(self, write_id: int) -> bool:
        """Listed as open in this snapshot (ids above the watermark are unknown, not open)."""
        return write_id in self._open_set

    def to_compactor(self) -> ValidCompactorWriteIdList:
        """The compactor's view of this snapshot (Hive ``TxnUtils#createValidCompactWriteIdList``).

        Only aborted ids stay exceptions; with a minimum open id the watermark drops to just
        below it, so no compacted output can reach an unresolved write.

        Hive details kept on purpose (the spec states only the gist):
        - the trigger is the minimum open id being set, not the open list being non-empty;
        - Hive's loop stops collecting at the first open id (its index into the aborted bits
          stalls there), so only aborted ids below the first open id survive; with a normal
          list those are exactly the aborted ids at or below the new watermark;
        - Hive's constructor records the minimum open id only when some exception survives,
          so ``t:10:5:5:`` becomes ``t:4:9223372036854775807::`` but ``t:10:5:5:3`` becomes
          ``t:4:5::3``.
        """
        kept: list[int] = []
        for write_id in self._exceptions:
            if write_id in self._open_set:
                break
            kept.append(write_id)
        if self.min_open_write_id is not None:
            hwm = self.min_open_write_id - 1
            min_open = self.min_open_write_id if kept else None
        else:
            hwm, min_open = self.high_watermark, None
        return ValidCompactorWriteIdList(self.table_name, hwm, (), tuple(kept), min_open)


@dataclass(frozen=True)
class ValidCompactorWriteIdList(ValidWriteIdList):
    """The compactor's snapshot: same fields and string form, stricter range answers.

    Any write id above the watermark is unresolved, and a delta reaching one must not be
    compacted yet (it would produce e.g. ``delta_17_120`` while 80 is still open), so a range
    is ALL iff it ends at or below the watermark, else NONE.
    """

    def _keep_exceptions(
        self, open_ids: tuple[int, ...], aborted_ids: tuple[int, ...]
    ) -> tuple[tuple[int, ...], tuple[int, ...]]:
        # Hive's constructor throws away exceptions above the watermark. Hive's string
        # constructor does not, but Hive never writes such a compactor string.
        hwm = self.high_watermark
        return (
            tuple(w for w in open_ids if w <= hwm),
            tuple(w for w in aborted_ids if w <= hwm),
        )

    def is_write_id_range_valid(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        return RangeResponse.ALL if max_write_id <= self.high_watermark else RangeResponse.NONE

    def is_write_id_aborted(self, write_id: int) -> bool:
        """Every exception counts as aborted: the compactor list holds nothing else."""
        return write_id in self._invalid

    def to_compactor(self) -> ValidCompactorWriteIdList:
        return self


@dataclass(frozen=True)
class ValidTxnWriteIdList:
    """Per-table write-id lists of one transaction (conf ``hive.txn.tables.valid.writeids``).

    Prints as ``<txnId>$<list>$<list>...``. Hive keeps the tables in a HashMap, so its order is
    unspecified; here the given order is kept, which makes printing deterministic.
    """

    txn_id: int
    tables: tuple[ValidWriteIdList, ...] = ()

    def __post_init__(self) -> None:
        check_long(self.txn_id, "txn id")
        tables = tuple(self.tables)
        names = [table.table_name for table in tables]
        for name in names:
            if names.count(name) > 1:
                raise InvalidInputError(f"table {name} appears twice in txn {self.txn_id}")
        set_field(self, "tables", tables)

    @classmethod
    def parse(cls, text: str) -> ValidTxnWriteIdList:
        """Each ``$``-separated part after the txn id is read as a reader list (as Hive does,
        so a compactor list travelling in this form comes back with reader semantics)."""
        if not text:
            raise InvalidInputError("a txn write id list needs at least the txn id")
        parts = java_split(text, "$")
        if not parts:
            raise InvalidInputError(f"a txn write id list needs at least the txn id: {text!r}")
        txn_id = parse_long(parts[0], "txn id", text)
        return cls(txn_id, tuple(ValidWriteIdList.parse(part) for part in parts[1:]))

    def __str__(self) -> str:
        return "$".join([str(self.txn_id), *(str(table) for table in self.tables)])

    def table(self, name: str) -> ValidWriteIdList:
        """The list of ``db.table`` (names compare case-insensitively, as Hive lower-cases)."""
        wanted = name.lower()
        for table in self.tables:
            if table.table_name == wanted:
                return table
        known = ", ".join(str(table.table_name) for table in self.tables) or "none"
        raise InvalidInputError(
            f"txn {self.txn_id} has no write id list for table {name!r} (has: {known})"
        )
