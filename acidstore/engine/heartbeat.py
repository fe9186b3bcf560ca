"""A transaction's heartbeat (spec §14: every timeout / 2), started only once it is due.

Each open transaction must heartbeat the metastore every ``interval`` seconds, or any client
may abort it once its timeout passes. A heartbeat thread per transaction, started at the open,
cost every statement a thread start (the caller waits until the new thread has run: about
0.1 ms of CPU and more of wall time on a busy machine) though almost no statement lives long
enough for a first beat (150 s by default). Here one process-wide timer thread waits for the
earliest first beat that is due, and only a transaction still open then gets its own beating
thread, which beats then and every ``interval`` after, exactly as the thread at the open
would have. The timer never calls the metastore, so a slow heartbeat of one transaction never
delays another's; a transaction that ends first costs a dictionary entry and a heap entry.
"""

from __future__ import annotations

import heapq
import itertools
import os
import threading
import time

from acidstore.errors import AcidStoreError
from acidstore.metastore import Metastore

__all__ = ["Heartbeat"]


class Heartbeat:
    """Keeps one open transaction alive while work runs (see the module docstring)."""

    def __init__(self, metastore: Metastore, txn_id: int, interval: float) -> None:
        self._metastore = metastore
        self.txn_id = txn_id
        self.interval = interval
        self._stop = threading.Event()
        #: held while a heartbeat call runs, so ``stop`` can wait for that call alone
        self._beating = threading.Lock()
        self.error: AcidStoreError | None = None
        #: the beating thread, once the first beat was due while the transaction was open
        self.thread: threading.Thread | None = None
        self.timer_key = _TIMER.add(self)

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def start_beating(self) -> None:
        """Called by the timer when the first beat is due: beat now and every ``interval``
        after, on a thread of this transaction's own."""
        self.thread = threading.Thread(target=self._run, name=f"acidstore-heartbeat-"
                                       f"{self.txn_id}", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            with self._beating:
                if self._stop.is_set():
                    return
                try:
                    self._metastore.heartbeat(self.txn_id)
                except AcidStoreError as exc:
                    self.error = exc
                    return
            if self._stop.wait(self.interval):
                return

    def stop(self) -> None:
        """Once this returns no heartbeat call runs any more, and a failed one's error is in
        ``error``. The beating thread, if any, is not joined: it exits by itself when it next
        runs, and waiting for it to be scheduled cost every statement milliseconds of wall
        time on a busy machine."""
        self._stop.set()
        _TIMER.discard(self)
        if threading.current_thread() is not self.thread:
            with self._beating:
                pass


class _Timer:
    """The process's one timer thread: starts each open transaction's beating thread when
    its first beat is due (started with the first heartbeat of the process, and again in a
    forked child, which inherits the entries but not the thread)."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self._lock = threading.Condition()
        self._due: list[tuple[float, int]] = []  # (monotonic due time, key), a heap
        self._open: dict[int, Heartbeat] = {}
        self._keys = itertools.count()
        self._pid: int | None = None
        #: the due time the thread sleeps until (inf: none): it is woken only for an earlier
        #: one, so an ordinary open (due after every other) wakes nothing
        self._waking = float("inf")

    def add(self, beat: Heartbeat) -> int:
        """Start ``beat``'s beating thread ``beat.interval`` seconds from now, unless it is
        discarded first; returns its key for ``discard``."""
        due = time.monotonic() + beat.interval
        with self._lock:
            if self._pid != os.getpid():
                self._start()
            key = next(self._keys)
            self._open[key] = beat
            heapq.heappush(self._due, (due, key))
            if len(self._due) > 2 * len(self._open) + 64:  # drop ended transactions' entries
                self._due = [entry for entry in self._due if entry[1] in self._open]
                heapq.heapify(self._due)
            if due < self._waking:
                self._lock.notify()
            return key

    def discard(self, beat: Heartbeat) -> None:
        with self._lock:
            self._open.pop(beat.timer_key, None)

    def forked(self) -> None:
        """In a forked child: the parent's thread is gone and its lock may have been held at
        the fork, so start over (the parent's transactions are the parent's to beat)."""
        self._reset()

    def _start(self) -> None:
        self._pid = os.getpid()
        threading.Thread(target=self._loop, name="acidstore-heartbeat-timer",
                         daemon=True).start()

    def _loop(self) -> None:
        me = os.getpid()
        with self._lock:
            while self._pid == me:
                while self._due and self._due[0][1] not in self._open:
                    heapq.heappop(self._due)
                now = time.monotonic()
                if self._due and self._due[0][0] <= now:
                    _, key = heapq.heappop(self._due)
                    beat = self._open.pop(key)
                    if not beat.stopped:
                        beat.start_beating()
                    continue
                self._waking = self._due[0][0] if self._due else float("inf")
                self._lock.wait(None if not self._due else self._waking - now)
                self._waking = float("inf")


_TIMER = _Timer()
os.register_at_fork(after_in_child=_TIMER.forked)
