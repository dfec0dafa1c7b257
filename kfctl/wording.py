"""Counts in words, for messages a person reads: "1 object", "2 objects" (never "1 objects")."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str = "") -> str:
    """``n`` and ``noun``, in the plural (``plural``, default noun + "s") unless ``n`` is 1."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"
