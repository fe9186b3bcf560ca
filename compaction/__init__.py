"""Compaction for acidstore tables: compactors, initiator, worker, cleaner, scheduled jobs.

Only the package exists so far; the compactors arrive with the compaction issue. It depends on
acidstore's layers L1-L4 and nothing in acidstore imports it (except the CLI).
"""

from __future__ import annotations

__all__: list[str] = []
