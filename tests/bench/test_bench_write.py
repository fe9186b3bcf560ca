"""Smoke test of the write benchmarks' fairness points on a tiny table: W1's limit and floor
write every row (the limit's bucketed layout is the rows of each bucket, as filtering gave),
W4's two MERGE shapes leave acidstore's table and delta-rs's with the same rows, value by value,
the scans of W5/W6 read the same rows on both sides, and a child's caches are emptied before
its measured run (no timings are checked)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.orc as po
import pytest
from deltalake import DeltaTable

import acidstore
from acidstore.io import immutable
from benchmarks import data
from benchmarks.tasks import forget_caches
from benchmarks.tasks_write import (
    TABLE,
    acid_merge,
    copy_state,
    delta_merge,
    load,
    read_arrow,
    table_scan,
)


def _read(directory: Path, schema: pa.Schema | None = data.SCHEMA) -> list[pa.Table]:
    """The files' rows in the benchmark's types (ORC reads timestamps back in ns)."""
    tables = [po.ORCFile(str(p)).read() for p in sorted(directory.glob("*.orc"))]
    return [t.cast(schema) if schema is not None else t for t in tables]


def test_limit_layouts_hold_every_row(tmp_path: Path) -> None:
    table = data.generate(2_000)
    buckets = data.bucket_of(table)
    data.write_limit(table, tmp_path / "bucketed", stripe_size=1 << 20)
    parts = _read(tmp_path / "bucketed")
    assert [p.equals(table.filter(pa.array(buckets == b))) for b, p in enumerate(parts)] == \
        [True] * data.BUCKETS
    data.write_limit(table, tmp_path / "sliced", stripe_size=1 << 20, bucketed=False)
    assert pa.concat_tables(_read(tmp_path / "sliced")).equals(table)
    data.write_events(table, tmp_path / "floor", stripe_size=1 << 20)
    events = _read(tmp_path / "floor", None)
    ids = [i for e in events for i in e.column("row").combine_chunks().field("id").to_pylist()]
    assert len(events) == data.BUCKETS and sorted(ids) == list(range(2_000))


@pytest.mark.parametrize("engine", ["acid", "limit", "floor", "delta"])
def test_w1_engines_write_every_row(bench_states: dict[str, Any], engine: str) -> None:
    out = load({**bench_states, "engine": engine})
    assert out["rows"] == read_arrow(bench_states["source"]).num_rows
    if engine != "delta":
        assert out["files"] == data.BUCKETS


def _sorted(table: pa.Table) -> pa.Table:
    return table.select(data.SCHEMA.names).sort_by("id")


@pytest.mark.parametrize("one_column", [False, True])
def test_w4_shapes_leave_the_same_rows(bench_states: dict[str, Any], tmp_path: Path,
                                       one_column: bool) -> None:
    source = read_arrow(bench_states["merge_source"])
    copy_state(Path(bench_states["acid_loaded"]), tmp_path / "acid", warehouse=True)
    shutil.copytree(bench_states["delta_loaded"], tmp_path / "delta")
    with acidstore.connect(tmp_path / "acid") as wh:
        ours = acid_merge(wh.table(TABLE), source, one_column=one_column)
        after = _sorted(wh.table(TABLE).to_arrow())
    delta = DeltaTable(tmp_path / "delta")
    assert ours == delta_merge(delta, source, one_column=one_column)
    peer = _sorted(DeltaTable(tmp_path / "delta").to_pyarrow_table())
    assert after.equals(peer.cast(after.schema))
    if one_column:  # only v1 came from the source: v2 of an updated row is the table's
        loaded = read_arrow(bench_states["source"])
        assert after.column("v2").to_pylist()[:loaded.num_rows] == \
            _sorted(loaded).column("v2").to_pylist()


def test_w5_w6_scans_read_the_same_rows(bench_states: dict[str, Any]) -> None:
    for args in ({}, {"columns": ["id", "v1"], "filter_k_lt": 10}):
        ours = table_scan({**bench_states, **args, "engine": "acid"})
        peer = table_scan({**bench_states, **args, "engine": "delta"})
        assert ours["rows"] == peer["rows"] > 0


def test_the_measured_run_starts_with_nothing_cached(bench_states: dict[str, Any]) -> None:
    table_scan({**bench_states, "engine": "acid"})
    forget_caches()
    assert all(len(cache) == 0 for cache in immutable._ALL)
    assert immutable.cache_bytes() > 0  # caching stays on for the measured run


def test_w2_statement_floor_writes_each_files_matched_rows(bench_states: dict[str, Any],
                                                           tmp_path: Path) -> None:
    """The statement-work floor of W2 finds exactly the rows an UPDATE of ``id % 1000 = r``
    takes (checked against plain arithmetic on the decoded ids), writes them back with
    ``v1 + 1``, and leaves nothing in the scratch directory."""
    from acidstore.format.orc.schema import ROW_ID
    from benchmarks.tasks import _ROW_FIELDS, _statement_work, acid_decode

    path = sorted(Path(bench_states["acid_loaded"]).rglob("bucket_0000*"))[0]
    table = po.ORCFile(str(path)).read(columns=[*_ROW_FIELDS, ROW_ID])
    ids = table.column("row").combine_chunks().field("id").to_pylist()
    r = ids[0] % 1000  # the tiny table's file holds few ids: one it holds
    _statement_work(table, path, tmp_path, r)
    inserted = po.ORCFile(str(next(tmp_path.glob("insert_*")))).read()
    deleted = po.ORCFile(str(next(tmp_path.glob("delete_*")))).read()
    row = inserted.column("row").combine_chunks()
    assert row.field("id").to_pylist() == [i for i in ids if i % 1000 == r] != []
    old = {i: v for i, v in zip(ids, table.column("row").combine_chunks().field("v1")
                                .to_pylist(), strict=True)}
    assert row.field("v1").to_pylist() == [old[i] + 1 for i in row.field("id").to_pylist()]
    assert deleted.num_rows == inserted.num_rows
    out = acid_decode({**bench_states, "decode": "acid_loaded", "keys": True, "times": 2,
                       "threads": 2, "statement": True})
    assert out["rows"] == 2 * read_arrow(bench_states["source"]).num_rows
    assert not list(Path(bench_states["scratch"]).glob("statement-floor-*"))
