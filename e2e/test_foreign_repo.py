"""An application that points into a foreign kustomize tree in kubeflow/manifests' layout installs healthy,
in order, on a real API server.

The test makes the tree itself: applications/widget-operator/upstream/{base,overlays/kubeflow} with its own
parameters (a configMapGenerator from params.env, a `replacements` entry and a kustomize `var`), a CRD and a
custom resource of it, a Deployment and a Namespace. It is packed GitHub-style (one top directory), served
from 127.0.0.1, pinned by sha256 in the KfDef, and installed with `kfctl apply`. Then `generate --offline
--check` proves the cache and the lock reproduce the same output with the server gone.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
import uuid
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parent.parent
TOP = "manifests-1.10.0"
APP_PATH = "applications/widget-operator/upstream/overlays/kubeflow"
APPLIED = {"Created", "Configured", "Unchanged"}


def tree_files(token: str) -> dict[str, str]:
    group = f"e2e{token}.kfctl.test"
    ns = f"widgets-{token}"
    base = "applications/widget-operator/upstream/base"
    overlay = APP_PATH
    return {
        f"{base}/kustomization.yaml": (
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
            "resources:\n- crd.yaml\n- deployment.yaml\n"
        ),
        f"{base}/crd.yaml": yaml.safe_dump(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"widgets.{group}"},
                "spec": {
                    "group": group,
                    "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
                    "scope": "Namespaced",
                    "versions": [
                        {
                            "name": "v1",
                            "served": True,
                            "storage": True,
                            "subresources": {"status": {}},
                            "schema": {
                                "openAPIV3Schema": {
                                    "type": "object",
                                    "properties": {
                                        "spec": {
                                            "type": "object",
                                            "required": ["color"],
                                            "properties": {"color": {"type": "string"}},
                                        },
                                        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                    },
                                }
                            },
                        }
                    ],
                },
            },
            sort_keys=False,
        ),
        f"{base}/deployment.yaml": yaml.safe_dump(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": "widget-controller"},
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "widget-controller"}},
                    "template": {
                        "metadata": {"labels": {"app": "widget-controller"}},
                        "spec": {
                            "containers": [
                                {
                                    "name": "manager",
                                    "image": "registry.k8s.io/pause:3.10",
                                    "args": ["--watch-namespace=$(WIDGET_NAMESPACE)"],
                                    "envFrom": [{"configMapRef": {"name": "widget-parameters"}}],
                                }
                            ]
                        },
                    },
                },
            },
            sort_keys=False,
        ),
        f"{overlay}/kustomization.yaml": yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "namespace": ns,
                "resources": ["../../base", "namespace.yaml", "widget.yaml"],
                "configMapGenerator": [{"name": "widget-parameters", "envs": ["params.env"]}],
                "replacements": [
                    {
                        "source": {"kind": "ConfigMap", "name": "widget-parameters", "fieldPath": "data.WIDGET_COLOR"},
                        "targets": [{"select": {"kind": "Widget", "name": "example"}, "fieldPaths": ["spec.color"]}],
                    }
                ],
                "vars": [
                    {
                        "name": "WIDGET_NAMESPACE",
                        "objref": {"apiVersion": "v1", "kind": "ConfigMap", "name": "widget-parameters"},
                        "fieldref": {"fieldPath": "metadata.namespace"},
                    }
                ],
            },
            sort_keys=False,
        ),
        f"{overlay}/params.env": "WIDGET_COLOR=blue\n",
        f"{overlay}/namespace.yaml": f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n",
        f"{overlay}/widget.yaml": (
            f"apiVersion: {group}/v1\nkind: Widget\nmetadata:\n  name: example\nspec:\n  color: placeholder\n"
        ),
    }


def make_tarball(path: Path, files: dict[str, str]) -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        for name, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{TOP}/{name}")
            info.size = len(data)
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str, ThreadingHTTPServer]]:
    root = tmp_path / "www"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}", server
    finally:
        server.shutdown()
        server.server_close()


def run_kfctl(
    *args: str, kubeconfig: str | None = None
) -> tuple[subprocess.CompletedProcess[str], list[dict[str, Any]]]:
    argv = [sys.executable, "-m", "kfctl.cli.main", *args, "-o", "json"]
    if kubeconfig:
        argv += ["--kubeconfig", kubeconfig]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG" and "proxy" not in k.lower()}
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=900, env=env, cwd=REPO)
    events = []
    for line in proc.stdout.splitlines():
        if line.startswith("{"):
            try:
                doc = json.loads(line)
            except ValueError:
                continue
            if "event" in doc:
                events.append(doc)
    return proc, events


def kubectl(kubeconfig: str, *args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("kubectl")
    assert exe
    return subprocess.run([exe, "--kubeconfig", kubeconfig, *args], capture_output=True, text=True, timeout=120)


def first(events: list[dict[str, Any]], types: set[str], prefix: str, name: str) -> float:
    times = [
        e["ts"] for e in events if e["event"] in types and e["subject"].startswith(prefix) and name in e["subject"]
    ]
    assert times, f"no {types} event for {prefix} {name}: {[(e['event'], e['subject']) for e in events]}"
    return min(times)


def test_a_foreign_upstream_layout_installs_healthy_in_order(
    tmp_path: Path, served: tuple[Path, str, ThreadingHTTPServer], kubeconfig: str
) -> None:
    www, base, server = served
    token = uuid.uuid4().hex[:8]
    group, ns = f"e2e{token}.kfctl.test", f"widgets-{token}"
    sha = make_tarball(www / "manifests.tar.gz", tree_files(token))
    app = tmp_path / "platform"
    app.mkdir()
    kfdef = {
        "apiVersion": "kfdef.apps.kubeflow.org/v1",
        "kind": "KfDef",
        "metadata": {"name": f"foreign-{token}", "namespace": ns},
        "spec": {
            "platform": "generic",
            "repos": [{"name": "upstream", "uri": f"{base}/manifests.tar.gz", "sha256": sha}],
            "applications": [
                {"name": "widget-operator", "kustomizeConfig": {"repoRef": {"name": "upstream", "path": APP_PATH}}}
            ],
        },
    }
    (app / "kfdef.yaml").write_text(yaml.safe_dump(kfdef, sort_keys=False))
    try:
        proc, events = run_kfctl("apply", str(app), "--no-prune", kubeconfig=kubeconfig)
        assert proc.returncode == 0, f"stdout:\n{proc.stdout[-3000:]}\nstderr:\n{proc.stderr[-3000:]}"

        # In order: the CRD is healthy before its custom resource is applied; the Namespace before what lives in it.
        crd_healthy = first(events, {"Healthy"}, "CustomResourceDefinition", f"widgets.{group}")
        assert crd_healthy <= first(events, APPLIED, f"Widget.{group}", "example")
        ns_ready = first(events, {"Healthy", *APPLIED}, "Namespace", ns)
        assert ns_ready <= first(events, APPLIED, "Deployment", "widget-controller")
        assert first(events, {"Healthy"}, "Deployment", "widget-controller")

        # The tree's own parameters reached the objects (replacements from the generated ConfigMap, and a var).
        widget = json.loads(kubectl(kubeconfig, "get", f"widgets.{group}", "example", "-n", ns, "-o", "json").stdout)
        assert widget["spec"]["color"] == "blue"
        deploy = json.loads(
            kubectl(kubeconfig, "get", "deployment", "widget-controller", "-n", ns, "-o", "json").stdout
        )
        assert deploy["spec"]["template"]["spec"]["containers"][0]["args"] == [f"--watch-namespace={ns}"]
        assert deploy["status"].get("availableReplicas") == 1

        lock = yaml.safe_load((app / "kfdef.lock").read_text())
        assert lock["repos"] == [
            {"name": "upstream", "uri": f"{base}/manifests.tar.gz", "kind": "archive", "sha256": sha}
        ]

        # The server is gone: the cache and the lock reproduce the committed output exactly.
        server.shutdown()
        proc, _ = run_kfctl("generate", str(app), "--offline", "--check")
        assert proc.returncode == 0, proc.stderr
    finally:
        kubectl(kubeconfig, "delete", "namespace", ns, "--wait=false", "--ignore-not-found")
        kubectl(kubeconfig, "delete", "crd", f"widgets.{group}", "--wait=false", "--ignore-not-found")
