"""Label selectors (matchLabels + matchExpressions), evaluated offline against bundle objects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """An absent or empty selector matches everything, as in the API."""
    if not selector:
        return True
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if op == "In" and (not present or labels[key] not in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


def to_query(selector: Mapping[str, str]) -> str:
    """matchLabels as a labelSelector query string."""
    return ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
