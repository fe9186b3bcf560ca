"""``python -m acidstore``: the ``acidstore`` command, for where the installed script is not
on PATH (a virtualenv that is not activated, a cron job, a container's entry point)."""

from __future__ import annotations

import sys

from acidstore.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
