"""A Spark write's staging area goes when the write ends, and only its own.

Writes of several jobs stage side by side below one ``_acidstore_staging`` root of a table.
Each removes its own ``txn_<id>`` directory and then the root only if that is empty at that
moment (an ``rmdir``), so another job's staged files are never taken with it; the cleaner
removes the staging area a dead write left, and then the root. (The Spark writes themselves,
succeeding and failing, are checked to leave no staging directory in
``tests/spark/test_spark_faults.py``.)
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs
from spark_support import new_table

import acidstore
from acidstore.engine.task_writes import remove_staging_of
from acidstore.format.layout import STAGING_DIR
from compaction import Cleaner


def test_staging_removal_keeps_another_writes_staging(tmp_path: Path) -> None:
    """Each write removes its own ``txn_<id>`` and then the root only if that is empty;
    the cleaner removes a crashed write's and then the empty root."""
    with acidstore.connect(tmp_path / "wh") as wh:
        t = new_table(wh)
        root = Path(t.location) / STAGING_DIR
        with wh.transaction() as other:
            theirs = root / f"txn_{other.txn_id}" / "attempt_1"
            theirs.mkdir(parents=True)
            (theirs / "bucket_00000").write_bytes(b"staged")
            mine = root / "txn_999" / "attempt_2"
            mine.mkdir(parents=True)
            (mine / "bucket_00000").write_bytes(b"staged")
            fs = pafs.LocalFileSystem()
            remove_staging_of(fs, t.location, 999)
            assert sorted(p.name for p in root.iterdir()) == [f"txn_{other.txn_id}"]
            assert (theirs / "bucket_00000").read_bytes() == b"staged"
            Cleaner(wh, retention_seconds=0).run()  # open: kept
            assert (theirs / "bucket_00000").is_file()
            other.abort()  # a job that died and left its staging area
        Cleaner(wh, retention_seconds=0).run()
        assert not root.exists()
        assert wh.fsck().to_pylist() == []
