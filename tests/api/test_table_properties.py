"""Table properties Hive users set, honoured with Hive's spelling."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.orc as po
import pytest

import acidstore
from acidstore.write.files import SMALL_FILE_ROWS


@pytest.mark.parametrize(("prop", "codec"), [("NONE", "UNCOMPRESSED"), ("ZLIB", "ZLIB"),
                                             ("snappy", "SNAPPY"), (None, "ZSTD")])
def test_orc_compress_uses_hive_names(tmp_path: Path, prop: str | None, codec: str) -> None:
    wh = acidstore.connect(tmp_path / "wh")
    props = {"orc.compress": prop} if prop is not None else {}
    t = wh.create_table("db.t", pa.schema([("x", pa.int64())]), properties=props)
    rows = list(range(SMALL_FILE_ROWS + 1))
    t.insert(pa.table({"x": rows}))
    files = sorted((tmp_path / "wh" / "db.db" / "t").rglob("bucket_*"))
    assert files
    assert po.ORCFile(str(files[0])).compression == codec
    # a file of a few events is written without a codec (``codec_for``), and read back
    t.delete("x = 0")
    events = sorted((tmp_path / "wh" / "db.db" / "t").glob("delete_delta_*/bucket_*"))
    assert [po.ORCFile(str(f)).compression for f in events] == ["UNCOMPRESSED"]
    assert t.to_arrow().column("x").to_pylist() == rows[1:]
