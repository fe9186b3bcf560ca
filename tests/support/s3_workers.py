"""A writer that dies midway through an insert into a warehouse on S3 (spawned by
``test_s3``): it wraps ``write_event_file`` in its own process so that the process dies
(``os._exit``: no ``finally``, no abort, no heartbeat after) as soon as the first bucket file
is uploaded, before the insert's other bucket file is complete. An insert encodes its bucket
files on several threads, so the file that finishes first ends the process, whichever it is.
Production code has no test hooks."""

from __future__ import annotations

import os
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

import acidstore
from acidstore.write import files

DIED = 9


def die_after_first_bucket_file(uri: str, metastore: str, filesystem: pafs.FileSystem,
                                table: str, rows: pa.Table, txn_timeout: float,
                                queue: Any) -> None:
    real = getattr(files, "write_event_file")  # noqa: B009 (not in the module's __all__)

    def write_event_file(*args: Any, **kwargs: Any) -> Any:
        real(*args, **kwargs)
        os._exit(DIED)

    setattr(files, "write_event_file", write_event_file)  # noqa: B010 (same)
    wh = acidstore.connect(uri, metastore=metastore, filesystem=filesystem,
                           txn_timeout=txn_timeout)
    txn = wh.transaction()
    queue.put(txn.txn_id)
    txn.table(table).insert(rows)
    os._exit(0)  # not reached: the insert writes two bucket files
