"""The plug of the metastore contract suite: what a backend's test class provides, and the
small tools every contract uses.

The suite is plain Python (``assert``, ``raises`` below), so that shipping it costs the package
no test framework at run time; pytest collects it as it collects any test class. A backend's
test class subclasses a contract and implements ``make_metastore``; each test method then
opens the store under test through ``metastore`` (one handle, opened on first use) or
``another_client`` (a second connection, as another process would have), and every handle
a test opened is closed after it (``teardown_method``, which pytest calls).
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any, Generic, TypeVar

import pyarrow as pa

from acidstore.format.writeids import LONG_MAX
from acidstore.metastore.protocol import Metastore
from acidstore.metastore.records import NewTable, Operation, WriteComponent
from acidstore.metastore.transactions import Transactions

__all__ = ["MAX", "SCHEMA", "MetastoreHarness", "Raised", "begin", "cases", "component",
           "new_table", "raises", "states", "write"]

E = TypeVar("E", bound=BaseException)
F = TypeVar("F", bound=Callable[..., None])

#: a write-id or txn list's "no open id" watermark, as Hive prints it
MAX = str(LONG_MAX)
#: the columns of every table ``new_table`` makes
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
#: the attribute ``cases`` marks a test with
_CASES = "__contract_cases__"


class MetastoreHarness(ABC):
    """The base of every contract: how a test reaches the store under test.

    A subclass implements ``make_metastore``. Every call within one test must open the
    *same* store (so that two clients of it can race), and each test must start with an
    empty store of its own (under pytest: set where it lives in an autouse fixture, which
    runs per test, before the test asks for a handle).
    """

    #: the transaction timeout of the timeout tests, in seconds: they sleep past it (1.3
    #: times) and heartbeat at a quarter of it; a backend with a coarser clock sets more
    short_timeout: float = 1.0

    @abstractmethod
    def make_metastore(self, *, timeout_seconds: float | None = None) -> Metastore:
        """A new client of this test's store; ``timeout_seconds``: the timeout of the
        transactions it opens (None: the backend's default). The timeout tests open one
        with a timeout of about a second, so a backend must accept fractions."""

    def another_client(self, *, timeout_seconds: float | None = None) -> Metastore:
        """A new handle on this test's store, closed after the test."""
        store = self.make_metastore(timeout_seconds=timeout_seconds)
        self._opened().append(store)
        return store

    @property
    def metastore(self) -> Metastore:
        """The test's own handle on its store (opened on first use)."""
        found: Metastore | None = self.__dict__.get("_default_handle")
        if found is None:
            found = self.__dict__["_default_handle"] = self.another_client()
        return found

    def _opened(self) -> list[Metastore]:
        opened: list[Metastore] = self.__dict__.setdefault("_opened_handles", [])
        return opened

    def teardown_method(self, method: object = None) -> None:
        """Close every handle the test opened (closing one twice is harmless)."""
        for store in self.__dict__.pop("_opened_handles", []):
            store.close()
        self.__dict__.pop("_default_handle", None)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Turn each test ``cases`` marked into one test method per case, so that every case
        passes or fails on its own (as a parametrised test does), named ``<test>__<id>``."""
        super().__init_subclass__(**kwargs)
        for name, test in list(vars(cls).items()):
            marked: list[tuple[str, tuple[object, ...]]] | None = getattr(test, _CASES, None)
            if marked is None:
                continue
            delattr(cls, name)
            for case_id, values in marked:
                setattr(cls, f"{name}__{case_id}", _one_case(test, values, f"{name}__{case_id}"))


def _one_case(test: Callable[..., None], values: tuple[object, ...], name: str
              ) -> Callable[[Any], None]:
    def case(self: Any) -> None:
        test(self, *values)

    # not functools.wraps: a runner that follows __wrapped__ would see the case's parameters
    # and look for fixtures of those names
    case.__name__ = case.__qualname__ = name
    case.__doc__ = test.__doc__
    return case


def cases(*values: tuple[object, ...], ids: Sequence[str] | None = None) -> Callable[[F], F]:
    """Run the decorated test once per tuple of ``values`` (its arguments after ``self``),
    each case a test of its own; ``ids`` name them (default: the values joined)."""
    names = list(ids) if ids is not None else ["_".join(map(str, v)) for v in values]
    if len(names) != len(values):
        raise ValueError("one id per case")

    def mark(test: F) -> F:
        setattr(test, _CASES, [(re.sub(r"\W+", "_", n).strip("_"), v)
                               for n, v in zip(names, values, strict=True)])
        return test

    return mark


class Raised(Generic[E]):
    """What ``raises`` caught, for assertions after the block."""

    value: E


@contextmanager
def raises(expected: type[E] | tuple[type[E], ...], *, match: str | None = None
           ) -> Iterator[Raised[E]]:
    """Fail unless the block raises ``expected`` whose message matches ``match`` (a regular
    expression searched for, as pytest's ``raises`` does)."""
    caught: Raised[E] = Raised()
    try:
        yield caught
    except expected as exc:
        if match is not None and re.search(match, str(exc)) is None:
            raise AssertionError(f"{exc!r} does not match {match!r}") from exc
        caught.value = exc
        return
    raise AssertionError(f"the block did not raise {expected!r}")


# --- helpers the contracts share ------------------------------------------------------------------


def new_table(name: str = "t", database: str = "default", *, partition_by: Sequence[str] = (),
              **changes: Any) -> NewTable:
    """A table of ``SCHEMA`` (string partition columns ``partition_by``), with ``changes``."""
    info = NewTable(database, name, SCHEMA, pa.schema([(c, pa.string()) for c in partition_by]),
                    (), 0, {}, f"/warehouse/{database}.db/{name}")
    return replace(info, **changes) if changes else info


def begin(store: Transactions) -> int:
    """Open a transaction; its id."""
    return store.open_transaction(user="tester", host="localhost").txn_id


def component(write_id: int, operation: Operation = "insert", *, table: str = "default.t",
              partition: str = "", **counts: Any) -> WriteComponent:
    """The component of one write: its delta (or delete delta) directory of statement 0."""
    prefix = "delta" if operation in ("insert", "overwrite") else "delete_delta"
    return WriteComponent(table, partition, operation, write_id,
                          (f"{prefix}_{write_id:07d}_{write_id:07d}_0000",), **counts)


def write(store: Transactions, txn_id: int, operation: Operation, *, table: str = "default.t",
          partition: str = "") -> WriteComponent:
    """Allocate, record, and return the component, as a writer would before committing."""
    write_id = store.allocate_write_id(txn_id, table)
    written = component(write_id, operation, table=table, partition=partition)
    store.record_write(txn_id, written)
    return written


def states(store: Transactions) -> dict[int, str]:
    """Every transaction's state, by txn id."""
    return {txn.txn_id: txn.state for txn in store.show_transactions()}
