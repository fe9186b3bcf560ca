"""Shared test configuration: hypothesis profiles sized for CI and for local runs.

Select with HYPOTHESIS_PROFILE (``ci`` is used when CI is set, ``dev`` otherwise;
``thorough`` for a long local soak).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import HealthCheck, settings
from s3_support import s3_place_fixture, s3_server_fixture
from store_support import store_fixture, store_wh_fixture

# the session's S3 server, as fixture ``s3_server``, and a bucket on it (``s3_place``); each
# metastore (``store``) and a warehouse on it (``store_wh``)
__all__ = ["s3_place_fixture", "s3_server_fixture", "store_fixture", "store_wh_fixture"]

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from acidstore import Warehouse
    from benchmarks.postgres_server import PostgresServer

# CI's whole run must stay under 20 minutes on 2 cores: 40 derandomized examples a property
# (the "thorough" profile explores more, on demand)
settings.register_profile(
    "ci", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow],
    derandomize=True, print_blob=True,
)
settings.register_profile(
    "dev", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile(
    "thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow],
)
#: rows of the benchmark smoke tests' table
BENCH_ROWS = 2000

# a developer's own ACIDSTORE_METASTORE / ACIDSTORE_WAREHOUSE must not point the suite's
# warehouses elsewhere: tests that are about them set them (monkeypatch)
for _name in ("ACIDSTORE_METASTORE", "ACIDSTORE_WAREHOUSE"):
    os.environ.pop(_name, None)

settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    """An empty embedded warehouse (SQLite metastore) of its own for one test; test modules
    that need another shape define their own ``wh``."""
    import acidstore

    with acidstore.connect(tmp_path / "wh") as warehouse:
        yield warehouse


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL server for the whole run (``postgres_server.start``); each
    test that uses it makes a database of its own. Failing to start it fails those tests:
    only an explicit ACIDSTORE_SKIP_POSTGRES=1 skips them (CI never sets it)."""
    from benchmarks.postgres_server import SKIP_ENV, start

    if os.environ.get(SKIP_ENV):
        pytest.skip(f"{SKIP_ENV} is set: PostgreSQL metastore tests skipped")
    server = start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def spark() -> Iterator[SparkSession]:
    """One SparkSession (``local[2]``) for the whole run: starting one costs seconds, and CI's
    time budget allows one. Spark tests request this fixture; the rest never start a JVM."""
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("acidstore-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.shuffle.partitions", "4")
               .config("spark.default.parallelism", "2")
               .config("spark.sql.session.timeZone", "UTC")
               # statements' units in Spark tasks, as on a cluster (a local session would
               # run them in the driver; test_spark_units_in_driver holds the two alike)
               .config("spark.acidstore.dml.inDriverOnLocal", "false")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def bench_states(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The benchmark suite's prepared states on a tiny table (2,000 rows), built once for the
    smoke tests of every workload: the write states, their plain ORC copies, the compacted
    table, and task arguments without warm-ups."""
    from benchmarks.states import prepare_compacted, prepare_spark, prepare_write

    root = tmp_path_factory.mktemp("bench") / "write"
    return {**prepare_write(root, BENCH_ROWS), **prepare_spark(root, 1 << 20),
            **prepare_compacted(root), "stripe_size": 1 << 20, "warmups": 0}
