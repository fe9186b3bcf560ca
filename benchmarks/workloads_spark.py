"""Rows of S1 (Spark read after W2-W4) and S2 (Spark UPDATE / DELETE / MERGE), acidstore beside
plain Spark on plain ORC files of the same rows.

Targets are wave 2's, as ratios acidstore / peer: S1 "within 1.25x" of Spark's native ORC
read is ``<= 1.25x``; S2 UPDATE and DELETE at most 0.15x the Spark rewrite, MERGE 0.25x (the
shuffled MERGE, a source too large to broadcast, 0.4x).
Peak RSS in the table is the Python driver's; each row's note gives the JVM's peak and the
largest Spark Python worker's.
"""

from __future__ import annotations

from benchmarks.harness import Bench, Measurement
from benchmarks.report import Row

#: the report's note on the RSS columns of S1, S2 and S3
RSS_NOTE = ("Spark rows (S1-S3): the peak RSS columns are the Python driver process only: "
            "Spark's JVM and its Python workers (where acidstore decodes ORC and writes files) "
            "are other processes; their peaks (VmHWM) follow.")


def memory_note(label: str, ours: Measurement, peer: Measurement) -> str:
    def one(m: Measurement) -> str:
        return (f"JVM {m.extra.get('jvm_rss_mb', 0):.0f} MB, largest Python worker "
                f"{m.extra.get('worker_rss_mb', 0):.0f} MB")
    return f"{label}: acidstore {one(ours)}; peer {one(peer)}"


def _row(workload: str, label: str, what: str, ours: Measurement, peer_name: str,
         peer: Measurement, target: str) -> Row:
    return Row(workload, what, ours, peer_name, peer, target,
               note=memory_note(label, ours, peer))


#: S1's filtered scans (no target: what pushed filters buy on each reader): ``id`` rises
#: through each bucket file, so its range rules out most stripes; ``k`` is uniform in every
#: stripe, so statistics rule out none and the filter is Spark's alone (W6's)
FILTERED_SCANS = [
    ("id BETWEEN 5000000 AND 5010000", "stripes skipped by statistics"),
    ("k < 10", "no stripe can be skipped"),
]


def s1(m: Bench) -> list[Row]:
    native, java, python = m.together(
        ("spark_scan", {"engine": "native"}), ("spark_scan", {"engine": "acid"}),
        ("spark_scan", {"engine": "acid", "split_by_cores": True}))
    what = "Spark full scan after W2-W4, write.format('noop')"
    rows = [
        _row("S1", "toDF()", f"{what}: AcidTable.toDF() (the Java reader)", java,
             "Spark native ORC read, 10 files", native, "<= 1.25x"),
        _row("S1", "Python data source", f"{what}: format('acidstore'), the Python data "
             "source, maxPartitionBytes = bytes / cores", python,
             "Spark native ORC read, 10 files", native, "(<= 1.25x)"),
    ]
    for where, why in FILTERED_SCANS:
        ours, peer = m.together(("spark_scan", {"engine": "acid", "where": where}),
                                ("spark_scan", {"engine": "native", "where": where}))
        rows.append(_row("S1", f"where {where}", f"the same scan after W2-W4 with "
                         f"where({where!r}): {why}", ours, "Spark native ORC read, same filter",
                         peer, "-"))
    return rows


def s2(m: Bench) -> list[Row]:
    shapes = [
        ("update", "10 x AcidTable.update v1 = v1 + 1 WHERE id % 1000 = r (rows: updated)",
         "Spark rewrite x 10", "<= 0.15x"),
        ("delete", "AcidTable.delete id % 100 = 3 (rows: deleted)", "Spark rewrite",
         "<= 0.15x"),
        ("merge", "AcidTable MERGE 1% matched (update all) + 1% new (insert all) "
         "(rows: changed)", "Spark rewrite (anti join + union)", "<= 0.25x"),
    ]
    #: per op, the variants measured beside its rewrite: the default, then the update's units
    #: in the driver (opt-in) and the shuffled MERGE (source above maxSourceBytes)
    variants: dict[str, list[dict[str, bool]]] = {
        "update": [{}, {"in_driver": True}], "delete": [{}], "merge": [{}, {"shuffle": True}]}
    measured = {op: m.together(("spark_change", {"engine": "rewrite", "op": op}),
                               *(("spark_change", {"engine": "acid", "op": op, **variant})
                                 for variant in variants[op]))
                for op in variants}
    rows = [_row("S2", op, what, measured[op][1], peer, measured[op][0], target)
            for op, what, peer, target in shapes]
    # the shuffled MERGE beside the broadcast one (a CDC upsert whose source is too large
    # to broadcast: the source shuffled to the units of its bucket)
    rows.append(_row("S2", "merge shuffled", "the same MERGE, source above "
                     "maxSourceBytes (the shuffled MERGE: source shuffled by bucket)",
                     measured["merge"][2], "Spark rewrite (anti join + union)",
                     measured["merge"][0], "<= 0.4x"))
    rows.append(_row("S2", "update in the driver", "the same 10 UPDATEs, units in the driver "
                     "(spark.acidstore.dml.inDriverOnLocal=true, opt-in)",
                     measured["update"][2], "Spark rewrite x 10", measured["update"][0],
                     "<= 0.15x"))
    return rows
