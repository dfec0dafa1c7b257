"""Sums of requests: quantities as numbers (kfctl.quantity), and back as a person reads them."""

from __future__ import annotations

from decimal import Decimal

from kfctl import quantity


def parse(value: object) -> Decimal:
    """The quantity in base units (cores, bytes); 0 for what is not a quantity (the API server would have
    refused it, so a rendered file that holds one fails elsewhere)."""
    return quantity.parse(value.strip() if isinstance(value, str) else value) or Decimal(0)


def cpu(cores: Decimal) -> str:
    """Cores as a person reads them: "250m", "3.5"."""
    if cores < 1:
        return f"{int(cores * 1000)}m"
    return f"{cores.quantize(Decimal('0.01')).normalize():f}"


def memory(size: Decimal) -> str:
    """Bytes in the largest binary unit that keeps a number ≥ 1: "512Mi", "1.5Gi"."""
    for unit in ("Ti", "Gi", "Mi", "Ki"):
        if size >= quantity.SUFFIX[unit]:
            return f"{(size / quantity.SUFFIX[unit]).quantize(Decimal('0.1')).normalize():f}{unit}"
    return f"{int(size)}"
