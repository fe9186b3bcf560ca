"""Tables from and to data frames (issue 15): ``create_table`` from a pyarrow Table or pandas
DataFrame, ``if_not_exists``, ``to_pandas``, ``to_duckdb`` and ``to_polars``."""

from __future__ import annotations

import importlib.util
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

import acidstore
from acidstore import Warehouse
from acidstore.engine.handle import handle_of
from acidstore.errors import MissingDependencyError, SchemaMismatchError, TableExistsError

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("dt", pa.string())])
ROWS = pa.table({"id": [1, 2, 3], "name": ["a", "b", None], "dt": ["x", "x", "y"]},
                schema=SCHEMA)


def test_create_from_a_pandas_frame_takes_its_schema_only(wh: Warehouse) -> None:
    df = pa.table({"id": [1, 2], "name": ["a", "b"], "dt": ["x", "y"],
                   "idx": [10, 11]}).to_pandas().set_index("idx")  # a named index
    t = wh.create_table("db.t", df, partition_by=["dt"])
    assert t.schema == SCHEMA
    assert t.schema.metadata is None  # no pandas metadata stored in the catalog
    assert t.to_arrow().num_rows == 0  # the rows are not inserted
    t.insert(df)
    assert sorted(t.to_pandas()["id"]) == [1, 2]


def test_create_from_an_arrow_table(wh: Warehouse) -> None:
    t = wh.create_table("db.t", ROWS, bucket_by=["id"], buckets=2)
    assert t.schema == SCHEMA and t.to_arrow().num_rows == 0


def test_an_all_null_pandas_column_is_refused(wh: Warehouse) -> None:
    df = pa.table({"id": [1], "note": pa.nulls(1)}).to_pandas()
    with pytest.raises(SchemaMismatchError, match=r"\['note'\]"):
        wh.create_table("db.t", df)
    assert wh.tables() == []


def test_if_not_exists_returns_the_existing_table_unchanged(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(ROWS)
    with pytest.raises(TableExistsError):
        wh.create_table("db.t", SCHEMA)
    # like CREATE TABLE IF NOT EXISTS: the existing table wins, its schema is not compared
    again = wh.create_table("DB.T", pa.schema([("other", pa.int32())]), if_not_exists=True)
    assert handle_of(again).info.table_id == handle_of(t).info.table_id
    assert again.schema == SCHEMA and again.to_arrow().num_rows == 3
    fresh = wh.create_table("db.u", SCHEMA, if_not_exists=True)
    assert fresh.name == "db.u" and sorted(wh.tables()) == ["db.t", "db.u"]


def test_if_not_exists_from_racing_clients_gives_one_table(tmp_path: Path) -> None:
    """Several clients running the same setup code at once: each gets the one table."""
    acidstore.connect(tmp_path / "wh").close()

    def create(_: int) -> int:
        with acidstore.connect(tmp_path / "wh") as wh:
            return handle_of(wh.create_table("db.t", SCHEMA, if_not_exists=True)).info.table_id

    with ThreadPoolExecutor(max_workers=4) as pool:  # an error in a thread is raised here
        ids = list(pool.map(create, range(4)))
    assert len(set(ids)) == 1


def test_to_pandas_mirrors_to_arrow(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
    t.insert(ROWS)
    t.delete("id = 1")
    df = t.to_pandas(columns=["id", "dt"], filter="dt = 'x'")
    assert list(df.columns) == ["id", "dt"] and df["id"].tolist() == [2]
    past = t.to_pandas(as_of=1).sort_values("id")
    assert past["id"].tolist() == [1, 2, 3]
    assert past["name"].tolist()[:2] == ["a", "b"]


def test_to_duckdb_is_a_relation_over_the_snapshot(wh: Warehouse) -> None:
    import duckdb

    t = wh.create_table("db.t", SCHEMA)
    t.insert(ROWS)
    rel = t.to_duckdb()
    assert rel.aggregate("sum(id)").fetchall() == [(6,)]
    con = duckdb.connect()
    rel = t.to_duckdb(con, columns=["id"], filter="id > 1", as_of=1)
    assert sorted(r[0] for r in rel.fetchall()) == [2, 3]
    t.delete("true")
    assert rel.aggregate("count(*)").fetchall() == [(2,)]  # rows read when it was made


@pytest.mark.skipif(importlib.util.find_spec("polars") is not None,
                    reason="polars is installed: the next test covers it")
def test_to_polars_without_polars_says_what_to_install(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA)
    with pytest.raises(MissingDependencyError, match="pip install 'polars'") as caught:
        t.to_polars()
    assert isinstance(caught.value, ImportError) and caught.value.package == "polars"


@pytest.mark.skipif(importlib.util.find_spec("polars") is None, reason="polars not installed")
def test_to_polars(wh: Warehouse) -> None:
    t = wh.create_table("db.t", SCHEMA)
    t.insert(ROWS)
    assert sorted(t.to_polars()["id"].to_list()) == [1, 2, 3]
