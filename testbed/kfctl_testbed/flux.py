"""Helpers for the GitOps e2e tests and bench B8 (no tests here): Flux's real controllers as processes against a
cluster, their CRDs, a git repository on 127.0.0.1 holding a kfctl app directory and its export, and what the
Kustomizations say (conditions, inventories).

The controllers are the binaries `e2e/build-binaries --flux` builds from Flux's Go modules, run as plain
processes with the cluster's admin kubeconfig (as Flux's own Deployments run with a cluster-admin
ServiceAccount), not as pods: kfctl never installs Flux, so there is no Deployment of it for the process
runtime to run. Everything they open is on 127.0.0.1: leader election off, metrics and health on loopback
ports, no event forwarding (`--events-addr` empty: events go to the API server only), and the
source-controller's artifact server, from which the kustomize-controller downloads each revision, on
127.0.0.1:<port> with its storage in the test's directory. Each process is recorded with its start time in a
state.json of its own (e2e/localcluster's Proc/State), so it is stopped by its pid, never by name.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from kfctl_testbed import gitserver, localcluster
from kfctl_testbed.poll import PollTimeout, poll

CRDS = (
    localcluster.E2E / "crds" / "flux-source-controller.yaml",
    localcluster.E2E / "crds" / "flux-kustomize-controller.yaml",
)
CRD_NAMES = (
    "buckets.source.toolkit.fluxcd.io",
    "gitrepositories.source.toolkit.fluxcd.io",
    "helmcharts.source.toolkit.fluxcd.io",
    "helmrepositories.source.toolkit.fluxcd.io",
    "ocirepositories.source.toolkit.fluxcd.io",
    "kustomizations.kustomize.toolkit.fluxcd.io",
)
NAMESPACE = "flux-system"
BINARIES = ("source-controller", "kustomize-controller")
KUSTOMIZATIONS = "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations"
GITREPOSITORIES = "/apis/source.toolkit.fluxcd.io/v1/namespaces/flux-system/gitrepositories"
FLUX_NAME_LABEL = "kustomize.toolkit.fluxcd.io/name"


def flux_bin_dir() -> Path:
    """Where `e2e/build-binaries --flux` puts the controllers (KFCTL_E2E_FLUX_DIR overrides)."""
    return localcluster.build_dir("--print-flux-dir", "KFCTL_E2E_FLUX_DIR")


def require_flux_binaries() -> Path:
    """The Flux bin dir; fails the test (never skips) when a controller is missing, naming the fix."""
    return localcluster.require_built("--print-flux-dir", "KFCTL_E2E_FLUX_DIR", BINARIES, "Flux controllers", "--flux")


def kubectl(kubeconfig: str, *args: str, stdin: str | None = None, timeout: float = 300) -> str:
    """The kubectl e2e/build-binaries built (the cluster's version) on PATH; its stdout, or AssertionError."""
    argv = ["kubectl", "--kubeconfig", kubeconfig, *args]
    proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return proc.stdout


def install_crds(kubeconfig: str) -> None:
    """Flux's generated CRDs (e2e/crds/), Established, and the flux-system namespace."""
    kubectl(kubeconfig, "apply", "--server-side", "--field-manager=kfctl-e2e", *(f"-f={p}" for p in CRDS))
    kubectl(kubeconfig, "wait", "--for=condition=Established", "--timeout=60s", *(f"crd/{n}" for n in CRD_NAMES))
    kubectl(kubeconfig, "apply", "--server-side", "--field-manager=kfctl-e2e", "-f", "-", stdin=_namespace())


def _namespace() -> str:
    return f"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {NAMESPACE}\n"


@dataclass
class Flux:
    """Flux's two controllers, running; ``state`` records their pids (stopped by ``stop``)."""

    state: localcluster.State
    logs: dict[str, Path]

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(f"--- {name}:\n{localcluster.tail(str(path), lines)}" for name, path in self.logs.items())

    def alive(self) -> bool:
        return all(localcluster.alive(p) for p in self.state.procs)

    def non_loopback_sockets(self) -> list[str]:
        return localcluster.non_loopback_sockets(self.state)


def _ready(url: str) -> bool:
    with contextlib.suppress(OSError), localcluster.open_loopback(url, timeout=2) as r:
        return bool(r.status == 200)
    return False


@contextlib.contextmanager
def run_flux(kubeconfig: str, workdir: Path, *, requeue_dependency: str = "30s") -> Iterator[Flux]:
    """Start source-controller and kustomize-controller against ``kubeconfig``; stop both when the block ends.

    ``requeue_dependency`` is how long a Kustomization whose dependsOn is not Ready yet waits before it looks
    again (kustomize-controller's --requeue-dependency; Flux's default is 30s): it is what orders the
    applications, and most of the time Flux takes beyond the applies themselves."""
    bin_dir = require_flux_binaries()
    (workdir / "artifacts").mkdir(parents=True, exist_ok=True)  # the artifact server's storage must exist
    state = localcluster.State(backend="flux", state_dir=str(workdir), kubeconfig=kubeconfig)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir),
        "KUBECONFIG": kubeconfig,
        "RUNTIME_NAMESPACE": NAMESPACE,  # where Flux's controllers would run; their events' namespace
    }
    names = ("sc-metrics", "sc-health", "sc-storage", "kc-metrics", "kc-health")
    ports = dict(zip(names, localcluster.free_ports(len(names)), strict=True))
    state.ports = ports
    common = ["--enable-leader-election=false", "--events-addr=", "--log-level=info"]
    storage = f"127.0.0.1:{ports['sc-storage']}"
    argv = {
        "source-controller": [
            *common,
            f"--metrics-addr=127.0.0.1:{ports['sc-metrics']}",
            f"--health-addr=127.0.0.1:{ports['sc-health']}",
            f"--storage-path={workdir / 'artifacts'}",
            f"--storage-addr={storage}",
            f"--storage-adv-addr={storage}",
        ],
        "kustomize-controller": [
            *common,
            f"--metrics-addr=127.0.0.1:{ports['kc-metrics']}",
            f"--health-addr=127.0.0.1:{ports['kc-health']}",
            f"--requeue-dependency={requeue_dependency}",
        ],
    }
    health = {"source-controller": ports["sc-health"], "kustomize-controller": ports["kc-health"]}
    flux = Flux(state, {})
    try:
        for name in BINARIES:
            proc = localcluster.spawn(state, name, [str(bin_dir / name), *argv[name]], env=env)
            flux.logs[name] = Path(proc.log)
        for name in BINARIES:
            localcluster.wait_for(
                f"Flux's {name} to be ready",
                lambda n=name: _ready(f"http://127.0.0.1:{health[n]}/readyz"),  # type: ignore[misc]
                timeout=60,
                procs=state.procs,
            )
        yield flux
    finally:
        localcluster.stop_procs(state.procs)


# --- the loopback git repository -------------------------------------------------------------------------------


@dataclass
class Repo:
    """A working copy whose pushes go to a bare repository the loopback git server serves."""

    work: Path
    url: str

    def commit_and_push(self, message: str, *paths: str) -> str:
        """`git add` the paths (relative to the working copy), commit, push main; the new commit's hash."""
        gitserver.git("add", "--all", "--", *paths, cwd=self.work)
        gitserver.git("commit", "--quiet", "--allow-empty", "-m", message, cwd=self.work)
        gitserver.git("push", "--quiet", self.url, "main", cwd=self.work)
        return gitserver.git("rev-parse", "HEAD", cwd=self.work).strip()


def new_repo(root: Path, server: gitserver.GitServer, name: str) -> Repo:
    gitserver.init_bare(root / "served", name)
    work = root / "work"
    work.mkdir(parents=True)
    gitserver.git("init", "--quiet", "--initial-branch=main", cwd=work)
    return Repo(work, server.url(name))


@contextlib.contextmanager
def served_repo(root: Path, name: str = "platform") -> Iterator[Repo]:
    """A new repository under ``root`` (bare in root/served, working copy in root/work), served on 127.0.0.1 by
    the loopback git server while the block runs."""
    (root / "served").mkdir()
    with gitserver.serve(root / "served") as server:
        yield new_repo(root, server, name)


# --- what the Kustomizations say ---------------------------------------------------------------------------------


def condition(obj: Mapping[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def is_ready(obj: Mapping[str, Any]) -> bool:
    return condition(obj, "Ready").get("status") == "True"


def timestamp(value: str) -> float:
    """An RFC 3339 timestamp of the API (second resolution) as seconds since the epoch."""
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def inventory_keys(ks: Mapping[str, Any]) -> set[tuple[str, str, str, str]]:
    """(group, kind, namespace, name) of each object a Kustomization applied, from status.inventory: Flux writes
    each entry's id as <namespace>_<name>_<group>_<kind>, a ':' in the name as '__' (cli-utils' ObjMetadata)."""
    out = set()
    for entry in ((ks.get("status") or {}).get("inventory") or {}).get("entries") or []:
        parts = str(entry["id"]).split("_")
        name = "_".join(parts[1:-2]).replace("__", ":")
        out.add((parts[-2], parts[-1], parts[0], name))
    return out


def applied(obj: Mapping[str, Any], revision: str | None) -> bool:
    """Ready, and (when a revision is named) the revision applied is that one. Flux can show Ready=True in one
    status write and lastAppliedRevision in the next (a CI run read the Ready one alone), so a test that
    reads both waits for both."""
    return is_ready(obj) and (revision is None or (obj.get("status") or {}).get("lastAppliedRevision") == revision)


def wait_all_ready(
    api: Any, names: list[str], *, timeout: float, flux: Flux, revision: str | None = None
) -> dict[str, dict[str, Any]]:
    """Poll until every named Kustomization is Ready (at ``revision`` when given); their objects. Fails naming
    the not-Ready ones' conditions (and the controllers' log tails) on timeout."""
    last: dict[str, dict[str, Any]] = {}

    def all_applied() -> bool:
        nonlocal last
        last = {k["metadata"]["name"]: k for k in api.list(KUSTOMIZATIONS)}
        if all(n in last and applied(last[n], revision) for n in names):
            return True
        if not flux.alive():
            raise _FluxStopped
        return False

    try:
        poll(all_applied, timeout=timeout, what="the Kustomizations", interval=1, passes=(_FluxStopped,))
    except (PollTimeout, _FluxStopped) as e:
        waiting = {n: condition(last.get(n, {}), "Ready").get("message", "absent") for n in names}
        error = f"\n(last error: {e.error})" if isinstance(e, PollTimeout) and e.error else ""
        pytest.fail(
            f"Kustomizations not Ready after {timeout:.0f} s: "
            + "; ".join(f"{n}: {m}" for n, m in waiting.items() if not applied(last.get(n, {}), revision))
            + f"{error}\n{flux.log_tail()}",
            pytrace=False,
        )
    return last


class _FluxStopped(Exception):
    """A Flux controller exited: waiting longer is pointless."""
