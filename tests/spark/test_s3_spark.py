"""Spark on a warehouse in S3 (moto's server on loopback, PostgreSQL metastore), with the
suite's shared SparkSession.

Spark hands the data source only strings, and its planning workers and executors are other
processes: they open the warehouse from ``s3://bucket/wh`` as pyarrow resolves it from their
environment (``spark.executorEnv.*``, here ``SparkContext.environment``, which Spark passes to
every Python worker it starts). No credential travels in an option (options show in plans and
logs) or in a pickled task: a filesystem resolved from the environment pickles without them.
"""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa
import pytest
from s3_support import S3Place

import acidstore
from acidstore.engine.handle import handle_of
from acidstore.spark import AcidTable, register
from acidstore.spark.datasource import AcidDataSource
from acidstore.spark.read_tasks import plan_read, read_options, read_schema
from benchmarks.postgres_server import PostgresServer
from benchmarks.s3_server import SECRET_KEY, S3Server

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

TABLE = "shop.orders"
SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64()), ("dt", pa.string())])


@pytest.fixture
def s3_place(s3_server: S3Server, postgres_server: PostgresServer, spark: SparkSession,
             monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Place]:
    """A warehouse on the server, reachable by URI alone from this process and from every
    Python worker Spark starts while the test runs."""
    environ = s3_server.environ()
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    workers = spark.sparkContext.environment
    saved = {name: workers.get(name) for name in environ}
    workers.update(environ)
    # Spark runs a source it found itself (``pyspark_acidstore``) in planner processes with
    # the JVM's own environment, fixed when the suite's session started, before this server
    # existed; a user exports the AWS variables before starting Spark. A source registered
    # at run time is planned with the session's worker environment, set just above.
    spark.dataSource.register(AcidDataSource)
    try:
        yield S3Place(s3_server, s3_server.new_bucket(), postgres_server.new_store())
    finally:
        for name, previous in saved.items():
            if previous is None:
                workers.pop(name, None)
            else:
                workers[name] = previous


def ordered(rows: list[dict[str, object]]) -> list[tuple[object, ...]]:
    return sorted(tuple(r.values()) for r in rows)


def test_spark_reads_and_writes_a_table_on_s3(s3_place: S3Place, spark: SparkSession) -> None:
    with acidstore.connect(s3_place.uri, metastore=s3_place.metastore) as wh:
        t = wh.create_table(TABLE, SCHEMA, partition_by=["dt"], bucket_by=["id"], buckets=2)
        t.insert(pa.table({"id": [1, 2, 3, 4], "amount": [1.0, 2.0, 3.0, 4.0],
                           "dt": ["a", "a", "b", "b"]}))
        t.delete("id = 3")  # a delete_delta the executors must apply
        expected = ordered(t.to_arrow().to_pylist())

    table = AcidTable.forName(spark, TABLE, warehouse=s3_place.uri, metastore=s3_place.metastore)
    assert ordered([r.asDict() for r in table.toDF().collect()]) == expected
    df = (spark.read.format("acidstore").option("warehouse", s3_place.uri)
          .option("metastore", s3_place.metastore).load(TABLE))
    assert ordered([r.asDict() for r in df.collect()]) == expected
    by_path = AcidTable.forPath(spark, f"{s3_place.uri}/shop.db/orders",
                                warehouse=s3_place.uri, metastore=s3_place.metastore)
    assert by_path.toDF().count() == len(expected)

    # DML: the statement core's units run in Spark tasks, inserts stage and move on S3
    table.delete("id = 1")
    table.insert(spark.createDataFrame([(5, 5.0, "c")], "id long, amount double, dt string"))
    with acidstore.connect(s3_place.uri, metastore=s3_place.metastore) as wh:
        assert ordered(wh.table(TABLE).to_arrow().to_pylist()) == [
            (2, 2.0, "a"), (4, 4.0, "b"), (5, 5.0, "c")]
        assert wh.fsck().num_rows == 0
    # nothing of the staging area is left on S3
    assert not [k for k in s3_place.objects() if "_acidstore_staging" in k]


def test_no_credential_in_a_plan_or_a_pickled_task(s3_place: S3Place,
                                                   spark: SparkSession) -> None:
    def pickled_tasks(wh: acidstore.Warehouse) -> bytes:
        t = wh.table(TABLE)
        options = read_options({})
        tasks, _ = plan_read(handle_of(t), options, read_schema(handle_of(t), options),
                         handle_of(t).read_snapshot())
        assert tasks and tasks[0].planned
        return pickle.dumps(tasks)

    with acidstore.connect(s3_place.uri, metastore=s3_place.metastore) as wh:
        t = wh.create_table(TABLE, SCHEMA, partition_by=["dt"])
        t.insert(pa.table({"id": [1], "amount": [1.0], "dt": ["a"]}))
        # resolved from the environment: each executor resolves its own credentials again
        assert SECRET_KEY.encode() not in pickled_tasks(wh)
    # (a filesystem built with explicit keys would carry them: why Spark uses the URI form)
    with acidstore.connect(s3_place.uri, metastore=s3_place.metastore,
                           filesystem=s3_place.filesystem()) as wh:
        assert SECRET_KEY.encode() in pickled_tasks(wh)
    register(spark)
    df = (spark.read.format("acidstore").option("warehouse", s3_place.uri)
          .option("metastore", s3_place.metastore).load(TABLE))
    assert SECRET_KEY not in df._jdf.queryExecution().toString()
    assert df.count() == 1
