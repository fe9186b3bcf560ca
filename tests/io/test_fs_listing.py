"""``fs.list_dir`` on the local disk (read from the directory's own entries) lists exactly as
pyarrow's listing does, whatever the children are: files, directories, hidden names, links
good and dangling, pipes and sockets; a missing directory lists as nothing and a file fails
as pyarrow fails."""

from __future__ import annotations

import errno
import os
import socket
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from acidstore.errors import StorageError
from acidstore.io import fs as afs

LOCAL = pafs.LocalFileSystem()


def _pyarrow(root: Path) -> pafs.FileSystem:
    """The same disk behind a filesystem that is not ``LocalFileSystem`` itself: listed by
    pyarrow, entry by entry."""
    return pafs.SubTreeFileSystem(str(root), LOCAL)


def test_children_of_every_kind_list_as_pyarrow_lists_them(tmp_path: Path) -> None:
    d = tmp_path / "delta_0000001_0000001_0000"
    (d / "sub").mkdir(parents=True)
    (d / "bucket_00000").write_bytes(b"abc")
    (d / "_orc_acid_version").write_bytes(b"2")
    (d / ".hidden").write_bytes(b"")
    os.symlink(d / "bucket_00000", d / "file_link")
    os.symlink(d / "sub", d / "dir_link")
    os.symlink(tmp_path / "nowhere", d / "dangling")
    os.mkfifo(d / "pipe")
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(d / "sock"))
        fast = afs.list_dir(LOCAL, str(d))
        plain = afs.list_dir(_pyarrow(tmp_path), d.name)
    assert fast == plain
    assert [e.name for e in fast] == [".hidden", "_orc_acid_version", "bucket_00000",
                                      "dir_link", "file_link", "pipe", "sock", "sub"]
    assert {e.name: e.size for e in fast if not e.is_dir}["file_link"] == 3


def test_a_missing_directory_lists_as_nothing_and_a_file_fails(tmp_path: Path) -> None:
    assert afs.list_dir(LOCAL, str(tmp_path / "gone")) == [] == afs.list_dir(
        _pyarrow(tmp_path), "gone")
    (tmp_path / "f").write_bytes(b"x")
    for fs, path in ((LOCAL, str(tmp_path / "f")), (_pyarrow(tmp_path), "f")):
        with pytest.raises(StorageError) as caught:
            afs.list_dir(fs, path)
        assert caught.value.errno == errno.ENOTDIR
