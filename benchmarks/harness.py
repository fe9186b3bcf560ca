"""Run tasks in child processes: warm-up, repetitions, medians, peak RSS per child (each child
reports its own VmHWM)."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Measurement:
    """Median seconds over the repetitions, rows produced, max peak RSS, extra figures."""

    seconds: float
    rows: int
    peak_rss_mb: float
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def rows_per_s(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else float("inf")


def _run_once(task: str, args: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """One child; ``args["env"]`` (if any) is added to its environment, e.g. an allocator
    setting a row measures for both peers alike."""
    args = dict(args)
    env = {**os.environ, "PYTHONHASHSEED": "0", **args.pop("env", {})}
    proc = subprocess.Popen([sys.executable, "-m", "benchmarks.tasks", task, json.dumps(args)],
                            stdout=subprocess.PIPE, env=env)
    assert proc.stdout is not None
    out = proc.stdout.read()
    proc.wait()
    if proc.returncode != 0:
        raise RuntimeError(f"task {task} failed with exit code {proc.returncode}")
    result = json.loads(out)
    return result, float(result.pop("peak_rss_mb"))


def measure(task: str, args: dict[str, Any], *, repeat: int = 3, warmup: int = 1
            ) -> Measurement:
    """Run ``task`` warmup + repeat times, each in a new process; report the median."""
    for _ in range(warmup):
        _run_once(task, args)
    results = [_run_once(task, args) for _ in range(repeat)]
    seconds = statistics.median(r["seconds"] for r, _ in results)
    extra = {k: v for k, v in results[-1][0].items() if k not in ("seconds", "rows")}
    return Measurement(seconds, int(results[-1][0]["rows"]), max(rss for _, rss in results),
                       extra)
