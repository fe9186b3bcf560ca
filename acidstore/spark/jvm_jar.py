"""acidstore's Java reader (``acidstore/spark/java``): its jar, and putting it into a session.

The package ships the reader as Java sources, not as a jar: a jar compiled against one Spark
would be loaded into another. The first session of a machine compiles them with ``javac``
against the jars of the installed PySpark (about 5 s) into a cache directory keyed by the
sources and the PySpark version (``ACIDSTORE_JVM_CACHE``, else ``~/.cache/acidstore/jvm``);
later sessions find the jar there. Without ``javac`` (a JRE only) nothing is compiled and
``AcidTable.toDF()`` reads through the Python data source, as it always could.

A session gets the jar at its first ``toDF()`` (``install``): its classes are added to the
driver's class loader (the one every Py4J thread and, in local mode, every task uses) and
``SparkContext.addJar`` ships it to executors, which fetch it with their next task. This
happens after the session started, so no ``spark.jars`` the user configured is replaced.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import shutil
import subprocess
import tempfile
import threading
import weakref
from pathlib import Path

import pyspark
from pyspark import SparkContext
from pyspark.sql import SparkSession

from acidstore.config import JVM_CACHE_ENV, XDG_CACHE_HOME_ENV, environment

__all__ = ["CACHE_ENV", "SOURCE_CLASS", "install", "jar_path"]

_log = logging.getLogger(__name__)

#: where compiled jars are kept (a directory; default ``~/.cache/acidstore/jvm``)
CACHE_ENV = JVM_CACHE_ENV
#: the DataSource V2 provider the jar holds (``spark.read.format`` takes the class name)
SOURCE_CLASS = "acidstore.jvm.AcidSource"
_SOURCES = Path(__file__).parent / "java"
_JAR = "acidstore-spark.jar"
_lock = threading.Lock()
#: SparkContexts the jar was installed into (True) or could not be (False)
_installed: weakref.WeakKeyDictionary[SparkContext, bool] = weakref.WeakKeyDictionary()


def _sources() -> list[Path]:
    return sorted(_SOURCES.rglob("*.java"))


def _cache_dir() -> Path:
    configured = environment(JVM_CACHE_ENV)
    if configured:
        return Path(configured)
    return Path(environment(XDG_CACHE_HOME_ENV) or Path.home() / ".cache") / "acidstore" / "jvm"


def _key() -> str:
    """What the jar depends on: its sources and the Spark it is compiled against."""
    digest = hashlib.sha256(pyspark.__version__.encode())
    for source in _sources():
        digest.update(source.relative_to(_SOURCES).as_posix().encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def _compile(jar: Path) -> None:
    """javac then jar into a private directory, moved into place at once: two processes that
    compile together each publish a whole jar, never half of one."""
    spark_jars = Path(pyspark.__file__).parent / "jars"
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent, prefix=".build-") as work:
        classes = Path(work) / "classes"
        classes.mkdir()
        subprocess.run(["javac", "-nowarn", "--release", "17", "-d", str(classes),
                        "-cp", f"{spark_jars}/*", *map(str, _sources())],
                       check=True, capture_output=True, text=True)
        built = Path(work) / _JAR
        subprocess.run(["jar", "cf", str(built), "-C", str(classes), "."],
                       check=True, capture_output=True, text=True)
        os.replace(built, jar)


@functools.cache
def jar_path() -> Path | None:
    """The reader's jar for the installed PySpark, compiled on first use; None where it
    cannot be built (no ``javac``/``jar`` on PATH, or compilation failed: logged once)."""
    jar = _cache_dir() / _key() / _JAR
    if jar.is_file():
        return jar
    if shutil.which("javac") is None or shutil.which("jar") is None:
        _log.warning("acidstore: no javac on PATH, so Spark reads take the Python data source "
                     "(install a JDK 17+ for the faster Java reader)")
        return None
    try:
        _compile(jar)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        _log.warning("acidstore: compiling the Java reader into %s failed, so Spark reads take "
                     "the Python data source: %s", jar.parent, detail)
        return None
    return jar


def install(spark: SparkSession) -> bool:
    """Make the reader's classes loadable in ``spark`` (idempotent per SparkContext); False
    where that is not possible (no jar, or a driver class loader that takes no URLs)."""
    context = spark.sparkContext
    with _lock:
        if context in _installed:
            return _installed[context]
        _installed[context] = ok = _install(spark)
        return ok


def _install(spark: SparkSession) -> bool:
    jvm = spark._jvm
    jar = jar_path() if jvm is not None else None  # no JVM gateway here: a remote session
    if jvm is None or jar is None:
        return False
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    try:
        loader.addURL(jvm.java.io.File(str(jar)).toURI().toURL())
        spark.sparkContext._jsc.sc().addJar(str(jar))
        jvm.java.lang.Class.forName(SOURCE_CLASS, False, loader)
    except Exception as exc:  # Py4J: a loader without addURL, or a class that does not load
        _log.warning("acidstore: the Java reader could not be loaded into this session, so "
                     "Spark reads take the Python data source: %s", exc)
        return False
    return True
