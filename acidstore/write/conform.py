"""Bring user data to a table's schema, and split it by partition.

Inserts accept a ``pa.Table``, a ``RecordBatchReader`` or a pandas DataFrame. Columns are
matched by name (case-insensitively, as SQL does). An insert may leave out a nullable column
that is not a partition column (``omittable``): it reads as NULL, as in Hive's INSERT with a
column list and pyiceberg's optional fields. Any other missing column, an unknown one, a type
that does not convert without loss, or a NULL in a NOT NULL column is a
``SchemaMismatchError`` that names the column. Nothing is written before the whole input has
conformed.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from acidstore.errors import InvalidInputError, InvalidPartitionValueError, SchemaMismatchError
from acidstore.format.orc.types import cast_input
from acidstore.format.partitions import partition_path

__all__ = ["PartitionData", "canonical_partition_values", "conform", "from_pandas",
           "omittable", "partition_text", "refuse_zone_drop", "split_partitions", "to_arrow_table"]

_T = TypeVar("_T")


def to_arrow_table(data: Any, where: str) -> pa.Table:
    """A ``pa.Table`` from a Table, RecordBatch, RecordBatchReader or pandas DataFrame (the
    data for ``where``, named in errors)."""
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if isinstance(data, pa.RecordBatchReader):
        return data.read_all()
    # pandas first: a DataFrame also exports the Arrow stream interface (pandas >= 2.2), and
    # that export keeps a named index as a column, which then fails as an unknown column
    if type(data).__module__.startswith("pandas"):  # pandas is optional: no import needed
        return from_pandas(pa.Table.from_pandas, data, where)
    if hasattr(data, "__arrow_c_stream__") and not hasattr(data, "to_pandas"):
        return pa.table(data)
    raise InvalidInputError(
        f"cannot insert a {type(data).__name__}; give a pyarrow Table, RecordBatchReader or "
        "pandas DataFrame")


def from_pandas(convert: Callable[..., _T], frame: Any, where: str) -> _T:
    """``convert(frame, preserve_index=False)`` (pyarrow's ``Table.from_pandas`` or
    ``Schema.from_pandas``), refusing a column Arrow cannot type (an object column mixing
    numbers and text) with an InvalidInputError that names it, where pyarrow's own error
    does not always say which column it was."""
    try:
        return convert(frame, preserve_index=False)
    except UnicodeEncodeError as exc:
        column = _unconvertible(frame)
        which = f"column {column!r} of the DataFrame" if column is not None else "the DataFrame"
        raise InvalidInputError(
            f"{where}: {which} holds text that is no valid UTF-8 ({exc}): a lone surrogate, "
            "e.g. from bytes decoded with errors='surrogateescape'") from exc
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        column = _unconvertible(frame)
        which = f"column {column!r} of the DataFrame" if column is not None else "the DataFrame"
        raise InvalidInputError(
            f"{where}: {which} does not convert to one Arrow type ({exc}); give each column "
            "values of one type (or astype() it)") from exc


def _unconvertible(frame: Any) -> str | None:
    """The name of the first column of ``frame`` that Arrow cannot convert on its own."""
    for index, name in enumerate(frame.columns):
        try:
            pa.Array.from_pandas(frame.iloc[:, index])
        except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError,
                UnicodeEncodeError):
            return str(name)
    return None


def omittable(schema: pa.Schema, partition_columns: Collection[str]) -> frozenset[str]:
    """The columns of ``schema`` an insert may leave out: the nullable ones that place no row
    in a partition (a forgotten partition column would send every row to the NULL
    partition, so it is refused instead)."""
    parts = {name.lower() for name in partition_columns}
    return frozenset(f.name for f in schema if f.nullable and f.name.lower() not in parts)


def conform(data: pa.Table, schema: pa.Schema, *, where: str,
            omitted: Collection[str] = ()) -> pa.Table:
    """``data`` with exactly the columns of ``schema``, in order, cast losslessly; a column
    of ``omitted`` (``omittable``'s) that the data lacks is all NULL. Only user data gets
    ``omitted``: a statement's own rows always carry every column, and one that did not
    must fail rather than write NULLs."""
    by_lower: dict[str, str] = {}
    for name in data.column_names:
        if name.lower() in by_lower:
            raise SchemaMismatchError(f"duplicate column {name!r} in the data for {where}")
        by_lower[name.lower()] = name
    wanted = {f.name.lower() for f in schema}
    unknown = [n for n in data.column_names if n.lower() not in wanted]
    if unknown:
        raise SchemaMismatchError(
            f"column(s) {unknown} are not in {where} (columns: {schema.names})")
    columns = []
    for field in schema:
        source = by_lower.get(field.name.lower())
        if source is None:
            if field.name in omitted:
                columns.append(pa.nulls(data.num_rows, field.type))
                continue
            why = "NOT NULL" if not field.nullable else "a partition column"
            raise SchemaMismatchError(
                f"column {field.name!r} of {where} is missing from the data"
                + (f" ({why}: only nullable columns that are not partition columns may be "
                   "left out)" if omitted else ""))
        column = cast_input(data.column(source), field.type,
                         f"column {field.name!r} of {where} is {field.type}; the data has "
                         f"{data.column(source).type}")
        if not field.nullable and column.null_count:
            raise SchemaMismatchError(
                f"column {field.name!r} of {where} is NOT NULL but the data has "
                f"{column.null_count} null(s)")
        columns.append(column)
    return pa.Table.from_arrays(columns, schema=schema)


def refuse_zone_drop(data: pa.Table, schema: pa.Schema, *, where: str) -> None:
    """Refuse time-zone-aware timestamps for a column without a zone (Hive's TIMESTAMP is a
    local date-time): casting would silently keep the UTC wall clock and drop the zone, a
    different value for anyone who meant local time. The caller says which it means."""
    by_lower = {f.name.lower(): f for f in schema}
    for name in data.column_names:
        field = by_lower.get(name.lower())
        given = data.column(name).type
        if (field is not None and pa.types.is_timestamp(given) and given.tz is not None
                and pa.types.is_timestamp(field.type) and field.type.tz is None):
            raise SchemaMismatchError(
                f"column {field.name!r} of {where} is a timestamp without time zone; the data "
                f"has {given} (zone {given.tz}). Convert it to the local date-time you mean "
                "first (e.g. pyarrow.compute.local_timestamp, or cast to a zone-less type)")


@dataclass(frozen=True)
class PartitionData:
    """The rows of one partition and its relative directory ("" when unpartitioned)."""

    path: str
    values: tuple[str | None, ...]
    rows: pa.Table


def partition_text(array: pa.Array) -> list[str | None]:
    """Partition values as Hive writes them in directory names: one spelling per value, so
    rows equal in SQL share one directory. A float -0.0 is written as 0.0 (``p=0``): SQL
    says -0.0 = 0.0, and a filter ``p = 0`` selects both, so an INSERT OVERWRITE or a
    DELETE of ``p = 0.0`` must find every such row in the one directory it replaces."""
    if pa.types.is_boolean(array.type):
        return [None if v is None else ("true" if v else "false") for v in array.to_pylist()]
    if pa.types.is_timestamp(array.type):
        # a millisecond column's fraction in 3 digits: str() gives 6, which reads back only
        # as microseconds (the partition's rows were unreadable)
        spec = "milliseconds" if array.type.unit == "ms" else "auto"
        return [None if v is None else v.isoformat(" ", spec if v.microsecond else "auto")
                for v in array.to_pylist()]
    if pa.types.is_float32(array.type) or pa.types.is_float64(array.type):
        # x + 0.0 is x for every float but -0.0, which becomes 0.0 (IEEE 754)
        array = pc.add(array, pa.scalar(0.0, array.type))
    text: list[str | None] = pc.cast(array, pa.string()).to_pylist()
    return text


def canonical_partition_values(schema: pa.Schema, columns: Sequence[str],
                               values: Sequence[Any], *, where: str
                               ) -> tuple[str | None, ...]:
    """``values`` of the partition ``columns`` (directory names' text, or Python values)
    converted to their columns' types in ``schema`` and spelled as ``split_partitions``
    spells them: ``p=01`` and ``p=1`` of an integer column are one partition, and only
    ``p=1`` is the directory acidstore's writes use. ``InvalidPartitionValueError``
    (naming ``where``) for a value that does not convert."""
    out: list[str | None] = []
    lowered = {f.name.lower(): f for f in schema}
    for column, value in zip(columns, values, strict=True):
        field = lowered[column.lower()]
        if value is None:
            out.append(None)
            continue
        try:
            given = pa.array([value], pa.string() if isinstance(value, str) else None)
            out.append(partition_text(given.cast(field.type))[0])
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError,
                UnicodeEncodeError) as exc:
            what = "no valid text (it holds a lone surrogate)" \
                if isinstance(exc, UnicodeEncodeError) else f"not a {field.type}"
            raise InvalidPartitionValueError(
                f"{where}: partition value {value!r} of {column!r} is {what}") from exc
    return tuple(out)


def split_partitions(data: pa.Table, partition_columns: list[str]) -> list[PartitionData]:
    """Group rows by their partition values (escaped, validated directory names)."""
    if not partition_columns:
        return [PartitionData("", (), data)]
    if data.num_rows == 0:
        return []
    keys = [np.asarray(partition_text(data.column(c).combine_chunks()), dtype=object)
            for c in partition_columns]
    combined = np.array(["\x00".join("\x01" if v is None else v for v in row)
                         for row in zip(*keys, strict=True)], dtype=object)
    uniques, inverse = np.unique(combined, return_inverse=True)
    out = []
    for index in range(len(uniques)):
        rows = np.flatnonzero(inverse == index)
        values = tuple(k[rows[0]] for k in keys)
        out.append(PartitionData(partition_path(partition_columns, values), values,
                                 data.take(pa.array(rows))))
    return out


def schema_of(schema_or_data: Any, where: str) -> pa.Schema:
    """The schema a new table takes from ``schema_or_data``: a ``pa.Schema`` as given, or the
    schema of a pyarrow Table / RecordBatch / RecordBatchReader or a pandas DataFrame (its
    index left out, as inserts leave it out). Only the schema is used: the data is not
    inserted. A column whose type the data cannot tell (all-None pandas column: Arrow type
    ``null``) is refused, since ORC has no null type and the table could never be written."""
    if isinstance(schema_or_data, pa.Schema):
        return schema_or_data
    if isinstance(schema_or_data, pa.Table | pa.RecordBatch | pa.RecordBatchReader):
        schema = schema_or_data.schema
    elif type(schema_or_data).__module__.startswith("pandas"):  # pandas is optional
        schema = from_pandas(pa.Schema.from_pandas, schema_or_data, where)
    elif hasattr(schema_or_data, "__arrow_c_schema__"):
        schema = pa.schema(schema_or_data)
    else:
        raise InvalidInputError(
            f"{where}: schema must be a pyarrow.Schema (or a pyarrow Table or pandas "
            f"DataFrame to take it from), not {type(schema_or_data).__name__}")
    untyped = [f.name for f in schema if pa.types.is_null(f.type)]
    if untyped:
        raise SchemaMismatchError(
            f"{where}: cannot tell the type of column(s) {untyped} from the data (every value "
            "is null); give a pyarrow Schema instead")
    return schema.remove_metadata()
