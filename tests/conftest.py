"""Shared fixtures: a small fixed catalog for loader/render tests, the real one, and upstream releases."""

from __future__ import annotations

from pathlib import Path

import pytest

from kfctl.catalog.load import load_catalog
from kfctl.catalog.model import Catalog

FIXTURES = Path(__file__).parent / "fixtures"


@pytest.fixture(scope="session")
def catalog() -> Catalog:
    """A tiny catalog with fixed content, so loader messages do not move when the real catalog grows."""
    return load_catalog(FIXTURES / "catalog")


@pytest.fixture(scope="session")
def real_catalog() -> Catalog:
    return load_catalog()


# Upstream kubeflow/manifests releases users point their KfDefs at (../shared/fixtures, beside the checkout).
UPSTREAM_V1_11 = Path(__file__).resolve().parents[2] / "shared" / "fixtures" / "kubeflow-manifests-v1.11.0.tar.gz"


@pytest.fixture(scope="session")
def upstream_v1_11() -> Path:
    """The kubeflow/manifests v1.11.0 tarball. A checkout without ../shared/fixtures beside it skips the tests
    that need it, with the path in the reason (pytest's summary lists every skip; a skip is never a pass).
    They do not fail there: where CI puts its checkout is not ours to know."""
    if not UPSTREAM_V1_11.is_file():
        pytest.skip(f"{UPSTREAM_V1_11} is not there (see ../shared/fixtures/README.md)")
    return UPSTREAM_V1_11
