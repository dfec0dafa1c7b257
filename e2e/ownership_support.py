"""Helpers for the ownership tests (no tests here): a real `helm` CLI, the test chart filled with kfctl's own
rendered objects, kfctl's text output, and the identity (UID, resourceVersion) of live objects.

`helm` is built by e2e/build-binaries (HELM_VERSION in e2e/versions.env) into the same cache as the control
plane, and preferred to any other helm on PATH, so the tests meet the Helm version they were written for.
Each Helm instance keeps its cache, config and data under a directory of its own, so the tests never read or
write the user's ~/.config/helm.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from apply_support import REPO, Run, kubectl
from harness import dump_all, poll

from kfctl import yamlio

E2E_DIR = Path(__file__).resolve().parent
CHART = E2E_DIR / "helm" / "cert-manager"
CHART_OBJECTS = Path("objects") / "cert-manager.yaml"  # inside the chart, where templates/objects.yaml reads


def helm_binary() -> str:
    """The helm e2e/build-binaries keeps with the control plane (built there now if it is missing and Go is
    installed: about 2 min cold), else $KFCTL_E2E_BIN_DIR's, else the one on $PATH; fails the test naming the
    fix."""
    override = os.environ.get("KFCTL_E2E_BIN_DIR")
    if override and (Path(override) / "helm").is_file():
        return str(Path(override) / "helm")
    build = str(E2E_DIR / "build-binaries")
    printed = subprocess.run([build, "--print-bin-dir"], capture_output=True, text=True, check=False)
    cached = Path(printed.stdout.strip()) / "helm"
    if not override and printed.returncode == 0 and not cached.is_file() and shutil.which("go"):
        built = subprocess.run([build], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, check=False)
        if built.returncode != 0:
            pytest.fail(f"e2e/build-binaries could not build helm:\n{built.stderr[-3000:]}", pytrace=False)
    if cached.is_file():
        return str(cached)
    found = shutil.which("helm")
    if found:
        return found
    pytest.fail(
        f"no helm CLI in {cached.parent} nor on PATH: install Go and run e2e/build-binaries (it builds helm from "
        "helm.sh/helm/v3 at HELM_VERSION of e2e/versions.env), or put helm on PATH",
        pytrace=False,
    )


class Helm:
    """The real helm CLI against one cluster, with its own cache/config/data directories."""

    def __init__(self, kubeconfig: str, home: Path) -> None:
        self.binary = helm_binary()
        self.kubeconfig = kubeconfig
        self.env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG" and not k.startswith("HELM_")}
        for what in ("CACHE", "CONFIG", "DATA"):
            d = home / what.lower()
            d.mkdir(parents=True, exist_ok=True)
            self.env[f"HELM_{what}_HOME"] = str(d)

    def __call__(self, *args: str, check: bool = True, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [self.binary, *args, "--kubeconfig", self.kubeconfig],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env,
            check=False,
        )
        if check and proc.returncode != 0:
            raise AssertionError(f"helm {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}")
        return proc


def chart_with(objects: list[dict[str, Any]], dest: Path) -> Path:
    """A copy of e2e/helm/cert-manager at ``dest`` whose template installs exactly ``objects``."""
    shutil.copytree(CHART, dest)
    out = dest / CHART_OBJECTS
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(dump_all(objects, sort_keys=False), encoding="utf-8")
    return dest


def rendered(path: Path) -> list[dict[str, Any]]:
    return [o for o in yamlio.safe_load_all(path.read_text(encoding="utf-8")) if o]


def subject(o: Mapping[str, Any]) -> str:
    """The object as kfctl names it: ``Kind[.group] [ns/]name``."""
    api = str(o["apiVersion"])
    group = api.split("/")[0] if "/" in api else ""
    meta = o["metadata"]
    kind = f"{o['kind']}.{group}" if group else str(o["kind"])
    return f"{kind} {meta['namespace'] + '/' if meta.get('namespace') else ''}{meta['name']}"


def key_order(o: Mapping[str, Any]) -> tuple[str, str, str, str]:
    """kfctl's order of object keys: group, kind, namespace, name."""
    api = str(o["apiVersion"])
    meta = o["metadata"]
    return (api.split("/")[0] if "/" in api else "", str(o["kind"]), str(meta.get("namespace") or ""), meta["name"])


def _resource(o: Mapping[str, Any]) -> str:
    api = str(o["apiVersion"])
    group = api.split("/")[0] if "/" in api else ""
    return f"{str(o['kind']).lower()}{'.' + group if group else ''}/{o['metadata']['name']}"


def identities(kubeconfig: str, objects: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """subject → {uid, resourceVersion, managers, labels, annotations} of each object that exists now (one
    kubectl call per namespace)."""
    by_ns: dict[str, list[str]] = {}
    for o in objects:
        by_ns.setdefault(str(o["metadata"].get("namespace") or ""), []).append(_resource(o))
    out: dict[str, dict[str, Any]] = {}
    for ns, resources in by_ns.items():
        where = ["-n", ns] if ns else []
        flags = ("--ignore-not-found", "--show-managed-fields", "-o", "json")
        text = kubectl(kubeconfig, "get", *where, *resources, *flags)
        items = ((json.loads(text) or {}).get("items") or []) if text.strip() else []
        for item in items:
            meta = item["metadata"]
            out[subject(item)] = {
                "uid": meta["uid"],
                "resourceVersion": meta["resourceVersion"],
                "managers": sorted({f.get("manager", "?") for f in meta.get("managedFields") or []}),
                "labels": meta.get("labels") or {},
                "annotations": meta.get("annotations") or {},
            }
    return out


def settled_identities(
    kubeconfig: str, objects: list[dict[str, Any]], *, quiet_for: float = 3.0, timeout: float = 120
) -> dict[str, dict[str, Any]]:
    """identities() once no resourceVersion has changed for ``quiet_for`` seconds: controllers (Deployment
    status, CRD Established, the stand-in's caBundle) have finished with the objects, so a later change
    is someone's write."""
    last = identities(kubeconfig, objects)
    since = time.monotonic()

    def settled() -> tuple[dict[str, dict[str, Any]]] | None:  # a tuple: an empty dict is an answer too
        nonlocal last, since
        now = identities(kubeconfig, objects)
        if now != last:
            last, since = now, time.monotonic()
            return None
        return (now,) if time.monotonic() - since >= quiet_for else None

    return poll(settled, timeout=timeout, what=f"the objects to stay unchanged for {quiet_for:g} s", interval=0.5)[0]


def kfctl_text(*args: str, kubeconfig: str, timeout: float = 900) -> Run:
    """kfctl with its text output, exactly as a person sees it (no -o json)."""
    argv = [sys.executable, "-m", "kfctl.cli.main", *args, "--kubeconfig", kubeconfig]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    start = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, env=env, cwd=REPO)
    return Run(list(args), proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start)
