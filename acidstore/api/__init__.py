"""The public API: Warehouse, Table, MergeBuilder, streaming connections, frames."""
