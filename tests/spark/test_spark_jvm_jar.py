"""Where the Java reader's jar comes from (``acidstore.spark.jvm_jar``, ``jvm_build``, setup.py).

A wheel built with PySpark and ``javac`` at hand carries the jar, and an install of it on a
machine with a Java runtime only (no ``javac`` on PATH or in JAVA_HOME) reads through the Java
reader without compiling anything; a jar packaged for another PySpark is never used. Without a
packaged jar, the first use compiles one into the cache directory, with ``javac`` from
``JAVA_HOME`` before ``PATH``, saying so in one line on stderr, and later processes find it
there silently. Each check runs in fresh processes: the test process's own jar is long found.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import venv
import zipfile
from pathlib import Path

import pyarrow as pa
import pytest

import acidstore
from acidstore.spark import jvm_build, jvm_jar

ROOT = Path(__file__).resolve().parents[2]
SUPPORT = ROOT / "tests" / "support"
#: what a wheel build reads from the checkout (copied, so the build leaves nothing behind)
BUILD_INPUTS = ("pyproject.toml", "setup.py", "README.md", "pyspark_acidstore.py",
                "acidstore", "compaction")
#: seconds a child may take (a JVM start and a small read take 10-20 s here)
CHILD_TIMEOUT = 240
#: the line a first-use compile prints
COMPILING = "acidstore: compiling the Java reader for PySpark"
JAR_PATH = "from acidstore.spark import jvm_jar; print(jvm_jar.jar_path())"
SPARK_VERSION, _ = jvm_build.installed_pyspark() or ("", Path())


def _real(tool: str) -> Path:
    found = shutil.which(tool)
    assert found is not None, f"the suite needs a JDK: no {tool} on PATH"
    return Path(found).resolve()


def _path_without_javac(root: Path) -> str:
    """A PATH of one directory that holds every command of this PATH but ``javac`` (links to
    them, the first of each name as PATH orders them): Spark's scripts still find theirs."""
    bin_dir = root / "path-bin"
    bin_dir.mkdir()
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if not directory or not Path(directory).is_dir():
            continue
        for entry in Path(directory).iterdir():
            target = bin_dir / entry.name
            if entry.name != "javac" and not target.exists() and not target.is_symlink():
                target.symlink_to(entry)
    return str(bin_dir)


def _java_home(root: Path, *tools: str) -> Path:
    """A JAVA_HOME whose ``bin`` holds links to this machine's ``tools`` only."""
    (root / "bin").mkdir(parents=True)
    for tool in tools:
        (root / "bin" / tool).symlink_to(_real(tool))
    return root


def _env(tmp_path: Path, java_home: Path, cache: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACIDSTORE_")}
    return {**env, "PATH": _path_without_javac(tmp_path), "JAVA_HOME": str(java_home),
            jvm_jar.CACHE_ENV: str(cache)}


def _run(python: str | Path, code: str, env: dict[str, str], cwd: Path) -> tuple[str, str]:
    done = subprocess.run([str(python), "-c", textwrap.dedent(code)], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=CHILD_TIMEOUT, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return done.stdout, done.stderr


def test_javac_is_found_in_java_home_before_path(tmp_path: Path) -> None:
    """``$JAVA_HOME/bin/javac`` is found with no javac on PATH, and wins over PATH's; a
    JAVA_HOME of a runtime only (no javac) leaves PATH's."""
    jdk = _java_home(tmp_path / "jdk", "javac")
    jre = _java_home(tmp_path / "jre", "java")
    empty = tmp_path / "empty"
    empty.mkdir()
    with_javac = str(_real("javac").parent)
    assert jvm_build.find_javac(str(jdk), str(empty)) == str(jdk / "bin" / "javac")
    assert jvm_build.find_javac(str(jdk), with_javac) == str(jdk / "bin" / "javac")
    assert jvm_build.find_javac(str(jre), with_javac) == str(_real("javac").parent / "javac")
    assert jvm_build.find_javac(str(jre), str(empty)) is None
    assert jvm_build.find_javac(None, str(empty)) is None


def test_without_javac_no_jar_is_built(tmp_path: Path) -> None:
    """A machine with a JRE only and no packaged jar: ``jar_path()`` is None (Spark reads take
    the Python data source), with a warning that says why; nothing is left in the cache."""
    env = _env(tmp_path, _java_home(tmp_path / "jre", "java"), tmp_path / "c")
    out, err = _run(sys.executable, JAR_PATH, env, tmp_path)
    assert out.strip() == "None"
    assert "no javac" in err and COMPILING not in err
    assert not (tmp_path / "c").exists()


def test_first_use_compiles_once_with_javac_from_java_home(tmp_path: Path) -> None:
    """With javac in JAVA_HOME only, the first process compiles the jar into a fresh cache
    directory, printing one line that says so; a second process finds it and prints nothing."""
    cache = tmp_path / "c"
    env = _env(tmp_path, _java_home(tmp_path / "jdk", "java", "javac"), cache)
    out, err = _run(sys.executable, JAR_PATH, env, tmp_path)
    jar = Path(out.strip())
    assert jar.is_file() and jar.is_relative_to(cache)
    said = [line for line in err.splitlines() if "compiling the Java reader" in line]
    assert said == [f"{COMPILING} {SPARK_VERSION} (first use on this host, a few "
                    "seconds)..."], err
    with zipfile.ZipFile(jar) as built:
        assert "acidstore/jvm/AcidSource.class" in built.namelist()
    assert [p.name for p in jar.parent.iterdir()] == [jar.name]  # no build leftovers
    mtime = jar.stat().st_mtime_ns
    again, err = _run(sys.executable, JAR_PATH, env, tmp_path)
    assert again == out and jar.stat().st_mtime_ns == mtime
    assert COMPILING not in err


def _build_wheel(tmp_path: Path) -> Path:
    """The project's wheel, built without isolation so that setup.py sees PySpark and javac."""
    source = tmp_path / "src"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in BUILD_INPUTS:
        if (ROOT / name).is_dir():
            shutil.copytree(ROOT / name, source / name, ignore=ignore)
        else:
            shutil.copy2(ROOT / name, source / name)
    dist = tmp_path / "dist"
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                           "--no-build-isolation", "--disable-pip-version-check",
                           "-w", str(dist), str(source)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    (wheel,) = dist.glob("acidstore-*.whl")
    return wheel


#: the child in the wheel's environment: a toDF() and where its reader came from
READ_FROM_THE_WHEEL = """
    import json, shutil, sys
    import acidstore
    from pyspark.sql import SparkSession
    from acidstore.spark import AcidTable, jvm_jar
    from spark_support import reads_on_jvm

    spark = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
             .getOrCreate())
    df = AcidTable.forName(spark, "db.t", warehouse={location!r}).toDF()
    print(json.dumps({{"package": acidstore.__file__, "javac": shutil.which("javac"),
                      "jar": str(jvm_jar.jar_path()), "on_jvm": reads_on_jvm(df),
                      "ids": sorted(r.id for r in df.collect())}}))
    spark.stop()
"""


@pytest.mark.slow
def test_a_wheel_reads_on_the_java_reader_with_a_java_runtime_only(tmp_path: Path) -> None:
    """The wheel carries the jar for the build's PySpark; installed in a fresh environment with
    ``java`` but no ``javac`` (neither on PATH nor in JAVA_HOME), ``toDF()`` reads through the
    Java reader from that jar: the cache directory stays empty and nothing says it compiles.
    Renamed as a jar for another PySpark, it is not used."""
    wheel = _build_wheel(tmp_path)
    built_key = jvm_build.key(SPARK_VERSION, tmp_path / "src" / "acidstore" / "spark" / "java")
    packaged = "acidstore/spark/java/" + jvm_build.packaged_name(SPARK_VERSION, built_key)
    with zipfile.ZipFile(wheel) as built:
        assert packaged in built.namelist()
    environment = tmp_path / "venv"
    venv.create(environment, system_site_packages=True)  # this PySpark, without a download
    python = environment / "bin" / "python"
    done = subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--ignore-installed", "--no-index", "--disable-pip-version-check",
                           str(wheel)], capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    location = tmp_path / "wh"
    with acidstore.connect(location) as wh:
        t = wh.create_table("db.t", pa.schema([("id", pa.int64()), ("dt", pa.string())]),
                            partition_by=["dt"])
        t.insert(pa.table({"id": [1, 2, 3], "dt": ["a", "b", "a"]}))
    cache = tmp_path / "cache"
    cache.mkdir()
    work = tmp_path / "work"  # the child's cwd: no checkout on its sys.path
    work.mkdir()
    env = {**_env(tmp_path, _java_home(tmp_path / "jre", "java"), cache),
           "PYTHONPATH": str(SUPPORT), "PYSPARK_PYTHON": str(python)}
    out, err = _run(python, READ_FROM_THE_WHEEL.format(location=str(location)), env, work)
    found = json.loads(out.splitlines()[-1])
    assert Path(found["package"]).is_relative_to(environment), found
    assert found["javac"] is None
    assert Path(found["jar"]).is_relative_to(environment)
    assert Path(found["jar"]).as_posix().endswith(packaged)
    assert found["on_jvm"] and found["ids"] == [1, 2, 3]
    assert list(cache.iterdir()) == []
    assert COMPILING not in err and "no javac" not in err

    jar = Path(found["jar"])
    jar.rename(jar.with_name(jvm_build.packaged_name("0.0.1", jvm_build.key("0.0.1"))))
    out, err = _run(python, JAR_PATH, env, work)
    assert out.strip() == "None"
    assert f"packaged reader is for PySpark 0.0.1, not {SPARK_VERSION}" in err
    assert list(cache.iterdir()) == []
