"""What a remote kustomize reference names, as kustomize splits it: a table of URLs in, the repository that is
cloned (or the file that is downloaded), the path inside it, the ref, and the vendored directory's name out.
The first rows are the URLs upstream Kubeflow v1.11.0 writes."""

from __future__ import annotations

import pytest

from kfctl.errors import ConfigError
from kfctl.repos.remote_url import RemoteSpec, parse_remote

ARGO = "https://github.com/argoproj/argo-workflows"

CASES = [
    (
        "kubeflow-argo-crds",
        f"{ARGO}/manifests/base/crds/minimal?ref=v3.7.3",
        RemoteSpec("", "git", ARGO, "manifests/base/crds/minimal", "v3.7.3"),
        "github.com/argoproj/argo-workflows",
    ),
    (
        "kubeflow-lws-double-slash",
        "https://github.com/kubernetes-sigs/lws//config/default?ref=v0.7.0",
        RemoteSpec("", "git", "https://github.com/kubernetes-sigs/lws", "config/default", "v0.7.0"),
        "github.com/kubernetes-sigs/lws",
    ),
    (
        "kubeflow-jobset-release-asset",
        "https://github.com/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml",
        RemoteSpec("", "file", "https://github.com/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml"),
        "github.com/kubernetes-sigs/jobset/releases/download/v0.10.1/manifests.yaml",
    ),
    (
        "no-scheme-is-https",
        "github.com/kubernetes-sigs/kustomize/examples/multibases?ref=v1.0.6",
        RemoteSpec("", "git", "https://github.com/kubernetes-sigs/kustomize", "examples/multibases", "v1.0.6"),
        "github.com/kubernetes-sigs/kustomize",
    ),
    (
        "version-is-ref",
        f"{ARGO}//manifests?version=v3.7.3",
        RemoteSpec("", "git", ARGO, "manifests", "v3.7.3"),
        "github.com/argoproj/argo-workflows",
    ),
    (
        "no-ref-is-default-branch",
        f"{ARGO}//manifests",
        RemoteSpec("", "git", ARGO, "manifests", None),
        "github.com/argoproj/argo-workflows",
    ),
    (
        "scp-like-with-dot-git",
        "git@github.com:argoproj/argo-workflows.git/manifests/base?ref=v3.7.3",
        RemoteSpec("", "git", "git@github.com:argoproj/argo-workflows.git", "manifests/base", "v3.7.3"),
        "github.com/argoproj/argo-workflows",
    ),
    (
        "ssh-url",
        "ssh://git@example.com/team/platform.git//deploy?ref=main",
        RemoteSpec("", "git", "ssh://git@example.com/team/platform.git", "deploy", "main"),
        "example.com/team/platform",
    ),
    (
        "git-double-colon-and-timeout",
        "git::https://gitlab.example.com/group/sub/repo.git//base?ref=v1&timeout=90s",
        RemoteSpec("", "git", "https://gitlab.example.com/group/sub/repo.git", "base", "v1", 90.0),
        "gitlab.example.com/group/sub/repo",
    ),
    (
        "azure-devops",
        "https://dev.azure.com/org/project/_git/repo/base?ref=v1",
        RemoteSpec("", "git", "https://dev.azure.com/org/project/_git/repo", "base", "v1"),
        "dev.azure.com/org/project/_git/repo",
    ),
    (
        "gh-shorthand",
        "gh:argoproj/argo-workflows/manifests?ref=v3.7.3",
        RemoteSpec("", "git", ARGO, "manifests", "v3.7.3"),
        "github.com/argoproj/argo-workflows",
    ),
    (
        "yaml-with-ref-is-git",
        f"{ARGO}/manifests/install.yaml?ref=v3.7.3",
        RemoteSpec("", "git", ARGO, "manifests/install.yaml", "v3.7.3"),
        "github.com/argoproj/argo-workflows",
    ),
]


@pytest.mark.parametrize(("url", "expected", "slug"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_parse(url: str, expected: RemoteSpec, slug: str) -> None:
    got = parse_remote(url)
    assert got == RemoteSpec(url, expected.kind, expected.repo, expected.path, expected.ref, expected.timeout)
    assert got.slug == slug


BAD = [
    ("org-only", "https://github.com/argoproj?ref=v1", "expected org/repo after the host"),
    ("host-only", "https://github.com", "no repository after the host"),
    ("no-host", "argo-workflows/manifests", "not a URL kustomize fetches (no scheme, no host)"),
    ("empty-repo-before-double-slash", "https://example.com///base", "no repository before the path"),
]


@pytest.mark.parametrize(("url", "why"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_unparsable(url: str, why: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_remote(url)
    assert info.value.message == f"remote base {url!r}: {why}"
    assert info.value.hint == (
        "write it as kustomize does: https://host/org/repo//path?ref=TAG, or https://host/…/file.yaml"
    )
