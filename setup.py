"""One build step beyond pyproject.toml: a wheel carries acidstore's Java reader compiled.

The project's metadata and files are declared in pyproject.toml; this adds to ``build_py``
the jar of the Java reader for Spark, compiled against the PySpark of the build environment
(``acidstore/spark/java/acidstore-spark-<pyspark version>-<key>.jar``). An installed wheel
then reads through the Java reader on a machine with a Java runtime only, as long as its
PySpark is that exact version (``acidstore/spark/jvm_jar.py`` checks). The step needs
``javac`` (``$JAVA_HOME/bin`` or ``PATH``) and an importable PySpark, so a wheel with the jar
is built without build isolation (``pip wheel --no-build-isolation .``); without either, and
for editable installs, it prints a note and the reader compiles at first use instead.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
#: the compile code the package itself uses, loaded without importing acidstore
_JVM_BUILD = ROOT / "acidstore" / "spark" / "jvm_build.py"
#: where the jar goes in the package
_JAR_PACKAGE_DIR = Path("acidstore", "spark", "java")


def _jvm_build() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_acidstore_jvm_build", _JVM_BUILD)
    assert spec is not None and spec.loader is not None, _JVM_BUILD
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _note(text: str) -> None:
    print(f"acidstore build: {text}", file=sys.stderr)


def build_reader_jar(package_dir: Path) -> list[str]:
    """Compile the Java reader into ``package_dir`` (the built ``acidstore/spark/java``) and
    return the files added; nothing, with a note, where it cannot be compiled here. Jars of
    earlier builds are removed first so that a wheel never carries a stale one."""
    jvm = _jvm_build()
    for old in package_dir.glob(f"{jvm.PACKAGED_PREFIX}*.jar"):
        old.unlink()
    spark = jvm.installed_pyspark()
    javac = jvm.find_javac(os.environ.get("JAVA_HOME"), None)
    if spark is None or javac is None:
        missing = "PySpark" if spark is None else "javac ($JAVA_HOME/bin or PATH)"
        _note(f"no {missing} in the build environment: the package carries the Java reader's "
              "sources only, compiled at first use (build without isolation, with a JDK and "
              "PySpark installed, for a wheel with the jar)")
        return []
    version, spark_jars = spark
    jar = package_dir / jvm.packaged_name(version, jvm.key(version, package_dir))
    try:
        jvm.compile_jar(jar, javac, spark_jars, package_dir)
    except (OSError, subprocess.CalledProcessError) as exc:
        _note(f"compiling the Java reader failed, so it compiles at first use instead: "
              f"{getattr(exc, 'stderr', '') or exc}")
        return []
    _note(f"compiled the Java reader for PySpark {version} into {jar.name}")
    return [str(jar)]


class BuildPy(build_py):
    """``build_py``, then the Java reader's jar beside its sources in the build directory."""

    def initialize_options(self) -> None:
        super().initialize_options()
        self.reader_jars: list[str] = []

    def run(self) -> None:
        super().run()
        if self.editable_mode:  # the package runs from the sources: compiled at first use
            _note("editable install: the Java reader compiles at first use")
            return
        self.reader_jars = build_reader_jar(Path(self.build_lib) / _JAR_PACKAGE_DIR)

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        return [*super().get_outputs(include_bytecode), *self.reader_jars]


setup(cmdclass={"build_py": BuildPy})
