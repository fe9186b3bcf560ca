"""Streaming ingest with real processes (SQLite and PostgreSQL metastores): a writer killed
with SIGKILL mid-batch and a restarted writer that resumes exactly-once; a reader beside a
writer that aborts some of its transactions sees only whole committed ones. Workers are in
``streaming_workers``."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from metastore_support import place_fixture  # noqa: F401  (the `place` fixture)
from process_support import CONTEXT, run_spawned
from streaming_workers import APP, ROWS, TABLE, ingest, writer_or_reader
from table_workers import Place, connect

from acidstore.format.layout import ParsedDelta, parse_directory
from compaction import Cleaner

SCHEMA = pa.schema([("id", pa.int64()), ("payload", pa.string())])
TIMEOUT = 2.0  # seconds without a heartbeat after which the killed writer's txns abort


def _wait_for(condition: Any, what: str, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)


def _log(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


@pytest.mark.parametrize("moment", ["paused mid-batch", "while committing"])
def test_a_writer_killed_mid_batch_resumes_exactly_once(place: Place, tmp_path: Path,
                                                       moment: str) -> None:
    with connect(place) as wh:
        t = wh.create_table(TABLE, SCHEMA)
    log = tmp_path / "killed.log"
    pause_after = 9 if moment == "paused mid-batch" else -1  # batch of 7: 7..13 is open
    barrier, reports = CONTEXT.Barrier(1), CONTEXT.Queue()
    child = CONTEXT.Process(target=ingest, args=(place, 0, 100_000, 7, str(log), TIMEOUT, 0,
                                                  pause_after, barrier, reports))
    child.start()
    try:
        if pause_after >= 0:
            _wait_for(lambda: "paused" in _log(log), "the writer to pause")
        else:
            _wait_for(lambda: len(_log(log)) >= 12, "a dozen commits")
        os.kill(child.pid, signal.SIGKILL)  # type: ignore[arg-type]
        child.join(timeout=30)
    finally:
        if child.is_alive():
            child.kill()
    assert child.exitcode == -signal.SIGKILL
    with connect(place) as wh:
        t = wh.table(TABLE)
        last = wh.metastore.app_versions(TABLE, APP)[0].version
        logged = [int(v) for v in _log(log) if v != "paused"]
        # a commit may land without its log line (killed in between), never the reverse
        assert last in (logged[-1], logged[-1] + 1)
        ids = sorted(t.to_arrow(columns=["id"]).column("id").to_pylist())
        assert ids == list(range((last + 1) * ROWS))  # committed txns only, each whole
        if pause_after >= 0:
            # the batch's unused txns and the one holding written rows are still open
            open_txns = [x for x in wh.show_transactions().to_pylist() if x["state"] == "open"]
            assert len(open_txns) == 13 - pause_after
        until = last + 12
        # the restarted writer: it resumes after the last committed version
        [(_, _, resumed)] = run_spawned(ingest, [(place, 0, until, 7, str(tmp_path / "r.log"),
                                                  300.0, 0, -1)])
        assert resumed == list(range(last + 1, until))
        ids = sorted(t.to_arrow(columns=["id"]).column("id").to_pylist())
        assert ids == list(range(until * ROWS))  # nothing lost, nothing twice
    # the killed writer's txns time out (the timeout of whoever reaps: this connection's)
    # and abort; the cleaner removes their files
    with connect(place, txn_timeout=TIMEOUT) as wh:
        t = wh.table(TABLE)
        def timed_out() -> bool:
            wh.metastore.valid_txns()  # a snapshot builder reaps timed-out txns
            return "open" not in wh.show_transactions().column("state").to_pylist()

        _wait_for(timed_out, "the killed writer's transactions to time out")
        Cleaner(wh, retention_seconds=0).run()
        committed = {h["write_id"] for h in t.history().to_pylist()}
        on_disk = {_max_write_id(n) for n in os.listdir(t.location)
                   if n.startswith("delta_")}
        assert on_disk == committed
        assert wh.fsck().num_rows == 0


def test_readers_beside_the_writer_see_whole_committed_transactions_only(
        place: Place, tmp_path: Path) -> None:
    with connect(place) as wh:
        wh.create_table(TABLE, SCHEMA)
    until = 40
    reports = run_spawned(writer_or_reader, [(place, 0, until, str(tmp_path / "w.log")),
                                             (place, 1, until, "")])
    writer, reader = reports[0][2], reports[1][2]
    assert writer == list(range(until))
    reads, distinct, final = reader
    assert final == until * ROWS and reads >= 1 and distinct >= 1
    with connect(place) as wh:
        t = wh.table(TABLE)
        assert sorted(t.to_arrow(columns=["id"]).column("id").to_pylist()) == list(
            range(until * ROWS))
        aborted = [x for x in wh.show_transactions().to_pylist() if x["state"] == "aborted"]
        # 14 aborted by the writer (versions 0, 3, ..., 39), the rest unused at close
        assert len(aborted) >= 14
        committed = {h["write_id"] for h in t.history().to_pylist()}
        on_disk = {_max_write_id(n) for n in os.listdir(t.location)
                   if n.startswith("delta_")}
        assert on_disk == committed  # an aborted transaction wrote no file at all


def _max_write_id(name: str) -> int:
    parsed = parse_directory(name)
    assert isinstance(parsed, ParsedDelta)
    return parsed.max_write_id
