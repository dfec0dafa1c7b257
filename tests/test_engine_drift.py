"""Drift: which fields of what kfctl would send the live object no longer holds, and how they are named."""

from __future__ import annotations

from typing import Any

import pytest

from kfctl.engine.drift import comparable, corrected_fields, differences

DEPLOY: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "op", "namespace": "kubeflow", "labels": {"app": "op"}},
    "spec": {
        "replicas": 1,
        "template": {
            "metadata": {"labels": {"app": "op"}, "creationTimestamp": None},
            "spec": {
                "containers": [
                    {
                        "name": "op",
                        "image": "ghcr.io/kubeflow/op:v1",
                        "args": ["--a"],
                        "resources": {"requests": {"cpu": "0.5", "memory": "1024Mi"}},
                        "ports": [{"containerPort": 8080}],
                    }
                ]
            },
        },
    },
}


def live_with(**changes: Any) -> dict[str, Any]:
    """The Deployment as the server returns it (defaults filled in, quantities canonical), then ``changes``."""
    import copy

    live = copy.deepcopy(DEPLOY)
    live["metadata"].update(uid="u1", resourceVersion="7", generation=3, managedFields=[{"manager": "kfctl"}])
    c = live["spec"]["template"]["spec"]["containers"][0]
    c.update(imagePullPolicy="IfNotPresent", terminationMessagePath="/dev/termination-log")
    c["resources"]["requests"] = {"cpu": "500m", "memory": "1Gi"}
    c["ports"][0]["protocol"] = "TCP"
    del live["spec"]["template"]["metadata"]["creationTimestamp"]
    live["spec"]["strategy"] = {"type": "RollingUpdate"}
    live["status"] = {"replicas": 1}
    for path, value in changes.items():
        node = live
        parts = path.split("__")
        for p in parts[:-1]:
            node = node[int(p)] if p.isdigit() else node[p]
        node[parts[-1]] = value
    return live


CONTAINERS = "spec__template__spec__containers__0"


@pytest.mark.parametrize(
    ("live", "expected"),
    [
        pytest.param(live_with(), [], id="defaults-status-and-canonical-quantities-are-not-drift"),
        pytest.param(live_with(spec__replicas=3), ["spec.replicas"], id="scaled"),
        pytest.param(
            live_with(**{f"{CONTAINERS}__image": "evil/image:latest"}),
            ["spec.template.spec.containers[op].image"],
            id="set-image",
        ),
        pytest.param(
            live_with(**{f"{CONTAINERS}__args": ["--a", "--b"]}),
            ["spec.template.spec.containers[op].args"],
            id="an-argument-added-to-a-list-kfctl-renders",
        ),
        pytest.param(
            live_with(**{f"{CONTAINERS}__env": [{"name": "X", "value": "1"}]}),
            [],
            id="a-field-kfctl-does-not-render-is-left-alone",
        ),
        pytest.param(
            live_with(metadata__labels={"app": "other"}), ["metadata.labels.app"], id="a-label-kfctl-sets-changed"
        ),
        pytest.param(
            live_with(**{"spec__template__spec__containers": [{"name": "sidecar"}, {"name": "x"}]}),
            ["spec.template.spec.containers[op]"],
            id="the-container-kfctl-renders-is-gone",
        ),
    ],
)
def test_differences_name_only_the_fields_kfctl_renders_that_changed(live: dict[str, Any], expected: list[str]) -> None:
    assert differences(DEPLOY, live) == expected


@pytest.mark.parametrize(
    ("want", "have", "same"),
    [
        pytest.param("1Gi", "1024Mi", True, id="binary-suffixes"),
        pytest.param("0.5", "500m", True, id="decimal-cpu"),
        pytest.param(1, "1", True, id="integer-as-quantity"),
        pytest.param("1e3", "1k", True, id="exponent"),
        pytest.param("2Gi", "1Gi", False, id="other-size"),
        pytest.param(True, "true", False, id="boolean-is-not-text"),
        pytest.param("v1", "v1.0", False, id="text-is-compared-as-text"),
    ],
)
def test_quantities_the_server_rewrites_compare_by_value(want: Any, have: Any, same: bool) -> None:
    desired = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": want}}
    live = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": have}}
    assert differences(desired, live) == ([] if same else ["data.k"])


def test_a_secrets_string_data_is_compared_as_the_server_stores_it() -> None:
    desired = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"password": "pw"}}
    stored = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "cHc="}}
    changed = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"password": "eHg="}}
    assert differences(desired, stored) == []
    assert differences(desired, changed) == ["data.password"]


@pytest.mark.parametrize(
    ("live", "dry_run", "expected"),
    [
        pytest.param(
            live_with(**{f"{CONTAINERS}__image": "evil/image:latest"}, spec__replicas=3),
            live_with(),
            ["spec.replicas", "spec.template.spec.containers[op].image"],
            id="set-image-and-scale-are-put-back",
        ),
        pytest.param(
            live_with(metadata__annotations={"example.com/x": "1"}),
            live_with(metadata__annotations={"example.com/x": "1"}),
            [],
            id="a-field-kfctl-does-not-render-is-not-named",
        ),
        pytest.param(
            live_with(**{f"{CONTAINERS}__args": ["--a", "-b"]}),
            live_with(**{f"{CONTAINERS}__args": ["--a", "-b"]}),
            [],
            id="a-value-the-server-keeps-rewriting-is-not-a-correction",
        ),
    ],
)
def test_corrected_fields_are_kfctls_fields_that_differ_now_and_hold_after_the_apply(
    live: dict[str, Any], dry_run: dict[str, Any], expected: list[str]
) -> None:
    assert corrected_fields(DEPLOY, live, dry_run) == expected


def test_comparable_masks_secret_values_and_drops_what_the_server_owns() -> None:
    live = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "s",
            "uid": "u",
            "resourceVersion": "1",
            "annotations": {"kfctl.kubeflow.org/applied-hash": "h"},
        },
        "data": {"password": "cHc="},
    }
    out = comparable(live)
    assert out == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"password": "<masked sha256:30c952fa>"},
    }
