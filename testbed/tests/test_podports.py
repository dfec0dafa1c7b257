"""What the runtime forwards for `kubectl port-forward`: the ports a process listens on, and kwok's PortForward."""

from __future__ import annotations

from pathlib import Path

from kfctl_testbed import podports

HEADER = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
TCP = (
    HEADER
    + "   0: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1 1\n"  # *:8080
    + "   1: 0100007F:3AA5 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 2 1\n"  # lo:15013
    + "   2: 0100007F:1F90 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000     0        0 3 1\n"  # established
)
TCP6 = HEADER + "   0: 00000000000000000000000000000000:3AAD 00000000000000000000000000000000:0000 0A 0 0 0 0 0 4 1\n"


def test_listening_ports_are_the_listen_state_of_tcp_and_tcp6(tmp_path: Path) -> None:
    net = tmp_path / "42" / "net"
    net.mkdir(parents=True)
    (net / "tcp").write_text(TCP)
    (net / "tcp6").write_text(TCP6)
    assert podports.listening_ports(42, proc=tmp_path) == {8080, 15013, 15021}
    assert podports.listening_ports(43, proc=tmp_path) == set()  # a process gone: nothing


class Relay:
    def __init__(self, port: int) -> None:
        self.port = port


def test_the_portforward_object_names_each_port_and_its_host_relay() -> None:
    pod = {"metadata": {"name": "istio-ingressgateway-abc", "namespace": "istio-system", "uid": "u-1"}}
    relays = {8080: Relay(40001), 15021: Relay(40000)}
    assert podports.port_forward(pod, relays) == {  # type: ignore[arg-type]
        "apiVersion": "kwok.x-k8s.io/v1alpha1",
        "kind": "PortForward",
        "metadata": {
            "name": "istio-ingressgateway-abc",
            "namespace": "istio-system",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "istio-ingressgateway-abc", "uid": "u-1"}],
        },
        "spec": {
            "forwards": [
                {"ports": [8080], "target": {"address": "127.0.0.1", "port": 40001}},
                {"ports": [15021], "target": {"address": "127.0.0.1", "port": 40000}},
            ]
        },
    }
