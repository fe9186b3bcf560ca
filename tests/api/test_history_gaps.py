"""Versions are write ids, with gaps where a statement failed (docs/tables.md, History): the
failed statement's id is never reused, history skips it, and ``as_of`` that id reads the
table as of the last committed id below it."""

from __future__ import annotations

import pyarrow as pa
import pytest

from acidstore import Warehouse
from acidstore.errors import InvalidExpressionError


def test_a_failed_statement_leaves_a_gap_that_reads_as_the_version_before(
        wh: Warehouse) -> None:
    t = wh.create_table("db.t", pa.schema([("id", pa.int64()), ("v", pa.int64())]))
    t.insert(pa.table({"id": [1, 2], "v": [0, 0]}))            # write id 1
    with pytest.raises(InvalidExpressionError):
        t.update("id = 1", {"v": "no_such_column"})            # takes write id 2, aborts
    t.delete("id = 2")                                         # write id 3
    assert [r["write_id"] for r in t.history().to_pylist()] == [1, 3]
    assert t.to_arrow(as_of=2).sort_by("id").equals(t.to_arrow(as_of=1).sort_by("id"))
    assert t.to_arrow(as_of=3).column("id").to_pylist() == [1]
