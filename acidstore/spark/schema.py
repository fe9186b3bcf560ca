"""Arrow <-> Spark schemas for acidstore tables.

Hive's TIMESTAMP is a local date-time, so a table's naive timestamps are Spark's
TIMESTAMP_NTZ (pyspark's own Arrow mapping); Spark holds microseconds, so nanosecond
timestamps are truncated on the way in, as Spark's native ORC reader does.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.types import StructType

from acidstore.errors import SchemaMismatchError

__all__ = ["arrow_schema", "spark_schema", "to_spark_batch"]


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
