"""Helpers for the reliability end-to-end tests (no tests here): kill kfctl at an event, restart the API
server of a local test cluster, list everything carrying an ApplySet label, make a narrowly-allowed user.

Only processes these helpers start, or the API server recorded in a test cluster's own state dir, are ever
signalled; every wait is a poll with a deadline.
"""

from __future__ import annotations

import copy
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from apply_support import REPO, kubectl
from harness import dump_all
from kfctl_testbed import kube_rest, localcluster
from kfctl_testbed.poll import PollTimeout, poll

PART_OF = "applyset.kubernetes.io/part-of"
APPLYSET_ID = "applyset.kubernetes.io/id"
Key = tuple[str, str, str, str]  # group, kind, namespace, name
Event = dict[str, Any]


@dataclass
class Interrupted:
    """A kfctl run stopped by SIGKILL at an event (or that ended by itself before it)."""

    events: list[Event]
    killed_at: Event | None
    code: int | None
    stderr: str = ""
    lines: list[str] = field(default_factory=list)

    def explain(self) -> str:
        tail = "\n".join(self.lines[-30:])
        return f"killed at {self.killed_at}; exit {self.code}\nstdout tail:\n{tail}\nstderr:\n{self.stderr[-3000:]}"


def kfctl_until(
    *args: str, kubeconfig: str, stop: Callable[[Event, list[Event]], bool], timeout: float = 300
) -> Interrupted:
    """Run kfctl -o json and SIGKILL it as soon as ``stop(event, events so far)`` is true.

    kfctl writes each event as a JSON line, unbuffered here, so the kill lands right after the event was
    emitted: the process gets no chance to clean up, as with an OOM kill or a node going away."""
    argv = [sys.executable, "-m", "kfctl.cli.main", *args, "-o", "json", "--kubeconfig", kubeconfig]
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"} | {"PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True
    )
    lines: queue.Queue[str | None] = queue.Queue()
    errors: list[str] = []

    def pump_out() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def pump_err() -> None:
        assert proc.stderr is not None
        errors.append(proc.stderr.read())

    threads = [threading.Thread(target=pump_out, daemon=True), threading.Thread(target=pump_err, daemon=True)]
    for t in threads:
        t.start()
    out = Interrupted([], None, None)
    deadline = time.monotonic() + timeout
    try:
        while True:
            try:
                line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"kfctl {' '.join(args)} neither reached the kill point nor ended") from None
            if line is None:
                break
            out.lines.append(line.rstrip("\n"))
            if not line.startswith('{"'):
                continue
            doc = json.loads(line)
            if "event" not in doc:
                continue
            out.events.append(doc)
            if stop(doc, out.events):
                os.kill(proc.pid, signal.SIGKILL)
                out.killed_at = doc
                break
    finally:
        if proc.poll() is None and out.killed_at is None:
            proc.kill()
        out.code = proc.wait(timeout=30)
        for t in threads:
            t.join(timeout=10)
        out.stderr = "".join(errors)
    return out


def nth(event_type: str, n: int, *, subject: str = "") -> Callable[[Event, list[Event]], bool]:
    """Stop at the n-th event of a type (1-based), optionally only those whose subject contains ``subject``."""

    def stop(event: Event, events: list[Event]) -> bool:
        seen = [e for e in events if e["event"] == event_type and subject in e["subject"]]
        return event["event"] == event_type and subject in event["subject"] and len(seen) == n

    return stop


# --- what the cluster holds ---------------------------------------------------------------------------


def listable_resources(api: kube_rest.Client) -> list[tuple[str, str, str, bool]]:
    """(group, version, plural, namespaced) of every listable kind, at each group's preferred version."""
    docs = [("", "v1", api.request("GET", "/api/v1"))]
    for g in api.request("GET", "/apis").get("groups", []):
        version = g["preferredVersion"]["version"]
        try:
            docs.append((g["name"], version, api.request("GET", f"/apis/{g['name']}/{version}")))
        except kube_rest.ApiError:
            continue
    out = []
    for group, version, doc in docs:
        for r in doc.get("resources", []):
            if "/" not in r["name"] and "list" in r.get("verbs", []):
                out.append((group, version, r["name"], bool(r.get("namespaced"))))
    return out


def labelled_objects(kubeconfig: str, applyset_id: str) -> set[Key]:
    """Every object in the cluster carrying ``applyset.kubernetes.io/part-of=<applyset_id>`` that kfctl (not
    Kubernetes) made: the endpoints controllers copy a Service's labels onto its Endpoints and EndpointSlices
    (owned by the Service, or named after it), and those are the Service's, not ours to track."""
    api = kube_rest.Client(kubeconfig)
    found: set[Key] = set()
    try:
        for group, version, plural, _ in listable_resources(api):
            base = f"/apis/{group}/{version}" if group else f"/api/{version}"
            doc = _get_patiently(api, f"{base}/{plural}", query={"labelSelector": f"{PART_OF}={applyset_id}"})
            kind = str((doc or {}).get("kind", "")).removesuffix("List")
            for item in (doc or {}).get("items") or []:
                meta = item["metadata"]
                if meta.get("ownerReferences"):
                    continue
                found.add((group, kind, meta.get("namespace", ""), meta["name"]))
    finally:
        api.close()
    services = {(ns, n) for g, k, ns, n in found if (g, k) == ("", "Service")}
    return {key for key in found if not (key[:2] == ("", "Endpoints") and key[2:] in services)}


def _get_patiently(api: kube_rest.Client, path: str, *, query: dict[str, str], timeout: float = 60) -> Any:
    """GET, waiting out 429/5xx (a CRD's storage still initializing, an API server restarting)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return api.get(path, query=query)
        except kube_rest.ApiError as e:
            if (e.status != 429 and e.status < 500) or time.monotonic() > deadline:
                raise
        time.sleep(0.5)


def inventory(kubeconfig: str, *, namespace: str, name: str) -> tuple[str, dict[Key, str]] | None:
    """The inventory ConfigMap's ApplySet id and its members (key → UID), read straight from the cluster."""
    api = kube_rest.Client(kubeconfig)
    try:
        cm = api.get(f"/api/v1/namespaces/{namespace}/configmaps/{name}")
    finally:
        api.close()
    if cm is None:
        return None
    members = json.loads((cm.get("data") or {}).get("objects.json") or "[]")
    return (
        cm["metadata"]["labels"][APPLYSET_ID],
        {(m["group"], m["kind"], m["namespace"], m["name"]): m["uid"] for m in members},
    )


# --- the API server of a local test cluster ------------------------------------------------------------


def _apiserver(state_dir: Path) -> tuple[localcluster.State, int]:
    state = localcluster.State.load(state_dir)
    assert state is not None and state.backend == "local", f"{state_dir} is not a local e2e cluster"
    index = next(i for i, p in enumerate(state.procs) if p.name == "kube-apiserver")
    return state, index


def stop_apiserver(state_dir: Path, *, timeout: float = 30) -> None:
    """SIGTERM the cluster's recorded kube-apiserver (only if it is still the process recorded), then wait
    until it is gone; SIGKILL if it outlives ``timeout``."""
    state, i = _apiserver(state_dir)
    proc = state.procs[i]
    if not localcluster.alive(proc):
        return
    os.kill(proc.pid, signal.SIGTERM)
    try:
        poll(lambda: not localcluster.alive(proc), timeout=timeout, what="kube-apiserver to exit", interval=0.1)
    except PollTimeout:
        os.kill(proc.pid, signal.SIGKILL)
        poll(lambda: not localcluster.alive(proc), timeout=10, what="kube-apiserver to exit on SIGKILL", interval=0.1)


def start_apiserver(state_dir: Path, *, timeout: float = 90) -> None:
    """Start kube-apiserver again with exactly the recorded arguments; record its new pid in the state file
    (in the old one's place, so `e2e/cluster down` stops it in the same order), and wait for /readyz."""
    state, i = _apiserver(state_dir)
    old = state.procs.pop(i)
    assert not localcluster.alive(old), "kube-apiserver is still running"
    state.save()
    new = localcluster.spawn(state, "kube-apiserver", old.argv)
    state.procs.remove(new)
    state.procs.insert(i, new)
    state.save()
    localcluster.wait_for(
        "kube-apiserver /readyz after a restart", lambda: localcluster.api_ready(state), timeout=timeout, procs=[new]
    )


# --- a user with narrow rights ---------------------------------------------------------------------------


def token_kubeconfig(admin_kubeconfig: str, *, namespace: str, service_account: str, path: Path) -> str:
    """A kubeconfig for the ServiceAccount (a bound token from the TokenRequest API), same server and CA."""
    token = kubectl(admin_kubeconfig, "create", "token", service_account, "-n", namespace, "--duration", "2h").strip()
    config = yaml.safe_load(Path(admin_kubeconfig).read_text())
    context = next(c for c in config["contexts"] if c["name"] == config["current-context"])["context"]
    cluster = next(c for c in config["clusters"] if c["name"] == context["cluster"])
    out = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [copy.deepcopy(cluster)],
        "users": [{"name": service_account, "user": {"token": token}}],
        "contexts": [{"name": "narrow", "context": {"cluster": cluster["name"], "user": service_account}}],
        "current-context": "narrow",
    }
    path.write_text(yaml.safe_dump(out), encoding="utf-8")
    path.chmod(0o600)
    return str(path)


def kubectl_apply(kubeconfig: str, objects: list[dict[str, Any]]) -> None:
    proc = subprocess.run(
        ["kubectl", "--kubeconfig", kubeconfig, "apply", "-f", "-"],
        input=dump_all(objects),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if proc.returncode != 0:
        raise AssertionError(f"kubectl apply: {proc.stderr}")
