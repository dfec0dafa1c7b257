"""The process runtime's pure parts: the downward API (fieldRef, resourceFieldRef) and $(VAR) expansion, as a
kubelet resolves them. (Its mount script is tested in e2e/test_runtime_mounts.py, its images in
e2e/test_runtime_images.py.)"""

from __future__ import annotations

from typing import Any

import pytest
from kfctl_testbed import runtime

POD: dict[str, Any] = {
    "metadata": {
        "name": "trainer-0",
        "namespace": "kubeflow",
        "uid": "u-1",
        "labels": {"app": "trainer", "tier": "b"},
        "annotations": {"note": 'say "hi"'},
    },
    "spec": {
        "nodeName": "kwok-node-0",
        "serviceAccountName": "trainer",
        "containers": [
            {"name": "main", "resources": {"limits": {"cpu": "1500m", "memory": "1Gi"}, "requests": {"cpu": "250m"}}},
            {"name": "sidecar"},
        ],
    },
    "status": {
        "podIP": "10.244.0.7",
        "hostIP": "127.0.0.1",
        "podIPs": [{"ip": "10.244.0.7"}, {"ip": "fd00::7"}],
        "hostIPs": [{"ip": "127.0.0.1"}],
    },
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        pytest.param("metadata.name", "trainer-0", id="name"),
        pytest.param("metadata.namespace", "kubeflow", id="namespace"),
        pytest.param("metadata.uid", "u-1", id="uid"),
        pytest.param("metadata.labels['app']", "trainer", id="one-label"),
        pytest.param("metadata.labels['absent']", "", id="absent-label"),
        pytest.param("metadata.annotations['note']", 'say "hi"', id="one-annotation"),
        pytest.param("metadata.labels", 'app="trainer"\ntier="b"', id="all-labels-sorted"),
        pytest.param("metadata.annotations", 'note="say "hi""', id="all-annotations"),
        pytest.param("spec.nodeName", "kwok-node-0", id="node"),
        pytest.param("spec.serviceAccountName", "trainer", id="service-account"),
        pytest.param("status.podIP", "10.244.0.7", id="pod-ip"),
        pytest.param("status.podIPs", "10.244.0.7,fd00::7", id="pod-ips"),
        pytest.param("status.hostIP", "127.0.0.1", id="host-ip"),
        pytest.param("status.hostIPs", "127.0.0.1", id="host-ips"),
    ],
)
def test_field_value(path: str, value: str) -> None:
    assert runtime.field_value(POD, path) == value


def test_field_value_of_a_pod_without_status_is_empty() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {}}
    assert runtime.field_value(pod, "status.podIP") == ""
    assert runtime.field_value(pod, "status.podIPs") == ""
    assert runtime.field_value(pod, "metadata.labels") == ""


def test_an_unsupported_field_is_an_error() -> None:
    with pytest.raises(ValueError, match=r"fieldRef 'spec.hostname' is not supported"):
        runtime.field_value(POD, "spec.hostname")


@pytest.mark.parametrize(
    ("container", "ref", "value"),
    [
        pytest.param("main", {"resource": "limits.cpu"}, "2", id="cpu-rounded-up-to-cores"),
        pytest.param(
            "main", {"resource": "limits.cpu", "divisor": "0"}, "2", id="divisor-0-as-the-api-server-stores-it"
        ),
        pytest.param("main", {"resource": "limits.cpu", "divisor": "1m"}, "1500", id="cpu-in-millicores"),
        pytest.param("main", {"resource": "requests.cpu", "divisor": "100m"}, "3", id="request-rounded-up"),
        pytest.param("main", {"resource": "limits.memory"}, str(2**30), id="memory-in-bytes"),
        pytest.param("main", {"resource": "limits.memory", "divisor": "1Mi"}, "1024", id="memory-in-mi"),
        pytest.param("sidecar", {"resource": "limits.cpu"}, "32", id="unset-cpu-limit-is-the-nodes"),
        pytest.param("sidecar", {"resource": "limits.memory"}, str(256 * 2**30), id="unset-memory-limit"),
        pytest.param("sidecar", {"resource": "limits.cpu", "containerName": "main"}, "2", id="other-container"),
    ],
)
def test_resource_value(container: str, ref: dict[str, str], value: str) -> None:
    of = next(c for c in POD["spec"]["containers"] if c["name"] == container)
    assert runtime.resource_value(POD, of, ref) == value


@pytest.mark.parametrize(
    ("text", "expanded"),
    [
        pytest.param("--port=$(PORT)", "--port=8443", id="known"),
        pytest.param("$(MISSING)/x", "$(MISSING)/x", id="unknown-kept"),
        pytest.param("$$(PORT)", "$(PORT)", id="escaped"),
        pytest.param("$$$(PORT)", "$8443", id="escaped-dollar-then-reference"),
        pytest.param("$PORT ${PORT}", "$PORT ${PORT}", id="shell-forms-untouched"),
        pytest.param("$(A.b-c_1)", "dotted", id="name-characters"),
    ],
)
def test_expand(text: str, expanded: str) -> None:
    assert runtime.expand(text, {"PORT": "8443", "A.b-c_1": "dotted"}) == expanded
