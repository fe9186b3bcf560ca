"""The acidstore benchmark suite (see README "Benchmarks" and docs/benchmarks.md)."""
