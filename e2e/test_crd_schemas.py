"""The operators' CRDs carry their real schemas, generated from the operators' Go API types.

manifests/gen-crds writes them; the first test regenerates them (Go, controller-gen and the operators' API
modules: it fails, never skips, without Go) and finds the catalog's files the same. The others install
CRDs from the catalog into the session's cluster and show what a real schema buys: the API server refuses a
misspelt TFJob field under strict field validation, accepts the field spelt right, `kubectl explain`
documents the fields, and the custom resources the catalog ships pass the same strict validation.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import dump_all, poll

from kfctl import yamlio
from kfctl.render.kustomize import find_kustomize

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent
FIELD_MANAGER = "e2e-crd-schemas"


def tfjob(
    replica_fields: dict[str, object], *, namespace: str, container_fields: dict[str, object] | None = None
) -> str:
    container = {"name": "tensorflow", "image": "example.invalid/tf:1", **(container_fields or {})}
    worker = {**replica_fields, "restartPolicy": "Never", "template": {"spec": {"containers": [container]}}}
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "schema-check", "namespace": namespace},
        "spec": {"tfReplicaSpecs": {"Worker": worker}},
    }
    return yaml.safe_dump(job)


@pytest.fixture(scope="module")
def kubectl_exe() -> str:
    """The kubectl e2e/build-binaries builds, the same version as the cluster's API server."""
    bin_dir = subprocess.run(
        [str(REPO / "e2e" / "build-binaries"), "--print-bin-dir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    exe = Path(bin_dir) / "kubectl"
    if not exe.is_file():
        pytest.fail(f"no {exe}: run e2e/build-binaries", pytrace=False)
    return str(exe)


def kubectl(exe: str, kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [exe, "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True, text=True, timeout=120
    )


def create_strictly(exe: str, kubeconfig: str, manifest: str) -> subprocess.CompletedProcess[str]:
    """`kubectl create` as a server-side dry run with strict field validation: unknown fields are errors."""
    return kubectl(exe, kubeconfig, "create", "--validate=strict", "--dry-run=server", "-f", "-", stdin=manifest)


def rendered(component: str) -> list[dict[str, Any]]:
    """The component's objects as its kustomize base in the catalog renders them."""
    argv = [*find_kustomize().argv, str(REPO / "manifests" / component)]
    text = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    return [o for o in yamlio.safe_load_all(text) if o]


@contextmanager
def catalog_crds(exe: str, kubeconfig: str, component: str) -> Iterator[list[dict[str, Any]]]:
    """The component's CRDs from the catalog, applied and Established; yields all its rendered objects. The
    CRDs this created are deleted again: left behind, they would be foreign objects to a later kfctl apply
    of the component in this session's cluster."""
    objects = rendered(component)
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    names = [f"crd/{o['metadata']['name']}" for o in crds]
    found = kubectl(exe, kubeconfig, "get", *names, "--ignore-not-found", "-o", "name").stdout.split()
    existing = {f"crd/{line.split('/', 1)[1]}" for line in found}
    apply = ["apply", "--server-side", f"--field-manager={FIELD_MANAGER}", "--force-conflicts", "-f", "-"]
    applied = kubectl(exe, kubeconfig, *apply, stdin=dump_all(crds))
    assert applied.returncode == 0, applied.stderr
    try:
        # kubectl wait (v1.33) gives up at once on a CRD whose status has no conditions yet (".status.conditions
        # accessor error: <nil> is of the type <nil>"), as a CRD is for a moment after its create under load: ask
        # again until the API server has written them.
        poll(
            lambda: (
                kubectl(exe, kubeconfig, "wait", "--for=condition=Established", "--timeout=60s", *names).returncode == 0
            ),
            timeout=90,
            what=f"{', '.join(names)} Established",
        )
        yield objects
    finally:
        created = [o for o in crds if f"crd/{o['metadata']['name']}" not in existing]
        for crd in created:
            wait_for_cache(exe, kubeconfig, crd)
        if created:
            kubectl(exe, kubeconfig, "delete", "--wait=true", *(f"crd/{o['metadata']['name']}" for o in created))


def wait_for_cache(exe: str, kubeconfig: str, crd: dict[str, Any]) -> None:
    """Until the API server's watch cache of the CRD's kind is initialised (a list at resourceVersion 0 is
    served from it, and refused with 429 "storage is (re)initializing" until then). The API server makes a
    kind's storage on its first request; a CRD deleted before that has its cleanup finalizer list from a cache
    still initialising, fail once, and then (kube-apiserver v1.33's CRD finalizer: its retry reads a stale CRD,
    gets a conflict and is not requeued) wait for the informer's resync, minutes later."""
    spec = crd["spec"]
    version = next(v["name"] for v in spec["versions"] if v.get("storage"))
    path = f"/apis/{spec['group']}/{version}/{spec['names']['plural']}?resourceVersion=0&limit=1"
    poll(
        lambda: kubectl(exe, kubeconfig, "get", "--raw", path).returncode == 0,
        timeout=60,
        what=f"the watch cache of {crd['metadata']['name']}",
    )


@pytest.fixture(scope="module")
def training_operator_crds(kubectl_exe: str, kubeconfig: str) -> Iterator[None]:
    with catalog_crds(kubectl_exe, kubeconfig, "training-operator"):
        yield


def test_the_catalogs_crds_are_what_gen_crds_generates() -> None:
    """Nobody edited a generated CRD by hand, and the script still reproduces every one of them."""
    result = subprocess.run(
        [sys.executable, str(REPO / "manifests" / "gen-crds"), "--check"],
        capture_output=True,
        text=True,
        timeout=1800,  # cold: builds controller-gen and downloads the operators' API modules
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.usefixtures("training_operator_crds")
def test_a_misspelt_replica_field_is_refused_under_strict_validation(
    kubectl_exe: str, kubeconfig: str, namespace: str
) -> None:
    result = create_strictly(kubectl_exe, kubeconfig, tfjob({"replcas": 2}, namespace=namespace))
    assert result.returncode != 0
    assert (
        'TFJob in version "v1" cannot be handled as a TFJob: strict decoding error: '
        'unknown field "spec.tfReplicaSpecs.Worker.replcas"'
    ) in result.stderr, result.stderr


@pytest.mark.usefixtures("training_operator_crds")
def test_a_misspelt_field_deep_in_the_pod_template_is_refused_too(
    kubectl_exe: str, kubeconfig: str, namespace: str
) -> None:
    """The catalog's hand-written schema kept pod templates whole, so this typo used to pass unnoticed."""
    job = tfjob({"replicas": 1}, namespace=namespace, container_fields={"imagePullPolcy": "Always"})
    result = create_strictly(kubectl_exe, kubeconfig, job)
    assert result.returncode != 0
    assert (
        'strict decoding error: unknown field "spec.tfReplicaSpecs.Worker.template.spec.containers[0].imagePullPolcy"'
    ) in result.stderr, result.stderr


@pytest.mark.usefixtures("training_operator_crds")
def test_the_same_tfjob_spelt_right_is_accepted(kubectl_exe: str, kubeconfig: str, namespace: str) -> None:
    result = create_strictly(kubectl_exe, kubeconfig, tfjob({"replicas": 2}, namespace=namespace))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "tfjob.kubeflow.org/schema-check created (server dry run)"
    assert result.stderr == ""  # not even a warning


@pytest.mark.usefixtures("training_operator_crds")
def test_kubectl_explain_documents_the_replica_fields(kubectl_exe: str, kubeconfig: str) -> None:
    def explain() -> str:
        # The API server publishes a new CRD's OpenAPI a moment after it is Established.
        result = kubectl(kubectl_exe, kubeconfig, "explain", "tfjob.spec.tfReplicaSpecs")
        return result.stdout if result.returncode == 0 else ""

    text = poll(explain, timeout=60, what="kubectl explain tfjob.spec.tfReplicaSpecs")
    assert "FIELD: tfReplicaSpecs <map[string]Object>" in text
    fields = text.split("FIELDS:", 1)[1]
    assert "replicas\t<integer>" in fields
    assert "Replicas is the desired number of replicas of the given template." in fields
    assert "restartPolicy\t<string>" in fields
    assert "One of Always, OnFailure, Never and ExitCode." in fields
    assert "template\t<Object>" in fields


@pytest.mark.parametrize("component", ["kserve", "trainer"])
def test_the_catalogs_own_custom_resources_pass_strict_validation(
    component: str, kubectl_exe: str, kubeconfig: str
) -> None:
    """The ClusterServingRuntimes, ClusterStorageContainer and ClusterTrainingRuntimes the catalog ships. A
    server-side apply silently drops a field that an empty struct's schema lacks (trainer v2.2.0's
    mlPolicy.torch has no numProcPerNode any more); a strict create names it."""
    with catalog_crds(kubectl_exe, kubeconfig, component) as objects:
        groups = {o["spec"]["group"] for o in objects if o["kind"] == "CustomResourceDefinition"}
        custom = [o for o in objects if o["apiVersion"].split("/")[0] in groups]
        assert custom
        result = create_strictly(kubectl_exe, kubeconfig, dump_all(custom))
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        assert result.stdout.count("created (server dry run)") == len(custom), result.stdout
