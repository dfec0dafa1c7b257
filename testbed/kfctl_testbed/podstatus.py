"""Readiness probes and pod status for the containers the process runtime runs (runtime.py). TEST CODE.

kwok's `pod-running-runtime` stage (kfctl_testbed/kwok-pod-stages.yaml) makes such a pod Running with a podIP but not
Ready, and no kwok stage matches it again until it is deleted. From then on this module alone writes its
`conditions` (ContainersReady, Ready) and `containerStatuses`, through the pods/status subresource, as a
kubelet would:

- a container whose process runs: `running` since the process started, `ready` once its readinessProbe
  passes (no probe: ready once the process runs);
- a process that exited: `waiting` (CrashLoopBackOff) until the runtime restarts it, not ready,
  `lastState.terminated` with its exit code (128 + signal when killed, as the kubelet reports it) and
  `restartCount` = the exits so far; after the restart it is `running` again and probed from scratch;
- a container of a runtime image whose release has no binary built (runtime.pull_error): `waiting` with
  reason ErrImagePull and the runtime's message, not ready, as a kubelet reports an image it cannot pull (the
  pod's phase stays kwok's Running, where a kubelet would leave it Pending);
- a container the runtime does not run (not a runtime image at all) is simulated: running and ready;
- ContainersReady = every container ready; Ready = that and every readiness gate True. A condition's
  lastTransitionTime changes only when its status does.

Readiness probes are read as the kubelet reads them (initialDelaySeconds, periodSeconds, timeoutSeconds,
successThreshold, failureThreshold): httpGet is a GET of http(s)://127.0.0.1:<port><path> inside the process's
network namespace (netns.connect_in_netns; 200-399 passes), tcpSocket a connect there, grpc only a connect
(no gRPC health call), and exec is not run (the image's tools are not there): treated as passing, and logged.
A process is probed only once it is inside its own network namespace (the runtime's relay is up), never
before, when 127.0.0.1 would still be the host's. The probes' I/O runs on a small thread pool; their results
are taken, and the status written, in the runtime's loop (about once a second).

Not done: liveness and startup probes (a process is restarted only when it exits), probes of containers the
runtime does not run, and anything of the status besides conditions and containerStatuses (phase, podIP and
startTime stay kwok's).
"""

from __future__ import annotations

import http.client
import logging
import ssl
import subprocess
import time
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

from kfctl_testbed import kube_rest
from kfctl_testbed.kube_rest import JSON
from kfctl_testbed.netns import connect_in_netns

log = logging.getLogger("runtime")

STRATEGIC_MERGE_PATCH = "application/strategic-merge-patch+json"
PROBE_WORKERS = 4
# The fields of a container status this module writes (and compares).
STATUS_KEYS = ("name", "image", "ready", "started", "restartCount", "state", "lastState")


@dataclass(frozen=True)
class Termination:
    """How a container's process ended, in the kubelet's terms."""

    exit_code: int
    started_at: float  # wall clock
    finished_at: float

    @classmethod
    def of(cls, returncode: int, *, started_at: float, finished_at: float) -> Termination:
        # Popen reports death by signal N as -N; a kubelet reports 128 + N (SIGKILL: 137).
        return cls(returncode if returncode >= 0 else 128 - returncode, started_at, finished_at)

    def as_state(self) -> JSON:
        return {
            "terminated": {
                "exitCode": self.exit_code,
                "reason": "Completed" if self.exit_code == 0 else "Error",
                "startedAt": timestamp(self.started_at),
                "finishedAt": timestamp(self.finished_at),
            }
        }


class ContainerProcess(Protocol):
    """What this module reads of the runtime's Process."""

    proc: subprocess.Popen[bytes] | None
    relay: Any  # set once the process is inside its own network namespace
    started: float  # monotonic
    started_at: float  # wall clock
    restarts: int
    last_exit: Termination | None


def timestamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


# --- probes ----------------------------------------------------------------------------------------------


def container_port(port: int | str, container: JSON) -> int:
    """A probe's port: a number, or the name of one of the container's ports."""
    if isinstance(port, int) or str(port).isdigit():
        return int(port)
    for p in container.get("ports") or []:
        if p.get("name") == port:
            return int(p["containerPort"])
    raise ValueError(f"container {container['name']!r} has no port named {port!r}")


def run_probe(probe: JSON, container: JSON, pid: int) -> tuple[bool, str]:
    """One try of `probe` against the process `pid`, inside its network namespace: (passed, what happened)."""
    timeout = float(probe.get("timeoutSeconds") or 1)
    try:
        if "httpGet" in probe:
            return http_probe(probe["httpGet"], container, pid, timeout=timeout)
        if "tcpSocket" in probe or "grpc" in probe:
            port = container_port((probe.get("tcpSocket") or probe.get("grpc") or {})["port"], container)
            connect_in_netns(pid, ("127.0.0.1", port), timeout=timeout).close()
            return True, f"connected to port {port}"
    except (OSError, ValueError, http.client.HTTPException) as e:
        return False, f"{type(e).__name__}: {e}"
    except Exception as e:  # a probe that errs is a failed probe, never the runtime's end
        log.exception("readiness probe of container %s (pid %d): unexpected error", container.get("name"), pid)
        return False, f"{type(e).__name__}: {e}"
    return True, "exec probe not run by the runtime: treated as passing"


def http_probe(get: JSON, container: JSON, pid: int, *, timeout: float) -> tuple[bool, str]:
    port = container_port(get["port"], container)
    path = get.get("path") or "/"
    sock = connect_in_netns(pid, ("127.0.0.1", port), timeout=timeout)
    if str(get.get("scheme") or "HTTP").upper() == "HTTPS":
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE  # as the kubelet: a probe does not verify the serving certificate
        sock = context.wrap_socket(sock)
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    conn.sock = sock  # already connected, inside the namespace
    try:
        headers = {"User-Agent": "kube-probe/e2e-runtime", "Accept": "*/*"}
        headers.update({h["name"]: h["value"] for h in get.get("httpHeaders") or []})
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        response.read(10240)
    finally:
        conn.close()
    return 200 <= response.status < 400, f"HTTP {response.status} from {path} on port {port}"


@dataclass
class Prober:
    """The readiness of one container's process: the kubelet's prober worker, ticked by the runtime's loop."""

    name: str  # <ns>/<pod>/<container>, for the log
    container: JSON
    pid: int | None = None
    ready: bool = False
    successes: int = 0
    failures: int = 0
    next_at: float = 0.0
    pending: Future[tuple[bool, str]] | None = None
    said_exec: bool = False

    @property
    def probe(self) -> JSON | None:
        return self.container.get("readinessProbe")

    def tick(self, pid: int | None, *, started: float, pool: ThreadPoolExecutor) -> None:
        """`pid`: the process, once inside its own network namespace (None: not running); `started`: when it
        started (monotonic)."""
        if pid != self.pid:  # another process, or none: probed from scratch, not ready meanwhile
            self.pid, self.ready, self.successes, self.failures, self.pending = pid, False, 0, 0, None
            self.next_at = started + float((self.probe or {}).get("initialDelaySeconds") or 0)
        if pid is None:
            return
        probe = self.probe
        if probe is None:
            self.ready = True
            return
        if self.pending is not None:
            if not self.pending.done():
                return
            try:
                passed, message = self.pending.result()
            except Exception as e:  # run_probe catches everything; a cancelled future: a failed probe
                log.exception("%s: readiness probe: unexpected error", self.name)
                passed, message = False, f"{type(e).__name__}: {e}"
            self.pending = None
            self.record(probe, passed, message)
        now = time.monotonic()
        if now >= self.next_at:
            self.pending = pool.submit(run_probe, probe, self.container, pid)
            self.next_at = now + float(probe.get("periodSeconds") or 10)

    def record(self, probe: JSON, passed: bool, message: str) -> None:
        if "exec" in probe and not self.said_exec:
            log.info("%s: %s", self.name, message)
            self.said_exec = True
        if passed:
            self.successes, self.failures = self.successes + 1, 0
            if not self.ready and self.successes >= int(probe.get("successThreshold") or 1):
                self.ready = True
                log.info("%s: readiness probe passed (%s): ready", self.name, message)
        else:
            self.successes, self.failures = 0, self.failures + 1
            if self.ready and self.failures >= int(probe.get("failureThreshold") or 3):
                self.ready = False
                log.info("%s: readiness probe failed %d times (%s): not ready", self.name, self.failures, message)
            elif not self.ready:
                log.info("%s: readiness probe failed (%s)", self.name, message)


# --- the pod's status ------------------------------------------------------------------------------------


@dataclass
class PodStatusWriter:
    """Writes the status of the pods the runtime runs; one per runtime."""

    api: kube_rest.Client
    probers: dict[tuple[str, str], Prober] = field(default_factory=dict)  # (pod uid, container) → its prober
    pool: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(max_workers=PROBE_WORKERS, thread_name_prefix="probe")
    )

    def sync(
        self,
        pod: JSON,
        processes: Mapping[str, ContainerProcess],
        *,
        pull_errors: Mapping[str, str] | None = None,
        pulling: Mapping[str, str] | None = None,
    ) -> None:
        """Probe `pod`'s processes (container name → the runtime's Process), report `pull_errors` (container name →
        why its image cannot be run) and `pulling` (container name → why it waits: its binary is being built); the
        containers in none of them are simulated. Write the pod's status where it differs from what the pod says."""
        meta = pod["metadata"]
        statuses = []
        for container in pod["spec"]["containers"]:
            p = processes.get(container["name"])
            if p is None and pull_errors and container["name"] in pull_errors:
                statuses.append(pull_error_status(container, pull_errors[container["name"]]))
                continue
            if p is None and pulling and container["name"] in pulling:
                statuses.append(pull_error_status(container, pulling[container["name"]], "ContainerCreating"))
                continue
            if p is None:
                statuses.append(simulated_status(container, pod))
                continue
            prober = self.probers.get((meta["uid"], container["name"]))
            if prober is None:
                prober = Prober(name=f"{meta['namespace']}/{meta['name']}/{container['name']}", container=container)
                self.probers[(meta["uid"], container["name"])] = prober
            running = p.proc is not None and p.proc.poll() is None
            in_netns = running and p.relay is not None
            prober.tick(p.proc.pid if in_netns and p.proc else None, started=p.started, pool=self.pool)
            statuses.append(process_status(container, p, running=running, ready=in_netns and prober.ready))
        conditions = readiness_conditions(pod, statuses)
        if not differs(pod, conditions, statuses):
            return
        now = timestamp(time.time())
        observed = {c["type"]: c for c in (pod.get("status") or {}).get("conditions") or []}
        for c in conditions:
            old = observed.get(c["type"])
            same = old is not None and old.get("status") == c["status"]
            c["lastTransitionTime"] = old.get("lastTransitionTime") if same and old else now
            c["lastProbeTime"] = None
        if observed.get("Ready", {}).get("status") != conditions[1]["status"]:
            log.info(
                "pod %s/%s: Ready=%s%s",
                meta["namespace"],
                meta["name"],
                conditions[1]["status"],
                f" ({conditions[1]['message']})" if conditions[1].get("message") else "",
            )
        self.api.request(
            "PATCH",
            f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/status",
            {"status": {"conditions": conditions, "containerStatuses": statuses}},
            content_type=STRATEGIC_MERGE_PATCH,
        )

    def forget(self, pod_uid: str) -> None:
        """The pod is gone (or no longer runs): drop its probers."""
        for key in [k for k in self.probers if k[0] == pod_uid]:
            del self.probers[key]

    def close(self) -> None:
        self.pool.shutdown(wait=False, cancel_futures=True)


def simulated_status(container: JSON, pod: JSON) -> JSON:
    started = (pod.get("status") or {}).get("startTime")
    return {
        "name": container["name"],
        "image": container["image"],
        "ready": True,
        "started": True,
        "restartCount": 0,
        "state": {"running": {"startedAt": started}},
        "lastState": {},
    }


def pull_error_status(container: JSON, message: str, reason: str = "ErrImagePull") -> JSON:
    """A container whose image cannot be pulled, as a kubelet reports it (it alternates with ImagePullBackOff), or,
    with reason ContainerCreating, one whose image is still being pulled (built, here)."""
    return {
        "name": container["name"],
        "image": container["image"],
        "ready": False,
        "started": False,
        "restartCount": 0,
        "state": {"waiting": {"reason": reason, "message": message}},
        "lastState": {},
    }


def process_status(container: JSON, p: ContainerProcess, *, running: bool, ready: bool) -> JSON:
    if running:
        state: JSON = {"running": {"startedAt": timestamp(p.started_at)}}
    elif p.last_exit is not None:
        state = {"waiting": {"reason": "CrashLoopBackOff", "message": "back-off restarting failed container"}}
    else:
        state = {"waiting": {"reason": "ContainerCreating"}}
    return {
        "name": container["name"],
        "image": container["image"],
        "ready": ready,
        "started": running,
        "restartCount": p.restarts,
        "state": state,
        "lastState": p.last_exit.as_state() if p.last_exit else {},
    }


def readiness_conditions(pod: JSON, statuses: list[JSON]) -> list[JSON]:
    """ContainersReady and Ready (in that order), without their times."""
    unready = [s["name"] for s in statuses if not s["ready"]]
    # reason and message None when True: null removes them in a strategic merge patch.
    containers: JSON = {"type": "ContainersReady", "status": "True", "reason": None, "message": None}
    if unready:
        containers = {
            "type": "ContainersReady",
            "status": "False",
            "reason": "ContainersNotReady",
            "message": f"containers with unready status: [{' '.join(unready)}]",
        }
    observed = {c["type"]: c.get("status") for c in (pod.get("status") or {}).get("conditions") or []}
    gates = [g["conditionType"] for g in pod["spec"].get("readinessGates") or []]
    waiting = [g for g in gates if observed.get(g) != "True"]
    if unready:
        ready = {**containers, "type": "Ready"}
    elif waiting:
        ready = {
            "type": "Ready",
            "status": "False",
            "reason": "ReadinessGatesNotReady",
            "message": f"readiness gates not True: [{' '.join(waiting)}]",
        }
    else:
        ready = {"type": "Ready", "status": "True", "reason": None, "message": None}
    return [containers, ready]


def differs(pod: JSON, conditions: list[JSON], statuses: list[JSON]) -> bool:
    """Whether the pod's status says something else than `conditions` and `statuses` (times of conditions aside)."""
    status = pod.get("status") or {}
    observed = {c["type"]: c for c in status.get("conditions") or []}
    for c in conditions:
        old = observed.get(c["type"]) or {}
        if any(old.get(k) != c.get(k) for k in ("status", "reason", "message")):
            return True
    current = [
        {k: s.get(k, {} if k == "lastState" else None) for k in STATUS_KEYS}
        for s in status.get("containerStatuses") or []
    ]
    return current != statuses
