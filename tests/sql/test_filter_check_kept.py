"""A scan checks its SQL filter over no rows (``Scan._check_filter``), and a text that
passed over the same fields is not checked again in the process. The check must still
refuse what it refused before: the same text over other fields (a column missing, or of
another type), and a failing text however often it is asked."""

from __future__ import annotations

import pyarrow as pa
import pytest

from acidstore import Warehouse
from acidstore.errors import InvalidExpressionError


def test_a_kept_check_is_per_fields_and_failures_are_not_kept(wh: Warehouse) -> None:
    with_x = wh.create_table("db.a", pa.schema([("id", pa.int64()), ("x", pa.int64())]))
    without_x = wh.create_table("db.b", pa.schema([("id", pa.int64()), ("y", pa.int64())]))
    text_x = wh.create_table("db.c", pa.schema([("id", pa.int64()), ("x", pa.string())]))
    with_x.insert(pa.table({"id": [1], "x": [1]}))
    assert with_x.to_arrow(filter="x = 1").num_rows == 1
    assert with_x.to_arrow(filter="x = 1").num_rows == 1  # answered from the kept check
    for _ in range(2):
        with pytest.raises(InvalidExpressionError):
            without_x.to_arrow(filter="x = 1")  # no such column: refused every time
        with pytest.raises(InvalidExpressionError):
            with_x.to_arrow(filter="x + 1")  # not a boolean: refused every time
    # the same text over a column of another type is checked again (DuckDB answers it)
    assert text_x.to_arrow(filter="x = 1").num_rows == 0
    with pytest.raises(InvalidExpressionError):
        text_x.to_arrow(filter="x + 1 > 0 AND x LIKE 1")
    assert without_x.delete("id = 1").rows_deleted == 0
