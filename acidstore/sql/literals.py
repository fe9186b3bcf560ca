"""Python values as SQL literals, for ``update(new_values=...)`` and MERGE's ``new_values``.

delta-rs users write ``new_values={"name": "bobby"}`` where a SQL ``set`` needs ``"'bobby'"``
(a bare word is a column). Statements evaluate their values as SQL over the old rows, so a
Python value becomes the SQL literal of exactly that value: it is first checked against the
column's Arrow type (``pa.scalar``), so a value that does not fit is refused naming the
column, and then written in a form that loses nothing: floats and decimals as casts of their
exact text, timestamps from their integer ticks, text and bytes escaped so that no value can
close the literal (the SQL that results is never the user's text).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pyarrow as pa

from acidstore.errors import InvalidInputError

__all__ = ["value_literal", "value_literals"]

_MICROS = {"s": 1_000_000, "ms": 1_000, "us": 1}


def value_literals(values: Mapping[str, Any], schema: pa.Schema, where: str
                   ) -> dict[str, str]:
    """``values`` (column -> Python value; the columns already resolved to ``schema``'s
    names) as SQL literals."""
    return {name: value_literal(value, schema.field(name).type, f"{where}, column {name!r}")
            for name, value in values.items()}


def value_literal(value: Any, type_: pa.DataType, where: str) -> str:
    """The SQL literal of ``value`` as a ``type_`` value; InvalidInputError naming ``where``
    when it is none."""
    try:
        scalar = value if isinstance(value, pa.Scalar) else pa.scalar(value, type=type_)
        if not scalar.type.equals(type_):
            scalar = scalar.cast(type_)
        return _literal(scalar)
    except (pa.ArrowException, TypeError, ValueError, OverflowError) as exc:
        raise InvalidInputError(f"{where}: {value!r} is no {type_} value ({exc})") from exc


def _literal(scalar: pa.Scalar) -> str:
    type_ = scalar.type
    if not scalar.is_valid:
        return "NULL"
    if pa.types.is_boolean(type_):
        return "TRUE" if scalar.as_py() else "FALSE"
    if pa.types.is_integer(type_):
        return str(int(scalar.as_py()))
    if pa.types.is_floating(type_):
        return _float(float(scalar.as_py()))
    if pa.types.is_decimal(type_):
        return f"CAST('{scalar.as_py()}' AS DECIMAL({type_.precision}, {type_.scale}))"
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        return _text(scalar.as_py())
    if pa.types.is_binary(type_) or pa.types.is_large_binary(type_):
        escaped = "".join(f"\\x{b:02X}" for b in scalar.as_py())
        return f"CAST('{escaped}' AS BLOB)"
    if pa.types.is_date32(type_):
        return f"DATE '{scalar.as_py().isoformat()}'"
    if pa.types.is_timestamp(type_):
        return _timestamp(scalar)
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return "[" + ", ".join(_literal(item) for item in scalar.values) + "]"
    if pa.types.is_struct(type_):
        fields = [f"{_quoted(type_.field(i).name)}: {_literal(scalar[type_.field(i).name])}"
                  for i in range(type_.num_fields)]
        return "{" + ", ".join(fields) + "}"
    raise TypeError(f"new values of type {type_} are not supported; give a SQL expression")


def _float(value: float) -> str:
    if math.isnan(value):
        return "CAST('nan' AS DOUBLE)"
    if math.isinf(value):
        return f"CAST('{'inf' if value > 0 else '-inf'}' AS DOUBLE)"
    return f"CAST({value!r} AS DOUBLE)"  # DuckDB reads a bare 0.1 as a DECIMAL


def _quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _text(value: str) -> str:
    # a NUL cannot stand inside a DuckDB string literal: it is spliced in with chr(0)
    parts = [_quoted(part) for part in value.split("\x00")]
    return "(" + " || chr(0) || ".join(parts) + ")" if len(parts) > 1 else parts[0]


def _timestamp(scalar: pa.Scalar) -> str:
    type_ = scalar.type
    ticks = scalar.cast(pa.int64()).as_py()
    if type_.unit == "ns":  # DuckDB has no zoned nanosecond type: the UTC ticks, unzoned
        return f"make_timestamp_ns({ticks})"
    naive = f"make_timestamp({ticks * _MICROS[type_.unit]})"
    # a zoned column holds UTC instants, and the evaluator's session zone is UTC
    return f"CAST({naive} AS TIMESTAMPTZ)" if type_.tz is not None else naive
