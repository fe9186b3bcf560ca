"""Smoke test of benchmark W13 (``benchmarks.tasks_import``): the task times real imports in
fresh interpreters and reports what each loaded; the rows set acidstore beside its peer and
its floor."""

from __future__ import annotations

from benchmarks.harness import Bench, Measurement
from benchmarks.tasks_import import import_time
from benchmarks.workloads_import import w13


def test_the_task_imports_in_fresh_interpreters_and_reports_what_loaded() -> None:
    ours = import_time({"module": "acidstore"})
    assert ours["seconds"] > 0 and ours["import_rss_mb"] > 0
    assert ours["loaded"] == ""  # neither pandas nor pyspark nor polars
    # the probe does see what an import loads
    assert import_time({"module": "pandas"})["loaded"] == "pandas"


def test_w13_rows_set_acidstore_beside_deltalake_and_the_pyarrow_floor() -> None:
    asked: list[str] = []

    def fake(task: str, **args: object) -> Measurement:
        asked.append(str(args["module"]))
        return Measurement(0.1, 1, 50.0, {"loaded": "", "import_rss_mb": 40.0})

    rows = w13(Bench(lambda specs: [fake(task, **args) for task, args in specs]))
    assert asked == ["acidstore", "deltalake", "pyarrow"]
    assert [r.what.split(" (")[0] for r in rows] == [
        "import acidstore", "floor: import pyarrow, which acidstore needs"]
    assert all(r.peer_name.startswith("import deltalake") for r in rows)
    assert "loads of pandas, pyspark, polars: none; 40 MB" in rows[0].what
