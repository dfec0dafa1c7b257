"""Helpers for the Argo CD e2e test (no tests here): Argo CD's real application controller and repo-server (and,
for a fleet, its ApplicationSet controller) as processes against a cluster, with Redis from Debian's
redis-server, their CRDs and settings, the cluster Secrets that register clusters, and what the Applications
say.

The one binary `e2e/build-binaries --argocd` builds from Argo CD's Go module runs as each component by
$ARGOCD_BINARY_NAME (what its basename would select), with the cluster's admin kubeconfig (as Argo CD's own
Deployments run with cluster-admin ServiceAccounts), not as pods: kfctl never installs Argo CD. The
destination `https://kubernetes.default.svc` of the Applications kfctl exports is the controller's own
kubeconfig (ARGOCD_FAKE_IN_CLUSTER, Argo CD's switch for running outside a pod). Everything talks over
127.0.0.1: Redis (`--bind 127.0.0.1`, no persistence, its files in the test's directory), the repo-server's gRPC
(plaintext on both ends: no certificates to make) and metrics, no commit server (the controller is pointed at a
closed loopback port: only source hydration, which kfctl does not export, would dial it). One exception is
Argo CD's: the controller's metrics server listens on 0.0.0.0 (controller/appcontroller.go hard-codes the
address, only its port is a flag; the socket shows as [::], tcp6); `non_loopback_sockets` reports it as
ALL_INTERFACES_LISTENER, the only socket the test allows (it dials nothing).

What Argo CD's own install would also create and the controller needs: the argoproj.io CRDs (Application,
ApplicationSet, AppProject: generated from the module by e2e/gen-gitops-crds), the `argocd` namespace, the argocd-cm,
argocd-rbac-cm and argocd-secret it reads its settings from (labelled app.kubernetes.io/part-of: argocd, the
label its settings informer selects), and the `default` AppProject, which argocd-server creates at start-up
in a real install. Each process is recorded with its start time in a state.json of its own (localcluster's
Proc/State), so it is stopped by its pid, never by name.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from kfctl_testbed import kube_rest, localcluster
from kfctl_testbed.flux import kubectl
from kfctl_testbed.poll import PollTimeout, poll

CRDS = localcluster.E2E / "crds" / "argocd.yaml"
CRD_NAMES = ("applications.argoproj.io", "applicationsets.argoproj.io", "appprojects.argoproj.io")
NAMESPACE = "argocd"
BINARIES = ("argocd", "kustomize")
APPLICATIONS = f"/apis/argoproj.io/v1alpha1/namespaces/{NAMESPACE}/applications"
APPLICATIONSETS = f"/apis/argoproj.io/v1alpha1/namespaces/{NAMESPACE}/applicationsets"
IN_CLUSTER = "https://kubernetes.default.svc"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PART_OF = {"app.kubernetes.io/part-of": "argocd"}
ALL_INTERFACES_LISTENER = "argocd-application-controller: metrics on 0.0.0.0 (hard-coded by Argo CD)"


def argocd_bin_dir() -> Path:
    """Where `e2e/build-binaries --argocd` puts argocd and kustomize (KFCTL_E2E_ARGOCD_DIR overrides)."""
    return localcluster.build_dir("--print-argocd-dir", "KFCTL_E2E_ARGOCD_DIR")


def require_argocd() -> Path:
    """Argo CD's bin dir; fails the test (never skips) when a binary or redis-server is missing, naming the fix."""
    bin_dir = localcluster.require_built("--print-argocd-dir", "KFCTL_E2E_ARGOCD_DIR", BINARIES, "Argo CD", "--argocd")
    if shutil.which("redis-server") is None:
        pytest.fail("no redis-server on PATH: run `make redis` (make setup does; Debian's redis-server)", pytrace=False)
    return bin_dir


def _settings(argocd_cm: Mapping[str, str]) -> list[dict[str, Any]]:
    meta = {"namespace": NAMESPACE, "labels": PART_OF}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        # As Argo CD's install.yaml has them: no data of their own, which would own .data as a whole under
        # server-side apply, so that an `apply --server-side` of other keys (the export's argocd-cm.yaml)
        # would conflict with it.
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-cm", **meta}}
        | ({"data": dict(argocd_cm)} if argocd_cm else {}),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "argocd-rbac-cm", **meta}},
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "argocd-secret", **meta},
            "stringData": {"server.secretkey": secrets.token_urlsafe(32)},
        },
    ]


def default_project() -> dict[str, Any]:
    """The AppProject argocd-server creates when it starts (server/server.go's initializeDefaultProject)."""
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "AppProject",
        "metadata": {"name": "default", "namespace": NAMESPACE},
        "spec": {
            "sourceRepos": ["*"],
            "destinations": [{"server": "*", "namespace": "*"}],
            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
        },
    }


def install(kubeconfig: str, *, argocd_cm: Mapping[str, str] = {}) -> None:
    """The CRDs (Established), the namespace, the settings (argocd-cm with ``argocd_cm``) and the default project."""
    kubectl(kubeconfig, "apply", "--server-side", "--field-manager=kfctl-e2e", f"-f={CRDS}")
    # Polled: `kubectl wait --for=condition=Established` right after the create fails while the CRD has no
    # conditions yet (".status.conditions accessor error: <nil> is of the type <nil>", seen here).
    api = kube_rest.Client(kubeconfig)
    try:
        poll(
            lambda: all(_established(api.get(f"{CRD_PATH}/{n}") or {}) for n in CRD_NAMES),
            timeout=60,
            what="Argo CD's CRDs to be Established",
        )
    finally:
        api.close()
    docs = [*_settings(argocd_cm), default_project()]
    kubectl(
        kubeconfig, "apply", "--server-side", "--field-manager=kfctl-e2e", "-f", "-", stdin=yaml.safe_dump_all(docs)
    )


def _established(crd: Mapping[str, Any]) -> bool:
    conditions = (crd.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


@dataclass
class ArgoCD:
    """Redis, the repo-server and the application controller, running; ``state`` records their pids."""

    state: localcluster.State
    logs: dict[str, Path]
    argvs: dict[str, list[str]] = field(default_factory=dict)  # each process's first argv, by name
    envs: dict[str, dict[str, str]] = field(default_factory=dict)  # and its environment
    ready: dict[str, Callable[[], bool]] = field(default_factory=dict)
    ready_timeout: float = 90.0  # seconds `spawn` waits for a process to be ready

    def proc(self, name: str) -> localcluster.Proc:
        [proc] = [p for p in self.state.procs if p.name == name]
        return proc

    def stop(self, name: str) -> int:
        """Stop one process (``redis-server``, …) by its recorded pid; its pid. `alive` is False until `start`."""
        proc = self.proc(name)
        left = localcluster.stop_procs([proc])
        assert not left, f"{name} (pid {proc.pid}) did not stop"
        return proc.pid

    def start(self, name: str, *extra: str) -> int:
        """Start a process `stop` stopped again, with its first argv (and ``extra`` arguments after it: a flag
        given twice takes the last value) and environment, and wait until it is ready; its new pid, recorded in
        the state in place of the old one."""
        old = self.proc(name)
        assert not localcluster.alive(old), f"{name} (pid {old.pid}) is still running"
        self.state.procs.remove(old)
        return self.spawn(name, extra, again=True).pid

    def spawn(self, name: str, extra: Sequence[str] = (), *, again: bool = False) -> localcluster.Proc:
        """Start ``name`` (its argv, ``extra`` after it) and wait until it is ready. An Argo CD process still
        running but not ready in time is sent SIGQUIT, which makes Go print every goroutine's stack into its log
        and exit, and the error carries the stacks: what it was doing instead of answering."""
        proc = localcluster.spawn(self.state, name, [*self.argvs[name], *extra], env=self.envs[name])
        self.logs[name] = Path(proc.log)
        try:
            localcluster.wait_for(
                f"{name} to be ready{' again' if again else ''}",
                self.ready[name],
                timeout=self.ready_timeout,
                # Started again, it alone: the others `stop` stopped are still recorded, and not running
                procs=[proc] if again else self.state.procs,
            )
        except localcluster.ClusterError as e:
            if isinstance(e, localcluster.ProcessDied) or name == "redis-server" or not localcluster.alive(proc):
                raise
            _quit(proc)
            stacks = localcluster.tail(proc.log, 400)
            raise localcluster.ClusterError(f"{e}\n--- {name}'s goroutines (SIGQUIT):\n{stacks}") from None
        return proc

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(f"--- {name}:\n{localcluster.tail(str(path), lines)}" for name, path in self.logs.items())

    def alive(self) -> bool:
        return all(localcluster.alive(p) for p in self.state.procs)

    def non_loopback_sockets(self) -> list[str]:
        """Every socket of the processes not on loopback, the controller's metrics listener named as
        ALL_INTERFACES_LISTENER (Argo CD gives no flag for its address)."""
        port = self.state.ports["controller-metrics"]
        metrics = (f"listening on 0.0.0.0:{port}", f"listening on :::{port}")  # Go opens 0.0.0.0 as [::] (seen)
        return [
            ALL_INTERFACES_LISTENER if s.startswith("argocd-application-controller") and s.endswith(metrics) else s
            for s in localcluster.non_loopback_sockets(self.state)
        ]


def cluster_secret(
    name: str,
    *,
    kubeconfig: str | None,
    labels: Mapping[str, str] = {},
    annotations: Mapping[str, str] = {},
) -> dict[str, Any]:
    """A cluster registered declaratively, as `argocd cluster add` would: a Secret labelled
    ``argocd.argoproj.io/secret-type: cluster`` with ``name``, ``server`` and ``config`` (Argo CD's
    ClusterConfig JSON: the kubeconfig's CA and client certificate, base64 as in the kubeconfig). Without
    ``kubeconfig``: the cluster Argo CD runs against, ``https://kubernetes.default.svc`` (its own kubeconfig under
    ARGOCD_FAKE_IN_CLUSTER), so that a label can select it."""
    if kubeconfig is None:
        server, config = IN_CLUSTER, {"tlsClientConfig": {"insecure": False}}
    else:
        doc = yaml.safe_load(Path(kubeconfig).read_text())
        cluster = doc["clusters"][0]["cluster"]
        user = doc["users"][0]["user"]
        server = cluster["server"]
        config = {
            "tlsClientConfig": {
                "caData": cluster["certificate-authority-data"],
                "certData": user["client-certificate-data"],
                "keyData": user["client-key-data"],
            }
        }
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": f"cluster-{name}",
            "namespace": NAMESPACE,
            "labels": {"argocd.argoproj.io/secret-type": "cluster", **labels},
            "annotations": dict(annotations),
        },
        "stringData": {"name": name, "server": server, "config": json.dumps(config)},
    }


@contextlib.contextmanager
def run_argocd(
    kubeconfig: str,
    workdir: Path,
    *,
    resync: int = 60,
    plugin_config: Path | None = None,
    applicationsets: bool = False,
    plugin_loglevel: str = "info",
) -> Iterator[ArgoCD]:
    """Start redis-server, argocd-repo-server and argocd-application-controller; stop them when the block ends.
    ``resync``: the controller's --app-resync, seconds between two comparisons of an Application with git and
    the cluster (Argo CD's default: 120). ``plugin_config``: a directory holding a Config Management Plugin's
    plugin.yaml, served by argocd-cmp-server (the repo-server's sidecar in a real install) started first, with
    kfctl (this Python's scripts) and Argo CD's kustomize on its PATH, the plugins' sockets in the workdir and
    KFCTL_PLUGIN_CACHE there (the plugin's cache volume). ``applicationsets``: also argocd-applicationset-controller
    (its metrics, health probes and webhook on 127.0.0.1, no leader election), which makes the Applications of the
    ApplicationSets in the namespace. ``plugin_loglevel``: the cmp-server's; at ``debug`` it logs each plugin
    command's duration (and its output), by execID (`plugin_commands`)."""
    bin_dir = require_argocd()
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "tmp").mkdir(exist_ok=True)
    state = localcluster.State(backend="argocd", state_dir=str(workdir), kubeconfig=kubeconfig)
    names = (
        "redis", "repo-server", "repo-metrics", "controller-metrics", "commit-server",
        "appset-metrics", "appset-probe", "appset-webhook",
    )  # fmt: skip
    ports = dict(zip(names, localcluster.free_ports(len(names)), strict=True))
    state.ports = ports
    redis = f"127.0.0.1:{ports['redis']}"
    repo_server = f"127.0.0.1:{ports['repo-server']}"
    env = {
        # git for the repo-server's fetches; kustomize (its `kustomize build`) from Argo CD's bin dir first.
        "PATH": f"{bin_dir}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "HOME": str(workdir),
        "TMPDIR": str(workdir / "tmp"),  # the repo-server's checkouts
        "KUBECONFIG": kubeconfig,
        "ARGOCD_FAKE_IN_CLUSTER": "true",  # kubernetes.default.svc is $KUBECONFIG's cluster
        "ARGOCD_GPG_ENABLED": "false",  # no gpg keyring to set up: kfctl's exports verify no signatures
        "ARGOCD_PLUGINSOCKFILEPATH": str(workdir / "plugins"),  # where the repo-server finds the plugins' sockets
        # Its git credential helper's socket, /tmp/reposerver-ask-pass.sock by default: one per pod in a real
        # install, but each repo-server here removes the one before it on the same machine
        "ARGOCD_ASK_PASS_SOCK": str(workdir / "reposerver-ask-pass.sock"),
    }
    (workdir / "plugins").mkdir(exist_ok=True)
    argv: dict[str, list[str]] = {}
    if plugin_config is not None:
        argv["argocd-cmp-server"] = [
            str(bin_dir / "argocd"), "--config-dir-path", str(plugin_config), "--loglevel", plugin_loglevel,
        ]  # fmt: skip
    argv |= {
        "redis-server": [
            str(shutil.which("redis-server")),
            "--bind", "127.0.0.1", "--port", str(ports["redis"]), "--save", "", "--appendonly", "no",
            "--dir", str(workdir),
        ],
        "argocd-repo-server": [
            str(bin_dir / "argocd"),
            "--address", "127.0.0.1", "--port", str(ports["repo-server"]), "--disable-tls",
            "--metrics-address", "127.0.0.1", "--metrics-port", str(ports["repo-metrics"]),
            "--redis", redis, "--loglevel", "info",
        ],
        "argocd-application-controller": [
            str(bin_dir / "argocd"),
            "--kubeconfig", kubeconfig, "--namespace", NAMESPACE,
            "--repo-server", repo_server, "--repo-server-plaintext",
            "--commit-server", f"127.0.0.1:{ports['commit-server']}",
            "--redis", redis, "--metrics-port", str(ports["controller-metrics"]),
            "--status-processors", "4", "--operation-processors", "4", "--loglevel", "info",
            # Every Application compared again every minute instead of 120 s (+ up to 60 s of jitter): a CRD the
            # sync has just created is often compared before it is Established and shows OutOfSync until the
            # next comparison (seen: cert-manager's issuers.cert-manager.io), which holds the parent's wave. Each
            # comparison costs CPU the parallel suite lacks: upstream's full platform at 20 s, 446 s and 320 s of
            # Argo CD's CPU; at 60 s, 403 s and 221 s (alone, quiet, one run each).
            "--app-resync", str(resync), "--app-resync-jitter", "0",
            # How long a failing render is taken for a passing fault before the Application shows it (a
            # ComparisonError condition): Argo CD's default is its default resync period, kept so here.
            "--repo-error-grace-period-seconds", str(resync),
        ],
    }  # fmt: skip
    if applicationsets:
        argv["argocd-applicationset-controller"] = [
            str(bin_dir / "argocd"),
            "--kubeconfig", kubeconfig, "--namespace", NAMESPACE,
            "--argocd-repo-server", repo_server, "--repo-server-plaintext",
            "--metrics-addr", f"127.0.0.1:{ports['appset-metrics']}",
            "--probe-addr", f"127.0.0.1:{ports['appset-probe']}",
            "--webhook-addr", f"127.0.0.1:{ports['appset-webhook']}",
            "--enable-scm-providers=false", "--loglevel", "info", "--logformat", "text",
        ]  # fmt: skip
    ready: dict[str, Callable[[], bool]] = {
        "argocd-cmp-server": lambda: any(p.suffix == ".sock" for p in (workdir / "plugins").iterdir()),
        "redis-server": lambda: _redis_pong(ports["redis"]),
        "argocd-repo-server": lambda: localcluster.http_ok(f"http://127.0.0.1:{ports['repo-metrics']}/metrics"),
        "argocd-application-controller": lambda: localcluster.http_ok(
            f"http://127.0.0.1:{ports['controller-metrics']}/healthz"
        ),
        "argocd-applicationset-controller": lambda: localcluster.http_ok(
            f"http://127.0.0.1:{ports['appset-metrics']}/metrics"
        ),
    }
    argocd = ArgoCD(state, {}, ready=ready)
    try:
        for name, args in argv.items():
            extra = _cmp_server_env(workdir) if name == "argocd-cmp-server" else {}
            argocd.argvs[name], argocd.envs[name] = args, {**env, **extra, "ARGOCD_BINARY_NAME": name}
            argocd.spawn(name)
        yield argocd
    finally:
        localcluster.stop_procs(state.procs)


def _quit(proc: localcluster.Proc) -> None:
    """SIGQUIT to Go process ``proc``: it prints every goroutine's stack to its log and exits."""
    os.kill(proc.pid, signal.SIGQUIT)
    with contextlib.suppress(PollTimeout):
        poll(lambda: not localcluster.alive(proc), timeout=10, what=f"{proc.name} to print its stacks")


def hard_refresh(kubeconfig: str, name: str) -> None:
    """Argo CD's hard refresh of Application ``name``: the branch resolved and the manifests generated again, not
    read from the repo-server's caches (it keeps what a branch resolves to for 3 min). A git webhook would tell
    Argo CD of a push; the test bed has none, so a test that pushes a commit asks for it this way."""
    kubectl(
        kubeconfig, "-n", NAMESPACE, "annotate", "--overwrite",
        f"applications.argoproj.io/{name}", "argocd.argoproj.io/refresh=hard",
    )  # fmt: skip


def plugin_config_dir(export: Path, directory: Path) -> Path:
    """``directory`` holding the plugin.yaml of the ConfigMap `kfctl export --format argocd-plugin` wrote into
    ``export`` (what the sidecar mounts), for run_argocd's ``plugin_config``."""
    configmap = yaml.safe_load((export / "configmap-kfctl-cmp-plugin.yaml").read_text())
    directory.mkdir(parents=True)
    (directory / "plugin.yaml").write_text(configmap["data"]["plugin.yaml"])
    return directory


@dataclass(frozen=True)
class PluginCommand:
    """One command the cmp-server ran for a render (the plugin's init or generate), from its JSON log."""

    exec_id: str
    command: str  # as the cmp-server logs it
    seconds: float | None  # None: it failed, or the log is not at debug level
    stderr: str = ""  # what it wrote to stderr, when it succeeded


def plugin_commands(log: Path) -> list[PluginCommand]:
    """Every plugin command in the cmp-server's JSON ``log`` (ArgoCD.logs), in order: its start line (info) names
    the command, a line of its end (debug) the duration in nanoseconds, another (info, on success) its stderr."""
    started: dict[str, str] = {}
    took: dict[str, float] = {}
    stderr: dict[str, str] = {}
    for line in log.read_text().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        exec_id = entry.get("execID") if isinstance(entry, dict) else None
        if not exec_id:
            continue
        if "dir" in entry:
            started[exec_id] = str(entry.get("msg", ""))
        elif "duration" in entry:
            took[exec_id] = float(entry["duration"]) / 1e9
        elif "stderr" in entry:
            stderr[exec_id] = str(entry["stderr"])
    return [PluginCommand(e, c, took.get(e), stderr.get(e, "")) for e, c in started.items()]


def _cmp_server_env(workdir: Path) -> dict[str, str]:
    """kfctl first on the plugin's PATH (the venv running the tests), then Argo CD's bin dir (kustomize)."""
    scripts = Path(sys.executable).parent
    return {
        "PATH": f"{scripts}:{argocd_bin_dir()}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "KFCTL_PLUGIN_CACHE": str(workdir / "kfctl-cache"),
    }


def _redis_pong(port: int) -> bool:
    with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
        s.sendall(b"PING\r\n")
        return s.recv(64).startswith(b"+PONG")


# --- what the Applications say -------------------------------------------------------------------------------------


def parent_application(name: str, repo_url: str, path: str) -> str:
    """The app-of-apps of docs/gitops.md (the e2e tests and bench B8 hand it to Argo CD): the export's directory,
    prune on, in Argo CD's namespace; its resources finalizer makes deleting it delete the children, the highest
    wave first."""
    return yaml.safe_dump(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {
                "name": name,
                "namespace": NAMESPACE,
                "finalizers": ["resources-finalizer.argocd.argoproj.io"],
            },
            "spec": {
                "project": "default",
                "source": {"repoURL": repo_url, "targetRevision": "main", "path": path},
                "destination": {"server": "https://kubernetes.default.svc", "namespace": NAMESPACE},
                "syncPolicy": {
                    "automated": {"prune": True},
                    "retry": {"limit": 5, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "3m"}},
                },
            },
        }
    )


def synced_and_healthy(app: Mapping[str, Any], revision: str | None = None) -> bool:
    """Synced (at ``revision`` when given) and Healthy, as `argocd app wait --sync --health` waits."""
    status = app.get("status") or {}
    sync = status.get("sync") or {}
    return (
        sync.get("status") == "Synced"
        and (status.get("health") or {}).get("status") == "Healthy"
        and (revision is None or sync.get("revision") == revision)
    )


def summary(app: Mapping[str, Any]) -> str:
    """Sync and health status, the operation's phase and message, and the conditions: what a failure shows."""
    status = app.get("status") or {}
    op = status.get("operationState") or {}
    conditions = "; ".join(f"{c.get('type')}: {c.get('message')}" for c in status.get("conditions") or [])
    unhealthy = [
        f"{r.get('kind')}/{r.get('name')}: {(r.get('health') or {}).get('status')}, {r.get('status')}"
        for r in status.get("resources") or []
        if (r.get("health") or {}).get("status") not in (None, "Healthy") or r.get("status") != "Synced"
    ]
    return (
        f"sync {(status.get('sync') or {}).get('status')}, health {(status.get('health') or {}).get('status')}, "
        f"operation {op.get('phase')}: {op.get('message', '')}"
        + (f"; conditions: {conditions}" if conditions else "")
        + (f"; not healthy or not synced: {', '.join(unhealthy[:8])}" if unhealthy else "")
    )


class _ArgoCDStopped(Exception):
    """An Argo CD process exited: waiting longer is pointless."""


def wait_all(
    api: Any, names: list[str], *, timeout: float, argocd: ArgoCD, revision: str | None = None
) -> dict[str, dict[str, Any]]:
    """Poll until every named Application is Synced and Healthy; their objects. Fails naming the others' status
    (and the processes' log tails) on timeout."""
    last: dict[str, dict[str, Any]] = {}

    def all_done() -> bool:
        nonlocal last
        last = {a["metadata"]["name"]: a for a in api.list(APPLICATIONS)}
        if all(n in last and synced_and_healthy(last[n], revision) for n in names):
            return True
        if not argocd.alive():
            raise _ArgoCDStopped
        return False

    try:
        poll(all_done, timeout=timeout, what="the Applications", interval=1, passes=(_ArgoCDStopped,))
    except (PollTimeout, _ArgoCDStopped) as e:
        error = f"\n(last error: {e.error})" if isinstance(e, PollTimeout) and e.error else ""
        waiting = [f"{n}: {summary(last[n]) if n in last else 'absent'}" for n in names]
        pytest.fail(
            f"Applications not Synced and Healthy after {timeout:.0f} s:\n"
            + "\n".join(
                w for w, n in zip(waiting, names, strict=True) if not synced_and_healthy(last.get(n, {}), revision)
            )
            + f"{error}\n{argocd.log_tail()}",
            pytrace=False,
        )
    return last


def wait_for(check: Callable[[], bool], *, api: Any, argocd: ArgoCD, timeout: float, what: str) -> None:
    """Poll ``check``; on timeout fail with every Application's status and the processes' log tails."""
    try:
        poll(check, timeout=timeout, what=what, interval=1)
    except PollTimeout as e:
        apps = "\n".join(f"{a['metadata']['name']}: {summary(a)}" for a in api.list(APPLICATIONS))
        pytest.fail(f"{e}\n{apps}\n{argocd.log_tail()}", pytrace=False)
