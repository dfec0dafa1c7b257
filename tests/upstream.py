"""Upstream artifacts users have (kubeflow/manifests releases, kfctl v1.x KfDefs): ../shared/fixtures, beside
the checkout. Not part of the repository; tests read them there and never copy them in."""

from __future__ import annotations

from pathlib import Path

import pytest

SHARED_FIXTURES = Path(__file__).resolve().parents[2] / "shared" / "fixtures"


def shared_fixture(name: str) -> Path:
    """../shared/fixtures/<name>. A checkout without it beside skips the test that needs it, with the path in
    the reason (pytest's summary lists every skip; a skip is never a pass). It does not fail there: where CI
    puts its checkout is not ours to know."""
    path = SHARED_FIXTURES / name
    if not path.exists():
        pytest.skip(f"{path} is not there (see ../shared/fixtures/README.md)")
    return path
