"""Chaos: several real processes run random DML, compaction and cleaning on one small table at
once (issue 12). Every operation is logged with its outcome; the checker proves that every
failure is a typed ``AcidStoreError``, that every logged outcome is what the metastore says,
and that the final table is exactly the committed operations applied in commit order (no
committed row lost or duplicated, ROW__IDs unique and the ones the model predicts); then a
major compaction and a cleaner pass change no row and leave no directory unread. See
``chaos_support`` for the model; ``tests/chaos/run.py`` runs a larger one by hand.
"""

from __future__ import annotations

from pathlib import Path

from chaos_support import Place, race
from metastore_support import (
    place_fixture,  # noqa: F401  (the `place` fixture, parametrised over backends)
)

WORKERS = 4
OPS = 25
SEED = 1207


def test_random_dml_of_four_processes_replays_in_commit_order(place: Place,
                                                              tmp_path: Path) -> None:
    summary, _ = race(place, WORKERS, OPS, SEED, tmp_path)
    # the run did race: each kind of write landed, and a good share of all operations
    kinds = {name.split(":")[0] for name, n in summary.outcomes.items()
             if name.endswith(":committed")}
    assert {"insert", "update", "merge", "compact", "clean"} <= kinds, summary
    assert summary.committed >= WORKERS * OPS // 4, summary
