"""The history row of each table a commit wrote, summed by one rule for every backend.

SQLite's commit and PostgreSQL's general path sum the rows inside the commit
(``sql_commit``); PostgreSQL's one-statement commit sends rows summed here to the server
(``postgres_calls``). One function for both is what keeps ``history()`` identical whichever
store a commit went through.

A row names what the user did: the transaction's statements on the table
(``StatementSummary``), distinct, in the order they ran, with the rows they inserted, updated
and deleted as the user counts them. A commit that names no statement (an older client, a
caller of the metastore alone) gets today's fallback: its components' operations, sorted, and
their event counts. Files, bytes and partitions always come from the components: they are
what the commit published.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from acidstore.errors import InvalidInputError
from acidstore.metastore.names import split_table_name
from acidstore.metastore.records import HistoryEntry, StatementSummary, WriteComponent

__all__ = ["HistoryRow", "check_statement", "history_rows", "merged_history"]

#: a statement's name: lower-case words joined by ``_`` (it is joined with ``,`` in history)
_NAME = re.compile(r"[a-z]+(_[a-z]+)*")
_NAME_LENGTH = 64


@dataclass
class HistoryRow:
    """One table's history row of a commit, as stored."""

    operation: str = ""
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    files: int = 0
    bytes: int = 0
    partitions: list[str] = field(default_factory=list)


def check_statement(statement: object) -> StatementSummary:
    """A statement as committed: its table's canonical ``db.name``, a name history can show
    and non-negative counts (``InvalidInputError`` otherwise, nothing committed)."""
    if not isinstance(statement, StatementSummary):
        raise InvalidInputError(f"expected a StatementSummary, got {statement!r}")
    name = statement.statement
    if not isinstance(name, str) or len(name) > _NAME_LENGTH or not _NAME.fullmatch(name):
        raise InvalidInputError(
            f"a statement name must be lower-case words joined by '_' (at most "
            f"{_NAME_LENGTH} characters), got {name!r}")
    for what in ("rows_inserted", "rows_updated", "rows_deleted"):
        value = getattr(statement, what)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInputError(f"{what} of statement {name!r} must be a non-negative "
                                    f"int, got {value!r}")
    return StatementSummary(".".join(split_table_name(statement.table)), name,
                            statement.rows_inserted, statement.rows_updated,
                            statement.rows_deleted)


def history_rows(components: Iterable[tuple[str, WriteComponent]],
                 statements: Sequence[StatementSummary]) -> dict[str, HistoryRow]:
    """Canonical table name -> its history row, for ``components`` (each with its table's
    canonical name) and ``statements``. A table with a write id in neither gets no row here:
    the commit stores an empty one for it."""
    checked = [check_statement(s) for s in statements]
    written: dict[str, list[WriteComponent]] = {}
    for table, component in components:
        written.setdefault(table, []).append(component)
    rows: dict[str, HistoryRow] = {}
    for table in dict.fromkeys([*written, *(s.table for s in checked)]):
        mine = written.get(table, [])
        ran = [s for s in checked if s.table == table]
        row = HistoryRow(files=sum(c.files for c in mine), bytes=sum(c.bytes for c in mine),
                         partitions=sorted({c.partition for c in mine if c.partition}))
        if ran:
            row.operation = ",".join(dict.fromkeys(s.statement for s in ran))
            row.rows_inserted = sum(s.rows_inserted for s in ran)
            row.rows_updated = sum(s.rows_updated for s in ran)
            row.rows_deleted = sum(s.rows_deleted for s in ran)
        else:
            row.operation = ",".join(sorted({c.operation for c in mine}))
            row.rows_inserted = sum(c.rows_inserted for c in mine)
            row.rows_deleted = sum(c.rows_deleted for c in mine)
        rows[table] = row
    return rows


def merged_history(writes: Sequence[HistoryEntry], compactions: Sequence[HistoryEntry]
                   ) -> list[HistoryEntry]:
    """``writes`` (in write-id order, as versions are numbered) with each compaction placed
    before the first write that committed after it. Commit times rise strictly with commit
    order per table, so without concurrent writers this is commit order; write ids are taken
    when statements start, so two writers may commit out of write-id order, and the writes
    keep theirs."""
    pending = sorted(compactions, key=lambda e: (e.commit_time, e.txn_id))
    out: list[HistoryEntry] = []
    for write in writes:
        while pending and pending[0].commit_time < write.commit_time:
            out.append(pending.pop(0))
        out.append(write)
    return out + pending
