"""A filesystem that counts what the library asks of the store underneath it.

The planning benchmark asks how many listings, ``stat`` calls and file opens a read makes;
on S3 each is at least one request, so the counts are what a read costs an object store
before any byte is decoded. The wrapper is a ``pyarrow.fs.PyFileSystem`` handler passing each
call on to the real filesystem (local disk, or the S3 client of the test server), so the
library under measurement runs unchanged.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.fs as pafs

__all__ = ["CountingHandler", "counting"]


class CountingHandler(pafs.FileSystemHandler):  # type: ignore[misc]
    """Passes every call to ``inner``; ``calls`` counts listings (``list``: the selector form
    of ``get_file_info``), ``stat`` (its path form, per path) and opens (``open``).
    ``atomic_rename`` tells acidstore whether ``move`` renames (local disk) or copies (an
    object store), as it would know from the unwrapped filesystem's type."""

    def __init__(self, inner: pafs.FileSystem) -> None:
        self.inner = inner
        self.atomic_rename = inner.type_name == "local"
        self.calls: Counter[str] = Counter()

    def reset(self) -> Counter[str]:
        """The counts so far, and start again from zero."""
        calls, self.calls = self.calls, Counter()
        return calls

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CountingHandler) and other.inner.equals(self.inner)

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:
        return id(self.inner)

    def get_type_name(self) -> str:
        return f"counting+{self.inner.type_name}"

    def normalize_path(self, path: str) -> str:
        return str(self.inner.normalize_path(path))

    def get_file_info(self, paths: list[str]) -> list[pafs.FileInfo]:
        self.calls["stat"] += len(paths)
        return list(self.inner.get_file_info(paths))

    def get_file_info_selector(self, selector: pafs.FileSelector) -> list[pafs.FileInfo]:
        self.calls["list"] += 1
        return list(self.inner.get_file_info(selector))

    def create_dir(self, path: str, recursive: bool) -> None:
        self.inner.create_dir(path, recursive=recursive)

    def delete_dir(self, path: str) -> None:
        self.inner.delete_dir(path)

    def delete_dir_contents(self, path: str, missing_dir_ok: bool = False) -> None:
        self.inner.delete_dir_contents(path, missing_dir_ok=missing_dir_ok)

    def delete_root_dir_contents(self) -> None:
        self.inner.delete_dir_contents("/", accept_root_dir=True)

    def delete_file(self, path: str) -> None:
        self.inner.delete_file(path)

    def move(self, src: str, dest: str) -> None:
        self.inner.move(src, dest)

    def copy_file(self, src: str, dest: str) -> None:
        self.inner.copy_file(src, dest)

    def open_input_stream(self, path: str) -> pa.NativeFile:
        self.calls["open"] += 1
        return self.inner.open_input_stream(path)

    def open_input_file(self, path: str) -> pa.NativeFile:
        self.calls["open"] += 1
        return self.inner.open_input_file(path)

    def open_output_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        return self.inner.open_output_stream(path, metadata=metadata)

    def open_append_stream(self, path: str, metadata: Any) -> pa.NativeFile:
        return self.inner.open_append_stream(path, metadata=metadata)


def counting(inner: pafs.FileSystem) -> tuple[pafs.PyFileSystem, CountingHandler]:
    """``inner`` wrapped so that its calls are counted, and the handler holding the counts."""
    handler = CountingHandler(inner)
    return pafs.PyFileSystem(handler), handler
