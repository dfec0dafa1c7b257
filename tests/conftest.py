"""Shared fixtures: a small fixed catalog for loader/render tests, the real one, and upstream releases."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from upstream import shared_fixture

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


@pytest.fixture(scope="session")
def upstream_v1_11() -> Path:
    """The kubeflow/manifests v1.11.0 tarball."""
    return shared_fixture("kubeflow-manifests-v1.11.0.tar.gz")


@pytest.fixture(autouse=True)
def _temp_files_in_the_tests_own_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What kfctl puts in the temp dir (a render it checks, the tree kustomize refused, kept for a person to look
    at) lands in the test's own directory, which pytest cleans up."""
    scratch = tmp_path / "tmpdir"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
