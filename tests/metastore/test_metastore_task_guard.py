"""Executors never open the metastore: the guard fires inside a Spark task, on both backends.

The tasks run in the shared local session's Python workers, which set ``TaskContext`` exactly
as an executor's do. The functions shipped to them are pickled by value (the workers cannot
import this module). The other half of the promise, that acidstore's own Spark jobs pass the
guard, is proven by every Spark test and by the cluster test (``tests/system/test_cluster.py``),
whose executors run on workers of their own.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from pyspark import cloudpickle

import acidstore
from acidstore.errors import MetastoreInTaskError
from acidstore.metastore import SqliteMetastore
from acidstore.metastore.task_guard import in_spark_task, permit_in_task, refuse_in_spark_task
from acidstore.spark.options import Target, heartbeat

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from benchmarks.postgres_server import PostgresServer

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]


def _open_in_task(location: str, metastore: str | None) -> str:
    """Connect to a warehouse; the outcome as text (a task's exception would be wrapped)."""
    try:
        acidstore.connect(location, metastore=metastore, create=False).close()
    except MetastoreInTaskError as exc:
        return f"refused: {exc}"
    return "opened"


def _permitted_in_task(location: str) -> str:
    with permit_in_task("a test"):
        SqliteMetastore(Path(location) / "_acidstore_metastore.db").close()
    return "opened"


def _heartbeat_in_task(location: str, txn_id: int) -> str:
    heartbeat(Target(location, None, "db.t", None), txn_id)
    return "beat"


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_opening_a_metastore_inside_a_task_is_refused(
        spark: SparkSession, tmp_path: Path, backend: str,
        request: pytest.FixtureRequest) -> None:
    url = None
    if backend == "postgresql":
        server: PostgresServer = request.getfixturevalue("postgres_server")
        url = server.new_store()
    location = str(tmp_path / "wh")
    acidstore.connect(location, metastore=url).close()  # the driver may: it exists now
    outcome = spark.sparkContext.parallelize([location], 1).map(
        lambda where: _open_in_task(where, url)).collect()
    assert len(outcome) == 1 and outcome[0].startswith("refused: a Spark task (stage "), outcome
    assert "only the driver talks to the metastore" in outcome[0]
    assert not in_spark_task()
    refuse_in_spark_task("nowhere")  # the driver is not a task: no error


def test_the_sanctioned_exception_opens_and_heartbeats_inside_a_task(
        spark: SparkSession, tmp_path: Path) -> None:
    """``permit_in_task`` (the df.write heartbeat's way in) lets a task open the store, and
    ``locate.heartbeat`` run in a task really heartbeats the driver's transaction."""
    location = str(tmp_path / "wh")
    with acidstore.connect(location) as wh:
        txn = wh.metastore.open_transaction(user="test", host="driver")
        rdd = spark.sparkContext.parallelize([location], 1)
        assert rdd.map(_permitted_in_task).collect() == ["opened"]
        before = txn.last_heartbeat
        assert rdd.map(lambda where: _heartbeat_in_task(where, txn.txn_id)).collect() == ["beat"]
        after = next(t for t in wh.metastore.show_transactions() if t.txn_id == txn.txn_id)
        assert after.last_heartbeat > before
        wh.metastore.abort(txn.txn_id)
