"""Spike (issue 11): S1-shaped reads through the JVM reader against Spark's native ORC read.

Usage: PYTHONPATH=. python scripts/jvm_s1_bench.py STATE_DIR [--repeat 3] [--tasks 2]
[--python-path] where STATE_DIR holds ``acid_after`` and ``limit_after`` (benchmarks/states).

One local[2] session (driver memory 2g, the benchmark's settings) with the jar; each shape
(a ``noop`` write of every column, a ``count()``, a ``noop`` write of ``id, v1``) runs for
each reader after two untimed warm-ups, then ``--repeat`` rounds alternate the readers.
Printed per run: wall seconds, the JVM's CPU seconds (/proc/<pid>/stat), the driver's
Python CPU (planning) and the Python workers' CPU (only the acidstore path has any).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psutil
from pyspark.sql import DataFrame, SparkSession

import acidstore
from acidstore.spark import AcidTable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from jvm_plan import jvm_frame

JAR = str(Path(__file__).resolve().parents[1] / "jvm" / "build" / "acidstore-jvm.jar")
_TICK = os.sysconf("SC_CLK_TCK")


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _workers_cpu(jvm: psutil.Process) -> float:
    total = 0.0
    for child in jvm.children(recursive=True):
        try:
            t = child.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("state")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--tasks", type=int, default=2)
    ap.add_argument("--python-path", action="store_true", help="also AcidTable.toDF()")
    ap.add_argument("--shapes", default="scan,count,project")
    ap.add_argument("--no-deletes", action="store_true",
                    help="also the JVM reader planned without delete keys (wrong rows)")
    ap.add_argument("--acid", default="acid_after")
    ap.add_argument("--limit", default="limit_after")
    ap.add_argument("--only", default="", help="comma-separated readers to run (default all)")
    ap.add_argument("--java-options", default="", help="spark.driver.extraJavaOptions")
    args = ap.parse_args()
    state = Path(args.state)
    spark = (SparkSession.builder.master("local[2]").appName("jvm-spike")
             .config("spark.jars", JAR).config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.shuffle.partitions", "4").config("spark.default.parallelism", "2")
             .config("spark.sql.session.timeZone", "UTC").config("spark.driver.memory", "2g")
             .config("spark.driver.extraJavaOptions", args.java_options)
             .getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    gateway = spark.sparkContext._jvm
    assert gateway is not None
    jvm_pid = int(gateway.ProcessHandle.current().pid())
    jvm = psutil.Process(jvm_pid)
    warehouse = str(state / args.acid)
    wh = acidstore.connect(warehouse)
    table = wh.table("bench.t")
    acid = AcidTable.forName(spark, "bench.t", warehouse=warehouse)

    def jvm_read() -> DataFrame:
        return jvm_frame(spark, table, "/tmp/jvm-bench.plan", tasks=args.tasks)

    readers: dict[str, Callable[[], DataFrame]] = {
        "peer": lambda: spark.read.orc(str(state / args.limit)),
        "jvm": jvm_read,
    }
    if args.no_deletes:
        readers["nodel"] = lambda: jvm_frame(spark, table, "/tmp/jvm-bench2.plan",
                                             tasks=args.tasks, ignore_deletes=True)
    if args.python_path:
        readers["toDF"] = acid.toDF
    if args.only:
        readers = {r: readers[r] for r in args.only.split(",")}
    shapes: dict[str, Callable[[DataFrame], object]] = {
        "scan": lambda df: df.write.format("noop").mode("overwrite").save(),
        "count": lambda df: df.count(),
        "project": lambda df: df.select("id", "v1").write.format("noop").mode(
            "overwrite").save(),
    }

    def once(reader: str, shape: str) -> tuple[float, float, float, float]:
        # only the Python path has workers; a worker that exits between two readings
        # would count negative
        workers = reader == "toDF"
        w0 = _workers_cpu(jvm) if workers else 0.0
        j0, p0, t0 = _cpu(jvm_pid), time.process_time(), time.perf_counter()
        shapes[shape](readers[reader]())
        t1, p1 = time.perf_counter(), time.process_time()
        w1 = _workers_cpu(jvm) if workers else 0.0
        return t1 - t0, _cpu(jvm_pid) - j0, p1 - p0, max(0.0, w1 - w0)

    for shape in args.shapes.split(","):
        for reader in readers:
            for _ in range(2):
                once(reader, shape)
        runs: dict[str, list[tuple[float, float, float, float]]] = {r: [] for r in readers}
        for _ in range(args.repeat):
            for reader in readers:
                runs[reader].append(once(reader, shape))
        for reader, got in runs.items():
            print(f"{shape:8s} {reader:5s} " + "  ".join(
                f"wall {w:.3f} jvm {j:.2f} py {p:.2f} workers {k:.2f}" for w, j, p, k in got),
                flush=True)
        best = {r: (min(x[0] for x in g), min(x[1] + x[2] + x[3] for x in g))
                for r, g in runs.items()}
        peer_wall, peer_cpu = best.get("peer", (1.0, 1.0))
        for reader, (wall, cpu) in best.items():
            # on a loaded host the pairs run side by side are the steadier comparison
            pairs = [(sum(a[1:]) / sum(p[1:]), a[0] / p[0])
                     for a, p in zip(runs[reader], runs.get("peer", runs[reader]), strict=True)]
            cpu_pair = statistics.median(c for c, _ in pairs)
            wall_pair = statistics.median(w for _, w in pairs)
            print(f"{shape:8s} {reader:5s} min wall {wall:.3f} ({wall / peer_wall:.2f}x)  "
                  f"min cpu {cpu:.2f} ({cpu / peer_cpu:.2f}x)  median of pairs: cpu "
                  f"{cpu_pair:.2f}x wall {wall_pair:.2f}x", flush=True)
    wh.close()


if __name__ == "__main__":
    main()
