"""What write-id and transaction lists share: Java's reading of their string forms, the
checks their id sets must pass, and the range answers a directory's span gets.

Hive writes these strings, so they are read with Java's semantics (``String.split``,
``Long.parseLong``): a string Hive accepts reads the same here, and one it rejects is rejected.
"""

from __future__ import annotations

import enum
import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable
from itertools import pairwise

from acidstore.errors import InvalidInputError

__all__ = [
    "LONG_MAX",
    "LONG_MIN",
    "RangeResponse",
    "check_disjoint",
    "check_long",
    "java_split",
    "merge_ids",
    "normalise_ids",
    "parse_id_list",
    "parse_long",
    "range_aborted",
    "range_valid",
    "resolve_min_open",
    "set_field",
]

#: Java's Long.MAX_VALUE: Hive's "no high watermark" and "no open id" marker in the strings.
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)

_LONG_RE = re.compile(r"[+-]?[0-9]+")


class RangeResponse(enum.Enum):
    """How many write ids of a closed range ``[a, b]`` a snapshot accepts."""

    NONE = "NONE"
    SOME = "SOME"
    ALL = "ALL"


# --- parsing helpers (Java semantics, so Hive-written strings behave as they do in Hive) ------


def java_split(text: str, sep: str) -> list[str]:
    """``String.split`` drops trailing empty fields; Hive's field counting depends on that
    (``t:10:9223372036854775807::`` has 3 fields, hence no exceptions)."""
    parts = text.split(sep)
    while parts and parts[-1] == "":
        parts.pop()
    return parts


def parse_long(text: str, what: str, source: str) -> int:
    """``Long.parseLong``: optional sign, ASCII digits, 64-bit range; Python's ``int()`` would
    also accept spaces and underscores, which Hive rejects."""
    if _LONG_RE.fullmatch(text) is None:
        raise InvalidInputError(f"invalid {what} {text!r} in {source!r}")
    value = int(text)
    if not LONG_MIN <= value <= LONG_MAX:
        raise InvalidInputError(f"{what} {text} does not fit a 64-bit long in {source!r}")
    return value


def parse_id_list(text: str, what: str, source: str) -> list[int]:
    return [parse_long(part, what, source) for part in java_split(text, ",")]


def check_long(value: int, what: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{what} must be an int, got {value!r}")
    if not LONG_MIN <= value <= LONG_MAX:
        raise InvalidInputError(f"{what} {value} does not fit a 64-bit long")


def normalise_ids(ids: Iterable[int], what: str) -> tuple[int, ...]:
    values = tuple(ids)
    for value in values:
        check_long(value, what)
    result = tuple(sorted(values))
    for left, right in pairwise(result):
        if left == right:
            raise InvalidInputError(f"{what} {left} is listed twice")
    return result


def check_disjoint(open_ids: tuple[int, ...], aborted_ids: tuple[int, ...], what: str) -> None:
    both = set(open_ids).intersection(aborted_ids)
    if both:
        raise InvalidInputError(f"{what} {min(both)} is listed as both open and aborted")


def merge_ids(open_ids: tuple[int, ...], aborted_ids: tuple[int, ...]) -> tuple[int, ...]:
    return tuple(sorted(open_ids + aborted_ids))


def count_between(sorted_ids: tuple[int, ...], low: int, high: int) -> int:
    if low > high:
        return 0
    return bisect_right(sorted_ids, high) - bisect_left(sorted_ids, low)


def range_valid(exceptions: tuple[int, ...], hwm: int, low: int, high: int) -> RangeResponse:
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
    count = max(0, high - hwm) + count_between(exceptions, low, high)
    if count == 0:
        return RangeResponse.ALL
    if count == high - low + 1:
        return RangeResponse.NONE
    return RangeResponse.SOME


def range_aborted(aborted: tuple[int, ...], hwm: int, low: int, high: int) -> RangeResponse:
    """Hive's ``isWriteIdRangeAborted``: only aborted exceptions count; nothing above hwm."""
    if hwm < low:
        return RangeResponse.NONE
    count = count_between(aborted, low, high)
    if count == 0:
        return RangeResponse.NONE
    if count == high - low + 1:
        return RangeResponse.ALL
    return RangeResponse.SOME


def resolve_min_open(given: int | None, open_ids: tuple[int, ...], what: str) -> int | None:
    """``None`` means "derive it": the smallest open id, as the metastore writes it.

    Long.MAX_VALUE is Hive's own "unset" marker and is stored as ``None`` without deriving, so
    a (never Hive-written) string with open ids but a MAX minimum reads back as is.
    """
    if given is None:
        given = open_ids[0] if open_ids else LONG_MAX
    check_long(given, what)
    return None if given == LONG_MAX else given


def set_field(obj: object, name: str, value: object) -> None:
    """The lists are frozen dataclasses that normalise their fields once, in ``__post_init__``."""
    object.__setattr__(obj, name, value)

