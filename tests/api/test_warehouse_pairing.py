"""A warehouse and its metastore know each other (``acidstore.api.pairing``).

Before, a PostgreSQL metastore served whichever warehouse connected: ``shared2/`` on the URL
of ``shared1/`` listed shared1's tables under its own root (every read a MissingDataError)
and its ``drop_table`` removed shared1's catalogue entry; and ``connect("shared1")`` without
``metastore=`` made a new, empty SQLite catalogue inside the PostgreSQL-backed warehouse.
Now the metastore records the root it serves, the root records its metastore, and a pair
that does not belong together is refused before anything is created or changed. Real SQLite
files, a real PostgreSQL server, real processes; no mocks.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from cli_support import run
from process_support import run_spawned
from table_workers import Place

import acidstore
from acidstore.api.pairing import DEFAULT_METASTORE_FILE, MARKER_FILE, METASTORE_ENV, WAREHOUSE_ENV
from acidstore.errors import MetastoreMismatchError, ReadOnlyWarehouseError
from acidstore.io.fs import location_uri
from benchmarks.postgres_server import PostgresServer

SCHEMA = pa.schema([("id", pa.int64())])


def make(root: Path, metastore: str | None = None) -> None:
    """A warehouse with table ``db.t`` holding ids 1 and 2."""
    with acidstore.connect(root, metastore=metastore) as wh:
        wh.create_table("db.t", SCHEMA).insert(pa.table({"id": [1, 2]}))


def ids(wh: acidstore.Warehouse) -> list[int]:
    return sorted(wh.table("db.t").to_arrow().column("id").to_pylist())


def marker(root: Path) -> dict[str, Any]:
    found: dict[str, Any] = json.loads((root / MARKER_FILE).read_text())
    return found


def uri(path: Path) -> str:
    return f"file://{os.path.realpath(path)}"


@pytest.fixture
def url(postgres_server: PostgresServer) -> str:
    return postgres_server.new_store()


def test_a_second_warehouse_on_a_metastore_is_refused_and_changes_nothing(
        tmp_path: Path, url: str) -> None:
    shared1, shared2 = tmp_path / "shared1", tmp_path / "shared2"
    make(shared1, url)
    with pytest.raises(MetastoreMismatchError, match="serves the warehouse") as refused:
        acidstore.connect(shared2, metastore=url)
    assert (refused.value.warehouse, refused.value.expected) == (uri(shared2), uri(shared1))
    assert refused.value.metastore == acidstore.connect(shared1, metastore=url).metastore.url
    assert "password" not in refused.value.metastore and str(shared1) in str(refused.value)
    assert not shared2.exists()  # nothing created
    with acidstore.connect(shared1, metastore=url) as wh:  # and nothing lost
        assert wh.tables() == ["db.t"] and ids(wh) == [1, 2]
    assert marker(shared1) == {"acidstore": "warehouse", "metastore": "postgresql",
                               "url": refused.value.metastore,
                               "pairing_id": marker(shared1)["pairing_id"]}


def test_the_same_root_spelled_differently_is_the_same_warehouse(
        tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Trailing slashes, a relative path made absolute, a symbolic link: one root."""
    root = tmp_path / "wh"
    make(root, url)
    (tmp_path / "link").symlink_to(root)
    monkeypatch.chdir(tmp_path)
    for spelling in (f"{root}/", "wh", "./wh//", str(tmp_path / "link"), f"file://{root}"):
        with acidstore.connect(spelling, metastore=url) as wh:
            assert ids(wh) == [1, 2], spelling


def test_a_warehouse_without_its_metastore_never_gets_a_new_empty_catalogue(
        tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    root = tmp_path / "shared1"
    make(root, url)
    for create in (True, False):
        with pytest.raises(MetastoreMismatchError, match="keeps its catalogue in") as refused:
            acidstore.connect(root, create=create)
        assert refused.value.expected == marker(root)["url"]
    assert not (root / DEFAULT_METASTORE_FILE).exists()
    code, out, err = run(["tables", "--warehouse", str(root)], capsys)
    assert code == 2 and "MetastoreMismatchError" in err and out == ""
    # the variable supplies the metastore; an explicit argument wins over it
    monkeypatch.setenv(METASTORE_ENV, url)
    with acidstore.connect(root) as wh:
        assert ids(wh) == [1, 2]
    monkeypatch.setenv(METASTORE_ENV, f"sqlite:///{tmp_path / 'other.db'}")
    with pytest.raises(MetastoreMismatchError):
        acidstore.connect(root)
    with acidstore.connect(root, metastore=url) as wh:
        assert ids(wh) == [1, 2]


def test_a_warehouse_keeping_its_own_sqlite_file_refuses_another_metastore(
        tmp_path: Path, url: str) -> None:
    own, other = tmp_path / "own", tmp_path / "other"
    make(own)
    assert marker(own)["url"] is None and marker(own)["metastore"] == "sqlite"
    with pytest.raises(MetastoreMismatchError, match="its own SQLite file"):
        acidstore.connect(own, metastore=url)
    # its file, named as another warehouse's metastore, serves its own directory only
    with pytest.raises(MetastoreMismatchError, match="serves the warehouse") as refused:
        acidstore.connect(other, metastore=f"sqlite:///{own / DEFAULT_METASTORE_FILE}")
    assert refused.value.expected == uri(own)
    assert not other.exists()
    with acidstore.connect(own) as wh:
        assert ids(wh) == [1, 2]


def test_a_warehouse_whose_own_sqlite_file_is_gone_or_replaced_is_refused(
        tmp_path: Path) -> None:
    """Its marker knows the catalogue it was paired with: a missing file is not created
    anew, and another warehouse's file copied in (or a new one) is not taken for it."""
    one, two = tmp_path / "one", tmp_path / "two"
    make(one)
    make(two)
    (one / DEFAULT_METASTORE_FILE).unlink()
    with pytest.raises(MetastoreMismatchError, match="which is gone"):
        acidstore.connect(one)
    assert not (one / DEFAULT_METASTORE_FILE).exists()
    shutil.copy(two / DEFAULT_METASTORE_FILE, one / DEFAULT_METASTORE_FILE)
    with pytest.raises(MetastoreMismatchError, match="lost, replaced or emptied"):
        acidstore.connect(one)


def test_drop_table_never_touches_another_warehouses_entry(
        tmp_path: Path, url: str) -> None:
    """A client that paired before the metastore was relocated to another root cannot
    create or drop tables through it any more: the catalogue is the other warehouse's."""
    old, new = tmp_path / "old", tmp_path / "new"
    make(old, url)
    stale = acidstore.connect(old, metastore=url)
    shutil.copytree(old, new)
    acidstore.connect(new, metastore=url, relocate=True).close()
    with stale:
        for change in (lambda: stale.drop_table("db.t"),
                       lambda: stale.create_table("db.u", SCHEMA)):
            with pytest.raises(MetastoreMismatchError, match="no longer serves"):
                change()
    with acidstore.connect(new, metastore=url) as wh:
        assert wh.tables() == ["db.t"] and ids(wh) == [1, 2]
    assert (old / "db.db" / "t").is_dir()


def test_a_warehouse_moved_on_purpose_is_relocated_explicitly(
        tmp_path: Path, url: str) -> None:
    old, new = tmp_path / "old", tmp_path / "moved" / "wh"
    make(old, url)
    new.parent.mkdir()
    os.rename(old, new)
    with pytest.raises(MetastoreMismatchError, match="relocate=True"):
        acidstore.connect(new, metastore=url)
    with acidstore.connect(new, metastore=url, relocate=True) as wh:
        assert ids(wh) == [1, 2]
        wh.table("db.t").insert(pa.table({"id": [3]}))
    with acidstore.connect(new, metastore=url) as wh:  # recorded: no flag needed any more
        assert ids(wh) == [1, 2, 3]
    with pytest.raises(MetastoreMismatchError):
        acidstore.connect(old, metastore=url)  # the old place is not its warehouse now


def test_a_warehouse_from_before_the_records_is_bound_on_its_first_connect(
        tmp_path: Path, url: str) -> None:
    """Stores migrated from schema 12 record no warehouse and roots have no marker: the
    first connect records both, after which the pair is checked as any other."""
    root = tmp_path / "wh"
    make(root, url)
    (root / MARKER_FILE).unlink()
    forget_binding(url)
    with acidstore.connect(root, metastore=url) as wh:
        assert ids(wh) == [1, 2]
        binding = wh.metastore.warehouse_binding()
    assert binding is not None and binding.root == uri(root)
    assert marker(root)["pairing_id"] == binding.pairing_id
    with pytest.raises(MetastoreMismatchError):
        acidstore.connect(tmp_path / "elsewhere", metastore=url)


def test_an_embedded_warehouse_from_before_the_records_is_bound_and_still_moves(
        tmp_path: Path) -> None:
    root, moved = tmp_path / "wh", tmp_path / "moved"
    make(root)
    (root / MARKER_FILE).unlink()
    with sqlite3.connect(root / DEFAULT_METASTORE_FILE) as raw:
        raw.execute("DELETE FROM meta WHERE name IN ('warehouse_root', 'warehouse_id')")
    raw.close()
    acidstore.connect(root).close()
    assert marker(root)["url"] is None
    os.rename(root, moved)  # its own file records the directory it sits in: "."
    with acidstore.connect(moved) as wh:
        assert ids(wh) == [1, 2]
        assert wh.metastore.warehouse_binding().root == "."  # type: ignore[union-attr]


def test_a_read_only_warehouse_without_records_opens_and_writes_none(tmp_path: Path) -> None:
    root = tmp_path / "wh"
    make(root)
    (root / MARKER_FILE).unlink()
    with sqlite3.connect(root / DEFAULT_METASTORE_FILE) as raw:
        raw.execute("DELETE FROM meta WHERE name IN ('warehouse_root', 'warehouse_id')")
    raw.close()
    for path in [root, *root.rglob("*")]:
        path.chmod(path.stat().st_mode & ~0o222)
    try:
        with acidstore.connect(root, create=False) as wh:
            assert ids(wh) == [1, 2]
            with pytest.raises(ReadOnlyWarehouseError):
                wh.drop_table("db.t")
        assert not (root / MARKER_FILE).exists()
    finally:
        for path in [root, *root.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)


def test_the_commands_take_the_warehouse_and_metastore_from_the_environment(
        tmp_path: Path, url: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    shared, own = tmp_path / "shared", tmp_path / "own"
    make(shared, url)
    make(own)
    code, _, err = run(["tables"], capsys)
    assert code == 2 and WAREHOUSE_ENV in err
    monkeypatch.setenv(WAREHOUSE_ENV, str(shared))
    monkeypatch.setenv(METASTORE_ENV, url)
    for argv in (["tables"], ["history", "db.t"], ["describe", "db.t"], ["read", "db.t"],
                 ["inspect", "db.t"], ["show", "transactions"], ["fsck"], ["advise"],
                 ["compact", "--table", "db.t"], ["clean"]):
        code, out, err = run([*argv, "--json"], capsys)
        assert code == 0, (argv, err)
    code, out, _ = run(["read", "db.t", "--json"], capsys)
    assert sorted(r["id"] for r in json.loads(out)["rows"]) == [1, 2]
    # explicit arguments win over the variables
    code, out, err = run(["tables", "--warehouse", str(own), "--json"], capsys)
    assert code == 2 and "MetastoreMismatchError" in err  # own with the shared metastore
    code, out, err = run(["tables", "--warehouse", str(own), "--metastore",
                          f"sqlite:///{own / DEFAULT_METASTORE_FILE}", "--json"], capsys)
    assert code == 0 and [r["table"] for r in json.loads(out)] == ["db.t"], err
    # a directory inside a warehouse whose metastore is elsewhere: the variable supplies it
    code, out, err = run(["read", str(shared / "db.db" / "t"), "--json"], capsys)
    assert code == 0, err


def bind_from_process(place: Place, worker: int, barrier: Any, reports: Any) -> None:
    """Connect to a new metastore once every peer is ready to (each with its own root)."""
    try:
        barrier.wait(timeout=60)
        acidstore.connect(place[0], metastore=place[1]).close()
        reports.put(("ok", worker, "bound"))
    except MetastoreMismatchError as exc:
        reports.put(("ok", worker, f"refused: {exc.expected}"))
    except Exception:  # pragma: no cover - reported to the test
        import traceback

        barrier.abort()
        reports.put(("error", worker, traceback.format_exc()))


def test_of_two_warehouses_binding_one_new_metastore_at_once_one_wins(
        tmp_path: Path, url: str) -> None:
    roots = [tmp_path / f"wh{i}" for i in range(3)]
    for metastore in (url, f"sqlite:///{tmp_path / 'meta.db'}"):
        outcomes = [r[2] for r in run_spawned(
            bind_from_process, [((str(root), metastore), i) for i, root in enumerate(roots)])]
        [winner] = [i for i, outcome in enumerate(outcomes) if outcome == "bound"]
        assert outcomes == ["bound" if i == winner else f"refused: {uri(roots[winner])}"
                            for i in range(len(roots))], metastore
        for root in roots:
            shutil.rmtree(root, ignore_errors=True)
        with pytest.raises(MetastoreMismatchError):
            acidstore.connect(roots[winner - 1], metastore=metastore)


def forget_binding(url: str) -> None:
    """What a store migrated from schema 12 holds: no warehouse recorded."""
    import psycopg

    with psycopg.connect(url) as conn:
        conn.execute("DELETE FROM meta WHERE name IN ('warehouse_root', 'warehouse_id')")


def test_location_uris_compare_roots_as_written_differently(tmp_path: Path) -> None:
    import pyarrow.fs as pafs

    local = pafs.LocalFileSystem()
    assert location_uri(local, f"{tmp_path}/a/") == location_uri(local, f"{tmp_path}/a")
    s3 = pafs.S3FileSystem(anonymous=True, region="us-east-1")
    assert location_uri(s3, "bucket/wh/") == "s3://bucket/wh"
    assert location_uri(pafs.SubTreeFileSystem("bucket", s3), "wh") == "s3://bucket/wh"
