"""Arrow <-> Spark schemas for acidstore tables.

Hive's TIMESTAMP is a local date-time, so a table's naive timestamps are Spark's
TIMESTAMP_NTZ (pyspark's own Arrow mapping); Spark holds microseconds, so nanosecond
timestamps are truncated on the way in, as Spark's native ORC reader does.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import (
    BinaryType,
    BooleanType,
    ByteType,
    DataType,
    DateType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    ShortType,
    StringType,
    StructType,
    TimestampNTZType,
)

from acidstore.errors import SchemaMismatchError

__all__ = ["FLAT_TYPES", "arrow_schema", "flat", "spark_schema", "to_spark_batch"]

#: the Spark types whose values the JVM readers (acidstore's Java reader, Spark's ORC reader)
#: return exactly as the Python path does: Hive's zone-less TIMESTAMP as TIMESTAMP_NTZ; zoned
#: timestamps and nested types take the Python path
FLAT_TYPES: tuple[type[DataType], ...] = (
    BooleanType, ByteType, ShortType, IntegerType, LongType, FloatType, DoubleType,
    StringType, BinaryType, DateType, DecimalType, TimestampNTZType)


def flat(schema: StructType, types: tuple[type[DataType], ...] = FLAT_TYPES) -> bool:
    """Whether every column of ``schema`` is of one of ``types``."""
    return all(isinstance(f.dataType, types) for f in schema.fields)


def spark_schema(schema: pa.Schema) -> StructType:
    """The Spark schema of an Arrow schema (a table's user + partition columns)."""
    try:
        result: StructType = from_arrow_schema(schema)
    except (TypeError, ValueError) as exc:  # pyspark raises these for types it cannot map
        raise SchemaMismatchError(f"schema {schema} has no Spark equivalent: {exc}") from exc
    return result


def arrow_schema(schema: StructType) -> pa.Schema:
    """The Arrow schema Spark exchanges for ``schema`` (timestamps in UTC microseconds)."""
    result: pa.Schema = to_arrow_schema(schema, timezone="UTC")
    return result


def to_spark_batch(batch: pa.RecordBatch, target: pa.Schema) -> pa.RecordBatch:
    """``batch`` in the exact Arrow types Spark expects for the read schema."""
    if batch.schema.equals(target):
        return batch
    columns = [batch.column(i).cast(field.type, safe=False) if not batch.column(i).type.equals(
        field.type) else batch.column(i) for i, field in enumerate(target)]
    return pa.RecordBatch.from_arrays(columns, schema=target)
