"""Reading a statement unit's rows at its snapshot (layer L3): the rows with their ROW__IDs,
and, for a MERGE whose UPDATE keeps columns of the old row, those columns of the rows it took.

A unit reads its splits in the engine's task, with nothing but the filesystem. A MERGE first
decodes only the columns its SQL names (``merge_match.merge_columns``); the columns an UPDATE
keeps are decoded only once a row was taken, and only those not decoded already and not set
by every UPDATE clause (``merge_match.kept_columns``). The matched rows of a MERGE lie in
every row group, so each column read back is decoded whole: that is most of what a ``SET v1 =
s.v1`` MERGE costs beyond a ``SET *`` one, which reads nothing back. A MERGE whose matched
rows are all updated reads through its source's keys instead (``scan_unit``'s ``probe``,
``merge_probe``) and decodes the kept columns in that one read, of the stripes holding a key.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.fs as pafs

from acidstore.format.orc.schema import ROW_ID_COLUMN
from acidstore.format.writeids import ValidTxnList, ValidWriteIdList
from acidstore.read.keys import KeyArrays
from acidstore.read.scan import PartitionDir, Scan
from acidstore.read.split_source import Probe
from acidstore.read.splits import Split
from acidstore.sql.expressions import Predicate

__all__ = ["ReadUnit", "kept_rows", "row_ids", "scan_unit"]


class _Target(Protocol):
    @property
    def filesystem(self) -> pafs.FileSystem: ...

    @property
    def row_schema(self) -> pa.Schema: ...

    @property
    def partition_schema(self) -> pa.Schema: ...


class ReadUnit(Protocol):
    """What reading a unit's rows needs of a ``statement.ChangeUnit`` (which imports this
    module, so it is named by its shape here)."""

    @property
    def target(self) -> _Target: ...

    @property
    def txns(self) -> ValidTxnList: ...

    @property
    def write_ids(self) -> ValidWriteIdList: ...

    @property
    def planned(self) -> tuple[tuple[PartitionDir, Split], ...]: ...


def scan_unit(unit: ReadUnit, columns: Sequence[str] | None,
              predicate: Predicate | None = None, *,
              probe: Probe | None = None) -> list[pa.RecordBatch]:
    """The unit's rows at its snapshot (``columns`` of them, None: all) with their ROW__IDs;
    empty batches dropped, so "no batch" means "no row". ``probe`` (instead of a
    ``predicate``; ``columns`` must hold the ones it tests): only the rows it passes."""
    target = unit.target
    scan = Scan(target.filesystem, [], unit.write_ids, unit.txns, schema=target.row_schema,
                partition_schema=target.partition_schema, columns=columns, filter=predicate,
                with_row_id=True, planned=unit.planned, probe=probe)
    return [b for b in scan.to_batches() if b.num_rows]


def row_ids(batches: Sequence[pa.RecordBatch],
            positions: npt.NDArray[np.int64] | None = None) -> KeyArrays:
    """The ROW__IDs of scanned batches (their ``row__id`` column); with ``positions``, of those
    rows only (a MERGE unit wants 2% of a million: indexing plain arrays beats Arrow's take of
    a chunked struct several times over)."""
    columns = [b.column(ROW_ID_COLUMN) for b in batches]

    def field(name: str, kind: type[np.signedinteger]) -> npt.NDArray[Any]:
        values = np.concatenate([np.asarray(c.field(name).to_numpy(zero_copy_only=False), kind)
                                 for c in columns])
        return values if positions is None else values[positions]

    return KeyArrays(field("writeid", np.int64), field("bucketid", np.int32),
                     field("rowid", np.int64))


def kept_rows(unit: ReadUnit, decoded: pa.Table, chosen: npt.NDArray[np.int64],
              keys: KeyArrays, kept: Sequence[str], *, where: str) -> pa.Table:
    """The ``kept`` columns of the unit's rows at positions ``chosen`` of its scan (whose
    ROW__IDs are ``keys``): from ``decoded`` (the columns the first scan decoded, in scan
    order) where it has them, the rest decoded now by a second scan of the same snapshot,
    which must find the same rows at those positions."""
    at = pa.array(chosen)
    rest = [name for name in kept if name not in decoded.column_names]
    old = decoded.select([name for name in kept if name in decoded.column_names]).take(at)
    if not rest:
        return old
    again = scan_unit(unit, rest)
    found = row_ids(again, chosen) if again else KeyArrays.empty()
    if not all(np.array_equal(a, b) for a, b in (
            (found.write_id, keys.write_id), (found.bucket, keys.bucket),
            (found.row_id, keys.row_id))):
        raise AssertionError(f"{where}: two scans of one snapshot disagree")
    more = pa.Table.from_batches(again).take(at)
    for name in rest:
        old = old.append_column(more.schema.field(name), more.column(name))
    return old
