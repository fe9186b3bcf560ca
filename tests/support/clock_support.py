"""A client whose clock is not the machine's: a real Python process under libfaketime.

``run_skewed`` runs ``clock_workers.py`` with ``LD_PRELOAD`` of the Debian package
``faketime``'s library (``.ci/run`` installs it) and its clock offset read from a file the
worker itself may rewrite (``FAKETIME_TIMESTAMP_FILE`` with ``FAKETIME_NO_CACHE``), so one
process can be slow from the start or have its clock stepped after it connected. The
monotonic clock is left alone (``FAKETIME_DONT_FAKE_MONOTONIC``), as a real wall-clock step
or skew leaves it. Without the library the tests fail: a skipped clock test proves nothing.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

__all__ = ["libfaketime", "run_skewed"]

_WORKER = Path(__file__).with_name("clock_workers.py")


def libfaketime() -> str:
    """The preload library of the ``faketime`` package."""
    found = sorted(glob.glob("/usr/lib/*/faketime/libfaketime.so.1") +
                   glob.glob("/usr/lib/faketime/libfaketime.so.1") +
                   glob.glob("/usr/local/lib/faketime/libfaketime.so.1"))
    if not found:
        pytest.fail("libfaketime is missing: apt-get install faketime (.ci/run installs it)")
    return found[0]


def run_skewed(offset: str, spec: dict[str, Any], tmp_path: Path) -> dict[str, Any]:
    """Run the worker with its clock ``offset`` from the machine's (``-30``: 30 s slow) and
    return what it printed (one JSON document). ``spec`` says what it does
    (``clock_workers.main``)."""
    offset_file = tmp_path / "faketime-offset"
    offset_file.write_text(offset + "\n")
    env = {**os.environ, "LD_PRELOAD": libfaketime(),
           "FAKETIME_TIMESTAMP_FILE": str(offset_file), "FAKETIME_NO_CACHE": "1",
           "FAKETIME_DONT_FAKE_MONOTONIC": "1",
           "PYTHONPATH": os.pathsep.join([str(_WORKER.parent.parent), str(_WORKER.parent),
                                          os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(_WORKER), json.dumps(spec)], env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
