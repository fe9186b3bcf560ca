"""Structured Streaming calls with ``format("acidstore")``, checked in the user's driver.

Spark checks a streaming query's output mode only once the query runs, in its own thread: an
``update`` query into a Python data source fails there with Spark's words, after ``start()``
returned. Nor does a Python data source see a streaming write before its first micro-batch.
So importing ``acidstore.spark`` wraps ``DataStreamWriter.start`` and ``toTable``: for format
``acidstore`` they first check, here, and raise acidstore's typed errors: the output mode
(append only), the options, the table (it must exist), a ``partitionBy`` (the table's own,
or none) and the DataFrame's columns (they must fit, unless ``mergeSchema``).
``toTable(name)`` writes into the acidstore table of that name (``start(name)``), as Delta's
writes into its catalog's table. ``DataStreamReader.load`` raises the acidstore error of a
load that fails, as ``DataFrameReader.load`` does (``session``).

A running query's failures are Spark's (``StreamingQueryException``, from
``awaitTermination`` and the like): ``acidstore.spark.typed_error`` finds the acidstore error
they carry.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, cast

from pyspark.sql import DataFrame
from pyspark.sql.datasource import CaseInsensitiveDict
from pyspark.sql.streaming.query import StreamingQuery
from pyspark.sql.streaming.readwriter import DataStreamReader, DataStreamWriter

from acidstore.errors import UnsupportedOperationError
from acidstore.spark.options import open_target, target_of
from acidstore.spark.read_tasks import merge_schema
from acidstore.spark.saving import Layout, check_layout, option_list, scala_map
from acidstore.spark.stream_options import check_stream_write
from acidstore.spark.typed_errors import carried_errors
from acidstore.spark.write_columns import check_columns

__all__ = ["check_stream", "hook_streams"]

FORMAT = "acidstore"
_MARK = "__acidstore_hook__"


def check_stream(writer: DataStreamWriter, path: str | None) -> None:
    """The checks of a streaming write into an acidstore table (the module docstring)."""
    jwrite = writer._jwrite
    options = scala_map(jwrite.extraOptions().originalMap())
    if path is not None:
        options["path"] = path
    target = target_of(cast("Mapping[str, str]", CaseInsensitiveDict(options)))
    mode = str(jwrite.outputMode().toString()).lower()
    if mode != "append":
        raise UnsupportedOperationError(
            f"outputMode('{mode}') into {target.describe()}: a streaming write to an acidstore "
            "table appends each micro-batch in one transaction (outputMode('append')); for "
            "upserts, use foreachBatch with AcidTable.merge (docs/streaming.md)")
    check_stream_write(options, target.describe())
    check_layout(target, Layout(option_list(jwrite.partitioningColumns()), [], 0))
    if merge_schema(options):
        return  # the new columns are added by the first batch
    wh, table = open_target(target)
    try:
        check_columns(table.schema, writer._df.schema, table.name,
                      table.info.partition_schema.names)
    finally:
        wh.close()


def _wrap(owner: type, name: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]
          ) -> None:
    original = getattr(owner, name)
    if getattr(original, _MARK, False):
        return
    wrapper = functools.wraps(original)(make(original))
    setattr(wrapper, _MARK, True)
    setattr(owner, name, wrapper)


def _applied(writer: DataStreamWriter, given: Mapping[str, Any]) -> bool:
    """Apply the arguments of ``start``/``toTable`` as PySpark applies them; whether the
    format is acidstore's."""
    writer.options(**given.get("options", {}))
    for name in ("outputMode", "partitionBy", "format", "queryName"):
        if given.get(name) is not None:
            getattr(writer, name)(given[name])
    return str(writer._jwrite.source()).lower() == FORMAT


def _hooked(original: Callable[..., StreamingQuery],
            ours: Callable[[DataStreamWriter, Any], StreamingQuery]
            ) -> Callable[..., StreamingQuery]:
    """``original`` (``start`` or ``toTable``, whose first argument is the path or table),
    with ``ours`` run instead for format acidstore, once the arguments are applied."""
    signature = inspect.signature(original)
    first = list(signature.parameters)[1]

    def run(self: DataStreamWriter, *args: Any, **kwargs: Any) -> StreamingQuery:
        given = signature.bind(self, *args, **kwargs).arguments
        if _applied(self, given):
            return ours(self, given.get(first))
        return original(self, given.get(first))

    return run


def hook_streams() -> None:
    """Wrap ``DataStreamWriter.start``/``toTable`` and ``DataStreamReader.load`` (once)."""

    def start(original: Callable[..., StreamingQuery]) -> Callable[..., StreamingQuery]:
        def checked(writer: DataStreamWriter, path: str | None) -> StreamingQuery:
            check_stream(writer, path)
            with carried_errors():
                return original(writer, path)
        return _hooked(original, checked)

    def to_table(original: Callable[..., StreamingQuery]) -> Callable[..., StreamingQuery]:
        return _hooked(original, lambda writer, name: writer.start(name))

    def load(original: Callable[..., DataFrame]) -> Callable[..., DataFrame]:
        def run(self: DataStreamReader, *args: Any, **kwargs: Any) -> DataFrame:
            with carried_errors():
                return original(self, *args, **kwargs)
        return run

    _wrap(DataStreamWriter, "start", start)
    _wrap(DataStreamWriter, "toTable", to_table)
    _wrap(DataStreamReader, "load", load)
