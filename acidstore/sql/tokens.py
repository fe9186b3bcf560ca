"""Reading predicate text in the compiled subset's syntax: its tokens, its top-level AND
terms and its literals, shared by the compiler and by the readers of single-column terms.

A text outside this syntax raises ``UnsupportedError``, which is no error to a user: DuckDB
evaluates such text instead.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

from acidstore.config import PREDICATE_TEXTS_KEPT

__all__ = ["Tok", "UnsupportedError", "integer_literals_only", "read_literal",
           "scan_tokens", "split_conjuncts", "tokens_of"]

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<num>\d+\.\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|\d+(?:[eE][+-]?\d+)?)
    | (?P<str>'(?:[^']|'')*')
    | (?P<qid>"(?:[^"]|"")+")
    | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
    | (?P<op><=|>=|<>|!=|=|<|>|\+|-|\*|%|\(|\)|,)
    )""", re.VERBOSE)


class UnsupportedError(Exception):
    """The text is outside the compiled subset (not an error: DuckDB will evaluate it)."""


@dataclass(frozen=True)
class Tok:
    """One token: its kind (num, str, qid, id, kw, op) and its text (keywords upper-cased)."""

    kind: str
    text: str


def tokens_of(text: str) -> list[Tok]:
    """The tokens of ``text`` (a new list: a parser may consume it)."""
    return list(_kept_tokens(text))


@functools.lru_cache(maxsize=PREDICATE_TEXTS_KEPT)
def _kept_tokens(text: str) -> tuple[Tok, ...]:
    return tuple(scan_tokens(text))


def scan_tokens(text: str) -> list[Tok]:
    """Tokenize ``text`` afresh (``tokens_of`` answers from what a process keeps)."""
    out: list[Tok] = []
    pos = 0
    while pos < len(text):
        if text[pos:].strip() == "":
            break
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise UnsupportedError(text[pos:])
        kind = match.lastgroup or ""
        value = match.group(kind)
        if kind == "id":
            upper = value.upper()
            kind = "kw" if upper in {"AND", "OR", "NOT", "IS", "NULL", "IN", "BETWEEN", "TRUE",
                                     "FALSE"} else "id"
            value = upper if kind == "kw" else value
        out.append(Tok(kind, value))
        pos = match.end()
    return out


def read_literal(toks: Sequence[Tok], at: int) -> tuple[pa.Scalar, int]:
    """The literal at ``at`` (after any minus signs) and the index after it."""
    if at < len(toks) and toks[at].kind == "op" and toks[at].text == "-":
        value, at = read_literal(toks, at + 1)
        if not (pa.types.is_integer(value.type) or pa.types.is_floating(value.type)):
            raise UnsupportedError("minus on a non-number")
        return pa.scalar(-value.as_py(), value.type), at
    if at >= len(toks):
        raise UnsupportedError("end of text")
    tok = toks[at]
    at += 1
    if tok.kind == "num":
        is_float = any(c in tok.text for c in ".eE")
        return (pa.scalar(float(tok.text)) if is_float else
                pa.scalar(int(tok.text), pa.int64())), at
    if tok.kind == "str":
        return pa.scalar(tok.text[1:-1].replace("''", "'"), pa.string()), at
    if tok.kind == "kw" and tok.text in ("TRUE", "FALSE"):
        return pa.scalar(tok.text == "TRUE"), at
    if tok.kind == "kw" and tok.text == "NULL":
        return pa.scalar(None, pa.null()), at
    raise UnsupportedError(tok.text)


def split_conjuncts(tokens: list[Tok]) -> list[list[Tok]] | None:
    """The tokens split at each top-level AND (not the AND of a BETWEEN); None when an OR
    joins them at top level or the parentheses do not balance (no conjunct then pins
    anything)."""
    conjuncts: list[list[Tok]] = [[]]
    depth, between = 0, False
    for tok in tokens:
        if tok.kind == "op" and tok.text in "()":
            depth += 1 if tok.text == "(" else -1
        elif depth == 0 and tok.kind == "kw" and tok.text == "OR":
            return None
        elif depth == 0 and tok.kind == "kw" and tok.text == "BETWEEN":
            between = True
        elif depth == 0 and tok.kind == "kw" and tok.text == "AND":
            if between:
                between = False
            else:
                conjuncts.append([])
                continue
        conjuncts[-1].append(tok)
    return conjuncts if depth == 0 else None


def integer_literals_only(text: str) -> bool:
    """Whether every number literal of ``text`` is an integer of magnitude below 2**53 (one a
    double holds exactly), and ``text`` is in the compiled subset's syntax."""
    try:
        tokens = tokens_of(text)
    except UnsupportedError:
        return False
    return all(not any(c in t.text for c in ".eE") and int(t.text) < 2**53
               for t in tokens if t.kind == "num")

