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
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pytest

import acidstore

ROOT = Path(__file__).resolve().parents[2]
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


def _start(code: str, pythonpath: Path, cwd: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "PYTHONWARNINGS": "error::FutureWarning"}
    return subprocess.Popen([sys.executable, "-W", "error::FutureWarning", "-c",
                             textwrap.dedent(code)], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _output(child: subprocess.Popen[str]) -> str:
    try:
        out, err = child.communicate(timeout=CHILD_TIMEOUT)
    finally:
        if child.poll() is None:
            child.kill()
            child.communicate()
    assert child.returncode == 0, err[-4000:]
    return out


#: the code of each test's child, run with the PYTHONPATH its test prepares
IMPORT_FIRST = """
    import acidstore.spark                      # no session exists yet
    from pyspark.sql import SparkSession
    spark = {session}
    df = spark.read.format("acidstore").option("warehouse", {location!r}).load("db.t")
    print("ids", sorted(r.id for r in df.collect()))
    rows = spark.createDataFrame([(3, "c")], "id bigint, dt string")
    rows.write.format("acidstore").option("warehouse", {location!r}).mode(
        "append").save("db.t")
    at = acidstore.spark.AcidTable.forName(spark, "db.t", warehouse={location!r})
    print("toDF", at.toDF().count())  # its lease is the driver's, until stop()
    spark.stop()
"""
NOTHING_IMPORTED = """
    import sys
    from pyspark.sql import SparkSession
    spark = {session}
    df = spark.read.format("acidstore").option("warehouse", {location!r}).load("db.t")
    print("ids", sorted(r.id for r in df.collect()))
    assert "acidstore.spark" not in sys.modules  # found by Spark, not imported here
    import acidstore.spark
    acidstore.spark.register(spark)
    print("again", spark.read.format("acidstore").option(
        "warehouse", {location!r}).load("db.t").count())
    spark.stop()
"""


@pytest.fixture(scope="module")
def children(tmp_path_factory: pytest.TempPathFactory
             ) -> Iterator[dict[str, tuple[Path, subprocess.Popen[str]]]]:
    """Both children, started together: each is mostly a JVM starting, and the suite's own
    process only waits meanwhile, so the two share the machine's cores instead of queueing."""
    first = tmp_path_factory.mktemp("import-first")
    only_package = first / "path"
    only_package.mkdir()
    (only_package / "acidstore").symlink_to(ROOT / "acidstore")
    second = tmp_path_factory.mktemp("nothing-imported")
    started: dict[str, tuple[Path, subprocess.Popen[str]]] = {}
    try:
        for name, code, root, pythonpath in [("import-first", IMPORT_FIRST, first, only_package),
                                             ("nothing-imported", NOTHING_IMPORTED, second,
                                              ROOT)]:
            location = _warehouse(root)
            started[name] = (location, _start(
                code.format(session=SESSION, location=str(location)), pythonpath, root))
        yield started
    finally:
        for _, child in started.values():
            if child.poll() is None:
                child.kill()
                child.communicate()


@pytest.mark.slow
def test_import_before_the_session_registers_the_source(
        children: dict[str, tuple[Path, subprocess.Popen[str]]]) -> None:
    """The order that failed (DATA_SOURCE_NOT_FOUND): import, then build the session. The
    child sees the package but not ``pyspark_acidstore`` (as an editable install), so what
    registers the source is the import's hook on ``getOrCreate``."""
    location, child = children["import-first"]
    out = _output(child)
    assert "ids [1, 2]" in out and "toDF 3" in out
    with acidstore.connect(location) as wh:
        assert sorted(wh.table("db.t").to_arrow().column("id").to_pylist()) == [1, 2, 3]
        assert wh.metastore.active_leases("db.t") == []  # every read's lease released


@pytest.mark.slow
def test_spark_finds_the_source_with_nothing_imported(
        children: dict[str, tuple[Path, subprocess.Popen[str]]]) -> None:
    """An installed acidstore has ``pyspark_acidstore``, which Spark looks up on every session:
    no import at all; importing afterwards registers again without a conflict."""
    location, child = children["nothing-imported"]
    out = _output(child)
    assert "ids [1, 2]" in out and "again 2" in out
    with acidstore.connect(location) as wh:
        assert wh.metastore.active_leases("db.t") == []
