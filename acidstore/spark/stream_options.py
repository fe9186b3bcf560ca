"""The options of Structured Streaming on acidstore tables, and the source's offsets.

Spark hands a streaming source and sink string options, as it does batch reads and writes
(``read_tasks``), and keeps a source's offsets as JSON in the query's checkpoint. Both are
parsed and checked here, so that a mistake is an acidstore error naming the option.

An offset is a write id: every write id up to it is settled (committed or aborted) and was
emitted by the stream. A stream that starts with the table's current rows (no
``startingVersion``) first emits a snapshot, as Delta's source does: the first batch fixes
the write id the snapshot is read at (``snapshot``); while the stream is below it, batches
emit the snapshot's rows by the write id that wrote them (so ``maxWritesPerTrigger`` splits it
too), and from it on, the rows each later write inserted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pyspark.sql.datasource import CaseInsensitiveDict

from acidstore.errors import InvalidInputError, UnknownOptionError, UnsupportedOperationError
from acidstore.spark.read_tasks import TARGET_OPTIONS, ReadOptions, check_options, read_options

__all__ = ["STREAM_ONLY_OPTIONS", "STREAM_READ_OPTIONS", "STREAM_WRITE_OPTIONS", "Offset",
           "StreamReadOptions", "check_stream_write", "is_stream_read", "refuse_stream_options",
           "stream_read_options"]

#: the options only a stream read takes (``spark.readStream``), as Delta names them
STREAM_ONLY_OPTIONS = ("startingVersion", "maxWritesPerTrigger", "skipChangeCommits",
                       "readChangeFeed")
#: what a stream read accepts: the table, the stream's own options and how tasks are sized
STREAM_READ_OPTIONS = (*TARGET_OPTIONS, *STREAM_ONLY_OPTIONS, "maxPartitionBytes",
                       "minPartitions", "leaseSeconds")
#: what a stream write accepts (Spark adds ``checkpointLocation`` and, for a checkpoint under
#: ``spark.sql.streaming.checkpointLocation``, ``queryName``)
STREAM_WRITE_OPTIONS = (*TARGET_OPTIONS, "mergeSchema", "checkpointLocation")
_SPARK_WRITE_OPTIONS = ("queryName",)
_TRUE, _FALSE = {"true", "1", "yes"}, {"false", "0", "no"}


def _options(options: Mapping[str, str]) -> Mapping[str, str]:
    """Spark lower-cases option names: look them up in any case."""
    return cast("Mapping[str, str]", CaseInsensitiveDict(dict(options)))


def is_stream_read(options: Mapping[str, str]) -> bool:
    """Whether ``options`` hold an option only a stream read takes."""
    given = _options(options)
    return any(name in given for name in STREAM_ONLY_OPTIONS)


def refuse_stream_options(options: Mapping[str, str], table: str) -> None:
    """A batch read (``spark.read``) given a stream read's options: say where they go."""
    given = sorted(name for name in STREAM_ONLY_OPTIONS if name in _options(options))
    if given:
        raise UnsupportedOperationError(
            f"a batch read of {table} was given {given}, options of "
            "spark.readStream.format('acidstore'); a batch read of the change feed is "
            "AcidTable.changes(start, end) (Table.changes embedded)")


@dataclass(frozen=True)
class StreamReadOptions:
    """The options of ``spark.readStream.format("acidstore")`` (docs/streaming.md)."""

    #: the first write id to emit the changes of; "latest": only writes after the start;
    #: None: the table's rows first (a snapshot), then every later write
    starting_version: int | Literal["latest"] | None = None
    #: write ids one micro-batch covers at most (None: no limit)
    max_writes: int | None = None
    #: pass over writes that updated or deleted rows instead of failing on them
    skip_change_commits: bool = False
    #: emit the change feed (``_change_type``, ``_write_id``, ``_commit_time``, ``row__id``)
    change_feed: bool = False
    #: task sizing and lease length, as batch reads take them
    read: ReadOptions = field(default_factory=ReadOptions)


def _flag(options: Mapping[str, str], key: str) -> bool:
    value = options.get(key, "false").strip().lower()
    if value not in _TRUE | _FALSE:
        raise InvalidInputError(f"option {key}={value!r} must be true or false")
    return value in _TRUE


def _positive(options: Mapping[str, str], key: str, what: str) -> int | None:
    text = options.get(key)
    if text is None:
        return None
    if not text.strip().isdigit() or int(text) < 1:
        raise InvalidInputError(f"option {key}={text!r} must be {what} (an integer from 1)")
    return int(text)


def stream_read_options(options: Mapping[str, str]) -> StreamReadOptions:
    """Parse (and check) a stream read's options."""
    given = _options(options)
    check_options(given, STREAM_READ_OPTIONS, "stream read")
    starting: int | Literal["latest"] | None
    if given.get("startingVersion", "").strip().lower() == "latest":
        starting = "latest"
    else:
        starting = _positive(given, "startingVersion", "a write id or 'latest'")
    change_feed = _flag(given, "readChangeFeed")
    skip = _flag(given, "skipChangeCommits")
    if change_feed and skip:
        raise InvalidInputError(
            "options readChangeFeed and skipChangeCommits do not go together: the change "
            "feed emits the changes of every write, updates and deletes included")
    sizing = {k: v for k, v in given.items()
              if k.lower() in {"maxpartitionbytes", "minpartitions", "leaseseconds"}}
    return StreamReadOptions(starting, _positive(given, "maxWritesPerTrigger", "a count of "
                                                 "writes"), skip, change_feed,
                             read_options(sizing))


def check_stream_write(options: Mapping[str, str], table: str) -> None:
    """Refuse what a stream write cannot take: the idempotent-write pair (the sink derives it
    from the query: its id and each batch id) and unknown options."""
    given = _options(options)
    for name in ("txnAppId", "txnVersion"):
        if name in given:
            raise UnknownOptionError(
                f"option {name} of the streaming write to {table}: leave it out; each "
                "micro-batch is an idempotent write whose application id is the query's id "
                "(kept in its checkpoint) and whose version is the batch id")
    check_options(given, STREAM_WRITE_OPTIONS, "stream write", internal=_SPARK_WRITE_OPTIONS)


@dataclass(frozen=True)
class Offset:
    """Where a stream is: every write id up to ``write_id`` was emitted. While the stream
    emits its first snapshot, ``snapshot`` is the write id that snapshot is read at;
    ``initial`` marks the start of a stream whose snapshot is still to be fixed."""

    write_id: int
    snapshot: int | None = None
    initial: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"writeId": self.write_id}
        if self.snapshot is not None:
            out["snapshot"] = self.snapshot
        if self.initial:
            out["initialSnapshot"] = True
        return out

    @classmethod
    def of(cls, value: Mapping[str, Any], table: str) -> Offset:
        """The offset Spark kept (JSON), checked: a checkpoint of another source's query,
        or a hand-edited one, is refused rather than misread."""
        try:
            write_id = value["writeId"]
            snapshot = value.get("snapshot")
            initial = value.get("initialSnapshot", False)
            if not (isinstance(write_id, int) and write_id >= 0
                    and (snapshot is None or isinstance(snapshot, int))
                    and isinstance(initial, bool)):
                raise TypeError(value)
        except (KeyError, TypeError, AttributeError):
            raise InvalidInputError(
                f"the streaming query's checkpoint holds {value!r} as its offset in {table}, "
                "which is no offset of format('acidstore') (a write id): was the checkpoint "
                "made by a query of another source? Start the query with a new "
                "checkpointLocation") from None
        return cls(write_id, snapshot, initial)
