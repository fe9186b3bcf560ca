"""A throwaway PostgreSQL server for the tests and benchmark M1: ``initdb`` + ``pg_ctl``.

The server is real (the Debian package's binaries, from PATH or /usr/lib/postgresql/*/bin),
listens on 127.0.0.1 on a free port in a temp dir and trusts local connections. For the tests
it runs with ``fsync=off`` (nothing in it must survive the run); ``start(durable=True)`` keeps
PostgreSQL's default durability, which is what a benchmark must measure. ``initdb`` refuses
to run as root, so under root (CI containers) every server process runs as the unprivileged
``postgres`` user the package creates, owning the data directory.

If the binaries are missing or the server does not start, ``start`` raises: the PostgreSQL
tests then fail, they are not skipped (CI installs the package, ``.ci/run``). Only an explicit
``ACIDSTORE_SKIP_POSTGRES=1`` skips them.
"""

from __future__ import annotations

import glob
import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

SKIP_ENV = "ACIDSTORE_SKIP_POSTGRES"
_names = itertools.count()


def _binaries() -> Path:
    found = shutil.which("pg_ctl")
    if found:
        return Path(found).resolve().parent
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
                        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit()
                        else 0)
    if not candidates:
        raise RuntimeError("PostgreSQL server binaries (pg_ctl, initdb) are neither on PATH "
                           "nor in /usr/lib/postgresql/*/bin: apt-get install postgresql, or "
                           f"set {SKIP_ENV}=1 to skip the PostgreSQL tests")
    return Path(candidates[-1]).parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class PostgresServer:
    """A running server; ``url(db)`` names a database on it, ``new_store`` makes an empty
    metastore location on it."""

    root: Path
    port: int
    bin_dir: Path
    run_as: str | None

    def url(self, database: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def new_store(self) -> str:
        """The URL of a new, empty schema of its own in one shared database: the metastore
        creates its tables in the first schema of the connection's ``search_path`` (libpq's
        ``options``). A schema costs a catalog row where a database costs a copy of the
        template's files, and tests make hundreds of stores."""
        import psycopg

        name = f"ms_{os.getpid()}_{next(_names)}"
        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{name}"')
        return f"{self.url('postgres')}?options=-csearch_path%3D{name}"

    def _run(self, *args: str) -> None:
        command = [str(self.bin_dir / args[0]), *args[1:]]
        if self.run_as is not None:
            command = ["runuser", "-u", self.run_as, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}): "
                               f"{done.stdout}{done.stderr}{tail}")

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)


def start(*, durable: bool = False) -> PostgresServer:
    """Start a server in a new temp dir (see the module docstring)."""
    bin_dir = _binaries()
    run_as = None
    root = Path(tempfile.mkdtemp(prefix="acidstore-pg-"))
    if os.geteuid() == 0:
        run_as = "postgres"
        try:
            user = pwd.getpwnam(run_as)
        except KeyError as exc:
            raise RuntimeError("running as root, but there is no 'postgres' user to run the "
                               "PostgreSQL server as (the Debian package creates it)") from exc
        os.chown(root, user.pw_uid, user.pw_gid)
    server = PostgresServer(root, _free_port(), bin_dir, run_as)
    data = root / "data"
    server._run("initdb", "-D", str(data), "-A", "trust", "-U", "postgres", "-E", "UTF8",
                "--no-sync", "--no-instructions")
    options = f"-p {server.port} -k {root} -c listen_addresses=127.0.0.1 -c max_connections=200"
    if not durable:
        options += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    server._run("pg_ctl", "-D", str(data), "-o", options, "-l", str(root / "server.log"),
                "-w", "-t", "60", "start")
    return server
