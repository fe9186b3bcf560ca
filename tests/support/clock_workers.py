"""The program ``clock_support.run_skewed`` runs under libfaketime: a client of a warehouse
whose clock disagrees with the machine's (and with the metastore's).

Its one argument is a JSON spec: ``place`` (a warehouse directory, or [directory, metastore
URL]), ``table``, and ``steps``, each one of
- ``["insert", id]``: insert one row into the table (one commit);
- ``["shift", "+600"]``: step this process's clock to that offset from the machine's (the
  offset file libfaketime reads on every clock call);
- ``["clean"]``: one pass of the cleaner, with its default retention.
It prints one JSON document: its own clock (UTC, ISO 8601) after each step, and the
directories the cleaner removed.
"""

from __future__ import annotations

import json
import os
import sys
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

import acidstore
from compaction import Cleaner


def main(spec: dict[str, Any]) -> dict[str, Any]:
    place = spec["place"]
    if isinstance(place, list):
        wh = acidstore.connect(place[0], metastore=place[1])
    else:
        wh = acidstore.connect(place)
    clocks, removed = [], []
    with wh:
        table = wh.table(spec["table"])
        for step in spec["steps"]:
            if step[0] == "insert":
                table.insert(pa.table({"id": pa.array([step[1]], pa.int64())}))
            elif step[0] == "clean":
                removed.extend(Cleaner(wh).run().removed)
            elif step[0] == "shift":
                with open(os.environ["FAKETIME_TIMESTAMP_FILE"], "w") as offset:
                    offset.write(step[1] + "\n")
            else:
                raise ValueError(f"unknown step {step!r}")
            clocks.append(datetime.now(UTC).isoformat())
    return {"clocks": clocks, "removed": removed}


if __name__ == "__main__":
    print(json.dumps(main(json.loads(sys.argv[1]))))
