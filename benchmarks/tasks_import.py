"""W13's task: the median seconds of ``import <module>`` over fresh interpreters (the rows are
``benchmarks.workloads_import``'s)."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from typing import Any

#: interpreters per task run (their median is the task's figure)
IMPORTS_PER_TASK = 5
#: the packages whose loading the row reports
HEAVY = ("pandas", "pyspark", "polars")

_PROBE = """
import json, sys, time
start = time.perf_counter()
import {module}
seconds = time.perf_counter() - start
rss = [int(line.split()[1]) / 1024 for line in open("/proc/self/status")
       if line.startswith("VmHWM:")]
print(json.dumps({{"seconds": seconds, "rss_mb": rss[0] if rss else float("nan"),
                  "loaded": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def import_time(args: dict[str, Any]) -> dict[str, Any]:
    """The median seconds of ``import <module>`` over fresh interpreters, what it loaded of
    ``HEAVY``, and the interpreter's peak RSS after it (the task's own RSS, which the harness
    reports, is the parent's)."""
    seconds: list[float] = []
    rss: list[float] = []
    loaded: list[str] = []
    for _ in range(IMPORTS_PER_TASK):
        done = subprocess.run(
            [sys.executable, "-c", _PROBE.format(module=args["module"], heavy=HEAVY)],
            capture_output=True, text=True, check=True)
        result = json.loads(done.stdout)
        seconds.append(result["seconds"])
        rss.append(result["rss_mb"])
        loaded = result["loaded"]
    return {"seconds": statistics.median(seconds), "rows": 1, "loaded": ",".join(loaded),
            "import_rss_mb": statistics.median(rss)}


IMPORT_TASKS = {"import_time": import_time}
