"""acidstore's Java reader (``acidstore/spark/java``): its jar, and putting it into a session.

A jar compiled against one Spark must not be loaded into another, so the reader's jar is
found in this order, each keyed by the reader's sources and the exact PySpark version
(``jvm_build.key``):

1. the jar a wheel carries (``java/acidstore-spark-<pyspark version>-<key>.jar``), compiled
   when the wheel was built, against the PySpark of the build environment: used only when the
   installed PySpark is that version, and all a machine with a Java runtime alone needs;
2. the cache directory (``ACIDSTORE_JVM_CACHE``, else ``$XDG_CACHE_HOME/acidstore/jvm``, else
   ``~/.cache/acidstore/jvm``), where an earlier session of this machine compiled it;
3. compiled now with ``javac`` (``$JAVA_HOME/bin/javac``, else ``PATH``'s) against the jars of
   the installed PySpark into that cache, with one line on stderr first, since the first read
   then waits for it (a few seconds; more on a busy machine).

Without any of them, ``AcidTable.toDF()`` reads through the Python data source, as it always
could, with a warning that says why.

A session gets the jar at its first ``toDF()`` (``install``): its classes are added to the
driver's class loader (the one every Py4J thread and, in local mode, every task uses) and
``SparkContext.addJar`` ships it to executors, which fetch it with their next task. This
happens after the session started, so no ``spark.jars`` the user configured is replaced.
"""

from __future__ import annotations

import functools
import logging
import subprocess
import threading
import weakref
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from acidstore.config import JAVA_HOME_ENV, JVM_CACHE_ENV, XDG_CACHE_HOME_ENV, environment
from acidstore.spark import jvm_build

__all__ = ["CACHE_ENV", "SOURCE_CLASS", "install", "jar_path"]

_log = logging.getLogger(__name__)

#: where compiled jars are kept (a directory; default ``~/.cache/acidstore/jvm``)
CACHE_ENV = JVM_CACHE_ENV
#: the DataSource V2 provider the jar holds (``spark.read.format`` takes the class name)
SOURCE_CLASS = "acidstore.jvm.AcidSource"
_lock = threading.Lock()
#: held while the jar is found or compiled: threads of one process compile it once
_jar_lock = threading.Lock()
#: SparkContexts the jar was installed into (True) or could not be (False)
_installed: weakref.WeakKeyDictionary[SparkContext, bool] = weakref.WeakKeyDictionary()


def _cache_dir() -> Path:
    configured = environment(JVM_CACHE_ENV)
    if configured:
        return Path(configured)
    return Path(environment(XDG_CACHE_HOME_ENV) or Path.home() / ".cache") / "acidstore" / "jvm"


def jar_path() -> Path | None:
    """The reader's jar for the installed PySpark: the packaged one, the cached one, or one
    compiled now; None where there is none and none can be built (no ``javac``, or
    compilation failed: logged once per process)."""
    with _jar_lock:
        return _find_or_compile()


@functools.cache
def _find_or_compile() -> Path | None:
    """``jar_path``'s answer, worked out once per process: the files it looks at only change
    by this process's own compile, and the warnings are said once."""
    spark = jvm_build.installed_pyspark()
    if spark is None:  # not reached through acidstore.spark, which needs PySpark
        return None
    version, spark_jars = spark
    key = jvm_build.key(version)
    packaged = jvm_build.SOURCES / jvm_build.packaged_name(version, key)
    if packaged.is_file():
        return packaged
    jar = _cache_dir() / key / jvm_build.JAR_NAME
    if jar.is_file():
        return jar
    javac = jvm_build.find_javac(environment(JAVA_HOME_ENV), None)
    if javac is None:
        _log.warning("acidstore: no javac (neither $JAVA_HOME/bin/javac nor on PATH)%s, so "
                     "Spark reads take the Python data source (install a JDK 17+ for the "
                     "faster Java reader)", _packaged_for_others(version))
        return None
    # a warning because it is the level Python shows with no logging configured: the first
    # read stops for the compile, and should not look hung
    _log.warning("acidstore: compiling the Java reader for PySpark %s (first use on this "
                 "host, a few seconds)...", version)
    try:
        jvm_build.compile_jar(jar, javac, spark_jars)
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = getattr(exc, "stderr", "") or exc
        _log.warning("acidstore: compiling the Java reader into %s failed, so Spark reads take "
                     "the Python data source: %s", jar.parent, detail)
        return None
    return jar


def _packaged_for_others(version: str) -> str:
    """Why a packaged jar was not used, when there is one: it is for another PySpark."""
    built_for = sorted(p.name.removeprefix(jvm_build.PACKAGED_PREFIX).rsplit("-", 1)[0]
                       for p in jvm_build.SOURCES.glob(f"{jvm_build.PACKAGED_PREFIX}*.jar"))
    if not built_for:
        return ""
    return f" and the packaged reader is for PySpark {', '.join(built_for)}, not {version}"


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
