"""An application's repo path is checked before kustomize runs: one error that names the application, the repo,
the path, the KfDef field and the nearest kustomization directories (issue: errors that point at the cause)."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

import pytest

from kfctl.errors import ConfigError
from kfctl.repos.app_path import check_application_path

FIELD = "kfdef.yaml: spec.applications[katib].kustomizeConfig.repoRef.path"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for d in (
        "apps/katib/upstream/installs/katib-standalone",
        "apps/katib/upstream/installs/katib-with-kubeflow",
        "apps/katib/upstream/base",
        "common/cert-manager/base",
    ):
        (root / d).mkdir(parents=True)
        (root / d / "kustomization.yaml").write_text("resources: []\n")
    (root / "apps/katib/README.md").write_text("not a kustomization\n")
    (root / "apps/katib/upstream/installs/katib-standalone/.git").mkdir()
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", root / "apps/escape")
    return root


@pytest.mark.parametrize(
    ("path", "message", "hint"),
    [
        (
            "apps/katib/upstream/installs/katib-standalon",
            'application katib: path "apps/katib/upstream/installs/katib-standalon" does not exist in repo manifests; '
            'did you mean "apps/katib/upstream/installs/katib-standalone" or '
            '"apps/katib/upstream/installs/katib-with-kubeflow" or "apps/katib/upstream/base"?',
            f"fix {FIELD} (a directory of the repo holding a kustomization.yaml)",
        ),
        (
            "ap",
            'application katib: path "ap" does not exist in repo manifests',
            f"fix {FIELD} (a directory of the repo holding a kustomization.yaml)",
        ),
        (
            "apps/katib",
            'application katib: path "apps/katib" in repo manifests is a directory without a kustomization.yaml; '
            'kustomizations below it: "apps/katib/upstream/base", "apps/katib/upstream/installs/katib-standalone", '
            '"apps/katib/upstream/installs/katib-with-kubeflow"',
            f"fix {FIELD}: point it at one of the kustomization directories",
        ),
        (
            "../outside",
            "leaves repo manifests",
            f"fix {FIELD}: an application's path must stay inside its repo",
        ),
        (
            "apps/escape",
            "leaves repo manifests",
            f"fix {FIELD}: an application's path must stay inside its repo",
        ),
    ],
    ids=["typo", "nothing-near", "no-kustomization", "dot-dot", "symlink-out"],
)
def test_a_bad_application_path_is_one_error_naming_the_field_and_the_nearest(
    repo: Path, path: str, message: str, hint: str
) -> None:
    with pytest.raises(ConfigError) as err:
        check_application_path("katib", "manifests", repo, PurePosixPath(path), kfdef=Path("/x/kfdef.yaml"))
    assert message in err.value.message
    if "leaves" not in message:
        assert err.value.message == message
    assert err.value.hint == hint


@pytest.mark.parametrize("path", ["apps/katib/upstream/base", "apps/katib/README.md", "."])
def test_a_kustomization_directory_or_a_file_passes(repo: Path, path: str) -> None:
    (repo / "kustomization.yaml").write_text("resources: []\n")
    check_application_path("katib", "manifests", repo, PurePosixPath(path), kfdef=Path("kfdef.yaml"))
