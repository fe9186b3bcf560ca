"""The acidstore benchmark suite (see README "Benchmarks" and ../shared/BENCHMARKS.md)."""
