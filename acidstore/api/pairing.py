"""A warehouse and its metastore (layer L4): which pair a client opens, and how each side
knows the other is its own.

A metastore holds the catalogue of one warehouse: table locations relative to its root, the
write ids its directories are named after. Paired with another warehouse it lists tables
whose files are not there (every read a ``MissingDataError``) and ``drop_table`` removes the
other warehouse's entries; a warehouse opened without its metastore would start a new, empty
SQLite catalogue beside the real one. So each side records the other:

- the metastore records the root it serves and a pairing id (``Metastore.bind_warehouse``,
  schema version 13); a SQLite file inside the root it serves (the default,
  ``_acidstore_metastore.db``) records ``.``, the directory it sits in, so a warehouse copied
  or moved with its file needs nothing done;
- the warehouse root holds ``_acidstore_warehouse.json``, naming the kind of metastore, its
  URL without a password (none for its own SQLite file) and the same pairing id.

``connect`` checks both before it creates or changes anything (``MetastoreMismatchError``
naming both sides), records what is missing (a store or warehouse from before the records:
bound on its first connect), and with ``relocate=True`` records the pair it was given (a
warehouse moved on purpose, with a metastore elsewhere). Spark tasks skip all of it: the
driver checked the pair before it planned them, and tasks must not open the metastore.

Which pair: what the caller gives, else ``ACIDSTORE_WAREHOUSE`` / ``ACIDSTORE_METASTORE``
(``chosen_pair``), for ``connect``, every CLI command and the Spark options alike.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, overload

import pyarrow.fs as pafs

from acidstore.config import METASTORE_ENV, WAREHOUSE_ENV, environment
from acidstore.errors import AcidStoreError, InvalidInputError, MetastoreMismatchError
from acidstore.io import fs as afs
from acidstore.metastore import Metastore, SqliteMetastore, WarehouseBinding

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["DEFAULT_METASTORE_FILE", "EMBEDDED_ROOT", "MARKER_FILE", "METASTORE_ENV",
           "WAREHOUSE_ENV", "Marker", "Pairing", "chosen_metastore", "chosen_pair",
           "default_warehouse", "read_marker", "refuse_default"]

#: the marker file at a warehouse root
MARKER_FILE = "_acidstore_warehouse.json"
#: the file name of a warehouse's own SQLite metastore, at its root (the default metastore)
DEFAULT_METASTORE_FILE = "_acidstore_metastore.db"
#: the root a SQLite metastore inside the root it serves records: the directory it sits in
EMBEDDED_ROOT = "."
#: how often a binding lost to another client's at the same moment is looked at again
_ATTEMPTS = 3


@overload
def chosen_metastore(metastore: str | None, *,
                     environ: Mapping[str, str] | None = None) -> str | None: ...


@overload
def chosen_metastore(metastore: str | Metastore | None, *,
                     environ: Mapping[str, str] | None = None) -> str | Metastore | None: ...


def chosen_metastore(metastore: str | Metastore | None, *,
                     environ: Mapping[str, str] | None = None) -> str | Metastore | None:
    """``metastore`` as given, else ``ACIDSTORE_METASTORE`` (unset or empty: None, the
    warehouse's own SQLite file)."""
    if metastore is not None:
        return metastore
    return environment(METASTORE_ENV, environ)


def default_warehouse(*, environ: Mapping[str, str] | None = None) -> str | None:
    """``ACIDSTORE_WAREHOUSE`` (unset or empty: None)."""
    return environment(WAREHOUSE_ENV, environ)


@overload
def chosen_pair(warehouse: str | os.PathLike[str] | None, metastore: str | None, *,
                environ: Mapping[str, str] | None = None
                ) -> tuple[str | os.PathLike[str], str | None]: ...


@overload
def chosen_pair(warehouse: str | os.PathLike[str] | None, metastore: str | Metastore | None,
                *, environ: Mapping[str, str] | None = None
                ) -> tuple[str | os.PathLike[str], str | Metastore | None]: ...


def chosen_pair(warehouse: str | os.PathLike[str] | None, metastore: str | Metastore | None,
                *, environ: Mapping[str, str] | None = None
                ) -> tuple[str | os.PathLike[str], str | Metastore | None]:
    """The warehouse and metastore a client opens: each as given (an explicit argument
    wins), else from ``ACIDSTORE_WAREHOUSE`` / ``ACIDSTORE_METASTORE``."""
    if warehouse is None:
        warehouse = default_warehouse(environ=environ)
        if warehouse is None:
            raise InvalidInputError(f"no warehouse given: pass --warehouse PATH (or the "
                                    f"location) or set {WAREHOUSE_ENV}")
    return warehouse, chosen_metastore(metastore, environ=environ)


@dataclass(frozen=True)
class Marker:
    """What a warehouse root records of its metastore (``MARKER_FILE``): its kind
    (``sqlite``, ``postgresql``), its URL without a password (None: the SQLite file inside
    the warehouse, wherever the warehouse is) and the pairing id the metastore records."""

    kind: str
    url: str | None
    pairing_id: str

    def describe(self, root: str) -> str:
        return self.url or f"its own SQLite file {afs.join(root, DEFAULT_METASTORE_FILE)}"

    def encoded(self) -> bytes:
        return json.dumps({"acidstore": "warehouse", "metastore": self.kind, "url": self.url,
                           "pairing_id": self.pairing_id}, indent=1).encode() + b"\n"


def read_marker(fs: pafs.FileSystem, root: str) -> Marker | None:
    """The warehouse's marker, or None where there is none (a new warehouse, or one made
    before markers existed)."""
    path = afs.join(root, MARKER_FILE)
    try:
        data = afs.read_bytes(fs, path)
    except FileNotFoundError:
        return None
    except OSError as exc:  # read_bytes types it: a StorageError naming the marker
        if exc.errno == errno.ENOTDIR:
            return None  # the location is a file: connect says so
        raise
    try:
        found = json.loads(data)
        return Marker(str(found["metastore"]), None if found["url"] is None else
                      str(found["url"]), str(found["pairing_id"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise InvalidInputError(
            f"the warehouse marker {path} cannot be read ({exc}): it names the metastore "
            "holding this warehouse's catalogue; restore it, or remove it and connect with "
            "the right metastore, which writes it again") from exc


def refuse_default(marker: Marker | None, root: str, *, file_exists: bool) -> None:
    """Before the default metastore (the warehouse's own SQLite file) is opened: refuse a
    warehouse whose catalogue lives elsewhere, or whose own file is gone, instead of
    creating an empty one."""
    if marker is None:
        return
    if marker.url is None:
        if not file_exists:
            path = afs.join(root, DEFAULT_METASTORE_FILE)
            raise MetastoreMismatchError(
                f"the warehouse {root} keeps its catalogue in its own SQLite file {path}, "
                "which is gone: a new one would not know the tables' write ids. Restore it "
                "from a backup (nothing was created)", warehouse=root,
                metastore="(none: the warehouse's own SQLite file)", expected=path)
        return
    raise MetastoreMismatchError(
        f"the warehouse {root} keeps its catalogue in the metastore {marker.url}: give "
        f"metastore='{marker.url}' (with its password, if it needs one) or set "
        f"{METASTORE_ENV}; opening it without one would start a new, empty catalogue",
        warehouse=root, metastore="(none: the warehouse's own SQLite file)",
        expected=marker.url)


def _is_embedded(store: Metastore, fs: pafs.FileSystem, root: str) -> bool:
    """Whether ``store`` is the SQLite file inside the warehouse root (the default)."""
    local = afs.local_path(fs, root)
    return (isinstance(store, SqliteMetastore) and local is not None
            and os.path.realpath(store.path) == os.path.realpath(
                os.path.join(local, DEFAULT_METASTORE_FILE)))


def _served(binding: WarehouseBinding, store: Metastore) -> str:
    """The warehouse root a binding names (``.``: the directory of the store's file)."""
    if binding.root == EMBEDDED_ROOT and isinstance(store, SqliteMetastore):
        return afs.location_uri(pafs.LocalFileSystem(), os.path.dirname(
            os.path.abspath(store.path)))
    return binding.root


def _kind(store: Metastore) -> str:
    return store.url.split(":", 1)[0]


class Pairing:
    """The check of one (warehouse, metastore) pair, then the records it lacks.

    ``Pairing(store, fs, root, marker, relocate=...)`` reads both sides and raises
    ``MetastoreMismatchError`` if they do not belong together, changing nothing; the caller
    then creates the warehouse directory and calls ``record``."""

    def __init__(self, store: Metastore, fs: pafs.FileSystem, root: str,
                 marker: Marker | None, *, relocate: bool) -> None:
        self._store, self._fs, self._root, self._relocate = store, fs, root, relocate
        self._here = afs.location_uri(fs, root)
        self._embedded = _is_embedded(store, fs, root)
        self._marker = marker
        self._binding = store.warehouse_binding()
        self._check()

    def _check(self) -> None:
        if self._relocate:
            return
        binding, marker = self._binding, self._marker
        if binding is not None and _served(binding, self._store) != self._here:
            served = _served(binding, self._store)
            raise MetastoreMismatchError(
                f"the metastore {self._store.url} serves the warehouse {served}, not "
                f"{self._here}: one metastore holds one warehouse's catalogue. Give this "
                "warehouse its own metastore; if the warehouse was moved here, connect once "
                "with relocate=True (acidstore.connect) to record its new place",
                warehouse=self._here, metastore=self._store.url, expected=served)
        if marker is not None and (binding is None or binding.pairing_id != marker.pairing_id):
            expected = marker.describe(self._root)
            if marker.url is None and self._embedded:
                raise MetastoreMismatchError(
                    f"the SQLite file {self._store.url} of the warehouse {self._here} is not "
                    f"the catalogue the warehouse was paired with (its {MARKER_FILE} names "
                    "another): it was lost, replaced or emptied, and a new one would not "
                    "know the tables' write ids. Restore it from a backup; to start a new "
                    "catalogue on purpose, connect once with relocate=True",
                    warehouse=self._here, metastore=self._store.url, expected=expected)
            whose = ("records no warehouse" if binding is None else
                     f"serves {_served(binding, self._store)} under another pairing id")
            raise MetastoreMismatchError(
                f"the warehouse {self._here} keeps its catalogue in {expected} (its "
                f"{MARKER_FILE}), not in the metastore {self._store.url}, which {whose}. "
                "Connect with the warehouse's own metastore; to make this one its "
                "catalogue from now on, connect once with relocate=True",
                warehouse=self._here, metastore=self._store.url, expected=expected)

    def _wanted(self) -> WarehouseBinding:
        if self._binding is not None:
            pairing_id = self._binding.pairing_id
        elif self._marker is not None:
            pairing_id = self._marker.pairing_id  # relocate: the warehouse's own id
        else:
            pairing_id = uuid.uuid4().hex
        return WarehouseBinding(EMBEDDED_ROOT if self._embedded else self._here, pairing_id)

    def record(self) -> None:
        """Record what is missing (or, relocating, what changed): the metastore's binding
        first, then the warehouse's marker, so a marker always names a bound store. A store
        that cannot be written (a read-only archive) is left as it is: nothing can be
        changed through it. Of two clients binding a new store at once, the one that loses
        checks again against the winner's binding."""
        for _ in range(_ATTEMPTS):
            wanted = self._wanted()
            if self._binding != wanted and getattr(self._store, "read_only", False):
                if self._relocate:
                    self._store.check_writable()  # ReadOnlyWarehouseError
                return
            found = self._store.bind_warehouse(wanted, replacing=self._binding,
                                               warehouse=self._here)
            if found == wanted:
                self._write_marker(wanted)
                return
            # another client bound the store in between: look again at what it recorded
            self._binding, self._marker = found, read_marker(self._fs, self._root)
            self._relocate = False
            self._check()
        raise MetastoreMismatchError(
            f"the metastore {self._store.url} keeps changing the warehouse it serves while "
            f"{self._here} connects; nothing was recorded, connect again",
            warehouse=self._here, metastore=self._store.url, expected="(changing)")

    def _write_marker(self, binding: WarehouseBinding) -> None:
        """Best effort: a warehouse the client may not write (a read-only prefix) works
        without its marker, and the next client that may write records it."""
        marker = Marker(_kind(self._store), None if self._embedded else self._store.url,
                        binding.pairing_id)
        if marker == self._marker:
            return
        with contextlib.suppress(AcidStoreError, OSError):
            afs.write_bytes(self._fs, afs.join(self._root, MARKER_FILE), marker.encoded())
