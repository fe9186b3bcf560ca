"""A throwaway S3 API server on loopback for the tests and the planning benchmark: moto's
server mode (``python -m moto.server``) in a child process on a free port.

The server is a real HTTP endpoint speaking the S3 REST API (pyarrow's S3 client talks to
it as to AWS: signed requests, multipart uploads, delimiter listings), holding objects in its
memory, so nothing outlives ``stop``. It accepts any credentials; the tests use fixed dummy
ones. If moto is missing or the server does not answer, ``start`` raises: the S3 tests then
fail, they are not skipped (``pip install -c constraints.txt -e ".[dev]"`` installs moto).
"""

from __future__ import annotations

import itertools
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.fs as pafs

from benchmarks.postgres_server import _free_port

#: what the test clients sign with (moto checks nothing; real servers would)
ACCESS_KEY = "acidstore-test"
SECRET_KEY = "acidstore-test-secret"
REGION = "us-east-1"
_names = itertools.count()


@dataclass
class S3Server:
    """A running server: ``filesystem()`` is a pyarrow client of it, ``new_bucket()`` an
    empty bucket of its own, ``environ()`` the variables pyarrow reads for ``s3://`` URIs."""

    port: int
    process: subprocess.Popen[bytes]
    log: Path
    buckets: list[str] = field(default_factory=list)

    @property
    def endpoint(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return f"http://{self.endpoint}"

    def filesystem(self, **options: object) -> pafs.S3FileSystem:
        return pafs.S3FileSystem(endpoint_override=self.endpoint, scheme="http",
                                 access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION,
                                 **options)

    def environ(self) -> dict[str, str]:
        """What makes ``acidstore.connect("s3://bucket/wh", ...)`` reach this server with no
        ``filesystem=`` (pyarrow resolves endpoint, region and credentials from these)."""
        return {"AWS_ENDPOINT_URL": self.url, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_DEFAULT_REGION": REGION,
                "AWS_REGION": REGION, "AWS_EC2_METADATA_DISABLED": "true"}

    def requests(self) -> list[str]:
        """The request lines the server logged so far (one per request it answered). The
        server logs a request just after answering it, so this waits until the log stops
        growing: a count taken right after a client call includes that call."""
        size = -1
        while (current := self.log.stat().st_size) != size:
            size = current
            time.sleep(0.2)
        return [line for line in self.log.read_text(errors="replace").splitlines()
                if '" 200 ' in line or '" 204 ' in line or '" 206 ' in line
                or '" 404 ' in line]

    def new_bucket(self) -> str:
        name = f"acidstore-{next(_names)}-{int(time.time() * 1000) % 10**9}"
        self.filesystem(allow_bucket_creation=True).create_dir(name)
        self.buckets.append(name)
        return name

    def stop(self) -> None:
        """Stop the server and remove its request log (a stopped server's log is never read)."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        # the request log's temporary directory is this server's alone
        shutil.rmtree(self.log.parent, ignore_errors=True)


def start(timeout: float = 60.0) -> S3Server:
    """Start moto's server on a free loopback port and wait until it answers."""
    log = Path(tempfile.mkdtemp(prefix="acidstore-s3-")) / "moto.log"
    port = _free_port()
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = S3Server(port, process, log)
    deadline = time.monotonic() + timeout
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"moto's S3 server exited with {process.returncode} "
                               f"(is moto[s3] with flask installed?): "
                               f"{log.read_text(errors='replace')[-2000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}/moto-api/", timeout=2):
                return server
        except (urllib.error.URLError, OSError):
            if time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"moto's S3 server did not answer on {server.url} within "
                                   f"{timeout:.0f} s: {log.read_text(errors='replace')[-2000:]}"
                                   ) from None
            time.sleep(0.1)
