"""Chaos: several real processes run random DML, compaction and cleaning on one small table at
once (issue 12). Every operation is logged with its outcome; the checker proves that every
failure is a typed ``AcidStoreError``, that every logged outcome is what the metastore says,
and that the final table is exactly the committed operations applied in commit order (no
committed row lost or duplicated, ROW__IDs unique and the ones the model predicts). See
``chaos_support`` for the model; ``tests/chaos/run.py`` runs a larger one by hand.
"""

from __future__ import annotations

from pathlib import Path

from chaos_support import (
    TABLE,
    Place,
    check,
    connect,
    create_table,
    load,
    orphans,
    read_model,
    spawned_worker,
)
from metastore_support import (
    place_fixture,  # noqa: F401  (the `place` fixture, parametrised over backends)
)
from process_support import run_spawned

from compaction import Cleaner, compact

WORKERS = 4
OPS = 25
SEED = 1207


def test_random_dml_of_four_processes_replays_in_commit_order(place: Place,
                                                              tmp_path: Path) -> None:
    wh = connect(place)
    create_table(wh)
    initial = read_model(wh.table(TABLE))
    setup = max(txn.txn_id for txn in wh.metastore.show_transactions())
    logs = [tmp_path / f"worker-{w}.jsonl" for w in range(WORKERS)]
    run_spawned(spawned_worker, [(place, w, SEED + w, OPS, str(logs[w]))
                                 for w in range(WORKERS)], deadline_seconds=240)

    entries, reads = load(logs)
    assert len(entries) == WORKERS * OPS
    summary = check(wh, entries, reads, initial, before_txn=setup)
    # the run did race: each kind of write landed, and some were refused by a conflict
    kinds = {name.split(":")[0] for name, n in summary.outcomes.items()
             if name.endswith(":committed")}
    assert {"insert", "update", "merge", "compact", "clean"} <= kinds, summary
    assert summary.committed >= WORKERS * OPS // 4, summary

    # compacting and cleaning everything changes no row and leaves nothing unread
    final = read_model(wh.table(TABLE))
    compact(wh.table(TABLE), "major")
    Cleaner(wh, retention_seconds=0).run()
    assert read_model(wh.table(TABLE)) == final
    assert orphans(wh.table(TABLE)) == []
    assert "open" not in {txn.state for txn in wh.metastore.show_transactions()}
    wh.close()
