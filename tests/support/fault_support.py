"""Storage faults for real: a ``pyarrow.fs.PyFileSystem`` handler that passes every call on to
a real filesystem (local disk or the S3 test server) and fails the Nth call of one kind.

Nothing of acidstore is replaced: the wrapped filesystem does the work, and a fault is the
``OSError`` a full disk, a refused permission or a failed upload raises at that call. A write
fault fails one ``write`` of an output stream, from inside the stream that pyarrow's ORC
writer calls back from C++ (where an exception that escapes would end the process).
"""

from __future__ import annotations

import errno
import threading
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

#: the kinds of calls a fault can hit
KINDS = ("create", "write", "move", "read", "delete", "list", "mkdir")


@dataclass
class Fault:
    """Fail the ``nth`` call (1-based) of ``kind`` with ``OSError(code)``; later calls of
    that kind pass (a full disk, a request that failed once)."""

    kind: str
    nth: int
    code: int = errno.ENOSPC
    fired: bool = False


@dataclass
class FaultyHandler(pafs.FileSystemHandler):  # type: ignore[misc]
    """Counts the calls of each kind and raises the armed ``fault`` when its turn comes.
    ``atomic_rename`` tells acidstore whether ``move`` renames atomically (as the wrapped
    local disk does) or copies (an object store)."""

    base: pafs.FileSystem
    atomic_rename: bool
    calls: Counter[str] = field(default_factory=Counter)
    fault: Fault | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def arm(self, fault: Fault | None) -> None:
        with self._lock:
            self.calls.clear()
            self.fault = fault

    def _count(self, kind: str, path: str) -> None:
        with self._lock:
            self.calls[kind] += 1
            fault = self.fault
            if fault is None or fault.fired or fault.kind != kind \
                    or self.calls[kind] != fault.nth:
                return
            fault.fired = True
        raise OSError(fault.code, f"{errno.errorcode.get(fault.code, fault.code)} "
                                  f"(injected on {kind} #{fault.nth})", path)

    # --- identity --------------------------------------------------------------------------

    def __eq__(self, other: object) -> bool:
        return self is other

    def __ne__(self, other: object) -> bool:
        return self is not other

    def __hash__(self) -> int:
        return id(self)

    def get_type_name(self) -> str:
        return "faulty"

    def normalize_path(self, path: str) -> str:
        return str(self.base.normalize_path(path))

    # --- metadata --------------------------------------------------------------------------

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        return list(self.base.get_file_info(paths))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        self._count("list", selector.base_dir)
        return list(self.base.get_file_info(selector))

    def create_dir(self, path: str, recursive: bool) -> None:
        self._count("mkdir", path)
        self.base.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self._count("delete", path)
        self.base.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self._count("delete", path)
        self.base.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        raise OSError(errno.EPERM, "refused: deleting the root")

    def delete_file(self, path: str) -> None:
        self._count("delete", path)
        self.base.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self._count("move", src)
        self.base.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self._count("create", dest)
        self.base.copy_file(src, dest)

    # --- streams ---------------------------------------------------------------------------

    def open_input_stream(self, path: str) -> pa.NativeFile:
        self._count("read", path)
        return self.base.open_input_stream(path)

    def open_input_file(self, path: str) -> pa.NativeFile:
        self._count("read", path)
        return self.base.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        self._count("create", path)
        return pa.PythonFile(_FaultyStream(self, path, self.base.open_output_stream(path)),
                             mode="w")

    def open_append_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        self._count("create", path)
        return self.base.open_append_stream(path)


class _FaultyStream:
    """An output stream whose ``write`` calls count as "write" calls of the handler."""

    closed = False

    def __init__(self, handler: FaultyHandler, path: str, out: pa.NativeFile) -> None:
        self._handler, self._path, self._out = handler, path, out

    def write(self, data: bytes) -> int:
        self._handler._count("write", self._path)
        return int(self._out.write(data))

    def flush(self) -> None:
        self._out.flush()

    def close(self) -> None:
        self._out.close()
        self.closed = True

    def tell(self) -> int:
        return int(self._out.tell())

    def writable(self) -> bool:
        return True


def faulty(base: pafs.FileSystem, *, atomic_rename: bool) -> tuple[pafs.FileSystem,
                                                                   FaultyHandler]:
    """A filesystem over ``base`` whose calls the returned handler counts and fails."""
    handler = FaultyHandler(base, atomic_rename)
    return pafs.PyFileSystem(handler), handler
