"""Names of Hive full-ACID directories and files (layer L1: stdlib only).

Every name a Hive ACID table uses is parsed into a frozen dataclass and printed back from it,
so the rest of acidstore never slices strings. Two properties hold for every value ``x``:
``X.parse(x.name) == x``, and a canonical (writer-produced) name survives
``parse(name).name == name``.

Parsing follows Hive's readers, not its writers: numbers are read the way ``Long.parseLong``
reads them, so ``delta_40_60``, ``delta_00061_61`` and ``base_-9223372036854775808`` are all
legal, while printing always uses the writer widths (``%07d`` ids, ``%04d`` statements,
``%05d`` buckets, ``%06d`` legacy buckets). A name that does not parse raises
:class:`~acidstore.errors.InvalidLayoutError` naming it: a reader that guessed would silently
drop or double-count data.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache

from acidstore.config import PARSED_NAMES_KEPT
from acidstore.errors import InvalidLayoutError

__all__ = [
    "ACID_VERSION",
    "ACID_VERSION_FILE",
    "BASE_PREFIX",
    "BUCKET_PREFIX",
    "DELETE_DELTA_PREFIX",
    "DELTA_PREFIX",
    "FLUSH_LENGTH_SUFFIX",
    "MAX_STATEMENTS_PER_TXN",
    "METADATA_FILE",
    "VISIBILITY_PREFIX",
    "BucketPathInfo",
    "MetadataAcid",
    "ParsedBase",
    "ParsedBucketFile",
    "ParsedDelta",
    "ParsedOriginalFile",
    "base_name",
    "bucket_file_name",
    "delta_name",
    "flush_length_file",
    "is_acid_directory_name",
    "is_bucket_file",
    "is_flush_length_file",
    "STAGING_DIR",
    "is_hidden",
    "is_original_file",
    "original_file_name",
    "parse_bucket_path",
    "parse_directory",
    "parse_flush_length_file",
    "parse_metadata_acid",
]

BASE_PREFIX = "base_"
DELTA_PREFIX = "delta_"
DELETE_DELTA_PREFIX = "delete_delta_"
BUCKET_PREFIX = "bucket_"
VISIBILITY_PREFIX = "_v"
FLUSH_LENGTH_SUFFIX = "_flush_length"
ACID_VERSION_FILE = "_orc_acid_version"
ACID_VERSION = "2"
METADATA_FILE = "_metadata_acid"
MAX_STATEMENTS_PER_TXN = 10000
COPY_KEYWORD = "_copy_"

_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1
_INT_MIN, _INT_MAX = -(2**31), 2**31 - 1

# Java's parseLong/parseInt accept an optional sign and decimal digits; we accept ASCII digits
# only (Java would also take other Unicode digits, which no Hive writer ever produces).
_JAVA_NUMBER = re.compile(r"[+-]?[0-9]+")
_BUCKET_PATTERN = re.compile(r"bucket_([0-9]+)(_[0-9]+)?")
_ORIGINAL_PATTERN = re.compile(r"([0-9]+)_([0-9]+)")
_ORIGINAL_PATTERN_COPY = re.compile(r"([0-9]+)_([0-9]+)_copy_([0-9]+)")
_METADATA_VERSION = "0"
_METADATA_FORMATS = ("compacted", "truncated")


def _java_number(text: str, what: str, name: str, *, bits: int = 64) -> int:
    """Read a number the way Hive's ``Long.parseLong``/``Integer.parseInt`` would, or refuse."""
    low, high = (_LONG_MIN, _LONG_MAX) if bits == 64 else (_INT_MIN, _INT_MAX)
    if _JAVA_NUMBER.fullmatch(text) is None:
        raise InvalidLayoutError(f"{what} {text!r} is not a number", path=name)
    value = int(text)
    if not low <= value <= high:
        raise InvalidLayoutError(f"{what} {text} does not fit a {bits}-bit integer", path=name)
    return value


def _check_range(value: int, what: str, low: int, high: int) -> None:
    """Keep values printable by Hive: its readers would overflow on anything wider."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidLayoutError(f"{what} must be an integer in [{low}, {high}], got {value!r}")


# --- directories ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParsedBase:
    """``base_<W>[_v<T>]``: everything up to write id W, folded by major compaction or written
    by INSERT OVERWRITE. T (the compactor's "visibility" txn) is 0 when the suffix is absent,
    which Hive treats as always visible."""

    write_id: int
    visibility_txn_id: int = 0

    def __post_init__(self) -> None:
        _check_range(self.write_id, "base write id", _LONG_MIN, _LONG_MAX)
        _check_range(self.visibility_txn_id, "visibility txn id", _LONG_MIN, _LONG_MAX)

    @property
    def name(self) -> str:
        return base_name(self.write_id, self.visibility_txn_id)

    @classmethod
    def parse(cls, name: str) -> ParsedBase:
        """Read a base directory name; ``_v`` splits off the visibility txn (first occurrence)."""
        return _parse_base(name)

    @classmethod
    def _read(cls, name: str) -> ParsedBase:
        if not name.startswith(BASE_PREFIX):
            raise InvalidLayoutError(f"not a base directory (no {BASE_PREFIX!r} prefix)", path=name)
        rest = name[len(BASE_PREFIX):]
        cut = rest.find(VISIBILITY_PREFIX)
        if cut < 0:
            return cls(_java_number(rest, "base write id", name))
        return cls(
            _java_number(rest[:cut], "base write id", name),
            _java_number(rest[cut + len(VISIBILITY_PREFIX):], "visibility txn id", name),
        )


@dataclass(frozen=True, slots=True)
class ParsedDelta:
    """``delta_<min>_<max>[_<stmt>][_v<T>]`` or the same with ``delete_delta_``.

    ``statement_id == -1`` means the name has no statement part (pre-1.3 names and compactor
    output); Hive uses the same sentinel internally, and it makes a minor-compacted delta sort
    before the per-statement deltas it replaced."""

    min_write_id: int
    max_write_id: int
    statement_id: int = -1
    visibility_txn_id: int = 0
    delete: bool = False

    def __post_init__(self) -> None:
        _check_range(self.min_write_id, "min write id", _LONG_MIN, _LONG_MAX)
        _check_range(self.max_write_id, "max write id", _LONG_MIN, _LONG_MAX)
        _check_range(self.statement_id, "statement id", _INT_MIN, _INT_MAX)
        _check_range(self.visibility_txn_id, "visibility txn id", _LONG_MIN, _LONG_MAX)

    @property
    def prefix(self) -> str:
        return DELETE_DELTA_PREFIX if self.delete else DELTA_PREFIX

    @property
    def name(self) -> str:
        return delta_name(self.min_write_id, self.max_write_id, self.statement_id,
                          self.visibility_txn_id, delete=self.delete)

    @property
    def has_statement_id(self) -> bool:
        return self.statement_id >= 0

    @property
    def sort_key(self) -> tuple[int, int, int]:
        """Spec 7.5 order without the final path tie-break: min ascending, max descending (the
        wider delta first, so it shadows the narrower ones), statement ascending."""
        return (self.min_write_id, -self.max_write_id, self.statement_id)

    @classmethod
    def parse(cls, name: str) -> ParsedDelta:
        """Read an insert- or delete-delta directory name, leniently as Hive does."""
        return _parse_delta(name)

    @classmethod
    def _read(cls, name: str) -> ParsedDelta:
        text = name
        visibility = 0
        cut = text.find(VISIBILITY_PREFIX)
        if cut >= 0:
            visibility = _java_number(text[cut + len(VISIBILITY_PREFIX):], "visibility txn id",
                                      name)
            text = text[:cut]
        if text.startswith(DELETE_DELTA_PREFIX):
            delete, rest = True, text[len(DELETE_DELTA_PREFIX):]
        elif text.startswith(DELTA_PREFIX):
            delete, rest = False, text[len(DELTA_PREFIX):]
        else:
            raise InvalidLayoutError("not a delta directory (no delta_/delete_delta_ prefix)",
                                     path=name)
        parts = rest.split("_", 2)
        if len(parts) < 2:
            raise InvalidLayoutError("delta name needs <min>_<max>", path=name)
        low = _java_number(parts[0], "min write id", name)
        high = _java_number(parts[1], "max write id", name)
        statement = -1
        if len(parts) == 3:
            statement = _java_number(parts[2], "statement id", name, bits=32)
        return cls(low, high, statement, visibility, delete)


# remembered parses: parsing is a pure function of the name and its results are frozen, so a
# remembered one is always right (errors are raised again each time: lru_cache keeps only
# results)
_parse_base = lru_cache(maxsize=PARSED_NAMES_KEPT)(ParsedBase._read)
_parse_delta = lru_cache(maxsize=PARSED_NAMES_KEPT)(ParsedDelta._read)


def parse_directory(name: str) -> ParsedBase | ParsedDelta:
    """Parse any ACID directory name; other names are not guessed at."""
    if name.startswith(BASE_PREFIX):
        return ParsedBase.parse(name)
    if name.startswith((DELTA_PREFIX, DELETE_DELTA_PREFIX)):
        return ParsedDelta.parse(name)
    raise InvalidLayoutError("not an ACID directory name (base_/delta_/delete_delta_)", path=name)


def is_acid_directory_name(name: str) -> bool:
    """True for names Hive routes to base/delta processing (a prefix test, as in Hive)."""
    return name.startswith((BASE_PREFIX, DELTA_PREFIX, DELETE_DELTA_PREFIX))


#: where Spark writers stage files per transaction (``txn_<id>/attempt_<n>/``); hidden from
#: readers by its leading underscore, removed by the cleaner once the txn is over
STAGING_DIR = "_acidstore_staging"


def is_hidden(name: str) -> bool:
    """Hive's hidden-file filter: staging dirs and markers start with '_' or '.'."""
    return name.startswith(("_", "."))


def base_name(write_id: int, visibility_txn_id: int = 0) -> str:
    """``base_%07d`` plus ``_v%07d`` unless the visibility txn is 0 (the two are equivalent)."""
    return f"{BASE_PREFIX}{write_id:07d}" + _visibility_suffix(visibility_txn_id)


def delta_name(min_write_id: int, max_write_id: int, statement_id: int = -1,
               visibility_txn_id: int = 0, *, delete: bool = False) -> str:
    """The writer's name: statement id -1 prints no statement part (compactor output)."""
    prefix = DELETE_DELTA_PREFIX if delete else DELTA_PREFIX
    out = f"{prefix}{min_write_id:07d}_{max_write_id:07d}"
    if statement_id != -1:
        out += f"_{statement_id:04d}"
    return out + _visibility_suffix(visibility_txn_id)


def _visibility_suffix(visibility_txn_id: int) -> str:
    return "" if visibility_txn_id == 0 else f"{VISIBILITY_PREFIX}{visibility_txn_id:07d}"


# --- files ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ParsedBucketFile:
    """``bucket_%05d[_<attempt>]`` inside a base/delta; the attempt suffix comes from Hive's
    "direct insert" writers, and readers must still map it to the bucket."""

    bucket_id: int
    attempt_id: int | None = None

    def __post_init__(self) -> None:
        _check_range(self.bucket_id, "bucket id", 0, _INT_MAX)
        if self.attempt_id is not None:
            _check_range(self.attempt_id, "attempt id", 0, _INT_MAX)

    @property
    def name(self) -> str:
        return bucket_file_name(self.bucket_id, self.attempt_id)

    @classmethod
    def parse(cls, name: str) -> ParsedBucketFile:
        """Whole-name match of ``bucket_([0-9]+)(_[0-9]+)?``: side files do not qualify."""
        return _parse_bucket_file(name)

    @classmethod
    def _read(cls, name: str) -> ParsedBucketFile:
        match = _BUCKET_PATTERN.fullmatch(name)
        if match is None:
            raise InvalidLayoutError("not a bucket file name (bucket_N[_attempt])", path=name)
        bucket = _java_number(match.group(1), "bucket id", name, bits=32)
        attempt = match.group(2)
        return cls(bucket, None if attempt is None
                   else _java_number(attempt[1:], "attempt id", name, bits=32))


_parse_bucket_file = lru_cache(maxsize=PARSED_NAMES_KEPT)(ParsedBucketFile._read)


@dataclass(frozen=True, slots=True)
class ParsedOriginalFile:
    """A pre-ACID (or LOAD DATA) file ``NNNNNN_T[_copy_K]``: bucket id before the first '_',
    task suffix after it, copy number after the last '_'. Its path order fixes the synthetic
    row ids of the rows inside, so the name is kept exactly."""

    bucket_id: int
    copy_number: int = 0
    task_suffix: int = 0

    def __post_init__(self) -> None:
        _check_range(self.bucket_id, "bucket id", 0, _INT_MAX)
        _check_range(self.copy_number, "copy number", 0, _INT_MAX)
        _check_range(self.task_suffix, "task suffix", 0, _LONG_MAX)

    @property
    def name(self) -> str:
        out = f"{self.bucket_id:06d}_{self.task_suffix}"
        return out + (f"{COPY_KEYWORD}{self.copy_number}" if self.copy_number else "")

    @classmethod
    def parse(cls, name: str) -> ParsedOriginalFile:
        match = _ORIGINAL_PATTERN.fullmatch(name) or _ORIGINAL_PATTERN_COPY.fullmatch(name)
        if match is None:
            raise InvalidLayoutError("not an original file name (N_N or N_N_copy_N)", path=name)
        groups = match.groups()
        bucket = _java_number(groups[0], "bucket id", name, bits=32)
        task = _java_number(groups[1], "task suffix", name)
        copy = _java_number(groups[2], "copy number", name, bits=32) if len(groups) == 3 else 0
        return cls(bucket, copy, task)


def is_bucket_file(name: str) -> bool:
    """Bucket data files only: ``bucket_00001_flush_length`` and markers are not."""
    return _BUCKET_PATTERN.fullmatch(name) is not None


def is_original_file(name: str) -> bool:
    return (_ORIGINAL_PATTERN.fullmatch(name) is not None
            or _ORIGINAL_PATTERN_COPY.fullmatch(name) is not None)


def bucket_file_name(bucket_id: int, attempt_id: int | None = None) -> str:
    return f"{BUCKET_PREFIX}{bucket_id:05d}" + ("" if attempt_id is None else f"_{attempt_id}")


def original_file_name(bucket_id: int, copy_number: int = 0) -> str:
    """The legacy writer's ``%06d_0`` (``_copy_N`` when a name was taken)."""
    return ParsedOriginalFile(bucket_id, copy_number).name


def flush_length_file(bucket_file_name: str) -> str:
    """Streaming ingest's side file holding the committed length of an open bucket file."""
    ParsedBucketFile.parse(bucket_file_name)
    return bucket_file_name + FLUSH_LENGTH_SUFFIX


def is_flush_length_file(name: str) -> bool:
    return name.endswith(FLUSH_LENGTH_SUFFIX) and is_bucket_file(name[:-len(FLUSH_LENGTH_SUFFIX)])


def parse_flush_length_file(name: str) -> ParsedBucketFile:
    """The bucket file a ``*_flush_length`` side file belongs to."""
    if not name.endswith(FLUSH_LENGTH_SUFFIX):
        raise InvalidLayoutError(f"not a side file (no {FLUSH_LENGTH_SUFFIX!r} suffix)", path=name)
    return ParsedBucketFile.parse(name[:-len(FLUSH_LENGTH_SUFFIX)])


# --- _metadata_acid ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetadataAcid:
    """The ``_metadata_acid`` JSON marker. Pre-Hive-4 compactors wrote it into their base so a
    compacted base (history erased) can be told from an INSERT OVERWRITE base (history kept)."""

    this_file_version: str = _METADATA_VERSION
    data_format: str | None = None

    @property
    def is_compacted(self) -> bool:
        return self.data_format is not None and self.data_format.lower() == "compacted"

    def to_json(self) -> str:
        """Hive's own serialisation (Jackson over a HashMap puts the version key first)."""
        body: dict[str, str] = {"thisFileVersion": self.this_file_version}
        if self.data_format is not None:
            body["dataFormat"] = self.data_format
        return json.dumps(body, separators=(",", ":"))


def parse_metadata_acid(text: str) -> MetadataAcid:
    """Read ``_metadata_acid``; Hive refuses other versions and unknown formats, and so do we
    (a wrong answer here decides whether history may be read through a base)."""
    try:
        body = json.loads(text)
    except ValueError as exc:
        raise InvalidLayoutError(f"{METADATA_FILE} is not JSON ({exc})") from None
    if not isinstance(body, dict):
        raise InvalidLayoutError(f"{METADATA_FILE} must hold a JSON object")
    version = body.get("thisFileVersion")
    if not isinstance(version, str) or version.lower() != _METADATA_VERSION:
        raise InvalidLayoutError(f"unexpected {METADATA_FILE} version {version!r}")
    data_format = body.get("dataFormat")
    if not isinstance(data_format, str) or data_format.lower() not in _METADATA_FORMATS:
        raise InvalidLayoutError(f"unexpected {METADATA_FILE} dataFormat {data_format!r}")
    return MetadataAcid(version, data_format)


# --- bucket paths -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class BucketPathInfo:
    """What a data file's path says about its rows (Hive's parseBaseOrDeltaBucketFilename).

    ``old_style`` files carry no ACID columns (original or LOAD DATA files); their write ids
    come from the enclosing ``delta_`` dir, or are 0 when there is none."""

    old_style: bool
    writing_base: bool
    min_write_id: int
    max_write_id: int
    bucket_id: int
    statement_id: int
    attempt_id: int | None = None


def parse_bucket_path(path: str) -> BucketPathInfo:
    """Classify ``[.../]<dir>/<file>`` by its file name and its parent directory's name."""
    segments = path.rstrip("/").split("/")
    filename = segments[-1]
    parent = segments[-2] if len(segments) > 1 else ""
    if is_original_file(filename):
        bucket = ParsedOriginalFile.parse(filename).bucket_id
        if parent.startswith(DELTA_PREFIX):
            delta = ParsedDelta.parse(parent)
            # Hive reads the statement through its getter here, which reports 0 for "none".
            return BucketPathInfo(True, False, delta.min_write_id, delta.max_write_id, bucket,
                                  max(delta.statement_id, 0))
        return BucketPathInfo(True, True, 0, 0, bucket, -1)
    if not filename.startswith(BUCKET_PREFIX):
        raise InvalidLayoutError("not a bucket or original data file name", path=path)
    bucket_file = ParsedBucketFile.parse(filename)
    if parent.startswith(BASE_PREFIX):
        # statement 0 is the writer-options default that a base file name leaves untouched
        return BucketPathInfo(False, True, 0, ParsedBase.parse(parent).write_id,
                              bucket_file.bucket_id, 0)
    if parent.startswith(DELTA_PREFIX):
        delta = ParsedDelta.parse(parent)
        return BucketPathInfo(False, False, delta.min_write_id, delta.max_write_id,
                              bucket_file.bucket_id, delta.statement_id, bucket_file.attempt_id)
    if parent.startswith(DELETE_DELTA_PREFIX):
        delta = ParsedDelta.parse(parent)
        return BucketPathInfo(False, False, delta.min_write_id, delta.max_write_id,
                              bucket_file.bucket_id, delta.statement_id)
    raise InvalidLayoutError("bucket file outside a base/delta/delete_delta directory", path=path)
