"""A statement's units share its directories: each is made (with its ``_orc_acid_version``
marker) once, however many bucket units write into it, and a fresh one always gets its
marker."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import acidstore
from acidstore.engine import statement
from acidstore.format.layout import ACID_VERSION_FILE
from acidstore.io import fs as afs


def test_a_statement_makes_each_directory_once(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    with acidstore.connect(tmp_path / "wh") as wh:
        table = wh.create_table("t", pa.schema([("id", pa.int64()), ("v", pa.int64())]),
                                bucket_by=["id"], buckets=4)
        table.insert(pa.table({"id": pa.array(range(40), pa.int64()),
                               "v": pa.array([0] * 40, pa.int64())}))
        made: list[str] = []
        real = afs.make_dirs

        def counting(fs: pafs.FileSystem, path: str) -> None:
            made.append(path.rsplit("/", 1)[-1])
            real(fs, path)

        monkeypatch.setattr(afs, "make_dirs", counting)
        # one unit at a time (units on several threads may both find no marker yet and both
        # make the directory, which is harmless)
        monkeypatch.setattr(statement, "LOCAL_THREADS", 1)
        assert table.update("id % 2 = 0", {"v": "v + 1"}).rows_updated == 20
        # the rows of all four buckets changed: one delete delta and one delta, made once each
        assert sorted(made) == sorted({*made}) and len(made) == 2
        assert {name.split("_")[0] for name in made} == {"delete", "delta"}
        location = Path(table.location)
        for name in made:
            assert (location / name / ACID_VERSION_FILE).read_bytes() == b"2"
            assert len(list((location / name).glob("bucket_*"))) == 4
        rows = table.to_arrow().sort_by("id")
        assert rows.column("v").to_pylist() == [1 - i % 2 for i in range(40)]
