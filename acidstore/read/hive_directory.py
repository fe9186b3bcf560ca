"""``read_directory``: read any Hive-layout ACID table or partition directory, no metastore.

This is the entry point for data that was written elsewhere (Hive, another acidstore
warehouse, a copied directory): give it the directory and, optionally, the snapshot to read.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.config import DELETE_EVENT_LIMIT
from acidstore.errors import InvalidLayoutError, TableNotFoundError
from acidstore.format.layout import parse_directory
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.io import fs as afs
from acidstore.io.fs import storage_guarded
from acidstore.read.scan import Reader, Scan, discover_partitions
from acidstore.sql.expressions import Predicate

__all__ = ["read_directory", "scan_directory"]


def _snapshot(write_ids: ValidWriteIdList | str | None, txns: ValidTxnList | str | None
              ) -> tuple[ValidWriteIdList, ValidTxnList | None]:
    if write_ids is None:
        ids = ValidWriteIdList.all_valid()
    elif isinstance(write_ids, str):
        ids = ValidWriteIdList.parse(write_ids)
    else:
        ids = write_ids
    txn_list = ValidTxnList.parse(txns) if isinstance(txns, str) else txns
    return ids, txn_list


def _refuse_acid_directory(root: str) -> None:
    """A base or delta directory given as the table: its bucket files would read as pre-ACID
    originals and fail on their ACID columns, an error that blames the file. A table merely
    named like one (``base_rates``) is read."""
    name = root.rstrip("/").rsplit("/", 1)[-1]
    try:
        parse_directory(name)
    except InvalidLayoutError:
        return
    raise InvalidLayoutError(f"{root} is one of a table's ACID directories ({name}); read the "
                             "table or partition directory that holds it")


@storage_guarded
def scan_directory(path: str | os.PathLike[str], schema: pa.Schema | None = None,
                   write_ids: ValidWriteIdList | str | None = None,
                   txns: ValidTxnList | str | None = None, *,
                   filesystem: pafs.FileSystem | None = None,
                   columns: Sequence[str] | None = None, filter: Predicate | None = None,
                   with_row_id: bool = False, reader: Reader = "vectorized",
                   delete_event_limit: int = DELETE_EVENT_LIMIT) -> Scan:
    """Plan a read of a directory; see ``read_directory``. The ``Scan`` can stream batches."""
    fs, root = afs.resolve(path, filesystem)
    if fs.get_file_info(root).type != pafs.FileType.Directory:
        raise TableNotFoundError(f"no table directory at {root}")
    _refuse_acid_directory(root)
    ids, txn_list = _snapshot(write_ids, txns)
    return Scan(fs, discover_partitions(fs, root), ids, txn_list, schema=schema,
                columns=columns, filter=filter, with_row_id=with_row_id, reader=reader,
                delete_event_limit=delete_event_limit)


@storage_guarded
def read_directory(path: str | os.PathLike[str], schema: pa.Schema | None = None,
                   write_ids: ValidWriteIdList | str | None = None,
                   txns: ValidTxnList | str | None = None, *,
                   filesystem: pafs.FileSystem | None = None,
                   columns: Sequence[str] | None = None, filter: Predicate | None = None,
                   with_row_id: bool = False, reader: Reader = "vectorized",
                   delete_event_limit: int = DELETE_EVENT_LIMIT) -> pa.Table:
    """Read a Hive-layout table or partition directory as of a snapshot.

    ``schema`` names the user columns and maps the files' row fields to them by position (Hive
    files often call them ``_col0..``); without it the first file's names are used.
    ``write_ids`` / ``txns`` are snapshot objects or their Hive strings; ``write_ids=None``
    reads every write id present, ``txns=None`` treats every compaction as committed.
    Partition columns of a partitioned table come last, as strings.
    """
    return scan_directory(path, schema, write_ids, txns, filesystem=filesystem,
                          columns=columns, filter=filter, with_row_id=with_row_id,
                          reader=reader, delete_event_limit=delete_event_limit).to_table()
