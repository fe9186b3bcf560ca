"""A larger chaos run than CI's, by hand: ``python tests/chaos/run.py --workers 8 --ops 200``.

N processes run seeded random DML, compaction and cleaning on one table (``chaos_support``);
then the checker proves every failure typed and the table equal to the committed operations
replayed in commit order. ``--metastore postgresql://...`` runs it on PostgreSQL (an empty
database). Prints what happened per operation and outcome; exits 1 if a check fails, naming
the seed, so the run replays with ``--seed``. The logs stay in ``--dir`` for a post-mortem.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(TESTS / "support"), str(TESTS.parent)]

from chaos_support import Place, race  # noqa: E402  (after the path setup)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--ops", type=int, default=200, help="operations per worker")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--dir", default=None, help="where the warehouse and logs go")
    parser.add_argument("--metastore", default=None, help="a PostgreSQL URL (default: SQLite)")
    args = parser.parse_args(argv)
    root = Path(args.dir or tempfile.mkdtemp(prefix="acidstore-chaos-"))
    place: Place = (str(root / "wh"), args.metastore) if args.metastore else str(root / "wh")
    print(f"chaos: {args.workers} workers x {args.ops} ops, seed {args.seed}, in {root}")
    started = time.monotonic()
    try:
        summary, final = race(place, args.workers, args.ops, args.seed, root,
                              deadline_seconds=max(600.0, args.workers * args.ops * 2.0))
    except AssertionError as exc:
        print(f"FAILED (seed {args.seed}; logs in {root}): {exc}")
        return 1
    for name, count in sorted(summary.outcomes.items()):
        print(f"  {name:24} {count}")
    print(f"  errors: {summary.errors}")
    print(f"ok: {summary.committed} committed writes replayed, {len(final)} rows, "
          f"{time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
