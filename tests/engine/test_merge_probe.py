"""A MERGE unit reads through its source's ON keys (``engine.merge_probe``): only rows whose
key some source row has, with the kept columns decoded in the same read when every such row
is updated. Results are checked against a model of the MERGE computed in Python from the
table's rows before it (deleted rows from earlier statements, NULLs in kept columns,
partitioned and bucketed layouts, large and small sources, several WHEN MATCHED clauses),
and the key lookup against Python's sets."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acidstore import Table, Warehouse
from acidstore.engine import statement, unit_rows
from acidstore.engine.merge_match import MergeClause, MergeSpec
from acidstore.engine.merge_probe import BITMAP_MAX_SPAN, KeyProbe, key_probe
from acidstore.errors import MergeCardinalityError
from acidstore.read.split_source import SplitBatch

SCHEMA = pa.schema([("id", pa.int64()), ("k", pa.int32()), ("v1", pa.float64()),
                    ("v2", pa.float64()), ("c", pa.int32()), ("s", pa.string()),
                    ("ts", pa.timestamp("us"))])
PARTITIONED = pa.schema([*SCHEMA, pa.field("p", pa.string())])
Row = dict[str, Any]
#: (layout name, partition_by, bucket_by, buckets)
LAYOUTS = {"bucketed": ((), ("id",), 2), "partitioned": (("p",), ("id",), 2),
           "partitioned_unbucketed": (("p",), (), 0)}
#: rows of the loaded table: two buckets of about 6,000 rows, so that a stripe is large enough
#: to be read in two phases (the key first), and small deltas are read whole
LARGE = 12_000


def rows(ids: np.ndarray, seed: int, partitioned: bool) -> pa.Table:
    """Rows of ``ids`` with NULLs in kept columns (``c``, ``s``, ``ts``) at fixed ids."""
    rng = np.random.default_rng(seed)
    n = len(ids)
    base = dt.datetime(2024, 1, 1)
    columns: dict[str, Any] = {
        "id": pa.array(ids, pa.int64()),
        "k": pa.array(rng.integers(0, 1000, n), pa.int32()),
        "v1": pa.array(rng.random(n)),
        "v2": pa.array(rng.random(n)),
        "c": pa.array([None if i % 5 == 1 else int(i % 100) for i in ids], pa.int32()),
        "s": pa.array([None if i % 7 == 3 else f"s{seed}-{i}" for i in ids], pa.string()),
        "ts": pa.array([None if i % 11 == 6 else base + dt.timedelta(seconds=int(i) * seed)
                        for i in ids], pa.timestamp("us")),
    }
    if partitioned:
        columns["p"] = pa.array([f"p{i % 3}" for i in ids], pa.string())
    return pa.table(columns, schema=PARTITIONED if partitioned else SCHEMA)


def loaded(wh: Warehouse, layout: str, n: int = LARGE) -> Table:
    """A table of ``n`` rows after an UPDATE and a DELETE (delete deltas the MERGE's reads
    must apply; a deleted id in the source is a new row)."""
    partition_by, bucket_by, buckets = LAYOUTS[layout]
    t = wh.create_table(f"db.{layout}", PARTITIONED if partition_by else SCHEMA,
                        partition_by=list(partition_by), bucket_by=list(bucket_by),
                        buckets=buckets)
    t.insert(rows(np.arange(n), 1, bool(partition_by)))
    t.update("id % 13 = 2", {"v2": "v2 + 1", "s": "NULL"})
    t.delete("id % 9 = 4")
    return t


def source_of(t: Table, size: str) -> pa.Table:
    """A large source (every third id, deleted ones among them, then as many new ids) or a
    small one (an existing id, a deleted id, a new id)."""
    if size == "large":
        old = np.arange(1, LARGE, 3)  # a third of them id % 9 = 4: deleted
        ids = np.concatenate([old, np.arange(LARGE, LARGE + len(old))])
    else:
        ids = np.array([5, 13, LARGE + 7])  # 13 % 9 == 4: deleted
    return rows(ids, 2, "p" in t.schema.names)


def model(before: list[Row], source: list[Row], matched: Callable[[Row, Row], Row | None]
          ) -> list[Row]:
    """The table after ``MERGE ... ON t.id = s.id``: each matched row becomes
    ``matched(target, source)`` (None: deleted), each unmatched source row is inserted."""
    by_id = {r["id"]: r for r in before}
    out = dict(by_id)
    for row in source:
        if row["id"] in by_id:
            new = matched(by_id[row["id"]], row)
            if new is None:
                del out[row["id"]]
            else:
                out[row["id"]] = new
        else:
            out[row["id"]] = dict(row)
    return sorted(out.values(), key=lambda r: r["id"])


def after(t: Table) -> list[Row]:
    return sorted(t.to_arrow().to_pylist(), key=lambda r: r["id"])


@pytest.fixture
def scans(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[list[str] | None, bool, int]]]:
    """Every scan a MERGE unit makes: (columns, probed, rows returned); second scans
    (``kept_rows``) recorded as not probed."""
    seen: list[tuple[list[str] | None, bool, int]] = []
    real = unit_rows.scan_unit

    def spy(unit: Any, columns: Any, predicate: Any = None, *, probe: Any = None) -> Any:
        batches = real(unit, columns, predicate, probe=probe)
        seen.append((None if columns is None else list(columns), probe is not None,
                     sum(b.num_rows for b in batches)))
        return batches

    monkeypatch.setattr(statement, "scan_unit", spy)
    monkeypatch.setattr(unit_rows, "scan_unit", spy)
    yield seen


def set_v1(t: Row, s: Row) -> Row:
    return {**t, "v1": s["v1"]}


def set_all(t: Row, s: Row) -> Row:
    return {**s, **({"p": t["p"]} if "p" in t else {})}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("size", ["large", "small"])
@pytest.mark.parametrize("shape", ["set_v1", "set_all"])
def test_a_keyed_merge_equals_the_model(wh: Warehouse, layout: str, size: str, shape: str,
                                        scans: list[tuple[list[str] | None, bool, int]]
                                        ) -> None:
    """``SET v1 = s.v1`` (or ``SET *``) and ``INSERT *``: every unit reads through the probe,
    decodes the kept columns in that read (no second scan) and returns only rows whose key
    the source has; the table then holds exactly what the model says."""
    t = loaded(wh, layout)
    source = source_of(t, size)
    before = after(t)
    scans.clear()
    builder = t.merge(source, "t.id = s.id")
    builder = builder.when_matched_update({"v1": "s.v1"}) if shape == "set_v1" \
        else builder.when_matched_update_all()
    result = builder.when_not_matched_insert_all().execute()
    want = model(before, source.to_pylist(), set_v1 if shape == "set_v1" else set_all)
    assert after(t) == want
    live = {r["id"] for r in before}
    hits = sum(1 for r in source.to_pylist() if r["id"] in live)
    assert (result.rows_updated, result.rows_inserted) == (hits, source.num_rows - hits)
    assert scans and all(probed for _, probed, _ in scans)
    kept = {"k", "v2", "c", "s", "ts"} if shape == "set_v1" else set()
    assert all(kept <= set(columns or ()) for columns, _, _ in scans)
    # only the rows whose key some source row has (each id lives in one unit)
    assert sum(n for _, _, n in scans) == hits


@pytest.mark.parametrize("layout", ["bucketed", "partitioned_unbucketed"])
@pytest.mark.parametrize("size", ["large", "small"])
def test_several_matched_clauses_keeping_different_columns(
        wh: Warehouse, layout: str, size: str,
        scans: list[tuple[list[str] | None, bool, int]]) -> None:
    """Clauses with conditions (a row the probe keeps may stay as it is): every row is read,
    then the columns any UPDATE keeps in a second scan of the rows; the model agrees."""
    t = loaded(wh, layout)
    source = source_of(t, size)
    before = after(t)
    scans.clear()
    t.merge(source, "t.id = s.id") \
        .when_matched_update({"v1": "s.v1"}, condition="s.k < 300") \
        .when_matched_update({"s": "s.s", "c": "s.c", "v2": "t.v2 * 2"},
                             condition="s.k < 600 OR t.c IS NULL") \
        .when_matched_delete(condition="s.k < 900") \
        .when_not_matched_insert_all().execute()

    def clauses(target: Row, src: Row) -> Row | None:
        if src["k"] < 300:
            return {**target, "v1": src["v1"]}
        if src["k"] < 600 or target["c"] is None:
            return {**target, "s": src["s"], "c": src["c"], "v2": target["v2"] * 2}
        if src["k"] < 900:
            return None
        return target

    assert after(t) == model(before, source.to_pylist(), clauses)
    first = [s for s in scans if s[0] is not None and "id" in s[0]]
    assert first and not any(probed for _, probed, _ in scans)


def test_a_merge_with_an_extra_on_term_reads_through_the_probe(
        wh: Warehouse, scans: list[tuple[list[str] | None, bool, int]]) -> None:
    """``ON t.id = s.id AND t.k < s.k``: the probe keeps rows by ``id`` alone, the join
    decides the rest; nothing kept is needed (``SET *``), so no second scan either."""
    t = loaded(wh, "bucketed")
    source = source_of(t, "large")
    before = after(t)
    scans.clear()
    t.merge(source, "t.id = s.id AND t.k < s.k").when_matched_update_all() \
        .when_not_matched_insert_all().execute()
    want = {r["id"]: [r] for r in before}
    for row in source.to_pylist():
        old = want.get(row["id"], [])
        if old and old[0]["k"] < row["k"]:
            want[row["id"]] = [row]
        else:  # no target row meets the whole condition: a new row (beside any same id)
            want[row["id"]] = [*old, row]
    got = sorted(t.to_arrow().to_pylist(), key=lambda r: (r["id"], r["v1"]))
    assert got == sorted((r for group in want.values() for r in group),
                         key=lambda r: (r["id"], r["v1"]))
    assert scans and all(probed for _, probed, _ in scans)


def test_a_probed_merge_still_refuses_a_row_matched_twice(wh: Warehouse) -> None:
    t = loaded(wh, "bucketed", n=LARGE)
    source = rows(np.array([3, 3, LARGE + 1]), 2, False)
    with pytest.raises(MergeCardinalityError):
        t.merge(source, "t.id = s.id").when_matched_update({"v1": "s.v1"}) \
            .when_not_matched_insert_all().execute()


def test_string_keys(wh: Warehouse, scans: list[tuple[list[str] | None, bool, int]]) -> None:
    """String ON keys (the table bucketed by them): the probe looks them up as strings."""
    schema = pa.schema([("name", pa.string()), ("v", pa.int64()), ("w", pa.string())])
    t = wh.create_table("db.names", schema, bucket_by=["name"], buckets=3)
    t.insert(pa.table({"name": [f"n{i}" for i in range(6000)], "v": list(range(6000)),
                       "w": [None if i % 4 else f"w{i}" for i in range(6000)]}, schema=schema))
    t.delete("v % 10 = 0")
    scans.clear()
    source = pa.table({"name": ["n1", "n4", "n10", "zz", None], "v": [-1, -4, -10, -99, -5],
                       "w": ["x", "y", "z", "q", "r"]})
    t.merge(source, "t.name = s.name").when_matched_update({"v": "s.v"}) \
        .when_not_matched_insert_all().execute()
    got = {(r["name"], r["v"], r["w"]) for r in t.to_arrow().to_pylist()}
    want: set[tuple[str | None, int, str | None]] = {
        (f"n{i}", i, None if i % 4 else f"w{i}") for i in range(6000) if i % 10}
    want -= {("n1", 1, None), ("n4", 4, "w4")}
    want |= {("n1", -1, None), ("n4", -4, "w4"), ("n10", -10, "z"), ("zz", -99, "q"),
             (None, -5, "r")}
    assert got == want
    assert scans and all(probed for _, probed, _ in scans)


@pytest.mark.parametrize("condition", [
    "t.id = s.id",  # with a WHEN NOT MATCHED BY SOURCE clause (below)
    "CASE WHEN s.k > 0 THEN TRUE ELSE t.v1 = s.v1 AND t.id = s.id AND t.k = s.k END",
    "t.id = s.id OR t.k = s.k", "t.v1 = s.v1", "t.ts = s.ts"])
def test_merges_that_read_every_row(condition: str) -> None:
    """No probe where a row without a source key may match or be acted on: WHEN NOT
    MATCHED BY SOURCE, a key equality that is not needed by the whole condition, keys of
    types SQL compares by other rules."""
    by_source = [MergeClause("delete", None, ())] if condition == "t.id = s.id" else []
    spec = MergeSpec.build(SCHEMA.empty_table(), condition, source_alias="s",
                           target_alias="t", matched=[MergeClause("delete", None, ())],
                           not_matched=[], not_matched_by_source=by_source)
    assert key_probe(spec, SCHEMA, SCHEMA) is None


def _probe(source_keys: pa.Array, condition: str = "t.id = s.id",
           matched: tuple[MergeClause, ...] = (MergeClause("update", None, (("v1", "s.v1"),)),)
           ) -> KeyProbe:
    schema = pa.schema([("id", source_keys.type), ("v1", pa.float64())])
    source = pa.table({"id": source_keys, "v1": pa.nulls(len(source_keys), pa.float64())})
    spec = MergeSpec.build(source, condition, source_alias="s", target_alias="t",
                           matched=list(matched), not_matched=[])
    found = key_probe(spec, schema, schema)
    assert found is not None
    return found


def test_which_merges_decode_kept_columns_in_the_first_read() -> None:
    keys = pa.array([1, 2], pa.int64())
    assert _probe(keys).decides_updates
    assert not _probe(keys, "t.id = s.id AND t.v1 > 0").decides_updates
    assert not _probe(keys, matched=(MergeClause("update", "s.v1 > 0", (("v1", "s.v1"),)),
                                     MergeClause("delete", None, ()))).decides_updates
    assert not _probe(keys, matched=(MergeClause("delete", None, ()),)).decides_updates


ints = st.one_of(st.none(), st.integers(-20, 20),
                 st.sampled_from([-2**63, 2**63 - 1, -2**62, 2**62, BITMAP_MAX_SPAN + 3]))


@settings(max_examples=200, deadline=None)
@given(source=st.lists(ints, max_size=12), target=st.lists(ints, max_size=40),
       kind=st.sampled_from([pa.int64(), pa.int32()]))
def test_integer_key_hits_equal_set_membership(source: list[int | None],
                                               target: list[int | None],
                                               kind: pa.DataType) -> None:
    """Bitmap (narrow source range) or hash (wide) lookups give set membership, NULL never
    a hit, for target files of another integer width too."""
    keys = _probe(pa.array(source, pa.int64())).keys
    if pa.types.is_int32(kind):
        target = [v if v is None or -2**31 <= v < 2**31 else None for v in target]
    found = keys.hits(pa.array(target, kind))
    assert found is not None
    wanted = {v for v in source if v is not None}
    assert found.tolist() == [v is not None and v in wanted for v in target]


@settings(max_examples=100, deadline=None)
@given(source=st.lists(st.one_of(st.none(), st.text(max_size=3)), max_size=8),
       target=st.lists(st.one_of(st.none(), st.text(max_size=3)), max_size=30),
       large=st.booleans())
def test_string_key_hits_equal_set_membership(source: list[str | None],
                                              target: list[str | None], large: bool) -> None:
    keys = _probe(pa.array(source, pa.string())).keys
    array = pa.array(target, pa.large_string() if large else pa.string())
    found = keys.hits(array)
    assert found is not None
    wanted = {v for v in source if v is not None}
    assert found.tolist() == [v is not None and v in wanted for v in target]


def test_a_file_without_the_key_or_of_another_type_keeps_every_row() -> None:
    """The probe drops a row only when it can tell: a file predating the key column, or
    holding it as a type not compared here, passes every row on to the join."""
    probe = _probe(pa.array([1, 2], pa.int64()))
    absent = SplitBatch(3, (1,), pa.StructArray.from_arrays(
        [pa.array([1.0, 2.0, 3.0])], names=["v1"]), None)
    assert probe.probe.mask(absent).to_pylist() == [True, True, True]
    assert probe.keys.hits(pa.array([1.0, 5.0])) is None
    assert probe.keys.hits(pa.array([1, 2**63], pa.uint64())) is None
