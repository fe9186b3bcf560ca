"""The one exception hierarchy of acidstore (layer L0: imports nothing from the project).

Errors are split by *outcome*, because that is what a caller has to decide on:

- ``InvalidInputError``: the request itself is wrong (bad name, schema, SQL, partition value).
  Nothing was written; retrying the same request fails the same way.
- ``CommitFailedError``: the write did not land and left nothing visible; retrying may succeed
  (e.g. ``WriteConflictError`` after re-reading).
- ``CommitStateUnknownError``: the commit may or may not have landed. Never delete the files
  of such a write; re-read the table state first.
- ``DataError``: what is stored is not what the format promises (corrupt ORC, events out of
  key order, a bucket file holding another bucket's events). Reads never guess past these.
- ``NotEnoughHistoryError``: a snapshot asks for data that compaction has already erased.
- ``StorageError``: the filesystem or object store failed (disk full, permission, I/O, a
  failed request). It names the path and says (``retry_safe``) whether the call left nothing
  changed, so that the same call may be repeated once the cause is fixed.

Every message says what went wrong and where (a path, table or transaction id).
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = [
    "AcidStoreError",
    "CatalogError",
    "CommitFailedError",
    "CommitStateUnknownError",
    "ConcurrentAppendError",
    "ConcurrentCompactionError",
    "ConcurrentDeleteDeleteError",
    "ConcurrentDeleteReadError",
    "ConcurrentTransactionError",
    "CorruptFileError",
    "DataError",
    "InvalidExpressionError",
    "InvalidInputError",
    "InvalidLayoutError",
    "InvalidPartitionValueError",
    "LocationNotEmptyError",
    "MergeCardinalityError",
    "MetadataChangedError",
    "MetastoreError",
    "MetastoreInTaskError",
    "MetastoreRequiredError",
    "MetastoreVersionError",
    "MissingDependencyError",
    "NotEnoughHistoryError",
    "ReadOnlyWarehouseError",
    "SchemaMismatchError",
    "SparkJobFailedError",
    "TableBusyError",
    "TableExistsError",
    "TableNotFoundError",
    "TransactionAbortedError",
    "TransactionStateError",
    "WarehouseNotFoundError",
    "UnknownOptionError",
    "UnsupportedOperationError",
    "MissingDataError",
    "StrayPathError",
    "MetastoreConnectionError",
    "MetastoreMismatchError",
    "NestedTransactionError",
    "StorageError",
    "StorageFullError",
    "StoragePermissionError",
    "WriteConflictError",
    "import_optional",
    "required_condition",
]


class AcidStoreError(Exception):
    """Root of every error acidstore raises on purpose."""


# --- the request is wrong ---------------------------------------------------------------------


class InvalidInputError(AcidStoreError, ValueError):
    """The caller asked for something invalid; nothing was written."""


def required_condition(condition: object, where: str) -> None:
    """Refuse a DELETE or UPDATE without a condition: a forgotten argument must not change
    every row; ``"true"`` says so explicitly."""
    if condition is None:
        raise InvalidInputError(f"{where} needs a condition; pass 'true' to change every row")


class InvalidLayoutError(InvalidInputError):
    """A directory or file name does not follow Hive's ACID layout (it is reported, not guessed)."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(f"{message}: {path}" if path is not None else message)
        self.path = path


class SchemaMismatchError(InvalidInputError):
    """Data or a file does not match the table schema (names, types or nullability)."""


class InvalidExpressionError(InvalidInputError):
    """A predicate or SET expression does not parse or refers to unknown columns."""


class InvalidPartitionValueError(InvalidInputError):
    """A partition value cannot be stored safely under the table location."""


class UnknownOptionError(InvalidInputError):
    """An engine option (``spark.read``/``df.write`` ``.option(...)``) this source does not
    know: ignoring it would run something else than asked (Delta's ``versionAsOf`` on a source
    that ignores it reads the current rows), so it is refused, with the accepted names."""


class UnsupportedOperationError(InvalidInputError):
    """A request the engine cannot carry out as asked, refused where it is made (e.g. Spark
    SQL's ``CREATE TABLE ... USING acidstore``: PySpark hands a Python data source a catalog
    table's reads and writes without its options). Nothing was changed; the message names the
    way that works."""


class MergeCardinalityError(InvalidInputError):
    """A MERGE matched one target row with more than one source row; nothing was written."""


class MetastoreRequiredError(InvalidInputError):
    """A warehouse on object storage (``s3://...``) was opened without ``metastore=``: the
    default SQLite file lives inside the warehouse directory, and SQLite needs a local file
    with working locks, which a bucket is not."""


class MetastoreMismatchError(InvalidInputError):
    """A warehouse and a metastore that do not belong together: the metastore serves another
    warehouse root, or the warehouse's catalogue lives in another metastore than the one given
    (or none was given). Pairing them would list another warehouse's tables, or start a new
    empty catalogue beside the real one; nothing was read or changed. ``warehouse`` and
    ``metastore`` name what was given, ``expected`` what the other side recorded."""

    def __init__(self, message: str, *, warehouse: str, metastore: str,
                 expected: str) -> None:
        super().__init__(message)
        self.warehouse = warehouse
        self.metastore = metastore
        self.expected = expected


class ReadOnlyWarehouseError(InvalidInputError):
    """A write (or anything that changes the metastore) on a warehouse opened read-only: its
    metastore file or directory cannot be written, e.g. an archived copy. Nothing was changed;
    reads work. Write into a writable copy instead."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


# --- catalog ----------------------------------------------------------------------------------


class CatalogError(AcidStoreError):
    """A database or table is missing, already exists, or was dropped."""


class TableNotFoundError(CatalogError, KeyError):
    """The named table does not exist (or was dropped)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class WarehouseNotFoundError(CatalogError):
    """No warehouse at the given location (no directory, or no metastore in it), and the
    caller asked not to create one: a misspelled path must not become a new empty warehouse
    whose "no tables" looks like lost data."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


class TableExistsError(CatalogError):
    """A table of that name already exists."""


class TableBusyError(CatalogError):
    """A change of the catalogue (``rename_table``) was refused because transactions are
    writing the table (they hold a write id on it, or compact it): under them, their commits
    would publish under a name that no longer exists. Nothing changed; ``txn_ids`` are the
    transactions to wait for (or to abort) before retrying."""

    def __init__(self, message: str, *, table: str, txn_ids: tuple[int, ...]) -> None:
        super().__init__(message)
        self.table = table
        self.txn_ids = txn_ids


class LocationNotEmptyError(CatalogError):
    """A new table's directory already holds files (left by a lost metastore, an unfinished
    drop or a copy): a new table there would reuse write id 1 and read the strangers' files
    as its own rows, so it is refused."""

    def __init__(self, message: str, *, path: str) -> None:
        super().__init__(message)
        self.path = path


# --- transactions -----------------------------------------------------------------------------


class CommitFailedError(AcidStoreError):
    """The write did not land: nothing of it is visible and it is safe to retry."""


class WriteConflictError(CommitFailedError):
    """Another transaction committed a conflicting write first (first committer wins).

    The subclasses say what the other transaction did; each names both transactions, the
    table and the partition (attributes too, for code that retries)."""

    def __init__(self, message: str, *, txn_id: int | None = None,
                 other_txn_id: int | None = None, table: str | None = None,
                 partition: str | None = None) -> None:
        super().__init__(message)
        self.txn_id = txn_id
        self.other_txn_id = other_txn_id
        self.table = table
        self.partition = partition


class ConcurrentAppendError(WriteConflictError):
    """Rows were added to the partition after this transaction's snapshot by a write it must
    not ignore: an INSERT OVERWRITE would hide them, or (isolation level Serializable) a
    statement that read the partition would not have seen them."""


class ConcurrentDeleteReadError(WriteConflictError):
    """Rows this transaction read or relies on were replaced by a concurrent INSERT OVERWRITE
    (its base hides what this transaction changed or added)."""


class ConcurrentDeleteDeleteError(WriteConflictError):
    """A concurrent transaction deleted or updated rows this transaction deleted or updated
    too (or both replaced the same partition)."""


class ConcurrentCompactionError(WriteConflictError):
    """Another compaction of the partition committed after this compaction's snapshot. Its
    output may overlap this one's without nesting (a ``base_3`` and a ``delta_1_5`` neither
    saw), and a reader selecting both would read rows twice, so this one is aborted (Hive
    runs one compaction per partition at a time). Nothing landed; compact again."""


class MetadataChangedError(WriteConflictError):
    """The table's metadata (its columns: ``add_columns``) changed after this transaction's
    writer read it: the write was planned against a schema that is no longer the table's, so
    it is aborted. Nothing landed; read the table again (``wh.table(name)``) and retry."""


class ConcurrentTransactionError(WriteConflictError):
    """Another transaction committed the same version (or a later one) of this transaction's
    application id on the table first (idempotent writes, Delta's ``txn`` action): two runs
    of one job raced, and only one may land. Nothing of this one committed; retrying it is
    safe, and skips. ``app_id`` names the application; ``partition`` is None."""

    def __init__(self, message: str, *, txn_id: int | None = None,
                 other_txn_id: int | None = None, table: str | None = None,
                 app_id: str | None = None) -> None:
        super().__init__(message, txn_id=txn_id, other_txn_id=other_txn_id, table=table)
        self.app_id = app_id


class TransactionAbortedError(CommitFailedError):
    """The transaction was aborted (explicitly, by timeout, or by the metastore)."""


class SparkJobFailedError(CommitFailedError):
    """A Spark job of a write failed for a reason that is not one of acidstore's errors: a
    Python worker or an executor was lost (killed, out of memory, its host gone), a task's own
    code raised (a UDF of the DataFrame being written), or the job was cancelled. Spark's
    exception is the ``__cause__``; ``reason`` is its gist, ``txn_id`` the write's transaction
    (None when the job failed before one was opened) and ``table`` the table written.

    Nothing of the write was committed. The message says whether the transaction was aborted
    (its files then are removed) or, when the metastore could not record the abort just then,
    is left to its timeout (the cleaner then removes them). A lost worker or executor is
    transient, so the same write may simply be repeated; an error of the job's own code fails
    again until the code or data is fixed."""

    def __init__(self, message: str, *, reason: str, txn_id: int | None = None,
                 table: str | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.txn_id = txn_id
        self.table = table


class CommitStateUnknownError(AcidStoreError):
    """The commit may or may not have landed; files must not be deleted until that is known."""


class TransactionStateError(AcidStoreError):
    """A transaction was used in a state that forbids it (e.g. reused after it failed)."""


class NestedTransactionError(TransactionStateError):
    """A transaction was opened (``wh.transaction()``, or a single statement such as
    ``t.insert``) while another one is active in the same thread. Its work would commit on
    its own even if the outer block then failed, so it is refused before anything is written:
    write through the outer transaction (``txn.table(name)``) instead."""


class MetastoreError(AcidStoreError):
    """The metastore failed or holds inconsistent state."""


class MetastoreConnectionError(MetastoreError, CommitFailedError):
    """The connection to the metastore was lost, or could not be made, before anything was
    committed: a write in progress did not commit (its transaction is aborted now, or by its
    timeout when the metastore cannot be reached), nothing of it is visible, and repeating
    the whole write is safe. A connection lost while the commit itself ran is not this
    error: its outcome is settled with the metastore (``CommitStateUnknownError`` when that
    cannot be done)."""


class MetastoreInTaskError(AcidStoreError):
    """A metastore was opened inside a Spark task (on an executor). Only the driver talks to
    the metastore: executors get everything they need (snapshots, write ids, file lists) from
    the driver's plan, so a task that opens one is a bug in acidstore or in the caller's UDF,
    and on a cluster it would put one metastore connection per task on the server. Not a
    ``MetastoreError``: the metastore did not fail, and handlers of those must not hide it."""


class MetastoreVersionError(MetastoreError):
    """The metastore's schema was written by a newer (or unknown) acidstore: it is refused
    untouched rather than misread; an older schema is migrated instead."""


# --- what is stored is wrong ------------------------------------------------------------------


class DataError(AcidStoreError):
    """Stored data breaks the format's promises; the read stops rather than answer wrongly."""

    def __init__(self, message: str, *, path: str | None = None) -> None:
        super().__init__(f"{message} (file: {path})" if path is not None else message)
        self.path = path


class CorruptFileError(DataError):
    """A file cannot be decoded (truncated, not ORC, unreadable side file)."""


class MissingDataError(DataError):
    """A directory or bucket file that a committed write made, and the snapshot must read, is
    not there: answering without it would lose rows or bring deleted ones back."""

    @classmethod
    def gone(cls, path: str, where: str = "") -> MissingDataError:
        """The error for a planned file that is not there, worded once for every reader
        (ours, Spark's, a compaction's): ``where`` prefixes what was running."""
        prefix = f"{where}: " if where else ""
        return cls(f"{prefix}committed file {path} is not there, yet this snapshot must read "
                   "it (removed or moved by hand?)", path=path)


class StrayPathError(DataError):
    """Something that is no part of the table's layout sits where its partitions are (a
    ``base_N`` at the root of a partitioned table, a file, another column's directory):
    reading around it could return too few or too many rows, so the read stops and names it."""


# --- the storage failed ----------------------------------------------------------------------


class StorageError(AcidStoreError, OSError):
    """The filesystem or object store failed: an I/O error, a failed request, a name the
    filesystem cannot hold. ``path`` names the file or directory; ``retry_safe`` is True when
    the failed call changed nothing visible (a write that failed was aborted, a read has no
    effect), so the same call may be repeated once the cause is fixed; ``errno`` is the
    operating system's error number when there was one. An ``OSError`` too, so code that
    handles the operating system's storage errors handles these."""

    def __init__(self, message: str, *, path: str | None = None, retry_safe: bool = True,
                 errno: int | None = None) -> None:
        super().__init__(f"{message} (path: {path})" if path is not None else message)
        self.path = path
        self.retry_safe = retry_safe
        self.errno = errno


class StorageFullError(StorageError):
    """The storage has no space left (or the user's quota is used up)."""


class StoragePermissionError(StorageError):
    """The storage refused access: permission denied, or a read-only filesystem."""


class NotEnoughHistoryError(AcidStoreError):
    """The snapshot needs write ids that a compacted base has already folded away."""


# --- the install lacks an optional package ----------------------------------------------------


class MissingDependencyError(AcidStoreError, ImportError):
    """A feature needs a package the install left out (PySpark, pandas, psycopg and Polars are
    optional): ``package`` names it and ``install`` is the argument of the ``pip install``
    that brings it. An ``ImportError`` too, so code that probes for the feature with
    ``except ImportError`` keeps working."""

    def __init__(self, package: str, install: str, feature: str) -> None:
        super().__init__(f"{feature} needs {package}, which is not installed: "
                         f"pip install '{install}'", name=package)
        self.package = package
        self.install = install
        self.feature = feature

    def __reduce__(self) -> tuple[type[MissingDependencyError], tuple[str, str, str]]:
        # ImportError pickles its message only; Spark ships errors between processes
        return type(self), (self.package, self.install, self.feature)


def import_optional(module: str, install: str, feature: str) -> ModuleType:
    """``module``, or ``MissingDependencyError`` saying that ``feature`` needs it and how to
    install it. Only the absence of ``module``'s own top package is translated: an import
    error inside an installed package is a broken install, and surfaces as itself."""
    top = module.split(".", 1)[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != top:
            raise
        raise MissingDependencyError(top, install, feature) from exc
