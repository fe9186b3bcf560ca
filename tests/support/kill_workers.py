"""Processes that die at a named point of a write, a commit, a compaction or a cleaner pass
(imported by the kill-point suite's children).

A kill point is (operation, target, before/after, n): the child wraps ``target`` *in its own
process* so that its ``n``-th call ends the process with ``os._exit(DIED)`` before or after
the real call (no ``finally``, no abort, no heartbeat after), then runs the operation through
``chaos_support`` (which logs the transaction id first). Production code has no test hooks.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from chaos_support import ID_SPAN, Log, Place, connect, run_op

from acidstore.metastore import SqliteMetastore
from compaction import Worker

DIED = 9

#: target -> (module or "module:Class", attribute): where the code under test looks it up
TARGETS: dict[str, tuple[str, str]] = {
    "write id allocated": ("acidstore.metastore:SqliteMetastore", "allocate_write_id"),
    "write recorded": ("acidstore.metastore:SqliteMetastore", "record_write"),
    "directory made": ("acidstore.write.files", "prepare_directory"),
    "bucket file": ("acidstore.write.files", "write_event_file"),
    "metastore commit": ("acidstore.metastore:SqliteMetastore", "commit"),
    "commit returned": ("acidstore.engine.transaction:TransactionCore", "commit"),
    "compaction planned": ("compaction.compactor", "plan_partition_compaction"),
    "output directories made": ("compaction.compactor", "prepare_outputs"),
    "compacted bucket file": ("compaction.execute", "_write"),
    "queue record": ("acidstore.metastore:SqliteMetastore", "record_compaction"),
    "queue entry compacted": ("acidstore.metastore:SqliteMetastore", "compaction_compacted"),
    "queue entry claimed": ("acidstore.metastore:SqliteMetastore", "claim_compaction"),
    "partition marked for cleaning": ("acidstore.metastore:SqliteMetastore", "begin_cleaning"),
    "directory removed": ("compaction.cleaner", "_remove"),
    "aborted write ids forgotten": ("acidstore.metastore:SqliteMetastore", "forget_aborted"),
}

WORKER = 50  # the fresh ids of the operations below: (WORKER + 1) * ID_SPAN on
_ID = (WORKER + 1) * ID_SPAN

#: operation -> what the child runs (``chaos_support`` plans; "worker" drains the queue)
OPERATIONS: dict[str, dict[str, Any]] = {
    "insert": {"op": "insert", "rows": [[_ID + i, i % 4, "ab"[i % 2]] for i in range(6)]},
    "idempotent insert": {"op": "insert", "rows": [[_ID + 10, 1, "a"], [_ID + 11, 2, "b"]],
                          "app": "kill", "version": 1, "retry": False},
    "insert into a new partition": {"op": "insert", "rows": [[_ID + 40, 1, "c"]]},
    "update": {"op": "update", "dt": "a", "k": 2},
    "delete": {"op": "delete", "dt": "b", "k": 1},
    "merge": {"op": "merge", "rows": [[2, 2, "a"], [3, 3, "b"], [_ID + 20, 1, "a"],
                                      [_ID + 21, 2, "b"]]},
    "overwrite": {"op": "overwrite", "dt": "a", "rows": [[_ID + 30, 1, "a"], [_ID + 31, 3, "a"],
                                                         [_ID + 32, 0, "a"]]},
    "minor compaction": {"op": "compact", "kind": "minor"},
    "major compaction": {"op": "compact", "kind": "major"},
    "worker": {"op": "worker"},
    "cleaner": {"op": "clean"},
}


@dataclass(frozen=True)
class KillPoint:
    operation: str
    target: str
    after: bool
    call: int = 1

    @property
    def name(self) -> str:
        nth = f" #{self.call}" if self.call > 1 else ""
        return f"{self.operation}: {'after' if self.after else 'before'} {self.target}{nth}"

    @property
    def lands(self) -> bool:
        """Whether the operation's transaction committed when the process died (DML)."""
        return self.target == "commit returned" or (self.target == "metastore commit"
                                                    and self.after)


def _points() -> list[KillPoint]:
    dml = [("write id allocated", True, 1), ("write recorded", False, 1),
           ("write recorded", True, 1), ("directory made", True, 1), ("bucket file", True, 1),
           ("bucket file", True, 2), ("metastore commit", False, 1),
           ("metastore commit", True, 1), ("commit returned", True, 1)]
    compaction = [("compaction planned", True, 1), ("output directories made", True, 1),
                  ("compacted bucket file", False, 1), ("compacted bucket file", True, 1),
                  ("compacted bucket file", True, 2), ("queue record", False, 1),
                  ("queue record", True, 1), ("metastore commit", False, 1),
                  ("metastore commit", True, 1), ("queue entry compacted", False, 1),
                  ("queue entry compacted", True, 1)]
    worker = [("queue entry claimed", True, 1), ("compaction planned", True, 1),
              ("compacted bucket file", True, 1), ("metastore commit", False, 1),
              ("metastore commit", True, 1), ("queue entry compacted", True, 1)]
    cleaner = [("partition marked for cleaning", False, 1),
               ("partition marked for cleaning", True, 1), ("directory removed", False, 1),
               ("directory removed", True, 1), ("directory removed", True, 2),
               ("aborted write ids forgotten", False, 1), ("aborted write ids forgotten", True, 1)]
    plan = [(op, dml) for op in ("insert", "update", "delete", "merge", "overwrite")]
    plan += [("idempotent insert", [("metastore commit", False, 1), ("metastore commit", True, 1)]),
             ("insert into a new partition", [("metastore commit", False, 1)]),
             ("minor compaction", compaction), ("major compaction", compaction),
             ("worker", worker), ("cleaner", cleaner)]
    return [KillPoint(op, target, after, call) for op, steps in plan
            for target, after, call in steps]


POINTS = {point.name: point for point in _points()}


def _owner(spec: str) -> Any:
    module, _, cls = spec.partition(":")
    owner = importlib.import_module(module)
    return getattr(owner, cls) if cls else owner


def _install(point: KillPoint) -> None:
    """Rebind the point's target in this process so that its ``call``-th call dies."""
    owner_spec, name = TARGETS[point.target]
    owner = _owner(owner_spec)
    real: Callable[..., Any] = getattr(owner, name)
    assert callable(real)
    lock = threading.Lock()
    calls = [0]

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with lock:  # compaction writes buckets from a thread pool
            calls[0] += 1
            this = calls[0]
        if this == point.call and not point.after:
            os._exit(DIED)
        result = real(*args, **kwargs)
        if this == point.call:
            os._exit(DIED)
        return result

    if isinstance(owner, type):  # a method: the instance finds it on its class
        setattr(owner, name, wrapper)
    else:  # a module function: callers look it up in this module at call time
        vars(owner)[name] = wrapper


def die_at(place: Place, point_name: str, log_path: str, txn_timeout: float) -> None:
    """Run the operation of ``point_name`` on the warehouse at ``place`` and die at the point;
    exit 0 if the point was never reached (the parent fails the test then)."""
    point = POINTS[point_name]
    _install(point)
    wh = connect(place, txn_timeout=txn_timeout)
    assert isinstance(wh.metastore, SqliteMetastore)
    op = OPERATIONS[point.operation]
    if op["op"] == "worker":  # its claim goes stale with its txns (the parent waits that long)
        Worker(wh, stale_seconds=txn_timeout).run()
    else:
        log = Log(log_path, WORKER)
        run_op(wh, op, log, 0)
    os._exit(0)
