"""``acidstore.connect``: a warehouse and its metastore, paired.

The default metastore is a SQLite file inside a local warehouse; otherwise a PostgreSQL (or
SQLite) URL, or a ``Metastore`` object. A metastore serves one warehouse and a warehouse
root records its metastore (``api.pairing``): a pair that does not belong together is
refused before anything is created.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.fs as pafs

from acidstore.api.pairing import (
    DEFAULT_METASTORE_FILE,
    Pairing,
    chosen_pair,
    read_marker,
    refuse_default,
)
from acidstore.api.warehouse import Warehouse
from acidstore.config import TXN_TIMEOUT_SECONDS
from acidstore.errors import (
    InvalidInputError,
    MetastoreError,
    MetastoreRequiredError,
    WarehouseNotFoundError,
)
from acidstore.io import fs as afs
from acidstore.metastore import Metastore, SqliteMetastore
from acidstore.metastore.postgres import PostgresMetastore
from acidstore.metastore.task_guard import in_spark_task

__all__ = ["connect"]


def _refuse_emptied_metastore(root: Path) -> None:
    """A 0-byte metastore file beside table data is a lost catalogue (truncated, or replaced
    by an empty file), not a new warehouse: SQLite would open it as an empty catalogue and the
    next tables would write over files whose write ids it no longer knows."""
    path = root / DEFAULT_METASTORE_FILE
    if not path.is_file() or path.stat().st_size:
        return
    data = sorted(p.name for p in root.iterdir()
                  if not p.name.startswith(DEFAULT_METASTORE_FILE) and not p.name.startswith("."))
    if data:
        raise MetastoreError(
            f"the metastore file {path} is empty (0 bytes) but the warehouse holds {data}: "
            "its catalogue is lost. Restore the file from a backup; remove it only if those "
            "directories hold no tables")


def connect(location: str | os.PathLike[str], *, metastore: str | Metastore | None = None,
            filesystem: pafs.FileSystem | None = None,
            txn_timeout: float = TXN_TIMEOUT_SECONDS,
            create: bool = True, relocate: bool = False) -> Warehouse:
    """Open (or create) a warehouse. The default metastore is a SQLite file inside a local
    warehouse; otherwise pass ``metastore``: a ``Metastore``, a ``sqlite:///path`` URL, or a
    PostgreSQL URL ``postgresql://user@host:5432/dbname`` (shared by clients on several
    machines; needs ``acidstore[postgresql]``). Without ``metastore``, ``ACIDSTORE_METASTORE``
    from the environment is taken when set. Transactions opened here heartbeat every
    ``txn_timeout / 2`` seconds and are aborted after ``txn_timeout`` without one (the
    metastore stores it with each, so other clients' timeouts do not apply to them).
    ``create=False`` opens an existing warehouse only (``WarehouseNotFoundError`` otherwise,
    and nothing is created): what tools that inspect or maintain a warehouse want, so a typo
    in the path is an error, not a new warehouse.

    A metastore serves one warehouse, and a warehouse root records its metastore
    (``acidstore.api.pairing``): a pair that does not belong together is refused with
    ``MetastoreMismatchError`` before anything is created or changed. A warehouse with its
    own SQLite file may be copied or moved as a directory; one whose metastore lives
    elsewhere and that was moved on purpose is connected once with ``relocate=True``, which
    records the pair as given (the metastore then serves the new root, not the old one)."""
    if not isinstance(location, str | os.PathLike) or not os.fspath(location).strip():
        raise InvalidInputError(
            f"a warehouse location is a non-empty path or URI, got {location!r}")
    # a Spark task (a sanctioned lease or heartbeat) opens what the driver resolved and
    # paired: it neither reads its own environment nor checks again
    checked = not in_spark_task()
    if checked:
        location, metastore = chosen_pair(location, metastore)
    fs, root = afs.resolve(location, filesystem)
    marker = read_marker(fs, root) if checked else None
    if metastore is None:
        refuse_default(marker, root, file_exists=isinstance(fs, pafs.LocalFileSystem) and (
            Path(root) / DEFAULT_METASTORE_FILE).is_file())
        if not isinstance(fs, pafs.LocalFileSystem):
            raise MetastoreRequiredError(
                f"the warehouse {location} is on a {fs.type_name!r} filesystem: give "
                "metastore='postgresql://user@host:5432/dbname' (shared by every client) or "
                "'sqlite:////local/path.db' (one machine's clients only); the default SQLite "
                "file inside the warehouse needs a local directory")
    if not create:
        _require_existing(location, metastore, filesystem)
    if metastore is None:
        if Path(root).exists() and not Path(root).is_dir():
            raise InvalidInputError(f"the warehouse location {root} is a file, not a directory")
        Path(root).mkdir(parents=True, exist_ok=True)
        _refuse_emptied_metastore(Path(root))
        store: Metastore = SqliteMetastore(Path(root) / DEFAULT_METASTORE_FILE,
                                           timeout_seconds=txn_timeout)
    elif isinstance(metastore, str):
        store = _metastore_from_url(metastore, txn_timeout)
    else:
        store = metastore
    try:
        pairing = Pairing(store, fs, root, marker, relocate=relocate) if checked else None
        warehouse = Warehouse(location, store, filesystem=filesystem,
                              heartbeat_interval=txn_timeout / 2)
        if pairing is not None:
            pairing.record()
        return warehouse
    except BaseException:
        if store is not metastore:
            store.close()  # ours: do not leave its connections behind
        raise


def _require_existing(location: str | os.PathLike[str], metastore: str | Metastore | None,
                      filesystem: pafs.FileSystem | None) -> None:
    """Refuse a location that holds no warehouse: the directory must exist, and so must the
    SQLite metastore file when that is where the catalogue lives (a PostgreSQL metastore is
    checked by connecting to it)."""
    fs, root = afs.resolve(location, filesystem)
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        raise WarehouseNotFoundError(f"no warehouse at {root}: the directory does not exist",
                                     path=root)
    if metastore is None:
        catalogue = Path(root) / DEFAULT_METASTORE_FILE
        if not catalogue.is_file():
            raise WarehouseNotFoundError(
                f"no warehouse at {root}: it has no metastore file {DEFAULT_METASTORE_FILE} "
                "(give --metastore if its catalogue lives elsewhere)", path=root)
    elif isinstance(metastore, str) and metastore.startswith("sqlite:///"):
        catalogue = Path(metastore[len("sqlite:///"):])
        if not catalogue.is_file():
            raise WarehouseNotFoundError(
                f"no metastore at {catalogue} (from {metastore}) for the warehouse {root}",
                path=str(catalogue))


def _metastore_from_url(url: str, txn_timeout: float) -> Metastore:
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresMetastore(url, timeout_seconds=txn_timeout)
    if url.startswith("sqlite:///"):
        # SQLAlchemy's convention: sqlite:///relative/path, sqlite:////absolute/path
        return SqliteMetastore(url[len("sqlite:///"):], timeout_seconds=txn_timeout)
    raise InvalidInputError(
        f"unsupported metastore URL {url!r}: use postgresql://user@host:5432/dbname or "
        "sqlite:///path")
