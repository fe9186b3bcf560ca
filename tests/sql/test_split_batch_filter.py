"""``SplitBatch.filter`` (read/split_source.py) keeps the rows a mask keeps: its shortcuts for a
mask that keeps every row (the same arrays) or none (empty slices) must answer what Arrow's
own filter answers, rows, keys and NULL structs alike."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from acidstore.read.keys import KeyArrays
from acidstore.read.split_source import SplitBatch

ROW = pa.StructArray.from_arrays(
    [pa.array([1, 2, None, 4, 5], pa.int64()), pa.array(["a", None, "c", "d", "e"])],
    fields=[pa.field("id", pa.int64()), pa.field("s", pa.string())])
WITH_NULL_ROW = pa.StructArray.from_arrays(
    [ROW.field(0), ROW.field(1)], fields=list(ROW.type),
    mask=pa.array([False, True, False, False, False]))
KEYS = KeyArrays(np.arange(5, dtype=np.int64), np.full(5, 536870912, np.int32),
                 np.arange(10, 15, dtype=np.int64))

MASKS = [[True] * 5, [False] * 5, [False, True, False, False, True],
         [True, True, True, True, False], [False, False, False, False, True]]


@pytest.mark.parametrize("row", [ROW, WITH_NULL_ROW, ROW.slice(0, 5), None])
@pytest.mark.parametrize("keys", [KEYS, None])
@pytest.mark.parametrize("mask", MASKS)
def test_filter_answers_as_arrow(row: pa.StructArray | None, keys: KeyArrays | None,
                                 mask: list[bool]) -> None:
    keep = np.array(mask)
    batch = SplitBatch(5, (0, 1), row, keys, filtered=True)
    out = batch.filter(keep)
    assert out.num_rows == sum(mask) and out.positions == (0, 1) and out.filtered
    if row is None:
        assert out.row is None
    else:
        assert out.row is not None
        expected = row.filter(pa.array(mask))
        assert out.row.type == row.type
        assert out.row.to_pylist() == expected.to_pylist()
        assert out.row.null_count == expected.null_count
    if keys is None:
        assert out.keys is None
    else:
        assert out.keys is not None
        for got, full in ((out.keys.write_id, keys.write_id), (out.keys.bucket, keys.bucket),
                          (out.keys.row_id, keys.row_id)):
            assert got.dtype == full.dtype
            assert got.tolist() == full[keep].tolist()


def test_a_slice_of_a_larger_batch_keeps_its_rows_when_all_pass() -> None:
    part = SplitBatch(2, (0, 1), ROW.slice(2, 2), KEYS.take(np.array([2, 3])))
    out = part.filter(np.array([True, True]))
    assert out.row is not None and out.row.to_pylist() == ROW.slice(2, 2).to_pylist()
