"""kfctl_testbed.argocd.ArgoCD.spawn: a process still running but not ready in time is sent SIGQUIT (a Go program
prints its goroutines' stacks and exits) and the error carries the stacks. The process here is a Python stand-in
for an Argo CD binary: it answers SIGQUIT as Go's runtime does, and it is ready (a file it writes) or not."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from kfctl_testbed import localcluster
from kfctl_testbed.argocd import ArgoCD

PROGRAM = """
import os, signal, sys, time
def quit(*_):
    print("SIGQUIT: quit\\ngoroutine 1 [IO wait]:", flush=True)
    os._exit(2)
signal.signal(signal.SIGQUIT, quit)
print("starting", flush=True)
if sys.argv[2] == "ready":
    open(os.path.join(sys.argv[1], "ready"), "w").close()
while True:
    time.sleep(0.1)
"""


def spawned(tmp_path: Path, state: localcluster.State, ready: str) -> localcluster.Proc:
    argocd = ArgoCD(state, {}, ready_timeout=2)
    argocd.argvs["argocd-repo-server"] = [sys.executable, "-c", PROGRAM, str(tmp_path), ready]
    argocd.envs["argocd-repo-server"] = {}
    argocd.ready["argocd-repo-server"] = lambda: (tmp_path / "ready").exists()
    return argocd.spawn("argocd-repo-server")


def test_a_ready_process_is_returned_running(tmp_path: Path) -> None:
    state = localcluster.State(backend="argocd", state_dir=str(tmp_path), kubeconfig="")
    try:
        proc = spawned(tmp_path, state, "ready")
        assert localcluster.alive(proc)
        assert state.procs == [proc]
        assert Path(proc.log).read_text() == "starting\n"
    finally:
        localcluster.stop_procs(state.procs)


def test_one_not_ready_in_time_fails_with_its_stacks(tmp_path: Path) -> None:
    state = localcluster.State(backend="argocd", state_dir=str(tmp_path), kubeconfig="")
    with pytest.raises(localcluster.ClusterError) as error:
        spawned(tmp_path, state, "never")
    message = str(error.value)
    assert message.startswith("timed out after 2 s waiting for argocd-repo-server to be ready"), message
    assert message.endswith(
        "--- argocd-repo-server's goroutines (SIGQUIT):\nstarting\nSIGQUIT: quit\ngoroutine 1 [IO wait]:"
    ), message
    assert not any(localcluster.alive(p) for p in state.procs)
