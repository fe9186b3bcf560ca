"""Short host processes doing typical work exit with code 0 (issue 12.7).

A library must not crash its host at exit: an Arrow or DuckDB thread still working (or
waiting for the GIL) when the interpreter finalizes aborts the process with "terminate
called without an active exception". Every process here inserts, updates, deletes, merges,
reads (also a filtered read through DuckDB and a stream left unread) and compacts, then
returns from ``main`` without any cleanup of its own, and must exit 0.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

RUNS = 4

SCRIPT = textwrap.dedent("""
    import sys
    import pyarrow as pa
    import acidstore
    from compaction import Cleaner, compact

    wh = acidstore.connect(sys.argv[1])
    schema = pa.schema([("id", pa.int64()), ("v", pa.float64()), ("dt", pa.string())])
    t = wh.create_table("db.t", schema, partition_by=["dt"], bucket_by=["id"], buckets=2)
    t.insert(pa.table({"id": list(range(200)), "v": [1.0] * 200,
                       "dt": ["a"] * 100 + ["b"] * 100}, schema=schema))
    t.update("id < 10", {"v": "v + 1"})
    t.delete("id % 7 = 3")
    source = pa.table({"id": [1, 500], "v": [5.0, 6.0], "dt": ["a", "a"]}, schema=schema)
    t.merge(source, "t.id = s.id").when_matched_update_all().when_not_matched_insert_all(
        ).execute()
    assert t.to_arrow(filter="v * 2 > 3 AND id % 5 = 1").num_rows > 0
    unread = t.to_batches()
    compact(t, "major")
    Cleaner(wh, retention_seconds=0).run()
    print(t.to_arrow().num_rows)
""")


def test_short_processes_exit_cleanly(tmp_path: Path) -> None:
    script = tmp_path / "work.py"
    script.write_text(SCRIPT)
    env = {**os.environ}
    procs = []
    codes = []
    for run in range(RUNS):
        procs.append(subprocess.Popen(
            [sys.executable, str(script), str(tmp_path / f"wh{run}")], env=env,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        if len(procs) == 2 or run == RUNS - 1:  # two at a time: the machine has two cores
            for proc in procs:
                out, err = proc.communicate(timeout=120)
                codes.append((proc.returncode, out.strip(), err.strip()[-500:]))
            procs = []
    assert [c for c in codes if c[0] != 0] == []
    assert {out for _, out, _ in codes} == {"172"}
