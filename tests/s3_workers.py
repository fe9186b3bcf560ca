"""A writer that dies midway through an insert into a warehouse on S3 (spawned by
``test_s3``): it wraps ``write_event_file`` in its own process so that the second bucket file
is never written (``os._exit``: no ``finally``, no abort, no heartbeat after), after the first
one was uploaded. Production code has no test hooks."""

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
    calls = 0

    def write_event_file(*args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:
            os._exit(DIED)
        return real(*args, **kwargs)

    setattr(files, "write_event_file", write_event_file)  # noqa: B010 (same)
    wh = acidstore.connect(uri, metastore=metastore, filesystem=filesystem,
                           txn_timeout=txn_timeout)
    txn = wh.transaction()
    queue.put(txn.txn_id)
    txn.table(table).insert(rows)
    os._exit(0)  # not reached: the insert writes two bucket files
