"""e2e/cluster's own lifecycle, on a cluster of the test's own: `up` twice is idempotent, `down` leaves none of its
processes alive and none of its ports listening (the egress proxy's included), and `up` after `down` works."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest
from harness import poll, run_cluster
from kfctl_testbed import localcluster
from kfctl_testbed.localcluster import State

pytestmark = pytest.mark.e2e


def listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex(("127.0.0.1", port)) == 0


def gogc(pid: int) -> str | None:
    """GOGC in the environment the kernel holds for a process (None: not set)."""
    for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
        if entry.startswith(b"GOGC="):
            return entry.removeprefix(b"GOGC=").decode()
    return None


def up(state_dir: Path, *extra: str) -> str:
    result = run_cluster("up", "--local", "--state-dir", str(state_dir), *extra, timeout=600)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_up_down_up(tmp_path: Path) -> None:
    state_dir = tmp_path / "lifecycle"
    try:
        kubeconfig = up(state_dir)
        assert Path(kubeconfig).is_file()
        first = State.load(state_dir)
        assert first is not None
        assert {p.name for p in first.procs} == {
            "etcd",
            "kube-apiserver",
            "kube-controller-manager",
            "kube-scheduler",
            "kwok",
            "standin",
            "runtime",
        }
        assert all(localcluster.alive(p) for p in first.procs)
        # The servers collect garbage less often (localcluster.SERVER_GOGC); the rest keep Go's default.
        assert {p.name: gogc(p.pid) for p in first.procs} == {
            "etcd": "200",
            "kube-apiserver": "200",
            "kube-controller-manager": os.environ.get("GOGC"),
            "kube-scheduler": os.environ.get("GOGC"),
            "kwok": os.environ.get("GOGC"),
            "standin": os.environ.get("GOGC"),
            "runtime": os.environ.get("GOGC"),
        }

        status = run_cluster("status", "--json", "--state-dir", str(state_dir))
        assert status.returncode == 0, status.stdout + status.stderr
        assert json.loads(status.stdout)["up"] is True

        # Idempotent: the same cluster, the same processes.
        assert up(state_dir) == kubeconfig
        again = State.load(state_dir)
        assert again is not None and [p.pid for p in again.procs] == [p.pid for p in first.procs]

        # As root, admission webhooks are on, through the runtime's egress proxy.
        assert first.webhooks and "egress" in first.ports, first

        down = run_cluster("down", "--state-dir", str(state_dir))
        assert down.returncode == 0, down.stderr
        assert not any(localcluster.alive(p) for p in first.procs)
        # A socket can linger a moment after its process is gone; nothing may accept connections.
        poll(
            lambda: not any(listening(port) for port in first.ports.values()),
            timeout=10,
            what=f"ports {sorted(first.ports.values())} to stop listening",
        )
        assert not state_dir.exists()

        status = run_cluster("status", "--state-dir", str(state_dir))
        assert status.returncode == 1

        # Up after down: a fresh cluster.
        assert up(state_dir) == kubeconfig
        second = State.load(state_dir)
        assert second is not None and all(localcluster.alive(p) for p in second.procs)
        assert not {p.pid for p in second.procs} & {p.pid for p in first.procs}
    finally:
        run_cluster("down", "--state-dir", str(state_dir))


def test_down_without_a_cluster_is_a_no_op(tmp_path: Path) -> None:
    result = run_cluster("down", "--state-dir", str(tmp_path / "nothing-here"))
    assert result.returncode == 0, result.stderr


def test_loopback_check_sees_a_wildcard_listener() -> None:
    """The check that guards the loopback-only rule does see a socket that is not on loopback."""
    me = localcluster.Proc(name="pytest", pid=os.getpid(), start_ticks=0, argv=[], log="")
    me.start_ticks = localcluster._start_ticks(me.pid) or 0
    state = State(backend="local", state_dir="", kubeconfig="", procs=[me])
    with socket.socket() as loopback:
        loopback.bind(("127.0.0.1", 0))
        loopback.listen()
        assert localcluster.non_loopback_sockets(state) == []
        with socket.socket() as wildcard:
            wildcard.bind(("0.0.0.0", 0))
            wildcard.listen()
            port = wildcard.getsockname()[1]
            assert localcluster.non_loopback_sockets(state) == [
                f"pytest (pid {me.pid}): tcp listening on 0.0.0.0:{port}"
            ]
