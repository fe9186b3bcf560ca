"""Fixtures of tests that run on both metastores (``tests/conftest.py`` registers them):
``store`` (the metastore URL: None for the warehouse's own SQLite file, or a new database on
the run's throwaway PostgreSQL server) and ``store_wh``, a new warehouse on it. A module whose
every test runs on both defines its ``wh`` fixture as ``store_wh``."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import acidstore
from acidstore import Warehouse


@pytest.fixture(name="store", params=["sqlite", "postgresql"])
def store_fixture(request: pytest.FixtureRequest) -> str | None:
    """The metastore URL (None: the warehouse's own SQLite file)."""
    if request.param == "sqlite":
        return None
    url: str = request.getfixturevalue("postgres_server").new_store()
    return url


@pytest.fixture(name="store_wh")
def store_wh_fixture(store: str | None, tmp_path: Path) -> Iterator[Warehouse]:
    """A new warehouse whose metastore is ``store``."""
    with acidstore.connect(tmp_path / "wh", metastore=store) as warehouse:
        yield warehouse
