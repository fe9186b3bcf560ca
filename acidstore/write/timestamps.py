"""Timestamps every reader of the table can read back, or a refusal at write (layer L3).

pyarrow's ORC reader decodes timestamps at nanosecond resolution, so a value outside about
1677-09-21 .. 2262-04-11 is written fine and then makes every read of its file fail. Java's
ORC reader (Hive, Spark) rejects the negative nanosecond field pyarrow's writer stores for a
time before 1970 with a fraction of a second. A write refuses both, naming the column and
the value, rather than leave a file that some engine cannot read. Timestamps inside lists,
structs and maps are stored the same way, so they are checked the same way (the column's
dotted path, ``c.item``, ``s.t``, ``m.key``, names them).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidstore.errors import SchemaMismatchError

__all__ = ["check_timestamps", "holds_timestamps"]

_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
_NS_LIMIT = 2**63 - 1  # nanoseconds either side of the epoch that pyarrow's reader can hold


def check_timestamps(rows: pa.Table, where: str) -> None:
    """Raise SchemaMismatchError for the first timestamp or date no reader of ours can read
    back, in a top-level column or nested in a list, struct or map (ORC stores those
    alike)."""
    for field in rows.schema:
        if pa.types.is_timestamp(field.type):
            if not _all_readable(rows.column(field.name), field.type):
                _check_values(rows, field, where)
            continue
        if pa.types.is_date32(field.type):
            _check_dates(rows.column(field.name), field.name, where)
            continue
        if not holds_timestamps(field.type):
            continue
        for path, values in _nested_timestamps(field.name, rows.column(field.name)):
            if pa.types.is_date32(values.type):
                _check_dates(values, path, where)
            elif not _all_readable(values, values.type):
                leaf = pa.table({path: values})
                _check_values(leaf, leaf.schema.field(0), where)


#: days from 1970-01-01 to 0001-01-01 and to 9999-12-31: the DATE range of Hive and Spark,
#: and of Python's ``datetime.date`` (``to_pylist``/``to_pandas`` of any other value fails)
_FIRST_DAY, _LAST_DAY = -719_162, 2_932_896


def _check_dates(column: pa.ChunkedArray, name: str, where: str) -> None:
    """A date outside years 1-9999 (``SET d = d - 1`` on 0001-01-01) was stored, and
    reading it into Python then failed; Hive's and Spark's DATE do not reach it either."""
    bounds = pc.min_max(column.cast(pa.int32()))
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low is None or (low >= _FIRST_DAY and high <= _LAST_DAY):
        return
    bad = low if low < _FIRST_DAY else high
    raise SchemaMismatchError(
        f"{where}: column {name!r} holds the date {bad} days from 1970-01-01, outside "
        "0001-01-01 .. 9999-12-31, the DATE range of Hive, Spark and Python")


def holds_timestamps(kind: pa.DataType) -> bool:
    """Whether a nested type has a timestamp (or a date, checked alike) anywhere inside."""
    if pa.types.is_timestamp(kind) or pa.types.is_date32(kind):
        return True
    if pa.types.is_list(kind) or pa.types.is_large_list(kind) \
            or pa.types.is_fixed_size_list(kind):
        return holds_timestamps(kind.value_type)
    if pa.types.is_map(kind):
        return holds_timestamps(kind.key_type) or holds_timestamps(kind.item_type)
    if pa.types.is_struct(kind):
        return any(holds_timestamps(kind.field(i).type) for i in range(kind.num_fields))
    return False


def _nested_timestamps(path: str, column: pa.ChunkedArray
                       ) -> Iterator[tuple[str, pa.ChunkedArray]]:
    """Every timestamp leaf of a nested column, as (dotted path, the values stored there).
    ``flatten`` follows the offsets of a sliced array and leaves out values under a NULL
    struct, so only values the file holds are judged."""
    kind = column.type
    if pa.types.is_timestamp(kind) or pa.types.is_date32(kind):
        yield path, column
    elif pa.types.is_list(kind) or pa.types.is_large_list(kind) \
            or pa.types.is_fixed_size_list(kind):
        if holds_timestamps(kind.value_type):
            yield from _nested_timestamps(f"{path}.{kind.value_field.name}",
                                          pc.list_flatten(column))
    elif pa.types.is_map(kind):
        for name, part, inner in (("key", "keys", kind.key_type),
                                  ("value", "items", kind.item_type)):
            if holds_timestamps(inner):
                yield from _nested_timestamps(f"{path}.{name}", pa.chunked_array(
                    [_map_part(chunk, part) for chunk in column.chunks], inner))
    elif pa.types.is_struct(kind):
        fields = column.flatten()
        for index in range(kind.num_fields):
            if holds_timestamps(kind.field(index).type):
                yield from _nested_timestamps(f"{path}.{kind.field(index).name}",
                                              fields[index])


def _all_readable(column: pa.ChunkedArray, kind: pa.TimestampType) -> bool:
    """True when the column's range alone proves every value readable: none before 1970
    (so none with a negative fraction) and none past the nanosecond limit. One min/max
    pass instead of ``_check_values``' copy and masks of the whole column (0.16 s of a 10M
    row insert, before any file could be encoded)."""
    bounds = pc.min_max(column.cast(pa.int64()))
    low, high = bounds["min"].as_py(), bounds["max"].as_py()
    if low is None:  # no value, or only NULLs
        return True
    limit = _NS_LIMIT // (1_000_000_000 // _PER_SECOND[kind.unit])
    return bool(low >= 0 and high <= limit)


def _check_values(rows: pa.Table, field: pa.Field, where: str) -> None:
    """The exact check of every value of one timestamp column, naming the first bad one."""
    per_second = _PER_SECOND[field.type.unit]
    values = np.asarray(pc.fill_null(pc.cast(rows.column(field.name), pa.int64()), 0)
                        .to_numpy(zero_copy_only=False), dtype=np.int64)
    limit = _NS_LIMIT // (1_000_000_000 // per_second)
    outside = values[(values > limit) | (values < -limit)]
    if outside.size:
        raise SchemaMismatchError(
            f"{where}: column {field.name!r} holds {_shown(outside[0], field.type)}, "
            "outside 1677-09-21 .. 2262-04-11: ORC readers decode timestamps in "
            "nanoseconds and could not read it back")
    fractional = values[(values < 0) & (values % per_second != 0)]
    if fractional.size:
        raise SchemaMismatchError(
            f"{where}: column {field.name!r} holds {_shown(fractional[0], field.type)}, "
            "a time before 1970 with a fraction of a second: Hive's and Spark's ORC "
            "reader cannot read it as pyarrow writes it (truncate to whole seconds)")


def _shown(value: np.int64, kind: pa.TimestampType) -> str:
    """The value as a date and time, or as its raw count where Python's datetime cannot
    hold it (past year 9999 or before year 1): the refusal must name it, not overflow."""
    try:
        return str(pa.scalar(int(value), pa.int64()).cast(kind))
    except (OverflowError, ValueError, pa.ArrowInvalid):
        return f"{int(value)} {kind.unit} from 1970-01-01 (beyond years 1-9999)"


def _map_part(chunk: pa.MapArray, part: str) -> pa.Array:
    """The keys or items of the maps in ``chunk`` alone: ``MapArray.keys`` is the whole
    child array even when ``chunk`` is a slice of a larger one."""
    offsets = chunk.offsets
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    values: pa.Array = getattr(chunk, part)
    return values.slice(start, end - start)
