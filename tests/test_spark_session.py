"""``format("acidstore")`` whatever the import order, and a quiet session (issue 15).

Each test starts a fresh Python process with a SparkSession of its own (the suite's shared one
was made after ``acidstore.spark`` was imported, which is the order that always worked), with
FutureWarning made an error in the driver and in Spark's Python workers (``PYTHONWARNINGS``
reaches them): PySpark 4.3 warns so on pandas >= 3, which pyproject excludes. Both also check
that the session's reads left no snapshot lease once it stopped.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

import acidstore

ROOT = Path(__file__).resolve().parent.parent
#: seconds a child may take (a JVM start plus two small jobs take 10-20 s here)
CHILD_TIMEOUT = 240

SESSION = ('SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")'
           '.config("spark.sql.shuffle.partitions", "1").getOrCreate()')


def _warehouse(root: Path) -> Path:
    location = root / "wh"
    with acidstore.connect(location) as wh:
        t = wh.create_table("db.t", pa.schema([("id", pa.int64()), ("dt", pa.string())]),
                            partition_by=["dt"])
        t.insert(pa.table({"id": [1, 2], "dt": ["a", "b"]}))
    return location


def _run(code: str, pythonpath: Path, cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "PYTHONWARNINGS": "error::FutureWarning"}
    done = subprocess.run([sys.executable, "-W", "error::FutureWarning", "-c",
                           textwrap.dedent(code)], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=CHILD_TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout


@pytest.mark.slow
def test_import_before_the_session_registers_the_source(tmp_path: Path) -> None:
    """The order that failed (DATA_SOURCE_NOT_FOUND): import, then build the session. The
    child sees the package but not ``pyspark_acidstore`` (as an editable install), so what
    registers the source is the import's hook on ``getOrCreate``."""
    location = _warehouse(tmp_path)
    only_package = tmp_path / "path"
    only_package.mkdir()
    (only_package / "acidstore").symlink_to(ROOT / "acidstore")
    out = _run(f"""
        import acidstore.spark                      # no session exists yet
        from pyspark.sql import SparkSession
        spark = {SESSION}
        df = spark.read.format("acidstore").option("warehouse", {str(location)!r}).load("db.t")
        print("ids", sorted(r.id for r in df.collect()))
        rows = spark.createDataFrame([(3, "c")], "id bigint, dt string")
        rows.write.format("acidstore").option("warehouse", {str(location)!r}).mode(
            "append").save("db.t")
        at = acidstore.spark.AcidTable.forName(spark, "db.t", warehouse={str(location)!r})
        print("toDF", at.toDF().count())  # its lease is the driver's, until stop()
        spark.stop()
    """, only_package, tmp_path)
    assert "ids [1, 2]" in out and "toDF 3" in out
    with acidstore.connect(location) as wh:
        assert sorted(wh.table("db.t").to_arrow().column("id").to_pylist()) == [1, 2, 3]
        assert wh.metastore.active_leases("db.t") == []  # every read's lease released


@pytest.mark.slow
def test_spark_finds_the_source_with_nothing_imported(tmp_path: Path) -> None:
    """An installed acidstore has ``pyspark_acidstore``, which Spark looks up on every session:
    no import at all; importing afterwards registers again without a conflict."""
    location = _warehouse(tmp_path)
    out = _run(f"""
        import sys
        from pyspark.sql import SparkSession
        spark = {SESSION}
        df = spark.read.format("acidstore").option("warehouse", {str(location)!r}).load("db.t")
        print("ids", sorted(r.id for r in df.collect()))
        assert "acidstore.spark" not in sys.modules  # found by Spark, not imported here
        import acidstore.spark
        acidstore.spark.register(spark)
        print("again", spark.read.format("acidstore").option(
            "warehouse", {str(location)!r}).load("db.t").count())
        spark.stop()
    """, ROOT, tmp_path)
    assert "ids [1, 2]" in out and "again 2" in out
    with acidstore.connect(location) as wh:
        assert wh.metastore.active_leases("db.t") == []
