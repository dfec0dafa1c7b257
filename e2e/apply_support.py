"""Helpers for the apply end-to-end tests (no tests here): run the real kfctl, write small local bundles.

kfctl runs as a subprocess, exactly as a user runs it, with -o json so the tests read its event log.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from harness import dump_all
from kfctl_testbed import poll as polling

REPO = Path(__file__).resolve().parent.parent


@dataclass
class Run:
    args: list[str]
    code: int
    stdout: str
    stderr: str
    seconds: float
    events: list[dict[str, Any]] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    error: dict[str, Any] = field(default_factory=dict)

    def first(self, event: str, subject: str) -> float:
        return min(e["ts"] for e in self.events if e["event"] == event and e["subject"] == subject)

    def explain(self) -> str:
        return (
            f"kfctl {' '.join(self.args)} exited {self.code}\nstdout tail:\n{self.stdout[-3000:]}\nstderr:\n"
            + (self.stderr[-5000:])
        )


def kfctl(*args: str, kubeconfig: str, timeout: float = 900) -> Run:
    """Run kfctl with -o json; parse its JSON lines (events, then the summary) and its JSON error."""
    argv = [sys.executable, "-m", "kfctl.cli.main", *args, "-o", "json", "--kubeconfig", kubeconfig]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    run = Run(list(args), proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)
    for line in proc.stdout.splitlines():
        if not line.startswith("{"):
            continue
        try:
            doc = json.loads(line)
        except ValueError:
            continue
        if "event" in doc:
            run.events.append(doc)
        elif "summary" in doc:
            run.summary = doc["summary"]
    for line in proc.stderr.splitlines():
        if line.startswith('{"error"'):
            run.error = json.loads(line)["error"]
    return run


def install(app: Path, components: str, *, kubeconfig: str, wait_timeout: str = "4m") -> None:
    """`kfctl init` (platform kind, these comma-separated catalog components), `generate` and `apply` (waiting
    for health) into the app dir `app`; fails the test on any other exit than 0."""
    for args in (
        ("init", str(app), "--platform", "kind", "--components", components),
        ("generate", str(app)),
        ("apply", str(app), "--wait-timeout", wait_timeout),
    ):
        run = kfctl(*args, kubeconfig=kubeconfig)
        assert run.code == 0, run.explain()


def write_local_kfdef(app_dir: Path, *, name: str, namespace: str, apps: dict[str, list[dict[str, Any]]]) -> Path:
    """A KfDef whose applications are plain kustomize dirs under APPDIR/src/<app>/ (repo file://)."""
    src = app_dir / "src"
    for app, objects in apps.items():
        d = src / app
        d.mkdir(parents=True, exist_ok=True)
        (d / "objects.yaml").write_text(dump_all(objects, sort_keys=False), encoding="utf-8")
        (d / "kustomization.yaml").write_text(
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [objects.yaml]\n",
            encoding="utf-8",
        )
    kfdef = {
        "apiVersion": "kfdef.apps.kubeflow.org/v1",
        "kind": "KfDef",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "platform": "generic",
            "repos": [{"name": "local", "uri": f"file://{src}"}],
            "applications": [
                {"name": app, "kustomizeConfig": {"repoRef": {"name": "local", "path": app}}} for app in apps
            ],
        },
    }
    path = app_dir / "kfdef.yaml"
    path.write_text(yaml.safe_dump(kfdef, sort_keys=False), encoding="utf-8")
    return path


def released(kubeconfig: str) -> list[str]:
    """What an earlier `kfctl delete` kept and released (annotation kfctl.kubeflow.org/released-from; its ownership
    labels are gone), as `kubectl get -o name` names it: namespaces, claims and Secrets are what delete keeps."""
    doc = json.loads(kubectl(kubeconfig, "get", "namespaces,persistentvolumeclaims,secrets", "-A", "-o", "json"))
    return sorted(
        f"{item['kind'].lower()}/{item['metadata']['name']}"
        for item in doc["items"]
        if "kfctl.kubeflow.org/released-from" in (item["metadata"].get("annotations") or {})
    )


def kubectl(kubeconfig: str, *args: str, check: bool = True) -> str:
    proc = subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, *args], capture_output=True, text=True, timeout=120, check=False
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)}: {proc.stderr}")
    return proc.stdout


class CertManagerWebhookCA:
    """Plays cert-manager-webhook's startup: it creates its own CA Secret (--dynamic-serving-ca-secret-name),
    which cainjector then injects (inject-ca-from-secret). The harness's stand-in does not do this yet; this
    does it only when the Secret is missing, so it steps aside once the stand-in learns it."""

    def __init__(self, kubeconfig: str) -> None:
        self.kubeconfig = kubeconfig
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)

    def __enter__(self) -> CertManagerWebhookCA:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)

    def _loop(self) -> None:
        from kfctl_testbed import pki

        while not self.stop.wait(1.0):
            ns = kubectl(self.kubeconfig, "get", "namespace", "cert-manager", "-o", "name", check=False)
            if not ns.strip():
                continue
            have = kubectl(
                self.kubeconfig,
                "get",
                "secret",
                "-n",
                "cert-manager",
                "cert-manager-webhook-ca",
                "-o",
                "name",
                check=False,
            )
            if have.strip():
                continue
            ca = pki.make_ca("cert-manager-webhook-ca")
            secret = {
                "apiVersion": "v1",
                "kind": "Secret",
                # As cert-manager's webhook makes it: cainjector injects only from Secrets that allow it.
                "metadata": {
                    "name": "cert-manager-webhook-ca",
                    "namespace": "cert-manager",
                    "annotations": {"cert-manager.io/allow-direct-injection": "true"},
                },
                "type": "kubernetes.io/tls",
                "data": {
                    "ca.crt": base64.b64encode(ca.cert_pem).decode(),
                    "tls.crt": base64.b64encode(ca.cert_pem).decode(),
                    "tls.key": base64.b64encode(ca.key_pem).decode(),
                },
            }
            subprocess.run(
                ["kubectl", "--kubeconfig", self.kubeconfig, "create", "-f", "-"],
                input=json.dumps(secret),
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
            )


def exists(kubeconfig: str, *what: str, namespace: str = "") -> bool:
    where = ["-n", namespace] if namespace else []
    return bool(kubectl(kubeconfig, "get", *where, *what, "--ignore-not-found", "-o", "name").strip())


def wait_gone(
    kubeconfig: str, *what: str, namespace: str = "", timeout: float = 180, deleted: Run | None = None
) -> None:
    """Wait until the object is gone; on timeout say what holds it (a namespace's conditions name the content or
    finalizers left, or a discovery failure) and, given the `kfctl delete` run that was to remove it, what that
    run said of it (a namespace it kept names why)."""
    try:
        polling.poll(
            lambda: not exists(kubeconfig, *what, namespace=namespace), timeout=timeout, what=f"{' '.join(what)} gone"
        )
    except polling.PollTimeout as timed_out:
        where = ["-n", namespace] if namespace else []
        left = kubectl(kubeconfig, "get", *where, *what, "-o", "json", check=False)
        obj = json.loads(left) if left.strip() else {}
        status = obj.get("status", {})
        meta = obj.get("metadata", {})
        # Never deleted, or deleted and made again? Its creation and who wrote it tell (issue 29, item 2).
        writers = [(m.get("manager"), m.get("operation"), m.get("time")) for m in meta.get("managedFields") or []]
        history = (
            f"; created {meta.get('creationTimestamp')}, deletionTimestamp {meta.get('deletionTimestamp')}, "
            f"written by {writers}, annotations {sorted(meta.get('annotations') or {})}"
        )
        said = ""
        if deleted is not None:
            subject = f"{what[0].capitalize()} {what[-1]}"
            lines = [f"{e['event']}: {e.get('message', '')}" for e in deleted.events if e["subject"] == subject]
            said = f"; kfctl delete (exit {deleted.code}) said of {subject}: {lines or 'nothing'}"
        pytest.fail(f"{timed_out}; its status: {status}{history}{said}", pytrace=False)
