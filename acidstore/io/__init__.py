"""Filesystems, durability and file caches: the storage edge (knows nothing of ACID)."""
