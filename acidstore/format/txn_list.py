"""The global transaction snapshot in Hive's string form (spec 6.3).

Directory selection needs it for the ``_v<txn>`` visibility suffix of compacted directories.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from acidstore.errors import InvalidInputError
from acidstore.format.id_lists import (
    LONG_MAX,
    check_disjoint,
    check_long,
    java_split,
    merge_ids,
    normalise_ids,
    parse_long,
    resolve_min_open,
    set_field,
)

__all__ = ["ValidTxnList"]

#: Hive 4 prints runs of at least this many consecutive transaction ids as ``a-b``.
_TXN_RANGE_MIN_LENGTH = 5


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
    for piece in java_split(text, ","):
        if "-" not in piece:
            result.append(parse_long(piece, what, source))
            continue
        bounds = piece.split("-")
        if len(bounds) != 2:
            raise InvalidInputError(f"invalid {what} range {piece!r} in {source!r}")
        low = parse_long(bounds[0], what, source)
        high = parse_long(bounds[1], what, source)
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
        check_long(self.high_watermark, "high watermark")
        open_ids = normalise_ids(self.open_txn_ids, "open txn id")
        aborted_ids = normalise_ids(self.aborted_txn_ids, "aborted txn id")
        check_disjoint(open_ids, aborted_ids, "txn id")
        if (open_ids and open_ids[0] < 1) or (aborted_ids and aborted_ids[0] < 1):
            # Transaction ids start at 1; 0 marks "no transaction" and is always visible, and
            # the a-b run syntax cannot carry negative ids.
            raise InvalidInputError("open and aborted txn ids must be positive")
        set_field(self, "open_txn_ids", open_ids)
        set_field(self, "aborted_txn_ids", aborted_ids)
        set_field(self, "min_open_txn_id",
             resolve_min_open(self.min_open_txn_id, open_ids, "min open txn id"))
        set_field(self, "_invalid", frozenset(open_ids + aborted_ids))
        set_field(self, "_open_set", frozenset(open_ids))
        set_field(self, "_aborted_set", frozenset(aborted_ids))

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
        values = java_split(text, ":")
        if len(values) < 2:
            raise InvalidInputError(
                f"txn list needs <hwm>:<minOpen>[:<open>[:<aborted>]]: {text!r}"
            )
        if len(values) > 4:
            raise InvalidInputError(f"txn list has more than 4 ':' fields: {text!r}")
        hwm = parse_long(values[0], "high watermark", text)
        min_open = parse_long(values[1], "min open txn id", text)
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
        return merge_ids(self.open_txn_ids, self.aborted_txn_ids)

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
