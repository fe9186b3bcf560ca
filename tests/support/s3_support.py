"""The S3 API server of the object-storage tests: one moto server for the whole run
(``benchmarks.s3_server``), started on first use and stopped at the end; each test takes a
bucket of its own. ``conftest`` registers ``s3_server``; it is never skipped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow.fs as pafs
import pytest

from benchmarks.postgres_server import PostgresServer
from benchmarks.s3_server import S3Server, start


@pytest.fixture(name="s3_server", scope="session")
def s3_server_fixture() -> Iterator[S3Server]:
    server = start()
    try:
        yield server
    finally:
        server.stop()


@dataclass(frozen=True)
class S3Place:
    """A warehouse on the test server: ``s3://{bucket}/wh`` with a metastore of its own."""

    server: S3Server
    bucket: str
    metastore: str

    @property
    def uri(self) -> str:
        return f"s3://{self.bucket}/wh"

    @property
    def root(self) -> str:
        """The warehouse's path on ``filesystem()``."""
        return f"{self.bucket}/wh"

    def filesystem(self) -> pafs.S3FileSystem:
        return self.server.filesystem()

    def objects(self) -> list[str]:
        """Every object under the warehouse (files and directory markers), as S3 lists them."""
        infos = self.filesystem().get_file_info(
            pafs.FileSelector(self.root, recursive=True, allow_not_found=True))
        return sorted(i.path[len(self.root) + 1:] for i in infos
                      if i.type == pafs.FileType.File)


@pytest.fixture(name="s3_place")
def s3_place_fixture(s3_server: S3Server, postgres_server: PostgresServer) -> S3Place:
    """A bucket of its own on the session's server, with a new PostgreSQL metastore."""
    return S3Place(s3_server, s3_server.new_bucket(), postgres_server.new_store())
