"""Snapshots of write ids and transactions, in Hive's own string forms (spec sections 6.2-6.4).

A reader decides which ``delta_*``/``base_*`` directories and which rows it may see from a
``ValidWriteIdList``; the compactor uses ``ValidCompactorWriteIdList`` so it never folds a write
id that is still unresolved into its output. Both travel through Hive configuration as strings, so
they parse and print exactly like Hive's ``ValidReaderWriteIdList`` / ``ValidReadTxnList``:
a list written by Hive reads back here unchanged and prints back byte for byte.

Readers call these per directory rather than per row, but the single-id checks are still O(1)
(set lookups) and range checks O(log n) (bisect over the sorted exceptions); ``invalid_write_ids``
is exposed so readers can build vectorised row masks.

Where the spec and Hive differ, this module follows Hive and says so next to the code.
"""

from __future__ import annotations

import enum
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Self

from acidstore.errors import InvalidInputError

__all__ = [
    "LONG_MAX",
    "RangeResponse",
    "ValidCompactorWriteIdList",
    "ValidTxnList",
    "ValidTxnWriteIdList",
    "ValidWriteIdList",
]

#: Java's Long.MAX_VALUE: Hive's "no high watermark" and "no open id" marker in the strings.
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)

#: Hive 4 prints runs of at least this many consecutive transaction ids as ``a-b``.
_TXN_RANGE_MIN_LENGTH = 5

_LONG_RE = re.compile(r"[+-]?[0-9]+")


class RangeResponse(enum.Enum):
    """How many write ids of a closed range ``[a, b]`` a snapshot accepts."""

    NONE = "NONE"
    SOME = "SOME"
    ALL = "ALL"


# --- parsing helpers (Java semantics, so Hive-written strings behave as they do in Hive) ------


def _java_split(text: str, sep: str) -> list[str]:
    """``String.split`` drops trailing empty fields; Hive's field counting depends on that
    (``t:10:9223372036854775807::`` has 3 fields, hence no exceptions)."""
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def _parse_long(text: str, what: str, source: str) -> int:
    """``Long.parseLong``: optional sign, ASCII digits, 64-bit range; Python's ``int()`` would
    also accept spaces and underscores, which Hive rejects."""
    if _LONG_RE.fullmatch(text) is None:
        raise InvalidInputError(f"invalid {what} {text!r} in {source!r}")
    value = int(text)
    if not LONG_MIN <= value <= LONG_MAX:
        raise InvalidInputError(f"{what} {text} does not fit a 64-bit long in {source!r}")
    return value


def _parse_id_list(text: str, what: str, source: str) -> list[int]:
    return [_parse_long(part, what, source) for part in _java_split(text, ",")]


def _check_long(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{what} must be an int, got {value!r}")
    if not LONG_MIN <= value <= LONG_MAX:
        raise InvalidInputError(f"{what} {value} does not fit a 64-bit long")


def _normalise_ids(ids: Iterable[int], what: str) -> tuple[int, ...]:
    values = tuple(ids)
    for value in values:
        _check_long(value, what)
    result = tuple(sorted(values))
    for left, right in pairwise(result):
        if left == right:
            raise InvalidInputError(f"{what} {left} is listed twice")
    return result


def _check_disjoint(open_ids: tuple[int, ...], aborted_ids: tuple[int, ...], what: str) -> None:
    both = set(open_ids).intersection(aborted_ids)
    if both:
        raise InvalidInputError(f"{what} {min(both)} is listed as both open and aborted")


def _merge(open_ids: tuple[int, ...], aborted_ids: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(open_ids + aborted_ids))


def _count_between(sorted_ids: tuple[int, ...], low: int, high: int) -> int:
    if low > high:
        return 0
    return bisect_right(sorted_ids, high) - bisect_left(sorted_ids, low)


def _range_valid(exceptions: tuple[int, ...], hwm: int, low: int, high: int) -> RangeResponse:
    """Hive's ``isWriteIdRangeValid``/``isTxnRangeValid``, including its shortcuts.

    Hive answers ALL as soon as the first exception lies above ``high``, even when ``high`` is
    above the high watermark; with an empty exception list the part above the watermark counts
    as invalid instead (so ``[50, 105]`` at hwm 100 is SOME). Lists built by the metastore never
    hold exceptions above their watermark, where both paths agree with a brute-force count.
    """
    if low > hwm:
        return RangeResponse.NONE
    if exceptions and exceptions[0] > high:
        return RangeResponse.ALL
    count = max(0, high - hwm) + _count_between(exceptions, low, high)
    if count == 0:
        return RangeResponse.ALL
    if count == high - low + 1:
        return RangeResponse.NONE
    return RangeResponse.SOME


def _range_aborted(aborted: tuple[int, ...], hwm: int, low: int, high: int) -> RangeResponse:
    """Hive's ``isWriteIdRangeAborted``: only aborted exceptions count; nothing above hwm."""
    if hwm < low:
        return RangeResponse.NONE
    count = _count_between(aborted, low, high)
    if count == 0:
        return RangeResponse.NONE
    if count == high - low + 1:
        return RangeResponse.ALL
    return RangeResponse.SOME


def _resolve_min_open(given: int | None, open_ids: tuple[int, ...], what: str) -> int | None:
    """``None`` means "derive it": the smallest open id, as the metastore writes it.

    Long.MAX_VALUE is Hive's own "unset" marker and is stored as ``None`` without deriving, so
    a (never Hive-written) string with open ids but a MAX minimum reads back as is.
    """
    if given is None:
        given = open_ids[0] if open_ids else LONG_MAX
    _check_long(given, what)
    return None if given == LONG_MAX else given


def _set(obj: object, name: str, value: object) -> None:
    object.__setattr__(obj, name, value)


# --- write id lists ---------------------------------------------------------------------------


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
            _set(self, "table_name", None if name == "null" else name)
        _check_long(self.high_watermark, "high watermark")
        open_ids = _normalise_ids(self.open_write_ids, "open write id")
        aborted_ids = _normalise_ids(self.aborted_write_ids, "aborted write id")
        _check_disjoint(open_ids, aborted_ids, "write id")
        open_ids, aborted_ids = self._keep_exceptions(open_ids, aborted_ids)
        _set(self, "open_write_ids", open_ids)
        _set(self, "aborted_write_ids", aborted_ids)
        _set(self, "min_open_write_id",
             _resolve_min_open(self.min_open_write_id, open_ids, "min open write id"))
        exceptions = _merge(open_ids, aborted_ids)
        _set(self, "_exceptions", exceptions)
        _set(self, "_invalid", frozenset(exceptions))
        _set(self, "_open_set", frozenset(open_ids))
        _set(self, "_aborted_set", frozenset(aborted_ids))

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
        values = _java_split(text, ":")
        if len(values) < 3:
            raise InvalidInputError(
                f"write id list needs <table>:<hwm>:<minOpen>[:<open>[:<aborted>]]: {text!r}"
            )
        if len(values) > 5:
            raise InvalidInputError(f"write id list has more than 5 ':' fields: {text!r}")
        name: str | None = values[0]
        if values[0].lower() == "null":
            name = None
        hwm = _parse_long(values[1], "high watermark", text)
        min_open = _parse_long(values[2], "min open write id", text)
        open_ids = _parse_id_list(values[3], "open write id", text) if len(values) > 3 else []
        aborted = _parse_id_list(values[4], "aborted write id", text) if len(values) > 4 else []
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
        return _range_valid(self._exceptions, hwm, min_write_id, max_write_id)

    def is_write_id_aborted(self, write_id: int) -> bool:
        return write_id in self._aborted_set

    def is_write_id_range_aborted(self, min_write_id: int, max_write_id: int) -> RangeResponse:
        """ALL means a delta holds nothing but aborted writes, so it can be skipped and cleaned."""
        if not self.aborted_write_ids:
            return RangeResponse.NONE
        return _range_aborted(
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


# --- transaction lists ------------------------------------------------------------------------


def _format_txn_ids(ids: tuple[int, ...]) -> str:
    """Hive 4 ``ValidReadTxnList#writeTxnRange``: runs of 5+ consecutive ids print as ``a-b``."""
    pieces: list[str] = []
    start = 0
    while start < len(ids):
        end = start
        while end + 1 < len(ids) and ids[end + 1] == ids[end] + 1:
            end += 1
        if end - start + 1 >= _TXN_RANGE_MIN_LENGTH:
            pieces.append(f"{ids[start]}-{ids[end]}")
        else:
            pieces.extend(str(txn) for txn in ids[start : end + 1])
        start = end + 1
    return ",".join(pieces)


def _parse_txn_ids(text: str, what: str, source: str) -> list[int]:
    """Accepts both plain ids and Hive 4's ``a-b`` runs (an empty run like ``9-4`` adds none)."""
    result: list[int] = []
    for piece in _java_split(text, ","):
        if "-" not in piece:
            result.append(_parse_long(piece, what, source))
            continue
        bounds = piece.split("-")
        if len(bounds) != 2:
            raise InvalidInputError(f"invalid {what} range {piece!r} in {source!r}")
        low = _parse_long(bounds[0], what, source)
        high = _parse_long(bounds[1], what, source)
        result.extend(range(low, high + 1))
    return result


@dataclass(frozen=True)
class ValidTxnList:
    """The global transaction snapshot (Hive's ``ValidReadTxnList``, conf ``hive.txn.valid.txns``).

    Directory selection needs it for the ``_v<txn>`` visibility suffix: a compacted directory
    only counts once the compactor's transaction has committed. Prints as
    ``<hwm>:<minOpen>:<open>:<aborted>`` with Hive 4's ``a-b`` run compression.
    """

    high_watermark: int
    open_txn_ids: tuple[int, ...] = ()
    aborted_txn_ids: tuple[int, ...] = ()
    min_open_txn_id: int | None = None
    _invalid: frozenset[int] = field(init=False, repr=False, compare=False)
    _open_set: frozenset[int] = field(init=False, repr=False, compare=False)
    _aborted_set: frozenset[int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        _check_long(self.high_watermark, "high watermark")
        open_ids = _normalise_ids(self.open_txn_ids, "open txn id")
        aborted_ids = _normalise_ids(self.aborted_txn_ids, "aborted txn id")
        _check_disjoint(open_ids, aborted_ids, "txn id")
        if (open_ids and open_ids[0] < 1) or (aborted_ids and aborted_ids[0] < 1):
            # Transaction ids start at 1; 0 marks "no transaction" and is always visible, and
            # the a-b run syntax cannot carry negative ids.
            raise InvalidInputError("open and aborted txn ids must be positive")
        _set(self, "open_txn_ids", open_ids)
        _set(self, "aborted_txn_ids", aborted_ids)
        _set(self, "min_open_txn_id",
             _resolve_min_open(self.min_open_txn_id, open_ids, "min open txn id"))
        _set(self, "_invalid", frozenset(open_ids + aborted_ids))
        _set(self, "_open_set", frozenset(open_ids))
        _set(self, "_aborted_set", frozenset(aborted_ids))

    @classmethod
    def all_valid(cls) -> ValidTxnList:
        """Every transaction committed: what Hive assumes without a configured list."""
        return cls(LONG_MAX)

    @classmethod
    def parse(cls, text: str | None) -> ValidTxnList:
        """Read ``<hwm>:<minOpen>[:<open>[:<aborted>]]``; empty or ``None`` => all valid."""
        if not text:
            return cls.all_valid()
        if not isinstance(text, str):
            raise InvalidInputError(f"txn list must be a string, got {text!r}")
        values = _java_split(text, ":")
        if len(values) < 2:
            raise InvalidInputError(
                f"txn list needs <hwm>:<minOpen>[:<open>[:<aborted>]]: {text!r}"
            )
        if len(values) > 4:
            raise InvalidInputError(f"txn list has more than 4 ':' fields: {text!r}")
        hwm = _parse_long(values[0], "high watermark", text)
        min_open = _parse_long(values[1], "min open txn id", text)
        open_ids = _parse_txn_ids(values[2], "open txn id", text) if len(values) > 2 else []
        aborted = _parse_txn_ids(values[3], "aborted txn id", text) if len(values) > 3 else []
        return cls(hwm, tuple(open_ids), tuple(aborted), min_open)

    def __str__(self) -> str:
        min_open = LONG_MAX if self.min_open_txn_id is None else self.min_open_txn_id
        open_ids = _format_txn_ids(self.open_txn_ids)
        aborted = _format_txn_ids(self.aborted_txn_ids)
        return f"{self.high_watermark}:{min_open}:{open_ids}:{aborted}"

    @property
    def exceptions(self) -> tuple[int, ...]:
        """Open and aborted transactions together, sorted."""
        return _merge(self.open_txn_ids, self.aborted_txn_ids)

    def is_txn_valid(self, txn_id: int) -> bool:
        """Committed in this snapshot. Txn 0 (no visibility suffix) is always valid: Hive checks
        that at the call site in AcidUtils; it is folded in here so callers cannot forget it."""
        if txn_id == 0:
            return True
        return txn_id <= self.high_watermark and txn_id not in self._invalid

    def is_txn_aborted(self, txn_id: int) -> bool:
        return txn_id in self._aborted_set

    def is_txn_open(self, txn_id: int) -> bool:
        """Listed as open in this snapshot (ids above the watermark are unknown, not open)."""
        return txn_id in self._open_set


@dataclass(frozen=True)
class ValidTxnWriteIdList:
    """Per-table write-id lists of one transaction (conf ``hive.txn.tables.valid.writeids``).

    Prints as ``<txnId>$<list>$<list>...``. Hive keeps the tables in a HashMap, so its order is
    unspecified; here the given order is kept, which makes printing deterministic.
    """

    txn_id: int
    tables: tuple[ValidWriteIdList, ...] = ()

    def __post_init__(self) -> None:
        _check_long(self.txn_id, "txn id")
        tables = tuple(self.tables)
        names = [table.table_name for table in tables]
        for name in names:
            if names.count(name) > 1:
                raise InvalidInputError(f"table {name} appears twice in txn {self.txn_id}")
        _set(self, "tables", tables)

    @classmethod
    def parse(cls, text: str) -> ValidTxnWriteIdList:
        """Each ``$``-separated part after the txn id is read as a reader list (as Hive does,
        so a compactor list travelling in this form comes back with reader semantics)."""
        if not text:
            raise InvalidInputError("a txn write id list needs at least the txn id")
        parts = _java_split(text, "$")
        if not parts:
            raise InvalidInputError(f"a txn write id list needs at least the txn id: {text!r}")
        txn_id = _parse_long(parts[0], "txn id", text)
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
