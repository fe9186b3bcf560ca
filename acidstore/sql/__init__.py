"""SQL predicates and values evaluated on Arrow data."""
