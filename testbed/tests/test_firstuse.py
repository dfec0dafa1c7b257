"""kfctl_testbed.firstuse's pure parts: which image names a release to build on first use, and the wrapper module
that builds it (upstream's replace and exclude directives repeated, a local-path replace refused)."""

from __future__ import annotations

from typing import Any

import pytest
from kfctl_testbed import firstuse
from kfctl_testbed.runtime import split_image


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("kserve/kserve-controller:v0.15.0", "kserve-manager-v0.15.0"),
        ("ghcr.io/kubeflow/spark-operator/controller:2.5.0", "spark-operator-v2.5.0"),  # tags without the v
        ("registry.k8s.io/jobset/jobset:v0.10.0", "jobset-controller-v0.10.0"),
        ("ghcr.io/kubeflow/trainer/trainer-controller-manager:v2.0.0-rc.1", "trainer-controller-manager-v2.0.0-rc.1"),
        ("kserve/kserve-controller:latest", None),  # names no release
        ("kserve/kserve-controller:nonexistent", None),
        ("kserve/kserve-controller@sha256:0123", None),  # a digest names no release either
        ("ghcr.io/kubeflow/training-v1/training-operator:v1-5c0e763", None),  # commit tags: no recipe
        ("example.invalid/operator:v1.0.0", None),  # no recipe
    ],
)
def test_which_images_name_a_release_to_build(image: str, expected: str | None) -> None:
    repo, tag, _ = split_image(image)
    want = firstuse.wanted(repo, tag)
    assert (want.name if want else None) == expected


def kserve(version: str = "v0.15.0") -> firstuse.Wanted:
    want = firstuse.wanted("kserve/kserve-controller", version)
    assert want is not None
    return want


def test_the_wrapper_repeats_upstreams_directives() -> None:
    upstream: dict[str, Any] = {
        "Go": "1.24.1",
        "Replace": [
            {"Old": {"Path": "k8s.io/api"}, "New": {"Path": "k8s.io/api", "Version": "v0.32.3"}},
            {
                "Old": {"Path": "example.com/x", "Version": "v1.0.0"},
                "New": {"Path": "example.com/y", "Version": "v1.0.1"},
            },
        ],
        "Exclude": [{"Path": "example.com/z", "Version": "v0.1.0"}],
    }
    assert firstuse.wrapper_go_mod(kserve(), upstream) == (
        "module kfctl.local/firstuse/kserve-manager-v0.15.0\n"
        "\n"
        "go 1.24.1\n"
        "\n"
        "require github.com/kserve/kserve v0.15.0\n"
        "\n"
        "replace k8s.io/api => k8s.io/api v0.32.3\n"
        "replace example.com/x v1.0.0 => example.com/y v1.0.1\n"
        "exclude example.com/z v0.1.0\n"
    )


def test_a_local_path_replace_cannot_be_repeated() -> None:
    upstream = {"Replace": [{"Old": {"Path": "github.com/kserve/kserve/api"}, "New": {"Path": "./api"}}]}
    with pytest.raises(firstuse.BuildError, match=r"replaces github.com/kserve/kserve/api with the local path \./api"):
        firstuse.wrapper_go_mod(kserve(), upstream)
