"""Every object the catalog renders, on every platform, is accepted by a real API server.

The server's validation is the Kubernetes OpenAPI schema itself (built-in kinds) and our CRDs' structural
schemas (custom resources): CRDs and Namespaces are created for real, then the whole bundle goes through
a server-side dry run. A cluster of its own keeps these objects away from the apply tests.

The platforms render mostly the same objects (the same components; an overlay changes a few), and the cluster is
the module's: an object byte-for-byte the same as one this cluster already accepted gets the same verdict, so each
platform sends only the objects no platform before it sent (every object of every platform is still checked, and a
platform run alone sends all of its own).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import dump_all, run_cluster

from kfctl import yamlio
from kfctl.app.generate import generate
from kfctl.app.init import init_app
from kfctl.catalog.load import load_catalog
from kfctl.config.loader import load_kfdef

pytestmark = pytest.mark.e2e

PLATFORM_VALUES = {
    "clusterName": "e2e",
    "region": "eu-west-1",
    "autoscalerRoleArn": "arn:aws:iam::123456789012:role/ca",
    "project": "e2e-project",
    "zone": "europe-west4-a",
    "cluster": "c",
    "subscriptionId": "00000000-0000-0000-0000-000000000000",
    "resourceGroup": "rg",
}


@pytest.fixture(scope="module")
def scratch_kubeconfig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if os.environ.get("KUBECONFIG"):
        yield os.environ["KUBECONFIG"]
        return
    state = tmp_path_factory.mktemp("dry-run-cluster")
    result = run_cluster("up", "--state-dir", str(state), "--local", timeout=3600)
    if result.returncode != 0:
        pytest.fail(f"could not start a cluster: {result.stderr.strip()}", pytrace=False)
    try:
        yield result.stdout.strip().splitlines()[-1]
    finally:
        run_cluster("down", "--state-dir", str(state))


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("kubectl")
    assert exe, "kubectl is needed for the dry run"
    return subprocess.run(
        [exe, "--kubeconfig", kubeconfig, *args], input=stdin, capture_output=True, text=True, timeout=300
    )


def render_all(tmp: Path, platform: str) -> list[dict[str, Any]]:
    catalog = load_catalog()
    components = sorted(c.name for c in catalog.components.values() if platform in c.platforms)
    app = tmp / platform
    init_app(catalog, app_dir=app, platform=platform, components=components, namespace="kubeflow", force=True)
    path = app / "kfdef.yaml"
    doc = yaml.safe_load(path.read_text())
    for plugin in doc["spec"].get("plugins", []):
        for key in plugin.get("spec", {}):
            plugin["spec"][key] = PLATFORM_VALUES.get(key, plugin["spec"][key])
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    generate(load_kfdef(path, catalog), catalog)
    return [o for f in sorted((app / "rendered").glob("*.yaml")) for o in yamlio.safe_load_all(f.read_text()) if o]


# The canonical JSON of every object this module's cluster has accepted (CRDs applied, the rest in a dry run).
ACCEPTED: set[str] = set()


def canonical(obj: dict[str, Any]) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"))


@pytest.mark.parametrize("platform", ["kind", "gcp", "aws", "azure", "generic"])
def test_every_rendered_object_passes_server_side_validation(
    tmp_path: Path, scratch_kubeconfig: str, platform: str
) -> None:
    objects = render_all(tmp_path, platform)
    assert objects
    keyed = [(canonical(o), o) for o in objects]
    new_crds = [(key, o) for key, o in keyed if o["kind"] == "CustomResourceDefinition" and key not in ACCEPTED]
    crds = [o for _, o in new_crds]
    namespaces = {o["metadata"]["name"] for o in objects if o["kind"] == "Namespace"}
    namespaces |= {o["metadata"]["namespace"] for o in objects if o["metadata"].get("namespace")}
    setup = crds + [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in sorted(namespaces)]
    created = kubectl(
        scratch_kubeconfig,
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        "-",
        stdin=dump_all(setup),
    )
    assert created.returncode == 0, created.stderr
    if crds:
        names = [f"crd/{crd['metadata']['name']}" for crd in crds]
        established = kubectl(scratch_kubeconfig, "wait", "--for=condition=Established", "--timeout=60s", *names)
        assert established.returncode == 0, established.stderr
    ACCEPTED.update(key for key, _ in new_crds)
    # A CRD this platform renders otherwise than one before it: the custom resources of its kind are checked again.
    changed = {(c["spec"]["group"], c["spec"]["names"]["kind"]) for c in crds}
    rest = [
        (key, o)
        for key, o in keyed
        if o["kind"] != "CustomResourceDefinition"
        and (key not in ACCEPTED or (o["apiVersion"].split("/")[0], o["kind"]) in changed)
    ]
    if rest:
        result = kubectl(
            scratch_kubeconfig,
            "apply",
            "--server-side",
            "--force-conflicts",
            "--dry-run=server",
            "-f",
            "-",
            stdin=dump_all([o for _, o in rest]),
        )
        assert result.returncode == 0, result.stderr
        accepted = [line for line in result.stdout.splitlines() if "(server dry run)" in line]
        assert len(accepted) == len(rest), result.stdout
        assert "Warning" not in result.stderr, result.stderr
    ACCEPTED.update(key for key, _ in rest)
    sent = len(crds) + len(rest)
    print(f"{platform}: {len(objects)} objects, {sent} sent, {len(objects) - sent} accepted before on this cluster")
