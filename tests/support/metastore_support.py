"""Shared pieces of the metastore tests beside the contract suite: the backend plug-in point
and helpers.

The contract every backend passes is ``acidstore.metastore.testing`` (its subclasses for
SQLite and PostgreSQL: ``test_metastore_contract.py``). The tests here need more than a client
of a store (spawned processes, migrations, a backend's own facts), so a backend is plugged in
here as well (SQLite files, and databases on the throwaway PostgreSQL server of
``postgres_server``): add its name to ``BACKENDS`` and a branch to
``metastore_workers.open_metastore`` (which spawned worker processes use as well). Test modules
import ``backend_fixture`` and ``metastore_fixture``, which pytest knows as ``backend`` and
``metastore`` (the import names differ so that test parameters do not shadow them).
"""

from __future__ import annotations

import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from metastore_workers import BackendSpec, open_metastore

from acidstore.metastore import Metastore
from acidstore.metastore.testing.harness import (
    MAX,
    SCHEMA,
    begin,
    component,
    new_table,
    states,
    write,
)
from benchmarks.postgres_server import PostgresServer

# the contract suite's helpers, which the tests beside it use too
__all__ = ["BACKENDS", "MAX", "SCHEMA", "Backend", "backend_fixture", "begin", "component",
           "metastore_fixture", "new_table", "place_fixture", "sqlite_steps", "states",
           "write"]

# --- backends ---------------------------------------------------------------------------------


@dataclass
class Backend:
    """How to open (and re-open, from other threads and processes) one backend's store:
    a SQLite file under ``root``, or a database of its own on the test PostgreSQL server."""

    kind: str
    root: Path
    server: PostgresServer | None = None
    url: str = ""

    @property
    def spec(self) -> BackendSpec:
        if self.kind == "postgresql":
            return (self.kind, self.url)
        return (self.kind, str(self.root / "metastore.db"))

    def open(self, **options: Any) -> Metastore:
        return open_metastore(self.spec, **options)

    def open_fresh(self) -> tuple[Metastore, Path]:
        """A new, empty store (for hypothesis examples, which cannot use tmp_path)."""
        directory = Path(tempfile.mkdtemp(dir=self.root))
        if self.server is not None:
            return open_metastore((self.kind, self.server.new_store())), directory
        return open_metastore((self.kind, str(directory / "metastore.db"))), directory


BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(name="backend", params=BACKENDS)
def backend_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    if request.param == "postgresql":
        # started on first use, once per run (conftest): SQLite-only runs never start it
        server: PostgresServer = request.getfixturevalue("postgres_server")
        return Backend("postgresql", tmp_path, server, server.new_store())
    return Backend(str(request.param), tmp_path)


@pytest.fixture(name="place", params=BACKENDS)
def place_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> str | tuple[str, str]:
    """Where a warehouse is (``table_workers.Place``): a directory with its SQLite metastore,
    or a directory plus a metastore of its own on the test PostgreSQL server."""
    location = str(tmp_path / "wh")
    if request.param == "postgresql":
        return location, request.getfixturevalue("postgres_server").new_store()
    return location


@pytest.fixture(name="metastore")
def metastore_fixture(backend: Backend) -> Iterator[Metastore]:
    store = backend.open()
    yield store
    store.close()


# --- helpers ----------------------------------------------------------------------------------


def sqlite_steps(conn: sqlite3.Connection, action: Callable[[], object]) -> int:
    """SQLite virtual-machine steps (in units of 10) ``action`` makes on ``conn``: a
    deterministic measure of how much a call reads, where time would be noise."""
    counted = [0]

    def count() -> int:
        counted[0] += 1
        return 0

    conn.set_progress_handler(count, 10)
    try:
        action()
    finally:
        conn.set_progress_handler(None, 0)
    return counted[0]
