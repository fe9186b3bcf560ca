"""The main job on a real Spark standalone cluster on loopback, with the PostgreSQL metastore.

A master and two workers (1 core each) run as JVM processes of their own, started with
``spark-class`` from the installed pyspark package; the warehouse is one directory every
process shares (what HDFS or S3 is on a real cluster). ``acidstore demo --master spark://...
--metastore postgresql://...`` runs through the command-line entry point, then a second
application (``tests/support/cluster_workers.py``) runs UPDATE, DELETE and MERGE through
``AcidTable`` and a major compaction with ``engine="spark"`` on the same cluster. The rows are
checked against the demo's plain-Python model (``test_demo.model``) with that DML applied.

Executors never open the metastore: the guard (``acidstore.metastore.task_guard``) refuses a
connection inside a task, the whole job passes with it, and the second application's probe
shows the guard is live in the executors' Python workers (they import this source tree).

Both applications are separate processes: a SparkContext on the cluster cannot share this
process with the suite's local session. Every JVM started here (master, workers and the
executors they launch, all in the process groups started here) is stopped at the end, also
when the test fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyspark
import pytest
from cli_support import ROOT
from test_demo import LOAD, Row, model

import acidstore

if TYPE_CHECKING:
    from benchmarks.postgres_server import PostgresServer

pytestmark = pytest.mark.cluster

SPARK_HOME = Path(pyspark.__file__).resolve().parent
#: how long the master may take to see both workers (JVM start on a busy 2-core machine)
STARTUP_SECONDS = 120


def _free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


@dataclass
class Cluster:
    url: str
    root: Path
    processes: list[subprocess.Popen[bytes]]

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}"
                         for p in sorted(self.root.glob("*.log")))


def _environment(root: Path) -> dict[str, str]:
    """The cluster's processes and both applications: loopback only, this source tree first
    on the Python path (executors inherit it from their worker), scratch space under root."""
    env = dict(os.environ)
    env.update({
        "SPARK_HOME": str(SPARK_HOME),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOCAL_DIRS": str(root / "local"),
        "SPARK_LOG_DIR": str(root),
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
        "PYSPARK_PYTHON": sys.executable,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    })
    return env


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """SIGTERM each process group (a worker's executors and their Python workers are in
    it), then SIGKILL whatever is left after a grace period."""
    for process in reversed(processes):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    for process in processes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=max(0.1, deadline - time.monotonic()))
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)  # stragglers of the group, if any
        process.wait(timeout=10)


def _tied_to_this_process(command: list[str]) -> list[str]:
    """``command`` under ``setpriv --pdeathsig TERM`` where util-linux has it: SIGTERM when the
    test process dies, even by SIGKILL, so no master or worker outlives a killed run (their
    executors exit when their worker goes away). The fixture stops them in any other case."""
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", "--", *command] if setpriv else command


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    root = tmp_path_factory.mktemp("spark-cluster")
    env = _environment(root)
    master_port, master_ui, *worker_ports = _free_ports(6)
    url = f"spark://127.0.0.1:{master_port}"
    spark_class = str(SPARK_HOME / "bin" / "spark-class")
    commands = [[spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(master_port), "--webui-port", str(master_ui)]]
    for n in range(2):
        commands.append([
            spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
            "--port", str(worker_ports[2 * n]), "--webui-port", str(worker_ports[2 * n + 1]),
            "--cores", "1", "--memory", "1g", "--work-dir", str(root / f"worker{n}"), url])
    processes: list[subprocess.Popen[bytes]] = []
    names = ["master", "worker0", "worker1"]
    try:
        for name, command in zip(names, commands, strict=True):
            with open(root / f"{name}.log", "wb") as log:
                processes.append(subprocess.Popen(_tied_to_this_process(command), env=env,
                                                  stdout=log,
                                                  stderr=subprocess.STDOUT,
                                                  start_new_session=True))
        started = Cluster(url, root, processes)
        deadline = time.monotonic() + STARTUP_SECONDS
        while (root / "master.log").read_text().count("Registering worker") < 2:
            dead = [n for n, p in zip(names, processes, strict=True) if p.poll() is not None]
            assert not dead and time.monotonic() < deadline, (
                f"the cluster did not come up (exited: {dead})\n{started.logs()}")
            time.sleep(0.5)
        yield started
    finally:
        _stop(processes)


def _after_cluster_dml(rows: dict[int, Row]) -> tuple[list[Row], tuple[int, int]]:
    """``cluster_workers.py``'s statements applied to the demo's model: the rows, and the
    MERGE's (updated, inserted) counts."""
    for r in rows.values():
        if r["dt"] == "2026-11-21" and r["order_id"] % 3 == 0:
            r["status"] = "packed"
    rows = {k: r for k, r in rows.items() if not r["amount"] < 20}
    updated = inserted = 0
    for order_id, customer, amount, status, dt in [
            (100001, "c9001", 1.5, "paid", "2026-11-20"),
            (100002, "c9002", 2.5, "paid", "2026-11-20"),
            (999999, "c9999", 42.0, "placed", "2026-11-24")]:
        if order_id in rows:
            rows[order_id].update(amount=amount, status=status)
            updated += 1
        else:
            rows[order_id] = {"order_id": order_id, "customer": customer, "amount": amount,
                              "status": status, "dt": dt}
            inserted += 1
    return sorted(rows.values(), key=lambda r: r["order_id"]), (updated, inserted)


def test_demo_dml_and_compaction_on_a_standalone_cluster(
        cluster: Cluster, postgres_server: PostgresServer, tmp_path: Path) -> None:
    metastore = postgres_server.new_store()
    warehouse = tmp_path / "shared-warehouse"
    env = _environment(cluster.root)

    demo = subprocess.run(
        [sys.executable, "-m", "acidstore.cli.main", "demo", "--master", cluster.url,
         "--metastore", metastore, "--warehouse", str(warehouse), "--orders", str(LOAD)],
        env=env, capture_output=True, text=True, timeout=600, check=False)
    assert demo.returncode == 0, f"{demo.stdout}\n{demo.stderr}\n{cluster.logs()}"
    assert f"on {cluster.url}; warehouse" in demo.stdout
    assert "[5/7] MERGE 120 changes: 80 updated, 10 deleted, 30 inserted (write id 4" in \
        demo.stdout
    assert not (warehouse / "_acidstore_metastore.db").exists()  # the catalogue is PostgreSQL

    dml = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "support" / "cluster_workers.py"), cluster.url,
         str(warehouse), metastore], env=env, capture_output=True, text=True, timeout=600,
        check=False)
    assert dml.returncode == 0, f"{dml.stdout}\n{dml.stderr[-5000:]}\n{cluster.logs()}"
    report: dict[str, Any] = json.loads(dml.stdout.strip().splitlines()[-1])
    assert report["master"] == cluster.url
    assert report["probe"] == ["refused", "refused"]

    want, (merge_updated, merge_inserted) = _after_cluster_dml(model(LOAD).rows)
    with acidstore.connect(warehouse, metastore=metastore, create=False) as wh:
        table = wh.table("shop.orders")
        got = table.to_arrow().sort_by("order_id").to_pylist()
        history = [(h["write_id"], h["operation"]) for h in table.history().to_pylist()]
        partitions = wh.metastore.list_partitions("shop.orders")
    assert got == want
    assert report["write_ids"] == [5, 6, 7]
    # the seven versions, then the major compaction (a row of its own, with no write id)
    assert [w for w, _ in history] == [1, 2, 3, 4, 5, 6, 7, None]
    assert history[-1] == (None, "compaction_major")
    assert report["merge"]["num_target_rows_updated"] == merge_updated
    assert report["merge"]["num_target_rows_inserted"] == merge_inserted
    assert report["spark_rows"] == len(want)
    assert report["spark_amount_cents"] == sum(round(r["amount"] * 100) for r in want)

    # the major compaction folded each of the demo's partitions (several deltas) into one
    # base, written by the executors
    assert report["compaction_txn"] is not None
    demo_days = [f"dt=2026-11-{day}" for day in (20, 21, 22, 23)]
    assert set(demo_days) <= set(report["compacted_partitions"]) <= set(partitions)
    for partition in demo_days:
        names = sorted(p.name for p in (warehouse / "shop.db" / "orders" / partition).iterdir())
        bases = [n for n in names if n.startswith("base_")]
        assert bases == [f"{bases[0][:12]}_v{report['compaction_txn']:07d}"], (partition, names)
    # each application ran executors on both workers
    for n in range(2):
        apps = sorted(p.name for p in (cluster.root / f"worker{n}").iterdir())
        assert len(apps) == 2 and all(a.startswith("app-") for a in apps), apps
