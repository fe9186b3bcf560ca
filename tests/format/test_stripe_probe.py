"""Late materialisation: a filtered read decodes a stripe's filter columns first and whole
rows only of the stripes that hold a match (``acidstore.read.split_source.Probe``). An UPDATE whose
rows sit in one stripe of a large file then decodes one stripe of full rows, not the file;
and whatever the probe skips, reads return exactly the rows the model says."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pytest

import acidstore
import acidstore.write.files as write_files
from acidstore import Table
from acidstore.format.orc.file_reader import OrcFile

SCHEMA = pa.schema([("id", pa.int64()), ("grp", pa.int32()), ("note", pa.string()),
                    ("dt", pa.string())])
ROWS = 40000
#: stripe size while the test table is written (ORC then cuts a stripe every 6,144 rows)
SMALL_STRIPES = 1 << 10


def _rows(start: int, n: int) -> pa.Table:
    ids = list(range(start, start + n))
    return pa.table({"id": ids, "grp": [i // 1000 for i in ids],
                     "note": [f"note-{i:06d}" for i in ids],
                     "dt": ["a" if i % 2 else "b" for i in ids]}, schema=SCHEMA)


def _stripes(root: Path) -> list[int]:
    return [po.ORCFile(str(f)).nstripes for f in sorted(root.rglob("bucket_*"))]


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Table]:
    """A partitioned table whose insert delta has several stripes per bucket file."""
    with acidstore.connect(tmp_path / "wh") as wh:
        with monkeypatch.context() as patch:
            patch.setattr(write_files, "DELTA_STRIPE_SIZE", SMALL_STRIPES)
            t = wh.create_table("db.t", SCHEMA, partition_by=["dt"])
            t.insert(_rows(0, ROWS))
        assert min(_stripes(tmp_path / "wh")) >= 3
        yield t


class _Decoded:
    """The columns each stripe read decoded (the real reader, observed)."""

    def __init__(self) -> None:
        self.reads: list[tuple[str, ...]] = []

    def whole_rows(self) -> int:
        return sum(1 for columns in self.reads if any(c.endswith(".note") for c in columns))


@pytest.fixture
def decoded(monkeypatch: pytest.MonkeyPatch) -> _Decoded:
    seen = _Decoded()
    original = OrcFile.read_stripe

    def observed(self: OrcFile, index: int, columns: Sequence[str]) -> pa.RecordBatch:
        seen.reads.append(tuple(columns))
        return original(self, index, columns)

    monkeypatch.setattr(OrcFile, "read_stripe", observed)
    return seen


def test_update_decodes_whole_rows_of_matching_stripes_only(table: Table,
                                                            decoded: _Decoded) -> None:
    result = table.update("id = 4321", {"note": "'changed'"})
    assert result.rows_updated == 1
    # one stripe of one partition's file holds id 4321: only it is decoded whole (before
    # the probe every stripe of every file was: at least 6 here)
    assert decoded.whole_rows() == 1
    rows = table.to_arrow()
    assert rows.num_rows == ROWS
    assert rows.filter(pc.equal(rows["note"], "changed"))["id"].to_pylist() == [4321]


def test_a_filtered_read_skips_stripes_without_a_match(table: Table, decoded: _Decoded) -> None:
    # ``grp + 0``: no bounds for the statistics, so every stripe's filter column is decoded
    got = table.to_arrow(filter="grp + 0 = 5")
    assert sorted(got["id"].to_pylist()) == list(range(5000, 6000))
    skipped = [c for c in decoded.reads if not any(n.endswith(".note") for n in c)]
    assert decoded.whole_rows() < len(skipped)


def test_stripe_statistics_skip_stripes_without_decoding_them(table: Table, decoded: _Decoded,
                                                               tmp_path: Path) -> None:
    """``grp = 5`` on an integer column: stripes whose grp range excludes 5 are not read."""
    stripes = sum(_stripes(tmp_path / "wh"))
    got = table.to_arrow(filter="grp = 5")
    assert sorted(got["id"].to_pylist()) == list(range(5000, 6000))
    # grp 5 is ids 5000..5999, in the first stripe of each partition's file (2,500 ids
    # each, stripes of 6,144 rows): those two are read twice (the filter's column, then the
    # rest), the others not at all (without statistics each would be read once)
    assert len(decoded.reads) == 4 and stripes >= 6


def test_a_delete_reads_its_filter_columns_once(table: Table, decoded: _Decoded,
                                                tmp_path: Path) -> None:
    """A DELETE decodes only its predicate's columns: the probe would decode them twice."""
    stripes = sum(_stripes(tmp_path / "wh"))
    table.delete("grp = 0 AND id < 3")
    # one read of the one stripe per partition whose statistics allow a match (the others
    # are skipped unread), not two
    assert len(decoded.reads) == 2 < stripes
    assert table.to_arrow(filter="id < 5").num_rows == 2


def _model(rows: pa.Table, predicate: str) -> list[dict[str, object]]:
    with duckdb.connect() as con:
        con.register("r", rows)
        out: list[dict[str, object]] = con.sql(
            f"SELECT * FROM r WHERE {predicate} ORDER BY id").to_arrow_table().to_pylist()
    return out


@pytest.mark.parametrize("predicate", [
    "id % 997 = 0", "grp = 3", "note LIKE 'note-0059%'", "id < 0", "dt = 'a' AND grp = 5",
    "id IS NULL OR grp = 1", "coalesce(note, '') = 'note-000007'", "id = 10",
])
def test_filtered_reads_equal_the_model_after_deletes_and_updates(table: Table,
                                                                  predicate: str) -> None:
    table.delete("id % 5 = 0")  # id 10 among them: its stripe matches only before deletes
    table.update("grp = 2", {"note": "note || '!'"})
    model = _rows(0, ROWS)
    model = model.take(pa.array([i for i in range(ROWS) if i % 5 != 0]))
    notes = [n + "!" if g == 2 else n for n, g in zip(model["note"].to_pylist(),
                                                     model["grp"].to_pylist(), strict=True)]
    model = model.set_column(2, "note", pa.array(notes))
    got = table.to_arrow(filter=predicate).sort_by("id").select(SCHEMA.names)
    assert got.to_pylist() == _model(model, predicate)
    ids = table.to_arrow(columns=["id", "note"], filter=predicate).sort_by("id")
    assert ids["id"].to_pylist() == [r["id"] for r in _model(model, predicate)]
