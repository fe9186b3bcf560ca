"""Partition directory names: Hive's escaping round-trips and never leaves the table location."""

from __future__ import annotations

import posixpath

import pytest
from hypothesis import given
from hypothesis import strategies as st

from acidstore.errors import InvalidPartitionValueError
from acidstore.format.partitions import (
    DEFAULT_PARTITION_NAME,
    escape_path_name,
    parse_partition_path,
    partition_path,
    unescape_path_name,
)


@pytest.mark.parametrize(("raw", "escaped"), [
    ("2024-01-01", "2024-01-01"),
    ("a/b", "a%2Fb"),
    ("x=y", "x%3Dy"),
    ("100%", "100%25"),
    ("c:\\temp", "c%3A%5Ctemp"),
    ("tab\there", "tab%09here"),
    ("q?#*", "q%3F%23%2A"),
    ("über straße", "über straße"),  # non-ASCII is kept, as Hive keeps it
    ("..", ".."),
])
def test_escape_matches_hive(raw: str, escaped: str) -> None:
    assert escape_path_name(raw) == escaped
    assert unescape_path_name(escaped) == raw


def test_unescape_keeps_a_lone_percent() -> None:
    assert unescape_path_name("50%") == "50%"
    assert unescape_path_name("%zz") == "%zz"


def test_null_is_the_default_partition() -> None:
    assert partition_path(["dt"], [None]) == f"dt={DEFAULT_PARTITION_NAME}"
    assert parse_partition_path(f"dt={DEFAULT_PARTITION_NAME}") == [("dt", None)]


@given(st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=3))
def test_round_trip_and_containment(values: list[str]) -> None:
    columns = [f"c{i}" for i in range(len(values))]
    try:
        rel = partition_path(columns, values)
    except InvalidPartitionValueError:
        return  # too long for a directory name: refused, never truncated
    assert parse_partition_path(rel) == list(zip(columns, values, strict=True))
    # one path component per column, none of them a traversal step
    parts = rel.split("/")
    assert len(parts) == len(values)
    assert all(p not in ("", ".", "..") for p in parts)
    assert posixpath.normpath("/table/" + rel).startswith("/table/")


def test_refuses_what_cannot_be_a_directory_name() -> None:
    with pytest.raises(InvalidPartitionValueError, match="too long"):
        partition_path(["dt"], ["x" * 300])
    with pytest.raises(InvalidPartitionValueError, match="empty value"):
        partition_path(["dt"], [""])
    with pytest.raises(InvalidPartitionValueError, match="2 partition values"):
        partition_path(["dt"], ["a", "b"])
    with pytest.raises(InvalidPartitionValueError, match="not a partition directory"):
        parse_partition_path("dt")
