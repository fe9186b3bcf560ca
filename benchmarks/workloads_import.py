"""W13: how long ``import acidstore`` takes, beside ``import deltalake``.

A user's script, a CLI call and every Spark Python worker that touches a table pay the
import, so it is measured as they pay it: a new interpreter per import, nothing imported
before, the clock around the ``import`` statement alone (interpreter start-up excluded on both
sides). The task (``benchmarks.tasks_import``) runs ``IMPORTS_PER_TASK`` interpreters in turn
and reports their median; the harness runs it in rounds beside the peer's. The row also says
which heavy optional packages the import loaded (acidstore must load neither pandas nor
pyspark).
"""

from __future__ import annotations

from benchmarks.harness import Bench, Measurement
from benchmarks.report import Row
from benchmarks.tasks_import import HEAVY


def w13(m: Bench) -> list[Row]:
    ours, peer, floor = m.together(("import_time", {"module": "acidstore"}),
                                   ("import_time", {"module": "deltalake"}),
                                   ("import_time", {"module": "pyarrow"}))

    def shown(measured: Measurement) -> str:
        loaded = measured.extra.get("loaded") or "none"
        return f"loads of {', '.join(HEAVY)}: {loaded}; {measured.extra['import_rss_mb']:.0f} MB"

    return [Row("W13", f"import acidstore ({shown(ours)})", ours,
                f"import deltalake ({shown(peer)})", peer, "<= 0.5 s, loads no pandas/pyspark"),
            Row("W13", f"floor: import pyarrow, which acidstore needs ({shown(floor)})", floor,
                f"import deltalake ({shown(peer)})", peer, "-")]
