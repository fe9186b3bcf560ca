"""Spark's exceptions, turned back into acidstore's typed errors.

A mistake must raise the same error on Spark as embedded, and a failed write must say that
nothing of it landed. Errors raised in executors or in Spark's data source workers reach the
driver only as text: Py4J/Spark exceptions holding the Python traceback. So the code Spark
runs in its Python workers reports an acidstore error with one more line, a note that holds
its class, message and attributes as JSON (``reported_errors``), and ``typed_error`` rebuilds
that error from the last such line; text without one (the Java reader's tasks, older
workers) is read from its last ``acidstore.errors.<Name>: <message>`` line. Spark's own
analysis errors (an unknown column in a condition) become InvalidExpressionError, as the
embedded engine reports a bad SQL expression. A write whose Spark job fails for any other
reason (a lost Python worker or executor, a UDF that raised) raises ``SparkJobFailedError``
once its transaction is aborted (``spark_write``).
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from py4j.protocol import Py4JError
from pyspark.errors import AnalysisException
from pyspark.errors.exceptions.captured import CapturedException

from acidstore import errors
from acidstore.engine.executors import NOTE, reported_errors
from acidstore.engine.transaction import TransactionCore
from acidstore.errors import (
    AcidStoreError,
    InvalidExpressionError,
    MissingDataError,
    SparkJobFailedError,
)

__all__ = ["WriteAttempt", "carried_errors", "failure_reason", "is_spark_failure",
           "reported_errors", "reporting", "spark_errors", "spark_write", "typed_error"]

P = ParamSpec("P")
T = TypeVar("T")

_RAISED = re.compile(r"acidstore\.errors\.(\w+): (.*)")
_NOTED = re.compile("^" + re.escape(NOTE) + r"(\{.*\})\s*$", re.MULTILINE)
#: how much of Spark's text a SparkJobFailedError's ``reason`` keeps
_REASON_CHARS = 400


def typed_error(exc: BaseException) -> AcidStoreError | None:
    """The acidstore error that ``exc`` (a Spark/Py4J exception) carries, if any: the same
    class, message and attributes (``path``, ``retry_safe`` ...) as the one raised in the
    worker. ``exc`` itself when it is one already."""
    if isinstance(exc, AcidStoreError):
        return exc
    text = _text(exc)
    for noted in reversed(_NOTED.findall(text)):
        try:
            fields = json.loads(noted)
            rebuilt = _rebuilt(str(fields["class"]), str(fields["message"]),
                               dict(fields.get("attributes", {})))
        except (ValueError, KeyError, TypeError):
            continue
        if rebuilt is not None:
            return rebuilt
    for name, message in reversed(_RAISED.findall(text)):
        rebuilt = _rebuilt(name, message.strip(), {})
        if rebuilt is not None:
            return rebuilt
    return None


def _text(exc: BaseException) -> str:
    """The text of ``exc``. A ``Py4JJavaError`` asks the JVM for it, which fails when the
    JVM is gone: then only its class is known."""
    try:
        return str(exc)
    except Exception:
        return type(exc).__name__


def _rebuilt(name: str, message: str, attributes: dict[str, Any]) -> AcidStoreError | None:
    """An instance of ``acidstore.errors.<name>`` whose text is ``message`` (exactly as the
    original's, which its constructor formatted from its arguments) with ``attributes``; the
    keyword arguments of its constructor that were not reported are None (or their
    defaults), so that every attribute its class documents exists."""
    cls = getattr(errors, name, None)
    if not (isinstance(cls, type) and issubclass(cls, AcidStoreError)):
        return None
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    for parameter in inspect.signature(cls.__init__).parameters.values():
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            default = parameter.default
            setattr(error, parameter.name, None if default is inspect.Parameter.empty
                    else default)
    for key, value in attributes.items():
        setattr(error, key, value)
    return error


def reporting(function: Callable[P, Iterator[T]]) -> Callable[P, Iterator[T]]:
    """``function``, a generator function Spark runs in a worker (``mapInArrow``'s), with
    its errors reported as ``reported_errors`` does, wherever in its iteration they come."""
    @functools.wraps(function)
    def run(*args: P.args, **kwargs: P.kwargs) -> Iterator[T]:
        with reported_errors():
            yield from function(*args, **kwargs)

    return run


@contextmanager
def carried_errors() -> Iterator[None]:
    """Raise the acidstore error that a Spark failure inside the block carries (the failure
    as its cause); a failure that carries none goes through as it is."""
    try:
        yield
    except AcidStoreError:
        raise
    except Exception as exc:
        typed = typed_error(exc)
        if typed is None:
            raise
        raise typed from exc


@contextmanager
def spark_errors(where: str) -> Iterator[None]:
    """Re-raise Spark failures inside the block as acidstore errors (``where`` says what
    ran): the one a failure carries, a path Spark's reader did not find as MissingDataError
    (reads plan from the metastore's record, so a removed file shows when it is opened), else
    an analysis error as InvalidExpressionError."""
    try:
        with carried_errors():
            yield
    except AnalysisException as exc:
        text = _text(exc).strip()
        first = text.splitlines()[0] if text else type(exc).__name__
        missing = _PATH_NOT_FOUND.search(text)
        if missing is not None:  # a planned file Spark's own reader did not find
            path = missing.group(1).removeprefix("file:")
            raise MissingDataError.gone(path, where) from exc
        raise InvalidExpressionError(f"{where}: {first}") from exc


def is_spark_failure(exc: BaseException) -> bool:
    """Whether ``exc`` is Spark's report of a failed job or call into the JVM (a Py4J error,
    or an exception PySpark converted from one), as opposed to an analysis error or a bug of
    the Python code around it."""
    return isinstance(exc, Py4JError | CapturedException) and \
        not isinstance(exc, AnalysisException)


_PATH_NOT_FOUND = re.compile(r"\[PATH_NOT_FOUND\] Path does not exist: (\S+?)\.(?:\s|$)")
_FIRST_LINE = re.compile(r"^An error occurred while calling [\w.]+\.\s*", re.MULTILINE)
_LOST_TASK = re.compile(r"most recent failure: [^\n]*?\): (?:[\w.$]+: )?([^\n]+)")


def failure_reason(exc: BaseException) -> str:
    """The gist of a Spark failure, for a message: the last line of the Python error a
    worker raised (``ValueError: ...``), else what failed the task that failed the job
    (``Python worker exited unexpectedly (crashed)``), else Spark's first line."""
    text = _text(exc)
    reason = ""
    if "Traceback (most recent call last)" in text:
        after = text.rsplit("Traceback (most recent call last)", 1)[1].splitlines()[1:]
        reason = next((line for line in after if line.strip() and not line[0].isspace()
                       and not line.startswith(NOTE)), "")
    if not reason:
        lost = _LOST_TASK.search(text)
        if lost is not None:
            reason = lost.group(1).split(". Consider setting", 1)[0]
    if not reason:
        lines = [line.strip() for line in _FIRST_LINE.sub("", text).splitlines()
                 if line.strip()]
        reason = lines[0].lstrip(": ") if lines else type(exc).__name__
    reason = reason.strip()
    return reason if len(reason) <= _REASON_CHARS else reason[:_REASON_CHARS] + " ..."


@dataclass
class WriteAttempt:
    """What a write through Spark got to, for the words of its error if it fails: the
    transaction it opened (set once open), in whatever state the failure left it."""

    what: str
    table: str | None
    txn: TransactionCore | None = None

    def failed(self, exc: BaseException) -> SparkJobFailedError:
        """The typed error of a Spark failure ``exc`` that ended this write."""
        reason = failure_reason(exc)
        txn = self.txn
        if txn is None:
            outcome = "nothing was written (no transaction had been opened)"
        elif txn.state == "unknown":
            outcome = (f"nothing was committed: transaction {txn.txn_id} could not be aborted "
                       "just now, so its timeout aborts it and the cleaner then removes its "
                       "files")
        else:
            outcome = (f"nothing was committed: transaction {txn.txn_id} was aborted and its "
                       "files removed")
        return SparkJobFailedError(
            f"{self.what}: the Spark job failed ({reason}); {outcome}. Repeating the write is "
            "safe once the cause is gone (Spark's exception is chained as the cause)",
            reason=reason, txn_id=None if txn is None else txn.txn_id, table=self.table)


@contextmanager
def spark_write(what: str, table: str | None) -> Iterator[WriteAttempt]:
    """Around a whole write through Spark, outside its transaction's block (so that the
    transaction is aborted when the error leaves it): an acidstore error goes through, one
    that Spark's text carries is rebuilt, and any other failure of Spark becomes a
    ``SparkJobFailedError`` that says what became of the transaction. A failure after the
    transaction committed is raised as it is: the write landed."""
    attempt = WriteAttempt(what, table)
    try:
        yield attempt
    except AcidStoreError:
        raise
    except Exception as exc:
        typed = typed_error(exc)
        if typed is not None:
            raise typed from exc
        if not is_spark_failure(exc) or (attempt.txn is not None and
                                         attempt.txn.state == "committed"):
            raise
        raise attempt.failed(exc) from exc
