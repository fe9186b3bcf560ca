"""``acidstore clean``: one cleaner pass, optionally releasing reader leases first.

A Spark read leases its snapshot for an hour (``leaseSeconds``), long after a short job has
finished, and the cleaner keeps whatever a live lease's snapshot reads. When an operator
knows those readers are gone, ``--release-lease ID`` (from ``acidstore show leases``) or
``--release-leases-older-than 30m`` drops them and the same pass removes what they held.
Releasing the lease of a reader that is still running lets its files vanish under it: the
reader then fails with a missing-file error, it never returns wrong rows.
"""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from acidstore.api.warehouse import Warehouse
from acidstore.cli.common import add_warehouse_options, emit, open_warehouse
from acidstore.config import RETENTION_SECONDS
from acidstore.errors import InvalidInputError
from compaction.cleaner import Cleaner
from compaction.scheduler import parse_interval

if TYPE_CHECKING:
    from acidstore.cli.common import Subparsers

__all__ = ["add_clean_command", "run_clean"]


def add_clean_command(sub: Subparsers) -> None:
    cmd = sub.add_parser(
        "clean", help="remove what compactions replaced and what aborted writes left "
        "(optionally releasing stuck reader leases first)",
        description="Removes obsolete directories (replaced by a compaction or an INSERT "
        "OVERWRITE) once --retention has passed and no reader lease or open transaction "
        "still reads them, and the files of aborted writes. Safe while readers and writers "
        "run.")
    add_warehouse_options(cmd)
    cmd.add_argument("--retention", type=float, default=RETENTION_SECONDS,
                     metavar="SECONDS", help="keep what a compaction replaced this long after "
                     f"it committed, for time travel (default {RETENTION_SECONDS:.0f})")
    cmd.add_argument("--release-lease", type=int, action="append", default=[], metavar="ID",
                     help="release this reader lease first (repeatable; ids from: acidstore "
                     "show leases)")
    cmd.add_argument("--release-leases-older-than", metavar="AGE", default=None,
                     help="release every lease taken longer ago than AGE first, e.g. 30m or "
                     "2h (for readers known to be finished)")


def _release(wh: Warehouse, ids: list[int], older_than: str | None) -> list[dict[str, Any]]:
    """Release the leases asked for; every id must name a live lease (a typo must not pass
    silently while the lease it meant keeps blocking the cleaner)."""
    leases = {row["lease_id"]: row for row in wh.show_leases().to_pylist()}
    unknown = [i for i in ids if i not in leases]
    if unknown:
        raise InvalidInputError(
            f"no live reader lease {', '.join(map(str, unknown))} in {wh.location} (expired "
            f"or released already); live leases: {sorted(leases) or 'none'}")
    chosen = set(ids)
    if older_than is not None:
        # lease times are the metastore's clock: so is the cutoff, whatever this host's says
        cutoff = wh.metastore.current_time() - timedelta(seconds=parse_interval(older_than))
        chosen |= {i for i, row in leases.items() if row["acquired"] < cutoff}
    for lease_id in sorted(chosen):
        wh.metastore.release_lease(lease_id)
    return [leases[i] for i in sorted(chosen)]


def run_clean(args: argparse.Namespace) -> None:
    with open_warehouse(args) as wh:
        released = _release(wh, args.release_lease, args.release_leases_older_than)
        report = Cleaner(wh, retention_seconds=args.retention).run()
    document = {
        "released_leases": released,
        "removed": report.removed,
        "kept_for_readers": report.kept_for_readers,
        "compactions_cleaned": report.cleaned,
        "compactions_waiting": report.waiting,
        "aborted_write_ids_forgotten": report.forgotten,
    }

    def text() -> str:
        lines = [f"released lease {r['lease_id']} on {r['table']} (taken "
                 f"{r['acquired']:%Y-%m-%d %H:%M:%S})" for r in released]
        lines += [f"removed {path}" for path in report.removed]
        lines += [f"kept    {path}  (a reader lease or open transaction reads it)"
                  for path in report.kept_for_readers]
        lines.append(f"{len(report.removed)} directories removed, "
                     f"{len(report.kept_for_readers)} kept for readers; compactions cleaned: "
                     f"{len(report.cleaned)}, waiting for retention or readers: "
                     f"{len(report.waiting)}; aborted write ids forgotten: "
                     f"{sum(report.forgotten.values())}")
        return "\n".join(lines)

    emit(args, document, text)
