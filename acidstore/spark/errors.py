"""Spark's exceptions, turned back into acidstore's typed errors.

A mistake must raise the same error on Spark as embedded. Errors raised in executors or in
Spark's data source workers reach the driver as Py4J/Spark exceptions whose text holds the
Python traceback; its last ``acidstore.errors.<Name>: <message>`` line names the original.
Spark's own analysis errors (an unknown column in a condition) become InvalidExpressionError,
as the embedded engine reports a bad SQL expression.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.errors import AnalysisException

from acidstore import errors
from acidstore.errors import AcidStoreError, InvalidExpressionError

__all__ = ["spark_errors", "typed_error"]

_RAISED = re.compile(r"acidstore\.errors\.(\w+): (.*)")


def typed_error(exc: BaseException) -> AcidStoreError | None:
    """The acidstore error that ``exc`` (a Spark/Py4J exception) carries, if any."""
    found = _RAISED.findall(str(exc))
    for name, message in reversed(found):
        cls = getattr(errors, name, None)
        if isinstance(cls, type) and issubclass(cls, AcidStoreError):
            try:
                return cls(message.strip())
            except TypeError:
                # an error that keeps what it names (a path, the warehouse and metastore of
                # a mismatch) takes it as required keywords; only the message carries them
                unknown = {name: None for name, p in
                           inspect.signature(cls.__init__).parameters.items()
                           if p.kind is p.KEYWORD_ONLY and p.default is p.empty}
                return cls(message.strip(), **unknown)
    return None


@contextmanager
def spark_errors(where: str) -> Iterator[None]:
    """Re-raise Spark failures inside the block as acidstore errors (``where`` says what ran)."""
    try:
        yield
    except AcidStoreError:
        raise
    except Exception as exc:
        typed = typed_error(exc)
        if typed is not None:
            raise typed from exc
        if isinstance(exc, AnalysisException):
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InvalidExpressionError(f"{where}: {first}") from exc
        raise
