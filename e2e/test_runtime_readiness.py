"""A pod the process runtime runs is Ready when its process is: the real training operator's readiness.

kwok makes such a pod Running but not Ready (kfctl_testbed/kwok-pod-stages.yaml); the runtime
(kfctl_testbed.podstatus) runs the
container's readinessProbe (`GET /readyz` on the `health` port) against the real process, inside its network
namespace, and writes Ready only once it passes. So `kfctl apply`, which waits for the Deployment to be
Available, returns only after the operator answers /readyz. When the process dies, the pod goes not Ready
(restartCount counted, the exit code in lastState) until the restarted process passes its probe again.

The test watches the pod while `kfctl apply` installs the operator: the pod's Ready condition, the container's
state, and what the process itself answers on /readyz (the test dials it inside the namespace too). Needs the
operator binaries and root, like test_runtime.py.
"""

from __future__ import annotations

import calendar
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from apply_support import Run, kfctl
from harness import poll
from kfctl_testbed import kube_rest
from kfctl_testbed.kube_rest import JSON
from runtime_support import (
    condition,
    http_status_in_netns,
    install_training_operator,
    kill_operator,
    live_operator_pods,
    operator_logs,
    process_start,
    runtime_pid,
    uninstall,
)

pytestmark = pytest.mark.e2e


@dataclass(frozen=True)
class Sample:
    """One look at the operator's pod, then at its process."""

    at: float  # wall clock
    ready: str | None  # the pod's Ready condition
    container_ready: bool
    state: str  # the container's state: running, waiting (reason) or none yet
    pid: int | None  # the process the runtime runs for it
    readyz: int | None  # what the process answered on /readyz just after (None: no answer / not dialled)


@dataclass
class Rollout:
    pod: str
    samples: list[Sample]
    apply: Run
    applied_at: float  # wall clock, when kfctl apply returned
    ready_pod: JSON  # the pod as it was first seen Ready


def status_of(pod: JSON | None, kind: str) -> str | None:
    return (condition(pod, kind) or {}).get("status")


def epoch(timestamp: str) -> int:
    return calendar.timegm(time.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ"))


def probe_target(pod: JSON) -> tuple[str, int]:
    """The readinessProbe's path and port number (the port is named in the manifest)."""
    container = pod["spec"]["containers"][0]
    get = container["readinessProbe"]["httpGet"]
    ports = {p.get("name"): p["containerPort"] for p in container.get("ports") or []}
    return get["path"], int(ports.get(get["port"], get["port"]))


def look(api: kube_rest.Client, runtime: Path) -> tuple[Sample, JSON] | None:
    pods = live_operator_pods(api)
    if not pods:
        return None
    pod = pods[0]
    log = operator_logs(runtime).get(pod["metadata"]["name"], "")
    pid = runtime_pid(log) if "--- runtime: start #" in log else None
    [status] = (pod.get("status") or {}).get("containerStatuses") or [{}]
    state = next(iter(status.get("state") or {"none": {}}))
    if state == "waiting":
        state = f"waiting ({status['state']['waiting'].get('reason')})"
    path, port = probe_target(pod)
    sample = Sample(
        at=time.time(),
        ready=status_of(pod, "Ready"),
        container_ready=bool(status.get("ready")),
        state=state,
        pid=pid,
        readyz=http_status_in_netns(pid, port, path) if pid and Path(f"/proc/{pid}").exists() else None,
    )
    return sample, pod


@pytest.fixture(scope="module")
def rollout(kubeconfig: str, pod_runtime: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rollout]:
    """The training operator installed by `kfctl apply`, and what the test saw of its pod meanwhile (every
    0.2 s until the pod was Ready and apply had returned); removed after the module's tests."""
    app = tmp_path_factory.mktemp("readiness") / "app"
    install_training_operator(app, kubeconfig=kubeconfig, apply=False)
    applied: dict[str, object] = {}

    def apply() -> None:
        applied["run"] = kfctl("apply", str(app), "--wait-timeout", "4m", kubeconfig=kubeconfig)
        applied["at"] = time.time()

    api = kube_rest.Client(kubeconfig)
    thread = threading.Thread(target=apply, name="kfctl apply")
    try:
        thread.start()
        samples: list[Sample] = []
        ready_pod: JSON = {}

        def watch() -> bool:
            nonlocal ready_pod
            run = applied.get("run")
            if isinstance(run, Run) and run.code != 0:
                pytest.fail(run.explain(), pytrace=False)
            seen = look(api, pod_runtime)
            if seen is not None:
                samples.append(seen[0])
                if seen[0].ready == "True" and not ready_pod:
                    ready_pod = seen[1]
            return bool(ready_pod) and not thread.is_alive()

        poll(watch, timeout=300, what="the training operator's pod to be Ready and kfctl apply to return")
        thread.join()
        run = applied["run"]
        assert isinstance(run, Run)
        assert run.code == 0, run.explain()
        yield Rollout(
            pod=ready_pod["metadata"]["name"],
            samples=samples,
            apply=run,
            applied_at=float(applied["at"]),  # type: ignore[arg-type]
            ready_pod=ready_pod,
        )
    finally:
        thread.join()
        api.close()
        uninstall(app, kubeconfig=kubeconfig)


def timeline(samples: list[Sample]) -> str:
    """The samples where something changed, relative to the first."""
    lines, last = [], None
    for s in samples:
        now = (s.ready, s.container_ready, s.state, s.pid, s.readyz)
        if now != last:
            lines.append(
                f"  +{s.at - samples[0].at:5.1f} s  Ready={s.ready} container ready={s.container_ready} "
                f"state={s.state} pid={s.pid} /readyz={s.readyz}"
            )
            last = now
    return "\n".join(lines)


def test_operator_pod_is_ready_only_once_its_readyz_passes(rollout: Rollout) -> None:
    samples = rollout.samples
    print(f"\nthe operator's pod {rollout.pod} while kfctl apply ran:\n{timeline(samples)}", file=sys.stderr)
    first_ready = next(i for i, s in enumerate(samples) if s.ready == "True")

    # kwok never marked it Ready on its own: while the process ran it stayed not Ready for a while ...
    assert any(s.state == "running" and s.ready == "False" and not s.container_ready for s in samples)
    assert all(s.ready != "True" for s in samples if s.state != "running")
    # ... and it became Ready only when the process answered its probe (the test dialled /readyz right after).
    assert samples[first_ready].readyz == 200
    assert samples[first_ready].container_ready

    # The condition changed after the process started, and not before the probe's initialDelaySeconds.
    pid = samples[first_ready].pid
    assert pid is not None
    started = process_start(pid)
    ready = condition(rollout.ready_pod, "Ready")
    assert ready is not None
    delay = rollout.ready_pod["spec"]["containers"][0]["readinessProbe"].get("initialDelaySeconds", 0)
    assert epoch(ready["lastTransitionTime"]) >= int(started) + delay
    # kfctl's health check waited for it.
    assert rollout.applied_at >= epoch(ready["lastTransitionTime"])
    print(
        f"process started {time.strftime('%H:%M:%S', time.gmtime(started))}Z, pod Ready at "
        f"{ready['lastTransitionTime']} (initialDelaySeconds {delay}), kfctl apply returned "
        f"{rollout.applied_at - epoch(ready['lastTransitionTime']):.1f} s later ({rollout.apply.seconds:.1f} s in all)",
        file=sys.stderr,
    )


def test_killed_operator_is_not_ready_until_restarted_and_ready_again(
    kubeconfig: str, pod_runtime: Path, rollout: Rollout
) -> None:
    api = kube_rest.Client(kubeconfig)
    path = f"/api/v1/namespaces/kubeflow/pods/{rollout.pod}"

    def container(pod: JSON | None) -> JSON:
        return ((pod or {}).get("status") or {}).get("containerStatuses", [{}])[0]

    try:

        def ready() -> JSON | None:
            pod = api.get(path)
            return pod if status_of(pod, "Ready") == "True" else None

        before = poll(ready, timeout=60, what="the operator's pod to be Ready")
        assert container(before)["restartCount"] == 0
        pid = runtime_pid(operator_logs(pod_runtime)[rollout.pod])
        kill_operator(pid)
        killed = time.time()

        def down() -> JSON | None:
            pod = api.get(path)
            c = container(pod)
            return pod if status_of(pod, "Ready") == "False" and not c.get("ready") and c.get("restartCount") else None

        unready = poll(down, timeout=30, what="the pod to go not Ready, its restart counted", interval=0.1)
        went_down = time.time() - killed
        assert container(unready)["restartCount"] == 1
        terminated = container(unready)["lastState"]["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (137, "Error")  # 128 + SIGKILL, as a kubelet says
        assert status_of(unready, "ContainersReady") == "False"

        after = poll(ready, timeout=120, what="the restarted operator's pod to be Ready again", interval=0.5)
        c = container(after)
        assert c["restartCount"] == 1 and c["ready"]
        assert c["lastState"]["terminated"]["exitCode"] == 137
        restarted = runtime_pid(operator_logs(pod_runtime)[rollout.pod])
        assert restarted != pid
        # Ready again only after the new process started, and after its own initialDelaySeconds.
        delay = after["spec"]["containers"][0]["readinessProbe"].get("initialDelaySeconds", 0)
        again = epoch((condition(after, "Ready") or {})["lastTransitionTime"])
        assert again >= int(process_start(restarted)) + delay
        assert epoch(c["state"]["running"]["startedAt"]) >= epoch(terminated["finishedAt"])
        print(
            f"\nSIGKILL of pid {pid}: not Ready {went_down:.1f} s later (exit code {terminated['exitCode']}), Ready "
            f"again {again - killed:.1f} s after the kill with pid {restarted}, restartCount {c['restartCount']}",
            file=sys.stderr,
        )
    finally:
        api.close()
