"""Another process that holds what a writer of the metastore holds, for as long as it likes.

- SQLite: the metastore file's write lock (``BEGIN IMMEDIATE``), which every commit, open and
  compaction step takes for its critical section: here held as by a writer suspended in it.
- PostgreSQL: one open transaction holding what writers hold: the tables' rows locked as a
  commit locks them (``FOR UPDATE``) and updated as ``add_columns`` updates them, every txn
  row locked as a commit locks its own (among them a txn that has timed out meanwhile, which
  a snapshot would reap), every lease row as a lease call deleting expired leases holds them,
  and every named metastore lock (catalogue, txn, commit, queue).

The holder prints ``locked`` once it holds everything, then sleeps; the test kills it when
it is done, so a short test never waits for the hold to end.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from table_workers import Place

from acidstore.api.pairing import DEFAULT_METASTORE_FILE
from acidstore.metastore.sql_base import LOCK_ORDER

#: how long a holder would hold if nobody killed it: far past any busy timeout (30 s)
HOLD_SECONDS = 120

_SQLITE = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""

_POSTGRESQL = """
import psycopg, sys, time
conn = psycopg.connect(sys.argv[1])  # not autocommit: everything below stays held
conn.execute("SELECT 1 FROM tables FOR UPDATE")
conn.execute("UPDATE tables SET metadata_version = metadata_version")
conn.execute("SELECT 1 FROM txns FOR UPDATE")
conn.execute("SELECT 1 FROM leases FOR UPDATE")
for lock in sys.argv[3].split(","):
    conn.execute(f"LOCK TABLE lock_{lock} IN EXCLUSIVE MODE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
"""


@contextmanager
def writer_locks_held(place: Place) -> Iterator[subprocess.Popen[str]]:
    """A holder process for ``place``'s metastore, holding from entry to exit (killed)."""
    if isinstance(place, tuple):
        argv = [_POSTGRESQL, place[1], str(HOLD_SECONDS), ",".join(LOCK_ORDER)]
    else:
        argv = [_SQLITE, str(Path(place) / DEFAULT_METASTORE_FILE), str(HOLD_SECONDS)]
    holder = subprocess.Popen([sys.executable, "-c", *argv], stdout=subprocess.PIPE,
                              text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.kill()
        holder.wait(timeout=60)
