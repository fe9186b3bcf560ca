"""Compiling acidstore's Java reader (``acidstore/spark/java``) into a jar.

Two steps compile it, with this code: building a wheel (``setup.py``), which puts the jar into
the package for the PySpark of the build environment, and the first Spark read on a machine
whose PySpark has no packaged jar (``jvm_jar.py``), which puts it into a cache directory.

This module imports nothing but the standard library (PySpark only inside
``installed_pyspark``), so ``setup.py`` loads it by its path without importing acidstore, whose
dependencies a build environment need not have.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

__all__ = ["JAR_NAME", "PACKAGED_PREFIX", "SOURCES", "compile_jar", "find_javac",
           "installed_pyspark", "key", "packaged_name", "sources"]

#: the Java sources, and where a wheel carries its compiled jar
SOURCES = Path(__file__).parent / "java"
#: the jar's name in the cache (in a directory named by ``key``)
JAR_NAME = "acidstore-spark.jar"
#: how a packaged jar's name starts (``packaged_name``)
PACKAGED_PREFIX = "acidstore-spark-"
#: the oldest Java the classes run on: Spark 4's own minimum
_RELEASE = "17"
#: javac is a short JVM run: the client compiler alone and the serial collector halve its
#: time (measured: 1.7 s instead of 3.5 s on 2 idle cores); another JVM ignores the flags
_JAVAC_JVM = ("-J-XX:+IgnoreUnrecognizedVMOptions", "-J-XX:TieredStopAtLevel=1",
              "-J-XX:+UseSerialGC")
#: the time of every entry in the jar, so that the same classes give the same bytes
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)
_MANIFEST = "Manifest-Version: 1.0\r\nCreated-By: acidstore\r\n\r\n"


def sources(root: Path = SOURCES) -> list[Path]:
    """The reader's Java files, in a fixed order."""
    return sorted(root.rglob("*.java"))


def key(spark_version: str, root: Path = SOURCES) -> str:
    """What the jar depends on: its sources and the exact Spark it is compiled against (a jar
    compiled against one Spark must not be loaded into another)."""
    digest = hashlib.sha256(spark_version.encode())
    for source in sources(root):
        digest.update(source.relative_to(root).as_posix().encode())
        digest.update(source.read_bytes())
    return digest.hexdigest()[:16]


def packaged_name(spark_version: str, jar_key: str) -> str:
    """The name of the jar a wheel carries beside the sources: the PySpark version it was
    compiled against, readable, and the key, so a jar left from other sources never matches."""
    return f"{PACKAGED_PREFIX}{spark_version}-{jar_key}.jar"


def installed_pyspark() -> tuple[str, Path] | None:
    """The installed PySpark's version and the directory of its jars (the classpath to compile
    against); None when PySpark cannot be imported."""
    try:
        import pyspark
    except ImportError:
        return None
    return str(pyspark.__version__), Path(pyspark.__file__).parent / "jars"


def find_javac(java_home: str | None, search_path: str | None) -> str | None:
    """The ``javac`` to compile with: ``$JAVA_HOME/bin/javac`` first, as Java's own tools look,
    else the first on ``search_path`` (PATH's value); None when neither has one."""
    if java_home:
        candidate = Path(java_home) / "bin" / "javac"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("javac", path=search_path)


def compile_jar(jar: Path, javac: str, spark_jars: Path, root: Path = SOURCES) -> None:
    """Compile the sources against ``spark_jars`` into ``jar``: javac and zip in a private
    directory beside it, then one rename, so two processes that compile together each publish
    a whole jar, never half of one. Raises ``OSError`` or ``CalledProcessError`` (its
    ``stderr`` holds javac's messages)."""
    jar.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=jar.parent, prefix=".build-") as work:
        classes = Path(work) / "classes"
        classes.mkdir()
        subprocess.run([javac, *_JAVAC_JVM, "-nowarn", "--release", _RELEASE,
                        "-d", str(classes), "-cp", f"{spark_jars}/*", *map(str, sources(root))],
                       check=True, capture_output=True, text=True)
        built = Path(work) / JAR_NAME
        _write_jar(classes, built)
        os.replace(built, jar)


def _write_jar(classes: Path, jar: Path) -> None:
    """The classes as a jar (a zip with a manifest), written here rather than by the JDK's
    ``jar`` tool: ``javac`` is then all a machine needs, and the entries' fixed order and time
    make a wheel's jar the same bytes on every build."""
    files = sorted(p for p in classes.rglob("*") if p.is_file())
    with zipfile.ZipFile(jar, "w") as out:
        out.writestr(_entry("META-INF/MANIFEST.MF"), _MANIFEST)
        for path in files:
            out.writestr(_entry(path.relative_to(classes).as_posix()), path.read_bytes())


def _entry(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info
