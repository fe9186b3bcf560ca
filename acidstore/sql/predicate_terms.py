"""What the AND terms of a predicate say about single columns: the literals they pin a column
to, and the integer ranges they bound it by. Writers skip buckets and readers skip stripes with
these answers, which may be looser than the predicate but never stricter.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import TypeAlias

import pyarrow as pa

from acidstore.config import PREDICATE_TEXTS_KEPT
from acidstore.sql.tokens import (
    Tok,
    UnsupportedError,
    read_literal,
    split_conjuncts,
    tokens_of,
)

__all__ = ["Range", "equality_literals", "exact_integer_ranges", "integer_ranges"]


def equality_literals(text: str) -> dict[str, list[pa.Scalar]]:
    """Columns (lower-cased names) that ``text`` pins to literals: for each top-level AND
    conjunct of the form ``col = literal``, ``literal = col`` or ``col IN (literals)``, the
    values a matching row's column can hold (several conjuncts on one column: their common
    values). A row the predicate is true for holds one of these values, whatever the other
    conjuncts say, so a writer may skip the buckets these values do not hash to. Anything
    else (an OR at top level, a conjunct of another form, text outside the subset) pins
    nothing: the result is then empty or omits that column, which is always safe."""
    try:
        tokens = tokens_of(text)
    except UnsupportedError:
        return {}
    conjuncts = split_conjuncts(tokens)
    if conjuncts is None:
        return {}
    pinned: dict[str, list[pa.Scalar]] = {}
    for conjunct in conjuncts:
        found = _pinned(conjunct)
        if found is None:
            continue
        name, values = found
        if name in pinned:  # id = 1 AND id IN (1, 2): only 1
            keep = {(v.type, v.as_py()) for v in values}
            values = [v for v in pinned[name] if (v.type, v.as_py()) in keep]
        pinned[name] = values
    return pinned


def _pinned(conjunct: list[Tok]) -> tuple[str, list[pa.Scalar]] | None:
    """(column, literals) of one ``col = lit``, ``lit = col`` or ``col IN (lits)``."""
    def column(tok: Tok) -> str | None:
        if tok.kind == "qid":
            return tok.text[1:-1].replace('""', '"').lower()
        return tok.text.lower() if tok.kind == "id" else None

    def literal(toks: list[Tok]) -> pa.Scalar | None:
        if not toks or toks[0].kind not in ("num", "str", "op"):
            return None
        try:
            value, end = read_literal(toks, 0)
        except (UnsupportedError, ValueError, OverflowError, pa.ArrowException):
            return None
        return value if end == len(toks) and value.is_valid else None

    if len(conjunct) >= 3 and conjunct[1].kind == "op" and conjunct[1].text == "=" and \
            column(conjunct[0]) is not None:
        name, value = column(conjunct[0]), literal(conjunct[2:])
        return (name, [value]) if name is not None and value is not None else None
    if len(conjunct) >= 3 and conjunct[-2].kind == "op" and conjunct[-2].text == "=":
        name, value = column(conjunct[-1]), literal(conjunct[:-2])
        return (name, [value]) if name is not None and value is not None else None
    if len(conjunct) >= 5 and conjunct[1].kind == "kw" and conjunct[1].text == "IN" and \
            conjunct[2].text == "(" and conjunct[-1].text == ")":
        name = column(conjunct[0])
        items: list[list[Tok]] = [[]]
        for tok in conjunct[3:-1]:
            if tok.kind == "op" and tok.text == ",":
                items.append([])
            else:
                items[-1].append(tok)
        values = [literal(item) for item in items]
        if name is None or any(v is None for v in values):
            return None
        return name, [v for v in values if v is not None]
    return None


#: an inclusive range of integers; None is unbounded on that side
Range: TypeAlias = tuple[int | None, int | None]
_FLIPPED = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "="}


def _range_of(op: str, value: int) -> Range:
    """The values ``x`` with ``x <op> value``."""
    return {"<": (None, value - 1), "<=": (None, value), ">": (value + 1, None),
            ">=": (value, None)}.get(op, (value, value))


def integer_ranges(text: str, column_names: list[str]) -> dict[str, list[Range]]:
    """For a predicate that is an AND of terms, the integer ranges each column's value must
    fall in for a row to pass, from the terms of the forms ``col <op> n`` (``n <op> col``),
    ``col BETWEEN n AND m`` and ``col IN (n, ...)`` with integer literals (the ranges of a
    column named in several terms are intersected). Other terms are left out, which only
    makes the answer looser; a predicate with OR or a parenthesis other than an IN list, or
    outside the tokens this module reads, gives ``{}``. Statistics use it to skip stripes.
    """
    return _ranges(text, column_names, exact=False) or {}


def exact_integer_ranges(text: str, column_names: list[str]) -> dict[str, list[Range]] | None:
    """``integer_ranges`` when its answer is the predicate itself: every term of the AND is
    one of the forms it reads, so a row passes exactly when each named column's value lies
    in one of that column's ranges (a NULL value in none). None when any term is of another
    form (the ranges would only be looser), or the text is outside the tokens read here."""
    return _ranges(text, column_names, exact=True)


def _ranges(text: str, column_names: list[str], *, exact: bool
            ) -> dict[str, list[Range]] | None:
    """``_scan_ranges``, kept per text and column list (``PREDICATE_TEXTS_KEPT``); a new dict of new
    lists for each caller."""
    kept = _kept_ranges(text, tuple(column_names), exact)
    return None if kept is None else {name: list(ranges) for name, ranges in kept}


@functools.lru_cache(maxsize=PREDICATE_TEXTS_KEPT)
def _kept_ranges(text: str, column_names: tuple[str, ...], exact: bool
                 ) -> tuple[tuple[str, tuple[Range, ...]], ...] | None:
    found = _scan_ranges(text, column_names, exact=exact)
    return None if found is None else tuple((name, tuple(r)) for name, r in found.items())


def _scan_ranges(text: str, column_names: Sequence[str], *, exact: bool
                 ) -> dict[str, list[Range]] | None:
    columns = {n.lower(): n for n in column_names}
    try:
        tokens = tokens_of(text)
    except UnsupportedError:
        return None
    terms = split_conjuncts(tokens)
    if terms is None or any(t.kind == "kw" and t.text == "OR" for t in tokens) or \
            not _only_in_lists(tokens):
        return None
    out: dict[str, list[Range]] = {}
    for term in terms:
        found = _term_ranges(term, columns)
        if found is None:
            if exact:
                return None
            continue
        name, ranges = found
        out[name] = _intersect(out[name], ranges) if name in out else ranges
    return out if out or not exact else None


def _only_in_lists(tokens: list[Tok]) -> bool:
    """Parentheses appear only as the list of an IN."""
    for i, tok in enumerate(tokens):
        if tok.kind == "op" and tok.text == "(" and not (i and tokens[i - 1].text == "IN"):
            return False
    return True


def _integer(tokens: list[Tok], at: int) -> tuple[int, int] | None:
    """An integer literal (with an optional minus) at ``at``, and the index after it."""
    sign = 1
    if at < len(tokens) and tokens[at].kind == "op" and tokens[at].text == "-":
        sign, at = -1, at + 1
    if at < len(tokens) and tokens[at].kind == "num" and tokens[at].text.isdigit():
        return sign * int(tokens[at].text), at + 1
    return None


def _column(tok: Tok, columns: dict[str, str]) -> str | None:
    if tok.kind == "id":
        return columns.get(tok.text.lower())
    if tok.kind == "qid":
        name = tok.text[1:-1].replace('""', '"')
        return columns.get(name.lower())
    return None


def _term_ranges(term: list[Tok], columns: dict[str, str]) -> tuple[str, list[Range]] | None:
    if len(term) < 3:
        return None
    name = _column(term[0], columns)
    if name is not None and term[1].kind == "op" and term[1].text in _FLIPPED:
        value = _integer(term, 2)
        if value is not None and value[1] == len(term):
            return name, [_range_of(term[1].text, value[0])]
    last = _column(term[-1], columns)
    if last is not None and term[-2].kind == "op" and term[-2].text in _FLIPPED:
        value = _integer(term, 0)
        if value is not None and value[1] == len(term) - 2:
            return last, [_range_of(_FLIPPED[term[-2].text], value[0])]
    if name is not None and term[1].kind == "kw" and term[1].text == "BETWEEN":
        low = _integer(term, 2)
        if low is not None and low[1] < len(term) and term[low[1]].text == "AND":
            high = _integer(term, low[1] + 1)
            if high is not None and high[1] == len(term):
                return name, [(low[0], high[0])]
    if name is not None and term[1].kind == "kw" and term[1].text == "IN" and \
            term[2].text == "(" and term[-1].text == ")":
        values: list[Range] = []
        at = 3
        while at < len(term) - 1:
            value = _integer(term, at)
            if value is None:
                return None
            values.append((value[0], value[0]))
            at = value[1]
            if term[at].text == ",":
                at += 1
            elif at != len(term) - 1:
                return None
        return name, values
    return None


def _intersect(a: list[Range], b: list[Range]) -> list[Range]:
    """The ranges of values in both ``a`` and ``b``."""
    out: list[Range] = []
    for lo1, hi1 in a:
        for lo2, hi2 in b:
            lo = lo1 if lo2 is None else lo2 if lo1 is None else max(lo1, lo2)
            hi = hi1 if hi2 is None else hi2 if hi1 is None else min(hi1, hi2)
            if lo is None or hi is None or lo <= hi:
                out.append((lo, hi))
    return out
