"""What a write-write conflict is called, and how it reads, whichever backend found it.

Hive says only ``u/d`` at the end of its message; users of Delta Lake expect to catch the kind
of conflict (``ConcurrentAppendException``, ``ConcurrentDeleteReadException``,
``ConcurrentDeleteDeleteException``). A message opens with what a user needs: the table and
partition, who won with what, why that is this kind of conflict (two UPDATEs of one row are
delete/delete: an UPDATE deletes each row's old version), that nothing was written and what
to do; Hive's own text follows, for those who search for it. Both backends and the
transaction's row-level check build their errors here, so the same race raises the same
class with the same text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from acidstore.config import ISOLATION_LEVEL, ISOLATION_LEVEL_PROPERTY
from acidstore.errors import (
    ConcurrentAppendError,
    ConcurrentDeleteDeleteError,
    ConcurrentDeleteReadError,
    InvalidInputError,
    WriteConflictError,
)
from acidstore.metastore.records import CommittedWrite, Operation
from acidstore.metastore.validate import OPERATION_LETTERS

__all__ = ["IsolationLevel", "conflict_error", "conflict_message", "isolation_level"]

IsolationLevel = Literal["WriteSerializable", "Serializable"]
_LEVELS: dict[str, IsolationLevel] = {"writeserializable": "WriteSerializable",
                                      "serializable": "Serializable"}


def isolation_level(properties: Mapping[str, str], table: str = "the table"
                    ) -> IsolationLevel:
    """A table's isolation level (``config.ISOLATION_LEVEL`` unless its properties say
    otherwise; any other value is refused, not ignored)."""
    given = properties.get(ISOLATION_LEVEL_PROPERTY)
    if given is None:
        return ISOLATION_LEVEL
    level = _LEVELS.get(str(given).strip().lower())
    if level is None:
        raise InvalidInputError(
            f"{ISOLATION_LEVEL_PROPERTY}={given!r} of {table}: use 'WriteSerializable' (the "
            "default: only statements that change the same rows conflict) or 'Serializable' (a "
            "DELETE, UPDATE or MERGE also conflicts with any write committed to a partition it "
            "wrote)")
    return level


def conflict_message(txn_id: int, commit_seq: int | None, table: str, *, partition: str,
                     operation: Operation, other: CommittedWrite) -> str:
    """Hive's text (``CommitTxnFunction#checkForWriteConflict``), e.g.
    ``Aborting [txnid:3,3] due to a write conflict on default/tab_part/p=blah committed by
    [txnid:2,3] u/u`` (``commit_seq``: the one this commit would have had, when known)."""
    resource = table.replace(".", "/", 1) + (f"/{partition}" if partition else "")
    ours = f"{txn_id}" if commit_seq is None else f"{txn_id},{commit_seq}"
    return (f"Aborting [txnid:{ours}] due to a write conflict on {resource} "
            f"committed by [txnid:{other.txn_id},{other.commit_seq}] "
            f"{OPERATION_LETTERS[operation]}/{OPERATION_LETTERS[other.operation]}")


#: how a user names each operation
_STATEMENT = {"insert": "INSERT", "update": "UPDATE", "delete": "DELETE",
              "overwrite": "INSERT OVERWRITE"}


def _what_happened(kind: type[WriteConflictError], ours: Operation, other: CommittedWrite
                   ) -> str:
    """The conflict in a user's words: what the winner did to what this write needed."""
    mine, theirs = _STATEMENT[ours], _STATEMENT[other.operation]
    winner = f"transaction {other.txn_id} committed first with an {theirs}" if \
        theirs[0] in "AEIOU" else f"transaction {other.txn_id} committed first with a {theirs}"
    if kind is ConcurrentDeleteReadError:
        return f"{winner} that replaced the partition this {mine} read"
    if kind is ConcurrentAppendError:
        if ours == "overwrite":
            return f"{winner} that added rows to the partition this INSERT OVERWRITE replaces"
        return f"{winner} to a partition this {mine} depends on"
    if ours == other.operation == "overwrite":
        return f"{winner} of the same partition"
    did = "deleted" if other.operation == "delete" else "changed"
    does = "deletes" if ours == "delete" else "changes"
    return (f"{winner} that {did} rows this {mine} also {does} (an UPDATE deletes the old "
            "version of each row it changes, so two statements changing one row conflict as "
            "deletes)")


def _kind(ours: Operation, theirs: Operation) -> type[WriteConflictError]:
    """Named by what the other transaction did to rows this one depends on."""
    if theirs == "overwrite":
        # their base replaced the partition: what we changed or added is hidden by it
        return ConcurrentDeleteDeleteError if ours == "overwrite" else ConcurrentDeleteReadError
    if ours == "overwrite" or theirs == "insert":
        # rows they added (an update adds new versions) that our replacement or read missed
        return ConcurrentAppendError
    return ConcurrentDeleteDeleteError  # both deleted (or updated) the same rows


def conflict_error(txn_id: int, commit_seq: int | None, table: str, *, partition: str,
                   operation: Operation, other: CommittedWrite, detail: str = "",
                   kind: type[WriteConflictError] | None = None) -> WriteConflictError:
    """The typed error for our ``operation`` on ``table``/``partition`` losing to ``other``
    (``kind`` when the caller knows better than the two operations tell)."""
    chosen = kind or _kind(operation, other.operation)
    where = f"table {table}" + (f", partition {partition}" if partition else "")
    message = (f"write conflict on {where}: {_what_happened(chosen, operation, other)}. "
               f"Transaction {txn_id} was aborted and wrote nothing; read the table again and "
               "retry. Hive: " + conflict_message(txn_id, commit_seq, table,
                                                   partition=partition, operation=operation,
                                                   other=other) + detail)
    return chosen(message, txn_id=txn_id, other_txn_id=other.txn_id, table=table,
                  partition=partition)
