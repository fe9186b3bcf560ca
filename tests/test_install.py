"""The embedded engine installs and runs without its extras (PySpark, pandas, psycopg).

``pip install acidstore`` brings pyarrow, pyorc, DuckDB and numpy only. Three checks, from the
cheapest: ``import acidstore`` and a whole embedded session load neither pandas nor pyspark;
with those packages made unimportable, README's Quickstart runs and every feature that needs
an extra says which one (``MissingDependencyError``); and a real plain install into a fresh
virtual environment runs the Quickstart. How long the import takes is benchmark W13's
business (``benchmarks/workloads_import.py``), never a timed test.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: the extras' packages, and what the embedded path must never import
OPTIONAL = ("pyspark", "pandas", "psycopg", "polars")

#: a meta path finder that makes the optional packages unimportable, as if not installed
_BLOCKER = textwrap.dedent("""
    import importlib.abc, sys
    class _NotInstalled(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path, target=None):
            if name.split(".")[0] in {blocked!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None
    sys.meta_path.insert(0, _NotInstalled())
""")


def quickstart() -> str:
    """The first ```python block under README's "## Quickstart" heading."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Quickstart\n", 1)[1]
    found = re.search(r"^```python\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    assert found is not None, "README.md's Quickstart has no python block"
    return found.group(1)


def run_python(code: str, cwd: Path, python: str = sys.executable,
               blocked: tuple[str, ...] = ()) -> str:
    """``code`` in a new interpreter (with ``blocked`` packages unimportable); its stdout."""
    prelude = _BLOCKER.format(blocked=set(blocked)) if blocked else ""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ACIDSTORE_")}
    done = subprocess.run([python, "-c", prelude + code], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_embedded_engine_loads_no_optional_package(tmp_path: Path) -> None:
    """``import acidstore`` loads none of the optional packages, and a whole embedded session
    (writes, DML, time travel, history, the change feed, compaction) loads no pyspark.
    pandas is not checked after the import: pyarrow itself loads it, when installed, the
    first time it builds an array from Python values (the Quickstart's ``pa.table``)."""
    loaded = "print(json.dumps([m for m in {OPTIONAL!r} if m in sys.modules]))"
    session = quickstart() + textwrap.dedent("""
        import sys, json
        wh = acidstore.connect("warehouse")
        emp = wh.table("hr.emp")
        emp.changes(1, 4)
        emp.optimize()
        wh.close()
    """) + loaded.format(OPTIONAL=OPTIONAL)
    imported = "import acidstore, sys, json\n" + loaded.format(OPTIONAL=OPTIONAL)
    assert json.loads(run_python(imported, tmp_path)) == []
    assert "pyspark" not in json.loads(run_python(session, tmp_path).splitlines()[-1])


def test_features_that_need_an_extra_name_it(tmp_path: Path) -> None:
    """With the optional packages unimportable, README's Quickstart runs, the CLI reads a
    table, and each feature that needs an extra raises MissingDependencyError (an
    ImportError) naming the package and the install that brings it, before doing any work."""
    checks = textwrap.dedent("""
        import json, pickle
        from acidstore.errors import MissingDependencyError
        from acidstore.cli.main import main

        def refusal(action):
            try:
                action()
            except MissingDependencyError as error:
                assert isinstance(error, ImportError)
                assert pickle.loads(pickle.dumps(error)).install == error.install
                return [error.package, error.install, str(error)]
            raise AssertionError("no MissingDependencyError")

        def spark():
            import acidstore.spark

        wh = acidstore.connect("warehouse")
        found = {
            "to_pandas": refusal(lambda: wh.table("hr.emp").to_pandas()),
            "to_polars": refusal(lambda: wh.table("hr.emp").to_polars()),
            "spark": refusal(spark),
            "postgresql": refusal(lambda: acidstore.connect(
                "pg-warehouse", metastore="postgresql://nobody@127.0.0.1:1/none")),
        }
        wh.close()
        found["read"] = main(["read", "hr.emp", "--warehouse", "warehouse"])
        found["demo"] = main(["demo", "--warehouse", "demo-warehouse"])
        print(json.dumps(found))
    """)
    out = run_python(quickstart() + checks, tmp_path, blocked=OPTIONAL)
    found = json.loads(out.splitlines()[-1])
    assert found["to_pandas"][:2] == ["pandas", "acidstore[pandas]"]
    assert "Table.to_pandas() needs pandas" in found["to_pandas"][2]
    assert found["to_polars"][:2] == ["polars", "polars"]
    assert found["spark"][:2] == ["pyspark", "acidstore[spark]"]
    assert found["postgresql"][:2] == ["psycopg", "acidstore[postgresql]"]
    # the Quickstart ends with ann, bob (restored to write id 1) and cy: three rows
    assert found["read"] == 0 and "150.0" in out and "3 row(s)" in out
    assert found["demo"] == 2  # refused before Spark would start, and before any write
    assert not (tmp_path / "demo-warehouse").exists()


def test_a_plain_install_runs_the_quickstart(tmp_path: Path) -> None:
    """``pip install`` of the project with no extras, in a fresh virtual environment with the
    pinned versions, installs no optional package and runs README's Quickstart."""
    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = str(env_dir / "bin" / "python")
    done = subprocess.run(
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
         "-c", str(ROOT / "constraints.txt"), str(ROOT)],
        capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stderr
    listed = run_python("import importlib.metadata as m, json\n"
                        "print(json.dumps(sorted(d.metadata['Name'].lower() "
                        "for d in m.distributions())))", tmp_path, python=python)
    installed = set(json.loads(listed))
    assert {"acidstore", "pyarrow", "pyorc", "duckdb", "numpy"} <= installed
    assert not installed & set(OPTIONAL), installed
    work = tmp_path / "work"
    work.mkdir()
    out = run_python(quickstart(), work, python=python)
    assert "'salary': 150.0" in out and (work / "warehouse" / "hr.db" / "emp").is_dir()
