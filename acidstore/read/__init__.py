"""Readers over a selected directory set (L3)."""

from __future__ import annotations
