"""What importing ``acidstore.spark`` does to the user's Spark sessions.

``format("acidstore")`` must work whatever the order of ``import acidstore.spark`` and
``SparkSession.builder.getOrCreate()``. An installed acidstore has the ``pyspark_acidstore``
module, which Spark itself finds on every session; an editable install hides that module from
Spark's search, so importing this package also wraps ``SparkSession.Builder.getOrCreate`` to
register the source on each session it returns (once per session), and registers it on the
session that is active at import. ``register(spark)`` does it by hand (a session made some
other way).

The same import makes ``df.write.format("acidstore")`` behave as Delta's does without
``.mode()`` and with ``partitionBy``/``bucketBy`` (``acidstore.spark.saving``), makes
``load()`` raise acidstore's typed errors, checks a streaming write into an acidstore table
when it starts (``acidstore.spark.stream_start``), and releases, when the session stops or the
process exits, the snapshot leases this driver process still holds
(``acidstore.spark.leases``).
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from typing import Any

from pyspark.sql import DataFrame, DataFrameReader, SparkSession

from acidstore.spark import leases
from acidstore.spark.datasource import AcidDataSource
from acidstore.spark.typed_errors import carried_errors

__all__ = ["install_hooks", "register"]

_registered: weakref.WeakSet[SparkSession] = weakref.WeakSet()
_MARK = "__acidstore_hook__"


def _known(spark: SparkSession) -> bool:
    """Whether ``spark`` has the source already (Spark found ``pyspark_acidstore``, or it
    was registered): registering again would log that it replaced it."""
    try:
        manager = spark._jsparkSession.sessionState().dataSourceManager()
        return bool(manager.dataSourceExists(AcidDataSource.name()))
    except Exception:  # a session without that JVM API: register anyway
        return False


def register(spark: SparkSession) -> None:
    """Make ``format("acidstore")`` available on ``spark`` (idempotent, cheap)."""
    if not _known(spark):
        spark.dataSource.register(AcidDataSource)
    _registered.add(spark)


def _wrapped(original: Callable[..., Any], wrapper: Callable[..., Any]) -> Callable[..., Any]:
    functools.update_wrapper(wrapper, original)
    setattr(wrapper, _MARK, True)
    return wrapper


def _hook_get_or_create() -> None:
    original = SparkSession.Builder.getOrCreate
    if getattr(original, _MARK, False):
        return

    def get_or_create(self: SparkSession.Builder) -> SparkSession:
        session = original(self)
        if session not in _registered:
            register(session)
        return session

    SparkSession.Builder.getOrCreate = _wrapped(original, get_or_create)  # type: ignore[method-assign]


def _hook_stop() -> None:
    original = SparkSession.stop
    if getattr(original, _MARK, False):
        return

    def stop(self: SparkSession) -> None:
        leases.release_held()
        original(self)

    SparkSession.stop = _wrapped(original, stop)  # type: ignore[method-assign]


def _hook_load() -> None:
    """``spark.read.format("acidstore")...load()`` plans in a Python worker of Spark's (the
    source's schema, its options, the table), whose errors reach the driver as Spark's
    ``AnalysisException`` holding their text: raise the acidstore error it carries instead.
    The DataFrame's actions are Spark's and stay untyped (``acidstore.spark.typed_error``)."""
    original = DataFrameReader.load
    if getattr(original, _MARK, False):
        return

    def load(self: DataFrameReader, *args: Any, **kwargs: Any) -> DataFrame:
        with carried_errors():
            return original(self, *args, **kwargs)

    DataFrameReader.load = _wrapped(original, load)  # type: ignore[method-assign]


def install_hooks() -> None:
    """Install the session hooks (idempotent) and register the source on the active session."""
    from acidstore.spark import saving, stream_start

    _hook_get_or_create()
    _hook_stop()
    _hook_load()
    saving.hook_save()
    stream_start.hook_streams()
    leases.release_at_exit()
    active = SparkSession.getActiveSession()
    if active is not None:
        register(active)
