"""The contract of the ``Catalog`` role: tables, partitions, original files, the warehouse a
store serves. Names, refusals that write nothing, schema changes ordered with commits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from acidstore.errors import (
    InvalidInputError,
    MetadataChangedError,
    MetastoreMismatchError,
    TableExistsError,
    TableNotFoundError,
)
from acidstore.metastore.records import NewTable, OriginalFile, WarehouseBinding
from acidstore.metastore.testing.harness import (
    MetastoreHarness,
    begin,
    cases,
    new_table,
    raises,
    states,
    write,
)
from acidstore.metastore.testing.rename_contract import TableRenameContract

__all__ = ["CatalogContract"]


class CatalogContract(TableRenameContract, MetastoreHarness):
    """Tables, partitions, original files and the warehouse binding (and renames:
    ``TableRenameContract``)."""

    def test_create_and_get_round_trip_every_field(self) -> None:
        metastore = self.metastore
        schema = pa.schema([
            pa.field("id", pa.int64(), nullable=False, metadata={b"doc": b"key"}),
            ("amount", pa.decimal128(18, 4)),
            ("at", pa.timestamp("us", tz="UTC")),
            ("tags", pa.list_(pa.struct([("k", pa.string()), ("v", pa.int32())]))),
        ])
        partitions = pa.schema([("dt", pa.date32()), ("country", pa.string())])
        before = datetime.now(UTC)
        created = metastore.create_table(NewTable(
            "Sales", "Events", schema, partitions, ("id",), 4, {"owner": "x"}, "s3://b/sales.db/ev"))
        after = datetime.now(UTC)
        assert (created.database, created.name, created.full_name) == ("sales", "events",
                                                                       "sales.events")
        assert created.schema.equals(schema, check_metadata=True)
        assert created.partition_schema.equals(partitions, check_metadata=True)
        assert (created.bucket_by, created.buckets) == (("id",), 4)
        assert (created.properties, created.location) == ({"owner": "x"}, "s3://b/sales.db/ev")
        assert isinstance(created.table_id, int)
        assert created.created.tzinfo == UTC and before <= created.created <= after
        fetched = metastore.get_table("SALES.events")
        assert fetched == created
        assert fetched.schema.equals(schema, check_metadata=True)

    def test_a_location_relative_to_the_warehouse_root_is_kept_as_given(self) -> None:
        """Warehouses store ``<db>.db/<table>`` so that a copied warehouse reads its own files;
        the metastore keeps the string and never resolves it (only the warehouse knows its root)."""
        metastore = self.metastore
        created = metastore.create_table(new_table("t", location="default.db/t"))
        assert created.location == metastore.get_table("t").location == "default.db/t"

    def test_table_names_default_database_and_case(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("t"))
        assert metastore.get_table("t").full_name == "default.t"
        assert metastore.get_table("DEFAULT.T").full_name == "default.t"
        with raises(TableExistsError, match=r"default\.t"):
            metastore.create_table(new_table("T"))
        with raises(TableNotFoundError, match=r"other\.t"):
            metastore.get_table("other.t")
        with raises(InvalidInputError):
            metastore.get_table("a.b.c")
        # the warehouse's rule, the one rule: a digit may not start a name (a warehouse refused
        # "1t" while its metastore took it), and a newline never ends one
        for bad in ("1t", "db.1t", "t\n", "db.t\n"):
            with raises(InvalidInputError, match="table name"):
                metastore.create_table(new_table(bad))
        assert metastore.create_table(new_table("_t")).full_name == "default._t"

    def test_list_tables_sorted_and_filtered(self) -> None:
        metastore = self.metastore
        for database, name in [("b", "z"), ("a", "y"), ("b", "a"), ("default", "m")]:
            metastore.create_table(new_table(name, database))
        assert metastore.list_tables() == ["a.y", "b.a", "b.z", "default.m"]
        assert metastore.list_tables("b") == ["b.a", "b.z"]
        assert metastore.list_tables("B") == ["b.a", "b.z"]
        assert metastore.list_tables("nothing") == []

    def test_drop_table_and_recreate_starts_a_fresh_history(self) -> None:
        metastore = self.metastore
        old = metastore.create_table(new_table("t"))
        txn = begin(metastore)
        metastore.commit(txn, [write(metastore, txn, "insert")])
        assert metastore.drop_table("default.t") == old
        assert metastore.list_tables() == []
        with raises(TableNotFoundError):
            metastore.get_table("t")
        with raises(TableNotFoundError):
            metastore.drop_table("t")
        fresh = metastore.create_table(new_table("t"))
        assert fresh.table_id != old.table_id
        assert metastore.history("t") == []
        assert metastore.allocate_write_id(begin(metastore), "t") == 1

    @cases(
        ({"name": "bad-name"},),
        ({"database": ""},),
        ({"location": "../outside/t"},),
        ({"location": ""},),
        ({"bucket_by": ("nope",), "buckets": 2},),
        ({"bucket_by": ("id",), "buckets": 0},),
        ({"buckets": 4},),
        ({"buckets": -1},),
        ({"partition_schema": pa.schema([("ID", pa.string())])},),
        ({"properties": {"k": 1}},),
        ids=["bad-name", "empty-database", "relative-location-outside", "empty-location",
            "unknown-bucket-column",
            "bucket-by-without-buckets", "buckets-without-bucket-by", "negative-buckets",
            "partition-column-repeats-a-column", "non-string-property"])
    def test_invalid_tables_are_refused_and_nothing_is_written(
            self, changes: dict[str, Any]) -> None:
        metastore = self.metastore
        with raises(InvalidInputError):
            metastore.create_table(new_table(**changes))
        assert metastore.list_tables() == []

    def test_stored_properties_do_not_alias_the_callers_dict(self) -> None:
        metastore = self.metastore
        props = {"a": "1"}
        created = metastore.create_table(new_table(properties=props))
        props["a"] = "2"
        assert created.properties == {"a": "1"}
        assert metastore.get_table("t").properties == {"a": "1"}

    def test_add_columns_appends_nullable_columns_and_bumps_the_metadata_version(self) -> None:
        metastore = self.metastore
        created = metastore.create_table(new_table(partition_by=["dt"]))
        assert created.metadata_version == 0
        info = metastore.add_columns("t", pa.schema([("score", pa.float64()),
                                                     ("tags", pa.list_(pa.string()))]))
        assert info.schema.names == ["id", "name", "score", "tags"]
        assert info.schema.field("tags").type == pa.list_(pa.string())
        assert (info.metadata_version, info.table_id) == (1, created.table_id)
        assert metastore.get_table("t") == info
        for bad, message in [
            (pa.schema([("NAME", pa.string())]), "already a column"),
            (pa.schema([("dt", pa.string())]), "already a column"),
            (pa.schema([pa.field("n", pa.int32(), nullable=False)]), "must be nullable"),
            (pa.schema([("x", pa.null())]), "needs a type"),
            (pa.schema([("bad name", pa.int32())]), "letters, digits"),
            (pa.schema([]), "non-empty"),
        ]:
            with raises(InvalidInputError, match=message):
                metastore.add_columns("t", bad)
        assert metastore.get_table("t") == info  # nothing changed by a refusal
        with raises(TableNotFoundError):
            metastore.add_columns("nope", pa.schema([("x", pa.int32())]))

    def test_renamed_and_dropped_columns_keep_their_file_positions(self) -> None:
        """A rename keeps the column's place (bucketing follows the name); a drop leaves a
        placeholder in ``row_schema``; a name re-added later is appended; each bumps the
        metadata version, and a refusal changes nothing."""
        metastore = self.metastore
        created = metastore.create_table(new_table(
            partition_by=["dt"], bucket_by=("id",), buckets=2))
        info = metastore.rename_column("t", "ID", "key")
        assert info.schema.names == ["key", "name"]
        assert (info.bucket_by, info.metadata_version) == (("key",), 1)
        assert info.schema.field("key").metadata is None  # notes stay in the file schema
        assert info.row_schema.names == ["key", "name"]
        assert metastore.get_table("t") == info
        info = metastore.drop_columns("t", ["name"])
        assert (info.schema.names, info.metadata_version) == (["key"], 2)
        assert info.row_schema.names == ["key", "__acid_dropped_1"]
        info = metastore.add_columns("t", pa.schema([("name", pa.int64())]))
        assert info.schema.names == ["key", "name"]
        assert info.schema.field("name").type == pa.int64()
        assert info.row_schema.names == ["key", "__acid_dropped_1", "name"]
        assert (info.metadata_version, info.table_id) == (3, created.table_id)
        refused: list[tuple[Callable[[], object], str]] = [
            (lambda: metastore.rename_column("t", "dt", "x"), "partition column"),
            (lambda: metastore.rename_column("t", "__acid_dropped_1", "x"), "no such column"),
            (lambda: metastore.rename_column("t", "key", "NAME"), "already has a column"),
            (lambda: metastore.drop_columns("t", ["key"]), "bucketed by it"),
            (lambda: metastore.drop_columns("t", ["__acid_dropped_1"]), "no such column"),
            (lambda: metastore.drop_columns("t", ["key", "name"]), "bucketed by it"),
        ]
        for call, message in refused:
            with raises(InvalidInputError, match=message):
                call()
        assert metastore.get_table("t") == info
        with raises(TableNotFoundError):
            metastore.drop_columns("nope", ["x"])

    def test_a_commit_planned_against_older_metadata_fails(self) -> None:
        """Two clients (connections): a writer planned against metadata version 0, another
        added a column before it committed; its commit fails and leaves nothing."""
        writer, other = self.another_client(), self.another_client()
        writer.create_table(new_table())
        txn = begin(writer)
        planned = replace(write(writer, txn, "insert"), metadata_version=0)
        unchecked = begin(writer)
        legacy = write(writer, unchecked, "insert")  # names no version: not checked
        other.add_columns("t", pa.schema([("extra", pa.string())]))
        with raises(MetadataChangedError, match="metadata changed") as caught:
            writer.commit(txn, [planned])
        assert (caught.value.txn_id, caught.value.table) == (txn, "default.t")
        assert states(other)[txn] == "aborted"
        assert [w.write_id for w in other.aborted_components("t")] == [planned.write_id]
        writer.commit(unchecked, [legacy])
        again = begin(writer)
        current = replace(write(writer, again, "insert"), metadata_version=1)
        writer.commit(again, [current])
        assert [e.write_id for e in other.history("t")] == [legacy.write_id,
                                                            current.write_id]

    def test_partitions_are_idempotent_sorted_and_canonical(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt", "c")))
        metastore.add_partitions("p", ["dt=2024-01-02/c=US", "dt=2024-01-01/c=a%2Fb"])
        metastore.add_partitions("p", ["dt=2024-01-02/c=US"])
        assert metastore.list_partitions("p") == ["dt=2024-01-01/c=a%2Fb", "dt=2024-01-02/c=US"]
        for bad in ["c=US/dt=2024-01-01", "dt=2024-01-01", "dt=x/c=a/b", "/dt=x/c=y", ""]:
            with raises(InvalidInputError):
                metastore.add_partitions("p", [bad])
        assert len(metastore.list_partitions("p")) == 2
        metastore.create_table(new_table("u"))
        with raises(InvalidInputError):
            metastore.add_partitions("u", ["dt=x"])
        with raises(TableNotFoundError):
            metastore.list_partitions("missing")

    def test_original_files_are_recorded_checked_and_dropped_with_the_table(self) -> None:
        metastore = self.metastore
        metastore.create_table(new_table("p", partition_by=("dt",)))
        metastore.record_originals("p", [OriginalFile("dt=b", "000000_0", 7),
                                         OriginalFile("dt=a", "000001_0", 5)])
        metastore.record_originals("p", [OriginalFile("dt=a", "000001_0", 6)])  # again: new size
        assert metastore.original_files("p") == [OriginalFile("dt=a", "000001_0", 6),
                                                 OriginalFile("dt=b", "000000_0", 7)]
        for bad in [OriginalFile("dt=a", "part-0.orc", 1), OriginalFile("", "000000_0", 1),
                    OriginalFile("dt=a", "000000_0", -1), OriginalFile("c=a", "000000_0", 1)]:
            with raises(InvalidInputError):
                metastore.record_originals("p", [bad])
        assert len(metastore.original_files("p")) == 2  # a refusal writes nothing
        metastore.drop_table("p")
        metastore.create_table(new_table("p", partition_by=("dt",)))
        assert metastore.original_files("p") == []  # a new table of the name starts afresh
        with raises(TableNotFoundError):
            metastore.original_files("missing")

    # --- the store itself and the warehouse it serves ---------------------------------------------

    def test_the_store_names_itself_by_url_and_may_be_written(self) -> None:
        metastore = self.metastore
        metastore.check_writable()  # opened read-write: the cleaner and fsck may remove files
        assert "://" in metastore.url
        assert self.another_client().url == metastore.url

    def test_a_store_serves_the_warehouse_that_bound_it(self) -> None:
        """Of two clients binding a new store, the first wins and the second is told (it is
        handed the binding in place). A client paired with a binding creates and drops tables
        only while the store still holds it: once another relocated the store, it is refused
        and nothing changes. A client that never paired checks nothing (tools, tests)."""
        first, second = self.another_client(), self.another_client()
        assert first.warehouse_binding() is None
        ours, theirs = WarehouseBinding("/wh/a", "id-a"), WarehouseBinding("/wh/b", "id-b")
        assert first.bind_warehouse(ours, replacing=None, warehouse="/wh/a") == ours
        assert second.bind_warehouse(theirs, replacing=None, warehouse="/wh/b") == ours
        assert second.warehouse_binding() == ours
        first.create_table(new_table("t"))
        assert second.bind_warehouse(theirs, replacing=ours, warehouse="/wh/b") == theirs
        with raises(MetastoreMismatchError):
            first.create_table(new_table("u"))
        with raises(MetastoreMismatchError):
            first.drop_table("t")
        assert first.warehouse_binding() == theirs
        assert second.list_tables() == ["default.t"]
        second.drop_table("t")
        self.metastore.create_table(new_table("v"))
        assert second.list_tables() == ["default.v"]
