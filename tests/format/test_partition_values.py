"""Partition values under hostile input: escaped as Hive escapes them, nothing written
outside the table's location, NULL as ``__HIVE_DEFAULT_PARTITION__``, and any value either
round-trips or is refused with a typed error."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st
from table_errors_support import files_under, sorted_rows

import acidstore
from acidstore.api.pairing import MARKER_FILE
from acidstore.errors import InvalidPartitionValueError

P_SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("q", pa.string())])
NASTY = ["a/b", "..", ".", "../../..", "/etc", "a=b", "=", "x\x00y", "\n", "\x01\x1f\x7f",
         "%2F", "%", "a\\b", "C:", "~", "*?[]^{}", "'\"#", " ", "é" * 100, "x" * 252]


def _outside(root: Path, allowed: Path) -> list[str]:
    """Files and directories under ``root`` that are not ``allowed`` nor below it."""
    out = []
    for directory, dirs, names in os.walk(root):
        for name in [*dirs, *names]:
            path = Path(directory, name)
            if path != allowed and allowed not in path.parents and \
                    not name.startswith("_acidstore_metastore") and name != MARKER_FILE \
                    and path != allowed.parent:
                out.append(str(path))
    return out


@pytest.mark.parametrize("value", NASTY)
def test_nasty_partition_values_stay_under_the_table(tmp_path: Path, value: str) -> None:
    wh = acidstore.connect(tmp_path / "wh")
    t = wh.create_table("db.p", P_SCHEMA, partition_by=["p", "q"])
    t.insert(pa.table({"id": [1, 2], "p": [value, "plain"], "q": ["x", value]}))
    root = Path(t.location)
    for directory, dirs, _ in os.walk(tmp_path):
        for name in dirs:
            path = Path(directory, name).resolve()
            assert path == root.resolve() or root.resolve() in path.parents or \
                path in root.resolve().parents, path
    assert _outside(tmp_path / "wh", root) == []
    # every partition directory is exactly two levels below the table: p=.../q=...
    partition_dirs = {str(Path(d).relative_to(root)) for d, _, names in os.walk(root)
                      if "_orc_acid_version" in names}
    assert len(partition_dirs) == 2
    for rel in partition_dirs:
        parts = Path(rel).parts
        assert len(parts) == 3 and parts[0].startswith("p=") and parts[1].startswith("q=")
    assert sorted_rows(t.to_arrow()) == sorted_rows(
        pa.table({"id": [1, 2], "p": [value, "plain"], "q": ["x", value]}))
    # updates and deletes find those rows again by value, in their partitions
    assert t.update(pc.field("q") == value, {"id": "id + 100"}).rows_updated == 1
    assert t.delete(pc.field("p") == value).rows_deleted == 1
    assert t.to_arrow().to_pylist() == [{"id": 102, "p": "plain", "q": value}]
    wh.close()


@pytest.mark.parametrize(("value", "message"), [
    ("", "has an empty value; use NULL instead"),
    ("x" * 300, "value is too long for a directory name (302 > 255 bytes)"),
    ("é" * 127, "value is too long for a directory name (256 > 255 bytes)"),
    ("__HIVE_DEFAULT_PARTITION__", "__HIVE_DEFAULT_PARTITION__"),
])
def test_partition_values_that_cannot_be_stored_are_refused(tmp_path: Path, value: str,
                                                            message: str) -> None:
    wh = acidstore.connect(tmp_path / "wh")
    t = wh.create_table("db.p", P_SCHEMA, partition_by=["p"])
    t.insert(pa.table({"id": [1], "p": ["ok"], "q": ["x"]}))
    files = files_under(t.location)
    with pytest.raises(InvalidPartitionValueError) as info:
        t.insert(pa.table({"id": [2, 3], "p": ["fine", value], "q": ["x", "y"]}))
    assert "'p'" in str(info.value) and message in str(info.value)
    assert files_under(t.location) == files  # not even the good partition was written
    assert t.to_arrow().to_pylist() == [{"id": 1, "q": "x", "p": "ok"}]
    wh.close()


def test_null_partition_value_round_trips(tmp_path: Path) -> None:
    wh = acidstore.connect(tmp_path / "wh")
    t = wh.create_table("db.p", P_SCHEMA, partition_by=["p"])
    t.insert(pa.table({"id": [1, 2], "p": pa.array([None, "x"], pa.string()), "q": ["a", "b"]}))
    assert (Path(t.location) / "p=__HIVE_DEFAULT_PARTITION__").is_dir()
    assert sorted_rows(t.to_arrow()) == sorted_rows(
        pa.table({"id": [1, 2], "q": ["a", "b"], "p": pa.array([None, "x"], pa.string())}))
    wh.close()


partition_text = st.one_of(
    st.sampled_from(NASTY),
    st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=12),
    st.text("./=%\\:\x00\n", min_size=1, max_size=6),
)


@given(values=st.lists(partition_text, min_size=1, max_size=4))
def test_any_partition_value_round_trips_or_is_refused(tmp_path_factory: pytest.TempPathFactory,
                                                       values: list[str]) -> None:
    tmp = tmp_path_factory.mktemp("partitions")
    try:
        wh = acidstore.connect(tmp / "wh")
        t = wh.create_table("db.p", P_SCHEMA, partition_by=["p"])
        data = pa.table({"id": list(range(len(values))), "p": values,
                         "q": [str(i) for i in range(len(values))]})
        try:
            t.insert(data)
        except InvalidPartitionValueError:
            assert files_under(t.location) == {}
            assert t.to_arrow().num_rows == 0
        else:
            assert sorted_rows(t.to_arrow()) == sorted_rows(data.select(["id", "q", "p"]))
        assert _outside(tmp / "wh", Path(t.location)) == []
        wh.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize("kind", [pa.float64(), pa.float32()])
def test_negative_zero_shares_zeros_partition(tmp_path: Path, kind: pa.DataType) -> None:
    """SQL says -0.0 = 0.0, and a filter ``p = 0`` selects both; rows of -0.0 went to
    ``p=-0``, beside ``p=0``, so an INSERT OVERWRITE of 0.0 left them visible. Every write
    now routes -0.0 to ``p=0``, and overwrite, DELETE and UPDATE of the value see one
    partition."""
    wh = acidstore.connect(tmp_path / "wh")
    t = wh.create_table("db.f", pa.schema([("id", pa.int64()), ("v", pa.string()),
                                           ("p", kind)]), partition_by=["p"])

    def rows(ids: list[int], values: list[float]) -> pa.Table:
        return pa.table({"id": ids, "v": ["a"] * len(ids), "p": pa.array(values, kind)})

    def ids() -> list[int]:
        return sorted(t.to_arrow().column("id").to_pylist())

    t.insert(rows([1, 2, 3], [-0.0, 0.0, 1.5]))
    assert sorted(p.name for p in Path(t.location).iterdir()) == ["p=0", "p=1.5"]
    assert sorted(t.to_arrow(filter="p = 0").column("id").to_pylist()) == [1, 2]
    t.insert_overwrite(rows([4], [0.0]))
    assert ids() == [3, 4]
    t.insert(rows([5], [-0.0]))
    assert sorted(p.name for p in Path(t.location).iterdir()) == ["p=0", "p=1.5"]
    t.update("p = -0.0", {"v": "'u'"})
    assert t.to_arrow(filter="v = 'u'").column("id").to_pylist() == [4, 5]
    t.delete("p = 0.0 AND id = 5")
    assert ids() == [3, 4]
    t.insert_overwrite(rows([6], [-0.0]))
    got = t.to_arrow().sort_by("id").select(["id", "p"]).to_pylist()
    assert got == [{"id": 3, "p": 1.5}, {"id": 6, "p": 0.0}]
    wh.close()


def test_a_streaming_partition_is_named_as_writes_name_it(tmp_path: Path) -> None:
    """A streaming connection fixed to ``{"p": "01"}`` of an integer column named its
    partition ``p=01`` while its rows route to ``p=1``: every row was refused as another
    partition's."""
    wh = acidstore.connect(tmp_path / "wh")
    t = wh.create_table("db.s", pa.schema([("id", pa.int64()), ("p", pa.int64())]),
                        partition_by=["p"])
    with wh.streaming_connection("db.s", partition={"p": "01"}) as conn:
        conn.begin()
        conn.write(pa.table({"id": [1]}))
        conn.write(pa.table({"id": [2], "p": [1]}))
        assert conn.commit().partitions == ("p=1",)
    assert sorted(t.to_arrow().column("id").to_pylist()) == [1, 2]
    with pytest.raises(InvalidPartitionValueError, match="'x' of 'p' is not a int64"):
        wh.streaming_connection("db.s", partition={"p": "x"})
    wh.close()
