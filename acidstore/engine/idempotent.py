"""Idempotent writes (Delta's ``txn`` action): a retried job never writes its rows twice.

A writer names its application and a version that grows with each run (``app_id``,
``version``). Before it writes anything, the metastore is asked for the application's
committed version on the table: if that is the writer's version or a later one, the rows are
already in the table, and the write is skipped (no files, no write id). Otherwise the version
is recorded with the transaction, and the commit decides inside the metastore, atomically
with publishing: a concurrent run that committed the same version (or a later one) first
makes this commit fail with ``ConcurrentTransactionError``, and its files are removed only
once the metastore has recorded it as aborted (``Transaction.commit``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from acidstore.engine.results import WriteResult
from acidstore.engine.transaction import TransactionCore
from acidstore.errors import InvalidInputError
from acidstore.metastore import Metastore
from acidstore.metastore.validate import check_app_version

__all__ = ["AppWrite", "claim", "requested", "skipped", "write_once"]

Write = Callable[[TransactionCore], WriteResult]


@dataclass(frozen=True)
class AppWrite:
    """The application id and version one idempotent write carries."""

    app_id: str
    version: int


def requested(app_id: object, version: object) -> AppWrite | None:
    """The idempotent identity of a write (None for a plain one): both or neither, since an
    id without a version (or the reverse) cannot tell a retry from the next run."""
    if app_id is None and version is None:
        return None
    if app_id is None or version is None:
        raise InvalidInputError(
            f"an idempotent write needs both app_id and version, got app_id={app_id!r}, "
            f"version={version!r}")
    return AppWrite(*check_app_version(app_id, version))


def skipped(metastore: Metastore, table: str, app: AppWrite | None, operation: str
            ) -> WriteResult | None:
    """The result of a write that is already in ``table`` (its version, or a later one, of
    the same application committed there), else None: the early check, before any file."""
    if app is None:
        return None
    for done in metastore.app_versions(table, app.app_id):
        if done.version >= app.version:
            return WriteResult(done.txn_id, None, operation, skipped=True)
    return None


def claim(txn: TransactionCore, table: str, app: AppWrite | None) -> None:
    """Record ``app`` with ``txn`` before its files are written; its commit checks it."""
    if app is not None:
        txn.write_app_version(table, app.app_id, app.version)


def write_once(metastore: Metastore, table: str, app: AppWrite | None, operation: str, *,
               run: Callable[[Write], WriteResult], write: Write) -> WriteResult:
    """``run(write)`` (in the caller's transaction or a new one), unless ``app`` says it is
    already done; a run that raced past the early check loses at commit instead."""
    done = skipped(metastore, table, app, operation)
    if done is not None:
        return done

    def body(txn: TransactionCore) -> WriteResult:
        claim(txn, table, app)
        return write(txn)

    return run(body)
