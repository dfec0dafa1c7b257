"""The engine of e2e/cluster: a real local Kubernetes control plane for kfctl's end-to-end tests, without Docker.

    e2e/cluster up [--kind | --local] [--state-dir DIR]
    e2e/cluster down | status | kubeconfig [--state-dir DIR]
    e2e/cluster logs NAMESPACE/POD [-c CONTAINER]

`up` runs etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok (fake nodes and kubelets),
the stand-in controller (standin.py) and the process runtime (runtime.py, which runs the real
operators for their pods, and serves the API server's egress proxy, egress.py, through which the API
server calls admission webhooks) on 127.0.0.1, each with a log file and a recorded pid, creates
three fake nodes (two CPU, one GPU) and the default StorageClass `standard`, and prints the kubeconfig's
path. `down` stops exactly the recorded pids and removes the state directory. Where `docker info` works
and `kind` is installed (or with --kind) it creates a kind cluster instead.

Test code only: kfctl never imports it. It must never dial anything but 127.0.0.1 (see e2e/README.md).
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import functools
import ipaddress
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kfctl_testbed import egress, kube_rest, kwokstages, pki, podports
from kfctl_testbed.gobuild import cachekeys
from kfctl_testbed.gobuild import versions as gobuild_versions
from kfctl_testbed.gobuild.recipes import Selection
from kfctl_testbed.gobuild.run import dirs as build_dirs
from kfctl_testbed.poll import PollTimeout, poll

REPO = Path(__file__).resolve().parents[2]
E2E = REPO / "e2e"
# The version pins (e2e/versions.env) are the build recipes' (kfctl_testbed.gobuild); the cluster reads them too.
VERSIONS_FILE = gobuild_versions.VERSIONS_FILE
CACHE_ROOT = Path(os.environ.get("KFCTL_E2E_CACHE") or Path.home() / ".cache" / "kfctl-e2e")
DEFAULT_STATE_DIR = Path(os.environ.get("KFCTL_E2E_STATE_DIR") or CACHE_ROOT / "cluster" / "default")
SERVICE_CIDR = "10.96.0.0/12"
POD_CIDR = "10.244.0.1/16"
LOOPBACK = "127.0.0.1"
STATE_FILE = "state.json"

# The fake nodes: two for CPU work, one with a GPU. Generous, so that scheduling is never the problem.
NODE_CAPACITY = {"cpu": "32", "memory": "256Gi", "pods": "250", "ephemeral-storage": "1Ti"}
NODES: tuple[tuple[str, dict[str, str], dict[str, str]], ...] = (
    ("cpu-node-0", {}, {}),
    ("cpu-node-1", {}, {}),
    ("gpu-node-0", {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "Fake-GPU"}, {"nvidia.com/gpu": "8"}),
)


class ClusterError(Exception):
    """A failure to report to the user as it is, without a traceback."""


def log(message: str) -> None:
    print(f"[cluster {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def read_versions() -> dict[str, str]:
    return gobuild_versions.read_versions(VERSIONS_FILE)


# --- processes ------------------------------------------------------------------------------------


@dataclass
class Proc:
    name: str
    pid: int
    start_ticks: int  # field 22 of /proc/<pid>/stat: tells our process from a later one with the same pid
    argv: list[str]
    log: str


@dataclass
class State:
    backend: str  # "local" or "kind"
    state_dir: str
    kubeconfig: str
    webhooks: bool = False
    ports: dict[str, int] = field(default_factory=dict)
    procs: list[Proc] = field(default_factory=list)
    kind_name: str = ""
    versions: dict[str, str] = field(default_factory=dict)
    started_at: float = 0.0

    def save(self) -> None:
        path = Path(self.state_dir) / STATE_FILE
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        tmp.replace(path)

    @classmethod
    def load(cls, state_dir: Path) -> State | None:
        path = state_dir / STATE_FILE
        if not path.exists():
            return None
        raw = json.loads(path.read_text())
        raw["procs"] = [Proc(**p) for p in raw.get("procs", [])]
        return cls(**raw)


def _start_ticks(pid: int) -> int | None:
    """Start time of `pid` in clock ticks, or None when it is gone or a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # The command name may contain spaces and parentheses: fields start after the last ')'.
    fields = stat[stat.rindex(")") + 2 :].split()
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])


def alive(proc: Proc) -> bool:
    return _start_ticks(proc.pid) == proc.start_ticks


def spawn(state: State, name: str, argv: list[str], *, env: dict[str, str] | None = None) -> Proc:
    logs = Path(state.state_dir) / "logs"
    logs.mkdir(exist_ok=True)
    log_path = logs / f"{name}.log"
    with open(log_path, "ab") as out:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=state.state_dir,
            env=env,
            # Its own session: a Ctrl-C in the terminal that ran `up` does not reach the cluster.
            start_new_session=True,
        )
    ticks = _start_ticks(child.pid)
    proc = Proc(name=name, pid=child.pid, start_ticks=ticks or 0, argv=argv, log=str(log_path))
    state.procs.append(proc)
    state.save()  # recorded before anything waits on it, so `down` can always find it
    # The process outlives this command and is stopped by its recorded pid. Marking the Popen object as
    # finished keeps its destructor from warning about (or trying to reap) a child that is meant to run on.
    child.returncode = 0
    return proc


def stop_procs(procs: list[Proc], *, grace: float = 15.0) -> list[str]:
    """SIGTERM our recorded pids (last started first), SIGKILL what is left after `grace` seconds.
    Returns the names of processes that could not be stopped."""
    for proc in reversed(procs):
        if alive(proc):
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
    _wait_exited(procs, timeout=grace)
    for proc in procs:
        if alive(proc):
            log(f"{proc.name} (pid {proc.pid}) ignored SIGTERM for {grace:.0f} s; sending SIGKILL")
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGKILL)
    _wait_exited(procs, timeout=5)
    return [p.name for p in procs if alive(p)]


def _wait_exited(procs: list[Proc], *, timeout: float) -> None:
    """Until none of `procs` is alive, for up to `timeout` seconds; the caller sees which are left."""
    with contextlib.suppress(PollTimeout):
        poll(lambda: not any(alive(p) for p in procs), timeout=timeout, what="the processes to exit", interval=0.1)


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports. Each socket stays bound until all are chosen: closed one by one,
    the kernel may hand the same port out twice (it did: etcd's peer port and kwok's, and kwok could not
    listen)."""
    with contextlib.ExitStack() as held:
        socks = [held.enter_context(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) for _ in range(count)]
        for s in socks:
            s.bind((LOOPBACK, 0))
        return [int(s.getsockname()[1]) for s in socks]


class ProcessDied(ClusterError):
    """A process `wait_for` waited on exited: the wait ends at once (any other error from a check is "not yet")."""


def wait_for(what: str, check: Callable[[], bool], *, timeout: float, procs: Sequence[Proc] = ()) -> None:
    """Poll `check` until it is true (any failure means not up yet); fail early when one of `procs` died
    meanwhile, and on timeout show their log tails."""

    def up() -> bool:
        error: Exception | None = None
        try:
            if check():
                return True
        except Exception as e:  # not up yet; poll shows the last one on timeout
            error = e
        for proc in procs:
            if not alive(proc):
                raise ProcessDied(f"{proc.name} exited while waiting for {what}:\n{tail(proc.log)}")
        if error is not None:
            raise error
        return False

    try:
        poll(up, timeout=timeout, what=what, passes=(ProcessDied,))
    except PollTimeout as e:
        hint = "".join(f"\n--- {p.name} ({p.log}):\n{tail(p.log)}" for p in procs)
        raise ClusterError(f"{e}{hint}") from None


def tail(path: str, lines: int = 25) -> str:
    try:
        return "\n".join(Path(path).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def open_loopback(url: str, *, timeout: float, context: ssl.SSLContext | None = None) -> Any:
    """``url`` (the test bed's own, on 127.0.0.1) opened with no proxy, whatever the environment says.
    urllib.request.urlopen's opener is built at its first use and keeps the proxy environment of that moment: a
    first use inside e2e's no_network() (a dead proxy, no_proxy=127.0.0.1 only while it lasts) sent every later
    probe of that pytest process to the dead proxy, 'Connection refused' (the Argo CD fleet module run after the
    faults module never saw its repo-server ready, on CI and here)."""
    handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
    if context is not None:
        handlers.append(urllib.request.HTTPSHandler(context=context))
    return urllib.request.build_opener(*handlers).open(url, timeout=timeout)


def https_ok(url: str, *, context: ssl.SSLContext) -> bool:
    with open_loopback(url, timeout=5, context=context) as response:
        return bool(response.status == 200)


def http_ok(url: str) -> bool:
    with open_loopback(url, timeout=5) as response:
        return bool(response.status == 200)


# --- binaries and certificates --------------------------------------------------------------------

BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler", "kwok")


def build_dir(flag: str, override_env: str) -> Path:
    """The cache directory e2e/build-binaries `flag` (--print-bin-dir, --print-operators-dir, --print-flux-dir,
    --print-argocd-dir) names; $`override_env` overrides it. Builds nothing."""
    override = os.environ.get(override_env)
    if override:
        return Path(override)
    every_set = Selection(operators=True, flux=True, argocd=True)
    cache = build_dirs(gobuild_versions.Versions.load(), every_set, root=cachekeys.cache_root())
    by_flag = {
        "--print-bin-dir": cache.bin,
        "--print-operators-dir": cache.operators,
        "--print-flux-dir": cache.flux,
        "--print-argocd-dir": cache.argocd,
    }
    found = by_flag[flag]
    assert found is not None  # every set was selected
    return found


def require_built(flag: str, override_env: str, names: Sequence[str], what: str, option: str) -> Path:
    """`build_dir(flag, override_env)` when it holds every one of ``names``; else fails the test (never skips),
    naming ``what`` is missing and the `e2e/build-binaries` ``option`` that builds it (make setup runs it)."""
    import pytest  # only the tests call this; e2e/cluster imports this module without pytest

    bin_dir = build_dir(flag, override_env)
    missing = [b for b in names if not (bin_dir / b).is_file()]
    if missing:
        pytest.fail(
            f"no {what} ({', '.join(missing)}) in {bin_dir}: run `e2e/build-binaries {option}` (make setup does)",
            pytrace=False,
        )
    return bin_dir


def binaries() -> Path:
    """The directory holding the control plane's binaries, building them when the cache lacks them."""
    override = os.environ.get("KFCTL_E2E_BIN_DIR")
    bin_dir = build_dir("--print-bin-dir", "KFCTL_E2E_BIN_DIR")
    missing = [b for b in BINARIES if not (bin_dir / b).is_file()]
    if missing and not override:
        if shutil.which("go") is None:
            raise ClusterError(
                f"no control-plane binaries in {bin_dir} (missing: {', '.join(missing)}) and no Go toolchain "
                "to build them. Install Go >= 1.24 and run e2e/build-binaries, or set KUBECONFIG to an "
                "existing cluster, or KFCTL_E2E_BIN_DIR to a directory with etcd, kube-apiserver, "
                "kube-controller-manager, kube-scheduler and kwok."
            )
        log(f"building {', '.join(missing)} into {bin_dir} (a cold build takes 10-25 min)")
        subprocess.run([str(E2E / "build-binaries")], check=True, stdout=subprocess.DEVNULL)
        missing = [b for b in BINARIES if not (bin_dir / b).is_file()]
    if missing:
        raise ClusterError(f"{bin_dir} lacks {', '.join(missing)}")
    return bin_dir


def write_pki(pki_dir: Path) -> None:
    pki_dir.mkdir(mode=0o700)
    ca = pki.make_ca("kfctl-e2e-ca")
    serving = pki.issue(
        common_name="kube-apiserver",
        dns_names=[
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
        ],
        ip_addresses=[LOOPBACK, "10.96.0.1"],
        ca=ca,
        server=True,
        client=True,
    )
    # Cluster admin: kubectl, kfctl's tests, the controller manager, the scheduler, kwok and the stand-in.
    admin = pki.issue(
        common_name="kubernetes-admin", organizations=["system:masters"], ca=ca, server=False, client=True
    )
    sa_private, sa_public = pki.service_account_key()
    files = {
        "ca.crt": ca.cert_pem,
        "ca.key": ca.key_pem,
        "apiserver.crt": serving.cert_pem,
        "apiserver.key": serving.key_pem,
        "admin.crt": admin.cert_pem,
        "admin.key": admin.key_pem,
        "sa.key": sa_private,
        "sa.pub": sa_public,
    }
    for name, data in files.items():
        path = pki_dir / name
        path.touch(mode=0o600)
        path.write_bytes(data)


def write_kubeconfig(path: Path, *, name: str, server: str, pki_dir: Path) -> None:
    import base64

    def b64(file: str) -> str:
        return base64.b64encode((pki_dir / file).read_bytes()).decode()

    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": {"server": server, "certificate-authority-data": b64("ca.crt")}}],
        "users": [
            {
                "name": f"{name}-admin",
                "user": {"client-certificate-data": b64("admin.crt"), "client-key-data": b64("admin.key")},
            }
        ],
        "contexts": [{"name": name, "context": {"cluster": name, "user": f"{name}-admin"}}],
        "current-context": name,
        "preferences": {},
    }
    path.touch(mode=0o600)
    path.write_text(json.dumps(config, indent=2) + "\n")  # JSON is YAML: every client reads it


# --- the local control plane ----------------------------------------------------------------------


# Every request's metadata (who, verb, resource; never bodies), one JSON line each: the benchmarks count the
# requests each side makes from this log, the same way for kfctl and its peers (by user agent).
AUDIT_POLICY = """apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: Metadata
"""


def _audit_flags(state_dir: Path, log_path: str) -> list[str]:
    """kube-apiserver flags for an audit log at ``log_path`` (KFCTL_E2E_AUDIT_LOG); none when it is empty."""
    if not log_path:
        return []
    policy = state_dir / "audit-policy.yaml"
    policy.write_text(AUDIT_POLICY)
    return [
        f"--audit-policy-file={policy}",
        f"--audit-log-path={log_path}",
        "--audit-log-format=json",
        "--audit-log-mode=blocking",
        "--audit-log-maxbackup=0",
    ]


# The API server and etcd collect garbage half as often as Go's default (GOGC=100). A CPU profile of the API server
# during a first install of the catalog (two cores, 276 objects, 3.7 MB of CRD schemas decoded, converted and encoded
# again) put a fifth of its CPU in the collector: marking 14 %, assists 5 %, sweeping 2 %. Installs of the catalog on
# fresh clusters (medians; 5 at the default, 5 at 400, 3 at 200): the API server's CPU 31.6 s, 24.3 s, 26.0 s; the
# install 28.8 s, 25.4 s, 25.7 s; its peak RSS 0.76, 1.6, 1.1 GB. etcd takes the same setting, unmeasured on its
# own: over a whole e2e run its CPU did not change (4.5 and 4.7 CPU-min). Every side of a benchmark meets the same
# server.
SERVER_GOGC = "200"


def _server_env() -> dict[str, str]:
    return {**os.environ, "GOGC": SERVER_GOGC}


def up_local(state_dir: Path, *, training_seconds: int = kwokstages.TRAINING_SECONDS) -> State:
    """Start a local cluster in ``state_dir``, one step after the other, each waiting until what it started
    answers: the state and its ports, the credentials, etcd, the API server, the controller manager and the
    scheduler, kwok, then what makes the cluster usable (nodes, a storage class, the stand-in controller and the
    process runtime). ``state.json`` records every process as it starts, so `down` stops whatever did."""
    start = _Start(_new_state(state_dir), binaries(), state_dir / "pki")
    _write_credentials(start)
    etcd = _start_etcd(start)
    apiserver = _start_apiserver(start, etcd)
    controller_manager = _start_controllers(start, apiserver)
    kwok = _start_kwok(start, training_seconds=training_seconds)
    _make_usable(start, apiserver=apiserver, controller_manager=controller_manager, kwok=kwok)
    return start.state


@dataclass(frozen=True)
class _Start:
    """What each step of up_local reads: the state it records processes in, the binaries and the credentials."""

    state: State
    bin_dir: Path
    pki_dir: Path

    @property
    def dir(self) -> Path:
        return Path(self.state.state_dir)

    @property
    def kubeconfig(self) -> Path:
        return Path(self.state.kubeconfig)

    @property
    def ports(self) -> dict[str, int]:
        return self.state.ports

    @property
    def api_url(self) -> str:
        return f"https://{LOOPBACK}:{self.ports['apiserver']}"


def _new_state(state_dir: Path) -> State:
    """The cluster's State, saved: its versions, whether admission webhooks are on, a free port per server."""
    # Admission webhooks are on where the process runtime runs (as root): the API server reaches webhook Services
    # through its egress proxy (egress.py), which leads a cluster IP to the process the runtime runs for the
    # Service's pod. Without it nothing could answer a webhook, and nothing may dial a cluster IP: plugins off.
    webhooks = os.geteuid() == 0
    state_dir.mkdir(parents=True, exist_ok=True)
    state = State(
        backend="local",
        state_dir=str(state_dir),
        kubeconfig=str(state_dir / "kubeconfig"),
        webhooks=webhooks,
        versions=read_versions(),
        started_at=time.time(),
    )
    names = ["etcd", "etcd-peer", "apiserver", "controller-manager", "scheduler", "kwok"]
    names += ["egress"] if webhooks else []
    state.ports = dict(zip(names, free_ports(len(names)), strict=True))
    state.save()
    return state


def _write_credentials(start: _Start) -> None:
    """The cluster's PKI (and the egress proxy's TLS when webhooks are on) and the admin's kubeconfig."""
    write_pki(start.pki_dir)
    if start.state.webhooks:
        egress.write_tls(start.pki_dir)
    write_kubeconfig(start.kubeconfig, name=f"kfctl-e2e-{start.dir.name}", server=start.api_url, pki_dir=start.pki_dir)


def _etcd_url(start: _Start) -> str:
    return f"http://{LOOPBACK}:{start.ports['etcd']}"


def _start_etcd(start: _Start) -> Proc:
    """etcd on loopback, without fsync (a test cluster's data is thrown away), until /health answers."""
    etcd_url, peer_url = _etcd_url(start), f"http://{LOOPBACK}:{start.ports['etcd-peer']}"
    etcd = spawn(
        start.state,
        "etcd",
        [
            str(start.bin_dir / "etcd"),
            "--name=e2e",
            f"--data-dir={start.dir / 'etcd'}",
            f"--listen-client-urls={etcd_url}",
            f"--advertise-client-urls={etcd_url}",
            f"--listen-peer-urls={peer_url}",
            f"--initial-advertise-peer-urls={peer_url}",
            f"--initial-cluster=e2e={peer_url}",
            "--initial-cluster-state=new",
            "--unsafe-no-fsync=true",
            "--log-level=warn",
        ],
        env=_server_env(),
    )
    wait_for("etcd /health", lambda: http_ok(f"{etcd_url}/health"), timeout=30, procs=[etcd])
    return etcd


def _start_apiserver(start: _Start, etcd: Proc) -> Proc:
    """kube-apiserver on loopback (admission webhooks through the egress proxy, or off), until /readyz answers."""
    state_dir, pki_dir = start.dir, start.pki_dir
    if start.state.webhooks:
        egress_config = state_dir / "egress-selector.yaml"
        egress_config.write_text(egress.selector_config(port=start.ports["egress"], pki_dir=pki_dir))
        admission = [f"--egress-selector-config-file={egress_config}"]
    else:
        admission = ["--disable-admission-plugins=MutatingAdmissionWebhook,ValidatingAdmissionWebhook"]
    audit = _audit_flags(state_dir, os.environ.get("KFCTL_E2E_AUDIT_LOG", ""))
    apiserver = spawn(
        start.state,
        "kube-apiserver",
        [
            str(start.bin_dir / "kube-apiserver"),
            f"--bind-address={LOOPBACK}",
            f"--advertise-address={LOOPBACK}",
            f"--secure-port={start.ports['apiserver']}",
            f"--etcd-servers={_etcd_url(start)}",
            f"--cert-dir={state_dir / 'apiserver'}",
            f"--tls-cert-file={pki_dir / 'apiserver.crt'}",
            f"--tls-private-key-file={pki_dir / 'apiserver.key'}",
            f"--client-ca-file={pki_dir / 'ca.crt'}",
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
            f"--service-account-key-file={pki_dir / 'sa.pub'}",
            f"--service-account-signing-key-file={pki_dir / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_CIDR}",
            # No endpoints for the `kubernetes` Service: nothing should ever route to the API server by cluster IP.
            "--endpoint-reconciler-type=none",
            "--authorization-mode=Node,RBAC",
            "--allow-privileged=true",
            "--profiling=false",
            *admission,
            *audit,
        ],
        env=_server_env(),
    )
    tls = ssl.create_default_context(cafile=str(pki_dir / "ca.crt"))
    tls.load_cert_chain(pki_dir / "admin.crt", pki_dir / "admin.key")
    wait_for(
        "kube-apiserver /readyz",
        lambda: https_ok(f"{start.api_url}/readyz", context=tls),
        timeout=90,
        procs=[etcd, apiserver],
    )
    return apiserver


def _start_controllers(start: _Start, apiserver: Proc) -> Proc:
    """kube-controller-manager and kube-scheduler, until both /healthz answer; the controller manager's Proc."""
    pki_dir, p = start.pki_dir, start.ports
    # No --authentication/authorization-kubeconfig: their /healthz stays open (always-allow paths) and
    # nothing else of theirs is served to anyone.
    common = [
        f"--kubeconfig={start.kubeconfig}",
        "--leader-elect=false",
        f"--bind-address={LOOPBACK}",
        "--kube-api-qps=200",
        "--kube-api-burst=400",
    ]
    controller_manager = spawn(
        start.state,
        "kube-controller-manager",
        [
            str(start.bin_dir / "kube-controller-manager"),
            *common,
            f"--secure-port={p['controller-manager']}",
            f"--cert-dir={start.dir / 'controller-manager'}",
            f"--root-ca-file={pki_dir / 'ca.crt'}",
            f"--service-account-private-key-file={pki_dir / 'sa.key'}",
            f"--cluster-signing-cert-file={pki_dir / 'ca.crt'}",
            f"--cluster-signing-key-file={pki_dir / 'ca.key'}",
            "--use-service-account-credentials=true",
        ],
    )
    scheduler = spawn(
        start.state,
        "kube-scheduler",
        [
            str(start.bin_dir / "kube-scheduler"),
            *common,
            f"--secure-port={p['scheduler']}",
        ],
    )
    insecure = ssl.create_default_context()
    insecure.check_hostname = False
    insecure.verify_mode = ssl.CERT_NONE  # their serving certs are self-signed in memory; loopback only
    for proc, port in ((controller_manager, p["controller-manager"]), (scheduler, p["scheduler"])):
        wait_for(
            f"{proc.name} /healthz",
            lambda port=port: https_ok(
                f"https://{LOOPBACK}:{port}/healthz",  # type: ignore[misc]
                context=insecure,
            ),
            timeout=60,
            procs=[apiserver, proc],
        )
    return controller_manager


def _start_kwok(start: _Start, *, training_seconds: int) -> Proc:
    """kwok, which plays the nodes and the kubelets, with kfctl's pod stages and the PortForward kind served."""
    state_dir, kubeconfig = start.dir, start.kubeconfig
    # Our pod stages (kfctl_testbed/kwok-pod-stages.yaml; nodes keep kwok's built-in stages): pods the process runtime
    # will run go Running but not Ready, the runtime writes their readiness; Job and training-job pods finish.
    # kwok also loads ~/.kwok/kwok.yaml whenever it exists, whatever --config says (config.loadConfig), so its
    # HOME is the state dir: nothing of the user's can add stages or options.
    runtime_bin_dir = operators_dir() if os.geteuid() == 0 else None
    kwok_config = state_dir / "kwok.yaml"
    kwok_config.write_text(
        kwokstages.kwok_config(kwokstages.runnable_repositories(runtime_bin_dir), training_seconds=training_seconds)
    )
    # kubectl port-forward reaches the runtime's processes through kwok's PortForward objects (podports.py): their
    # kind is served before kwok starts watching it.
    with contextlib.closing(kube_rest.Client(kubeconfig)) as first:
        try:
            first.create("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", podports.CRD)
        except kube_rest.ApiError as e:
            if e.status != 409:  # a cluster started again keeps its CRD
                raise
    return spawn(
        start.state,
        "kwok",
        [
            str(start.bin_dir / "kwok"),
            f"--config={kwok_config}",
            "--enable-crds=PortForward",
            f"--kubeconfig={kubeconfig}",
            "--manage-all-nodes=true",
            f"--cidr={POD_CIDR}",
            f"--node-ip={LOOPBACK}",
            # Without it kwok's nodes go NotReady after a few minutes and their pods get evicted.
            "--node-lease-duration-seconds=40",
            f"--server-address={LOOPBACK}:{start.ports['kwok']}",
        ],
        env={**os.environ, "HOME": str(state_dir)},
    )


def _make_usable(start: _Start, *, apiserver: Proc, controller_manager: Proc, kwok: Proc) -> None:
    """The nodes and a default storage class, the stand-in controller and the process runtime; then wait until the
    nodes are Ready, the default ServiceAccount exists, the stand-in holds its lease and the runtime runs."""
    state, kubeconfig = start.state, start.kubeconfig
    api = kube_rest.Client(kubeconfig)
    create_nodes(api, kubelet_version=state.versions["KUBERNETES_VERSION"], kubelet_port=start.ports["kwok"])
    create_storage_class(api)
    standin = spawn(state, "standin", [sys.executable, "-m", "kfctl_testbed.standin", f"--kubeconfig={kubeconfig}"])
    runtime = start_runtime(state, kubeconfig)

    wait_for("3 Ready nodes", lambda: ready_nodes(api) == len(NODES), timeout=60, procs=[apiserver, kwok])
    wait_for(
        "ServiceAccount default/default",
        lambda: api.get("/api/v1/namespaces/default/serviceaccounts/default") is not None,
        timeout=60,
        procs=[controller_manager],
    )
    wait_for("the stand-in controller's lease", lambda: standin_active(api), timeout=30, procs=[standin])
    if runtime is not None:
        wait_for("the process runtime", lambda: runtime_started(runtime), timeout=30, procs=[runtime])
    api.close()


def operators_dir() -> Path:
    """Where e2e/build-binaries --operators puts the operators (KFCTL_E2E_OPERATORS_DIR overrides)."""
    return build_dir("--print-operators-dir", "KFCTL_E2E_OPERATORS_DIR")


def start_runtime(state: State, kubeconfig: Path) -> Proc | None:
    """runtime.py: runs the real operators for the pods kfctl installs (needs root for namespaces).

    `up` does not build the operators (minutes): without them the runtime runs nothing and pods keep kwok's
    simulated behaviour, as it says in its log and here."""
    if os.geteuid() != 0:
        log("not root: no process runtime (it needs mount and network namespaces); pods stay simulated")
        return None
    bin_dir = operators_dir()
    if not bin_dir.is_dir():
        log(
            f"no operator binaries in {bin_dir}: run `e2e/build-binaries --operators`; pods stay simulated and "
            "the operators' admission webhooks are refused"
        )
    return spawn(
        state,
        "runtime",
        [
            sys.executable,
            "-m",
            "kfctl_testbed.runtime",
            f"--kubeconfig={kubeconfig}",
            f"--bin-dir={bin_dir}",
            f"--state-dir={runtime_dir(Path(state.state_dir))}",
            # The API server's egress proxy (egress.py): the runtime knows the pids it leads to.
            f"--egress-port={state.ports['egress']}",
            f"--egress-pki={Path(state.state_dir) / 'pki'}",
        ],
    )


def runtime_dir(state_dir: Path) -> Path:
    """The process runtime's volumes and per-container logs (<ns>_<pod>_<container>.log)."""
    return state_dir / "runtime"


def runtime_started(proc: Proc) -> bool:
    return "runtime: running binaries from" in Path(proc.log).read_text(errors="replace")


def create_nodes(api: kube_rest.Client, *, kubelet_version: str, kubelet_port: int) -> None:
    for name, labels, extra in NODES:
        capacity = {**NODE_CAPACITY, **extra}
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "kubernetes.io/arch": "amd64",
                    "type": "kwok",
                    **labels,
                },
                "annotations": {"kwok.x-k8s.io/node": "fake", "node.alpha.kubernetes.io/ttl": "0"},
            },
            "spec": {},
            "status": {
                "capacity": capacity,
                "allocatable": capacity,
                "nodeInfo": {
                    "kubeletVersion": kubelet_version,
                    "kubeProxyVersion": kubelet_version,
                    "operatingSystem": "linux",
                    "architecture": "amd64",
                    "containerRuntimeVersion": "kwok",
                    "osImage": "kwok",
                    "kernelVersion": "kwok",
                    "machineID": "",
                    "systemUUID": "",
                    "bootID": "",
                },
                "daemonEndpoints": {"kubeletEndpoint": {"Port": kubelet_port}},
                "phase": "Running",
            },
        }
        api.create("/api/v1/nodes", node)


def create_storage_class(api: kube_rest.Client) -> None:
    api.create(
        "/apis/storage.k8s.io/v1/storageclasses",
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "standard", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            # No provisioner: the stand-in creates a PersistentVolume for each claim (standin.py).
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "Immediate",
            "reclaimPolicy": "Delete",
        },
    )


def ready_nodes(api: kube_rest.Client) -> int:
    count = 0
    for node in api.list("/api/v1/nodes"):
        conditions = node.get("status", {}).get("conditions") or []
        if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
            count += 1
    return count


def standin_active(api: kube_rest.Client) -> bool:
    from kfctl_testbed import standin

    return standin.lease_holder(api) is not None


# --- the loopback-only check ---------------------------------------------------------------------------

_TCP_LISTEN = "0A"


def _decode_address(hex_address: str) -> tuple[ipaddress.IPv4Address | ipaddress.IPv6Address, int]:
    """An address of /proc/net/{tcp,udp}[6]: host-byte-order hex words, then the port."""
    host, port = hex_address.split(":")
    raw = bytes.fromhex(host)
    # Each 32-bit word is in the kernel's (little-endian) byte order.
    swapped = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(swapped), int(port, 16)


def _is_loopback(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped:
        ip = ip.ipv4_mapped
    return ip.is_loopback


def non_loopback_sockets(state: State) -> list[str]:
    """Sockets of the cluster's live processes that talk to, or listen on, anything but loopback.
    The check `ss -tnup` would do, without needing ss: /proc/<pid>/fd gives the socket inodes,
    /proc/net/{tcp,tcp6,udp,udp6} their addresses."""
    owners: dict[str, str] = {}
    for proc in state.procs:
        if not alive(proc):
            continue
        with contextlib.suppress(OSError):
            for fd in Path(f"/proc/{proc.pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(fd)
                    if target.startswith("socket:["):
                        owners[target[8:-1]] = f"{proc.name} (pid {proc.pid})"
    problems = []
    for table in ("tcp", "tcp6", "udp", "udp6"):
        with contextlib.suppress(OSError):
            for line in Path(f"/proc/net/{table}").read_text().splitlines()[1:]:
                fields = line.split()
                local, remote, st, inode = fields[1], fields[2], fields[3], fields[9]
                if inode not in owners:
                    continue
                local_ip, local_port = _decode_address(local)
                remote_ip, remote_port = _decode_address(remote)
                if remote_port and not _is_loopback(remote_ip):
                    problems.append(f"{owners[inode]}: {table} {local_ip}:{local_port} -> {remote_ip}:{remote_port}")
                elif (table.startswith("udp") or st == _TCP_LISTEN) and not _is_loopback(local_ip):
                    problems.append(f"{owners[inode]}: {table} listening on {local_ip}:{local_port}")
    return problems


# --- kind -----------------------------------------------------------------------------------------

KIND_CONFIG = """\
kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
- role: worker
- role: worker
  labels:
    nvidia.com/gpu.present: "true"
"""


def docker_works() -> bool:
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=20).returncode == 0
    except subprocess.TimeoutExpired:
        return False


def up_kind(state_dir: Path) -> State:
    if shutil.which("kind") is None or not docker_works():
        raise ClusterError("--kind needs `kind` on PATH and a working Docker (`docker info` must succeed)")
    state_dir.mkdir(parents=True, exist_ok=True)
    name = f"kfctl-e2e-{state_dir.name}"
    state = State(
        backend="kind",
        state_dir=str(state_dir),
        kubeconfig=str(state_dir / "kubeconfig"),
        webhooks=True,
        kind_name=name,
        versions=read_versions(),
        started_at=time.time(),
    )
    state.save()
    (state_dir / "kind.yaml").write_text(KIND_CONFIG)
    subprocess.run(
        [
            "kind",
            "create",
            "cluster",
            "--name",
            name,
            "--config",
            str(state_dir / "kind.yaml"),
            "--kubeconfig",
            state.kubeconfig,
            "--wait",
            "180s",
        ],
        check=True,
    )
    # kind's nodes have no GPU; advertise one as an extended resource so GPU scheduling can be tested.
    api = kube_rest.Client(state.kubeconfig)
    for node in api.list("/api/v1/nodes"):
        if node["metadata"].get("labels", {}).get("nvidia.com/gpu.present") == "true":
            api.json_patch(
                f"/api/v1/nodes/{node['metadata']['name']}/status",
                [{"op": "add", "path": "/status/capacity/nvidia.com~1gpu", "value": "8"}],
            )
    api.close()
    return state


# --- commands -------------------------------------------------------------------------------------


def live_status(state: State) -> tuple[list[Proc], list[Proc]]:
    running = [p for p in state.procs if alive(p)]
    dead = [p for p in state.procs if not alive(p)]
    return running, dead


def api_ready(state: State) -> bool:
    try:
        api = kube_rest.Client(state.kubeconfig, timeout=5)
        try:
            api.request("GET", "/readyz", accept="text/plain")
        except ValueError:
            pass  # /readyz answers "ok", which is not JSON
        finally:
            api.close()
        return True
    except Exception:
        return False


def choose_backend(args: argparse.Namespace) -> str:
    if args.kind:
        return "kind"
    if args.local:
        return "local"
    env = os.environ.get("KFCTL_E2E_BACKEND", "")
    if env in ("kind", "local"):
        return env
    return "kind" if shutil.which("kind") and docker_works() else "local"


@contextlib.contextmanager
def state_lock(state_dir: Path) -> Iterator[None]:
    """One `up` or `down` at a time per state dir (the lock file sits beside it: `down` removes the dir)."""
    state_dir.parent.mkdir(parents=True, exist_ok=True)
    with open(state_dir.parent / f".{state_dir.name}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another up/down holds {lock.name}; waiting")
            fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def cmd_up(args: argparse.Namespace) -> int:
    state_dir = args.state_dir
    existing = State.load(state_dir)
    if existing is not None:
        running, dead = live_status(existing)
        if (existing.backend == "kind" or (running and not dead)) and api_ready(existing):
            log(f"already up ({existing.backend}) in {state_dir}")
            if existing.versions and existing.versions != read_versions():
                log("note: it runs other versions than e2e/versions.env says; `down` and `up` to change")
            print(existing.kubeconfig)
            return 0
        if running:
            names = ", ".join(f"{p.name} (pid {p.pid})" for p in running)
            gone = ", ".join(p.name for p in dead) or "none"
            raise ClusterError(
                f"the cluster in {state_dir} is only partly up: running {names}; exited: {gone}. "
                f"Run `e2e/cluster down --state-dir {state_dir}` and then `up` again."
            )
        log(f"removing the stale state of a stopped cluster in {state_dir}")
        shutil.rmtree(state_dir)
    elif state_dir.exists() and any(state_dir.iterdir()):
        raise ClusterError(f"{state_dir} exists, is not empty and holds no cluster state; choose another --state-dir")

    backend = choose_backend(args)
    started = time.monotonic()
    try:
        local = functools.partial(up_local, training_seconds=args.training_seconds)
        state = up_kind(state_dir) if backend == "kind" else local(state_dir)
    except BaseException:
        failed = State.load(state_dir)
        if failed is not None and failed.procs:
            # Stop what was started, keep the logs for a look; the next `up` clears the stale state.
            stop_procs(failed.procs)
            log(f"up failed; logs are in {state_dir / 'logs'}")
        raise
    webhooks = "admission webhooks on" if state.webhooks else "admission webhooks OFF (not root: no process runtime)"
    log(f"up ({backend}, {webhooks}) in {time.monotonic() - started:.1f} s")
    print(state.kubeconfig)
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    state_dir = args.state_dir
    state = State.load(state_dir)
    if state is None:
        if state_dir.exists() and any(state_dir.iterdir()):
            raise ClusterError(f"{state_dir} holds no cluster state ({STATE_FILE}); not touching it")
        log(f"no cluster in {state_dir}")
        return 0
    if state.backend == "kind":
        subprocess.run(["kind", "delete", "cluster", "--name", state.kind_name], check=True)
    else:
        stuck = stop_procs(state.procs)
        if stuck:
            raise ClusterError(f"could not stop {', '.join(stuck)}; state kept in {state_dir}")
    shutil.rmtree(state_dir)
    log(f"down: stopped {len(state.procs)} processes, removed {state_dir}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    state = State.load(args.state_dir)
    if state is None:
        if args.json:
            print(json.dumps({"state_dir": str(args.state_dir), "up": False}))
        else:
            print(f"no cluster in {args.state_dir}")
        return 1
    running, dead = live_status(state)
    ready = api_ready(state)
    up = ready and (state.backend == "kind" or not dead)
    if args.json:
        print(
            json.dumps(
                {
                    "state_dir": state.state_dir,
                    "up": up,
                    "backend": state.backend,
                    "kubeconfig": state.kubeconfig,
                    "webhooks": state.webhooks,
                    "ports": state.ports,
                    "api_ready": ready,
                    "processes": [{"name": p.name, "pid": p.pid, "alive": alive(p), "log": p.log} for p in state.procs],
                    "runtime_processes": [
                        {"container": ref, "pid": pid} for ref, pid in runtime_processes(Path(state.state_dir))
                    ],
                },
                indent=2,
            )
        )
    else:
        print(f"state dir:  {state.state_dir}")
        print(f"backend:    {state.backend}{' (admission webhooks enabled)' if state.webhooks else ''}")
        print(f"kubeconfig: {state.kubeconfig}")
        if state.versions:
            print(
                "versions:   "
                + ", ".join(
                    f"{k.removesuffix('_VERSION').lower()} {v}"
                    for k, v in state.versions.items()
                    if k != "KUBERNETES_STAGING_VERSION"
                )
            )
        print(
            f"API server: {'ready' if ready else 'NOT ready'}"
            + (f" on https://{LOOPBACK}:{state.ports['apiserver']}" if state.ports else "")
        )
        for p in state.procs:
            print(f"  {p.name:<24} pid {p.pid:<8} {'running' if alive(p) else 'EXITED':<8} {p.log}")
        real = runtime_processes(Path(state.state_dir))
        print(f"pods running real binaries (runtime.py): {len(real) or 'none'}")
        for ref, pid in real:
            print(f"  {ref:<70} pid {pid}")
    return 0 if up else 2 if running else 1


def runtime_processes(state_dir: Path) -> list[tuple[str, int]]:
    """(<ns>/<pod> <container>, pid) of every container process the runtime runs now, from its logs' last
    `--- runtime: start` line (the pid a restart got). A pid counts only while /proc/<pid>/exe names a binary of the
    operators' bin dir the runtime was started with (a reused pid is someone else); an unreadable line is skipped."""
    state = State.load(state_dir)
    runtime = next((p for p in (state.procs if state else []) if p.name == "runtime"), None)
    bin_arg = next((a for a in (runtime.argv if runtime else []) if a.startswith("--bin-dir=")), None)
    if bin_arg is None:
        return []
    bin_dir = os.path.realpath(bin_arg.removeprefix("--bin-dir="))
    found = []
    for log_path in sorted(runtime_dir(state_dir).glob("*.log")):
        text = log_path.read_text(errors="replace")
        try:
            pid = int(text.rsplit("--- runtime: start #", 1)[1].split("(pid ", 1)[1].split(")", 1)[0])
            exe = os.readlink(f"/proc/{pid}/exe")
            ns, pod, container = log_path.stem.split("_", 2)
        except (IndexError, ValueError, OSError):
            continue
        # A binary run from the pod's stage (a chrooted overlay of /, or bound there because a mountPath covers the
        # cache) shows there from the host: /srv/root/<bin dir>/katib-controller. Its file name is the binary's.
        if os.path.dirname(exe) == bin_dir or os.path.isfile(os.path.join(bin_dir, os.path.basename(exe))):
            found.append((f"{ns}/{pod} {container}", pid))
    return found


def cmd_check_loopback(args: argparse.Namespace) -> int:
    state = State.load(args.state_dir)
    if state is None or state.backend != "local":
        raise ClusterError(f"no local cluster in {args.state_dir}")
    problems = non_loopback_sockets(state)
    for problem in problems:
        print(problem)
    if not problems:
        print(f"ok: the {sum(alive(p) for p in state.procs)} live processes use loopback addresses only")
    return 1 if problems else 0


def cmd_logs(args: argparse.Namespace) -> int:
    """The log of a container the process runtime ran (kubectl logs cannot: kwok serves no real logs)."""
    state = State.load(args.state_dir)
    if state is None or state.backend != "local":
        raise ClusterError(f"no local cluster in {args.state_dir}")
    ns, sep, pod = args.pod.partition("/")
    if not sep or not ns or not pod:
        raise ClusterError(f"{args.pod!r}: name the pod as NAMESPACE/POD, e.g. kubeflow/training-operator-5d9c-x2")
    directory = runtime_dir(args.state_dir)
    logs = {p.name[len(f"{ns}_{pod}_") : -len(".log")]: p for p in directory.glob(f"{ns}_{pod}_*.log")}
    if args.container:
        logs = {c: p for c, p in logs.items() if c == args.container}
    if not logs:
        raise ClusterError(
            f"no process ran for {ns}/{pod}{f' container {args.container}' if args.container else ''}: the runtime "
            f"runs only containers whose image, repository and tag, maps to a built operator (runtime.py "
            f"RUNNABLE_IMAGES; another release of such a repository gets ErrImagePull); "
            f"its own log is {Path(state.state_dir) / 'logs' / 'runtime.log'}"
        )
    if len(logs) > 1:
        raise ClusterError(f"{ns}/{pod} ran several containers: choose one with -c ({', '.join(sorted(logs))})")
    (path,) = logs.values()
    sys.stdout.write(path.read_text(errors="replace"))
    return 0


def cmd_kubeconfig(args: argparse.Namespace) -> int:
    state = State.load(args.state_dir)
    if state is None:
        raise ClusterError(f"no cluster in {args.state_dir}; run `e2e/cluster up --state-dir {args.state_dir}`")
    print(state.kubeconfig)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="e2e/cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--state-dir",
        type=Path,
        default=DEFAULT_STATE_DIR,
        help=f"where this cluster's state, logs and kubeconfig live (default {DEFAULT_STATE_DIR}; "
        "env KFCTL_E2E_STATE_DIR)",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start a cluster (idempotent) and print its kubeconfig path")
    choice = up.add_mutually_exclusive_group()
    choice.add_argument("--kind", action="store_true", help="create a kind cluster (needs Docker)")
    choice.add_argument("--local", action="store_true", help="run the local control plane even where kind works")
    up.add_argument(
        "--training-seconds",
        type=int,
        default=kwokstages.TRAINING_SECONDS,
        help="how long kwok lets a simulated training pod run before it succeeds (default %(default)s; upstream's "
        "own test scripts wait for a running pod and need longer)",
    )
    sub.add_parser("down", help="stop the cluster's recorded processes and remove its state")
    status = sub.add_parser("status", help="what runs; exit 0 when up, 1 when not, 2 when partly")
    status.add_argument("--json", action="store_true")
    sub.add_parser("kubeconfig", help="print the kubeconfig path")
    sub.add_parser("check-loopback", help="list sockets of our processes that are not on loopback; exit 1 if any")
    logs = sub.add_parser("logs", help="print the log of a container the process runtime ran (NAMESPACE/POD)")
    logs.add_argument("pod", metavar="NAMESPACE/POD")
    logs.add_argument("-c", "--container", help="the container, when the pod ran several")
    # Accept --state-dir after the subcommand as well.
    for p in (up, status, logs, *(sub.choices[n] for n in ("down", "kubeconfig", "check-loopback"))):
        p.add_argument("--state-dir", type=Path, default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.state_dir = args.state_dir.expanduser().absolute()
    commands: dict[str, Callable[[argparse.Namespace], int]] = {
        "up": cmd_up,
        "down": cmd_down,
        "status": cmd_status,
        "kubeconfig": cmd_kubeconfig,
        "check-loopback": cmd_check_loopback,
        "logs": cmd_logs,
    }
    try:
        if args.command in ("up", "down"):
            with state_lock(args.state_dir):
                return commands[args.command](args)
        return commands[args.command](args)
    except ClusterError as e:
        print(f"e2e/cluster {args.command}: {e}", file=sys.stderr)
        return 1
    except subprocess.CalledProcessError as e:
        print(
            f"e2e/cluster {args.command}: {' '.join(map(str, e.cmd))} failed with exit code {e.returncode}",
            file=sys.stderr,
        )
        return 1


if __name__ == "__main__":
    sys.exit(main())
