"""What acidstore writes, as Hive's readers see it: the ACID user metadata of an event file
(key index per stripe, event counts, version) through both pyarrow and the ORC C++ library,
the bucket property of spec 4's worked examples in files, and files pyorc reads as plain ORC.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow.fs as pafs
import pyarrow.orc as po
import pyorc
import pytest
from acidfiles import delete_events, insert_events, read, rid, row, write_dir

from acidstore.format.orc.acid_metadata import ACID_VERSION_KEY, KEY_INDEX_KEY, STATS_KEY
from acidstore.format.orc.file_writer import write_event_file

B0 = 536870912  # V1(bucket 0, statement 0) = 0x20000000
B0S1 = 536870913  # V1(0, 1) = 0x20000001
B1 = 536936448  # V1(1, 0) = 0x20010000
B2S1 = 537001985  # V1(2, 1) = 0x20020001


# --- ORC user metadata written by write_event_file ---------------------------------------------


@pytest.mark.parametrize("compression", ["uncompressed", "zlib", "snappy", "lz4", "zstd"])
def test_acid_user_metadata_readable_by_pyarrow_and_pyorc(tmp_path: Path,
                                                          compression: str) -> None:
    """``hive.acid.key.index`` has one ``w,b,r;`` entry per stripe (its last key);
    ``hive.acid.stats`` counts inserts,updates,deletes; ``hive.acid.version`` is 2."""
    path = tmp_path / "bucket_00001"
    rows = [row(i, f"n{i}", float(i)) for i in range(20000)]
    events = insert_events(7, 1, rows)
    # a tiny stripe size: pyarrow cuts a stripe after each batch (ORC_BATCH_ROWS) once it
    # is "full"
    written = write_event_file(pafs.LocalFileSystem(), str(path), events, compression=compression,
                               stripe_size=1)
    assert written.last_key == (7, B1, 19999)
    assert written.size == path.stat().st_size
    with path.open("rb") as f:
        reader = pyorc.Reader(f, struct_repr=pyorc.StructRepr.DICT)
        stripe_rows = [len(list(reader.read_stripe(i))) for i in range(reader.num_of_stripes)]
        ends = [sum(stripe_rows[:i + 1]) for i in range(len(stripe_rows))]
        expected_meta = {
            KEY_INDEX_KEY: "".join(f"7,536936448,{end - 1};" for end in ends).encode(),
            STATS_KEY: b"20000,0,0",
            ACID_VERSION_KEY: b"2",
        }
        assert reader.user_metadata == expected_meta
        reader.seek(0)
        from_pyorc = list(reader)
    arrow = po.ORCFile(str(path))
    assert {k.decode(): v for k, v in dict(arrow.metadata).items()} == expected_meta
    assert arrow.nstripes == len(stripe_rows)
    if compression == "uncompressed":
        assert expected_meta[KEY_INDEX_KEY] == (
            b"7,536936448,8191;7,536936448,16383;7,536936448,19999;")
    from_arrow = arrow.read().to_pylist()
    assert len(from_pyorc) == len(from_arrow) == 20000
    assert from_pyorc == from_arrow

    # a delete file: stats count deletes, key index holds the last deleted key
    dpath = tmp_path / "delete_bucket"
    write_event_file(pafs.LocalFileSystem(), str(dpath), delete_events([(3, B1, 4), (2, B1, 9)], 8),
                     compression=compression)
    with dpath.open("rb") as f:
        assert pyorc.Reader(f).user_metadata == {
            KEY_INDEX_KEY: b"3,536936448,4;", STATS_KEY: b"0,0,2", ACID_VERSION_KEY: b"2"}


# --- BucketCodec values in files (spec 4) -----------------------------------------------


def test_bucket_codec_worked_values_in_files(tmp_path: Path) -> None:
    """The four worked examples of spec 4 as they appear in files: statements 0 and 1 of one
    write id writing buckets 0, 1 and 2, with the deletes routed by the row's bucket."""
    root = tmp_path / "t"
    write_dir(root, "delta_0000001_0000001_0000",
              {0: insert_events(1, 0, [row(1), row(2)]), 1: insert_events(1, 1, [row(3)])})
    write_dir(root, "delta_0000001_0000001_0001",
              {0: insert_events(1, 0, [row(4)], statement_id=1),
               2: insert_events(1, 2, [row(5), row(6)], statement_id=1)})
    got = read(root, columns=["id"], with_row_id=True)
    assert got == [
        {"id": 1, "row__id": rid(1, 536870912, 0)}, {"id": 2, "row__id": rid(1, 536870912, 1)},
        {"id": 3, "row__id": rid(1, 536936448, 0)},
        {"id": 4, "row__id": rid(1, 536870913, 0)},
        {"id": 5, "row__id": rid(1, 537001985, 0)}, {"id": 6, "row__id": rid(1, 537001985, 1)},
    ]
    for event_file, value in ((root / "delta_0000001_0000001_0001" / "bucket_00002", B2S1),
                              (root / "delta_0000001_0000001_0000" / "bucket_00001", B1)):
        with event_file.open("rb") as f:
            assert {r[2] for r in pyorc.Reader(f)} == {value}
    # same row ids in different statements are different rows: delete only statement 1's
    write_dir(root, "delete_delta_0000002_0000002_0000",
              {0: delete_events([(1, B0S1, 0)], 2), 2: delete_events([(1, B2S1, 1)], 2)})
    assert [r["id"] for r in read(root, columns=["id"])] == [1, 2, 3, 5]


def test_pyorc_reads_what_write_dir_writes(tmp_path: Path) -> None:
    """Files acidstore writes are plain ORC to the C++ reader Hive would use."""
    files = write_dir(tmp_path, "delta_0000001_0000001_0000",
                      {0: insert_events(1, 0, [row(1, "a", 1.0)])})
    with open(files[0].path, "rb") as f:
        reader = pyorc.Reader(f)
        assert str(reader.schema) == (
            "struct<operation:int,originalTransaction:bigint,bucket:int,rowId:bigint,"
            "currentTransaction:bigint,row:struct<id:bigint,name:string,amount:double>>")
        assert list(reader) == [(0, 1, B0, 0, 1, (1, "a", 1.0))]
