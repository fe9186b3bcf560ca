"""The ACID ORC layer (L2): event schema, bucket codec, and file I/O."""

from __future__ import annotations

from acidstore.format.orc.codec import BucketCodec

__all__ = ["BucketCodec"]
