"""Table properties Hive users set, honoured with Hive's spelling."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pytest

import acidstore


@pytest.mark.parametrize(("prop", "codec"), [("NONE", "UNCOMPRESSED"), ("ZLIB", "ZLIB"),
                                             ("snappy", "SNAPPY"), (None, "ZSTD")])
def test_orc_compress_uses_hive_names(tmp_path: Path, prop: str | None, codec: str) -> None:
    wh = acidstore.connect(tmp_path / "wh")
    props = {"orc.compress": prop} if prop is not None else {}
    t = wh.create_table("db.t", pa.schema([("x", pa.int64())]), properties=props)
    t.insert(pa.table({"x": [1, 2]}))
    files = sorted((tmp_path / "wh" / "db.db" / "t").rglob("bucket_*"))
    assert files
    assert po.ORCFile(str(files[0])).compression == codec
    assert t.to_arrow().column("x").to_pylist() == [1, 2]
