"""kfctl_testbed.argocd.ArgoCD.spawn: a process not ready in time is sent SIGQUIT (a Go program prints its
goroutines' stacks and exits), started once more, and on a second miss the error carries the stacks. The
process here is a Python stand-in for an Argo CD binary: it answers SIGQUIT as Go's runtime does, and it is
ready (a file it writes) from the start number given onwards."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kfctl_testbed import localcluster
from kfctl_testbed.argocd import ArgoCD

PROGRAM = """
import os, signal, sys, time
workdir = sys.argv[1]
starts = os.path.join(workdir, "starts")
n = (int(open(starts).read()) if os.path.exists(starts) else 0) + 1
open(starts, "w").write(str(n))
def quit(*_):
    print("SIGQUIT: quit\\ngoroutine 1 [IO wait]:", flush=True)
    os._exit(2)
signal.signal(signal.SIGQUIT, quit)
print(f"start {n}", flush=True)
if n >= int(sys.argv[2]):
    open(os.path.join(workdir, "ready"), "w").close()
while True:
    time.sleep(0.1)
"""


def started(tmp_path: Path, ready_from: int) -> tuple[ArgoCD, localcluster.State]:
    state = localcluster.State(backend="argocd", state_dir=str(tmp_path), kubeconfig="")
    argocd = ArgoCD(state, {}, ready_timeout=2)
    argocd.argvs["argocd-repo-server"] = [sys.executable, "-c", PROGRAM, str(tmp_path), str(ready_from)]
    argocd.envs["argocd-repo-server"] = {}
    argocd.ready["argocd-repo-server"] = lambda: (tmp_path / "ready").exists()
    return argocd, state


@pytest.mark.parametrize(
    ("ready_from", "starts", "log"),
    [
        (1, "1", ["start 1"]),
        (2, "2", ["start 1", "SIGQUIT: quit", "goroutine 1 [IO wait]:", "start 2"]),
    ],
)
def test_a_process_not_ready_in_time_leaves_its_stacks_and_starts_once_more(
    tmp_path: Path, ready_from: int, starts: str, log: list[str]
) -> None:
    argocd, state = started(tmp_path, ready_from)
    try:
        proc = argocd.spawn("argocd-repo-server")
        assert localcluster.alive(proc)
        assert state.procs == [proc]
        assert (tmp_path / "starts").read_text() == starts
        assert Path(proc.log).read_text().splitlines() == log
    finally:
        localcluster.stop_procs(state.procs)


def test_a_second_miss_fails_with_the_stacks(tmp_path: Path) -> None:
    argocd, state = started(tmp_path, ready_from=3)
    with pytest.raises(localcluster.ClusterError) as error:
        argocd.spawn("argocd-repo-server")
    message = str(error.value)
    assert message.startswith("timed out after 2 s waiting for argocd-repo-server to be ready"), message
    assert message.endswith(
        "--- argocd-repo-server's goroutines (SIGQUIT):\n"
        "start 1\nSIGQUIT: quit\ngoroutine 1 [IO wait]:\nstart 2\nSIGQUIT: quit\ngoroutine 1 [IO wait]:"
    ), message
    assert state.procs == []
    assert (tmp_path / "starts").read_text() == "2"
