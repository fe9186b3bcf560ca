"""Spark SQL over acidstore tables (issue 15): temporary views queried by name, DESCRIBE, time
travel through a view's options; ``CREATE TABLE ... USING acidstore``, which PySpark cannot
back with a Python data source, refused where it is defined (or, with a column list Spark
never shows the source, at its first query and write) with ``UnsupportedOperationError``."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest
from spark_support import TABLE, arrow_rows, make_rows, spark_rows, three_writes

from acidstore import Warehouse
from acidstore.errors import TableNotFoundError, UnsupportedOperationError
from acidstore.spark import register_views
from acidstore.spark.typed_errors import typed_error

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def test_temporary_view_using_acidstore(spark: SparkSession, wh: Warehouse) -> None:
    t = three_writes(wh)
    options = f"warehouse '{wh.location}', table '{TABLE}'"
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW t_now USING acidstore OPTIONS ({options})")
    got = spark.sql("SELECT id, amount FROM t_now WHERE dt = 'a' AND id > 2")
    assert spark_rows(got) == arrow_rows(t.to_arrow(["id", "amount"], filter="dt = 'a' AND "
                                                                               "id > 2"))
    described = [(r.col_name, r.data_type) for r in spark.sql("DESCRIBE t_now").collect()]
    assert described == [("id", "bigint"), ("name", "string"), ("amount", "bigint"),
                         ("dt", "string")]
    # time travel: a view at a write id, or at a commit time
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW t_v1 USING acidstore OPTIONS ({options}, "
              "versionAsOf '1')")
    assert spark_rows(spark.sql("SELECT * FROM t_v1")) == arrow_rows(t.to_arrow(as_of=1))
    moment = t.history().column("commit_time").to_pylist()[1].isoformat()
    spark.sql(f"CREATE OR REPLACE TEMPORARY VIEW t_v2 USING acidstore OPTIONS ({options}, "
              f"timestampAsOf '{moment}')")
    assert spark_rows(spark.sql("SELECT * FROM t_v2")) == arrow_rows(t.to_arrow(as_of=2))
    # INSERT INTO the view writes through the source (its options name the table)
    spark.sql("INSERT INTO t_now VALUES (50, 'n50', 500, 'c')")
    assert t.to_arrow(filter="id = 50").num_rows == 1


def test_register_views(spark: SparkSession, wh: Warehouse) -> None:
    t = three_writes(wh)
    other = wh.create_table("hr.emp", make_rows([]).schema)
    other.insert(make_rows([7]))
    assert sorted(register_views(spark, str(wh.location))) == ["db_t", "hr_emp"]
    assert spark_rows(spark.sql("SELECT * FROM db_t")) == arrow_rows(t.to_arrow())
    assert spark.sql("SELECT id FROM hr_emp").collect()[0].id == 7
    assert register_views(spark, str(wh.location), [TABLE], as_of=1, suffix="_v1") == \
        ["db_t_v1"]
    assert spark_rows(spark.sql("SELECT * FROM db_t_v1")) == arrow_rows(t.to_arrow(as_of=1))
    # a view reads the snapshot of its first query until it is defined again
    t.insert(make_rows([99]))
    assert spark.sql("SELECT * FROM db_t WHERE id = 99").count() == 0
    register_views(spark, str(wh.location), [TABLE])
    assert spark.sql("SELECT * FROM db_t WHERE id = 99").count() == 1
    with pytest.raises(TableNotFoundError):
        register_views(spark, str(wh.location), ["db.nope"])


def test_create_table_using_acidstore_is_refused_where_defined(spark: SparkSession,
                                                                wh: Warehouse) -> None:
    t = three_writes(wh)
    with pytest.raises(Exception) as bad:
        spark.sql(f"CREATE TABLE sql_t USING acidstore OPTIONS (warehouse '{wh.location}', "
                  f"table '{TABLE}')")
    error = typed_error(bad.value)
    assert isinstance(error, UnsupportedOperationError), bad.value
    assert "CREATE TEMPORARY VIEW" in str(error)
    assert not spark.catalog.tableExists("sql_t")
    with pytest.raises(Exception) as bad:
        spark.sql(f"CREATE TABLE sql_p USING acidstore LOCATION '{t.location}'")
    assert isinstance(typed_error(bad.value), UnsupportedOperationError), bad.value
    assert not spark.catalog.tableExists("sql_p")


def test_a_catalog_table_with_columns_fails_at_its_first_use(spark: SparkSession,
                                                             wh: Warehouse) -> None:
    """With a column list Spark defines the table without asking the source; its reads and
    writes then reach the source with no options, and say what to do instead."""
    t = three_writes(wh)
    spark.sql(f"CREATE TABLE sql_c (id bigint) USING acidstore OPTIONS (warehouse "
              f"'{wh.location}', table '{TABLE}')")
    try:
        for statement in ("SELECT * FROM sql_c", "INSERT INTO sql_c VALUES (1)"):
            with pytest.raises(Exception) as bad:
                spark.sql(statement).collect()
            error = typed_error(bad.value)
            assert isinstance(error, UnsupportedOperationError), bad.value
            assert "CREATE TEMPORARY VIEW" in str(error)
    finally:
        spark.sql("DROP TABLE sql_c")
    assert t.to_arrow().num_rows == 6  # nothing written

