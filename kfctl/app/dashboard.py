"""`kfctl dashboard`: the platform's front door (kfctl.check.ingress finds it) forwarded to a local port."""

from __future__ import annotations

from collections.abc import Callable

from kfctl.check.ingress import Ingress, Login, find_ingress, login_of, password_of
from kfctl.k8s.api import Cluster
from kfctl.k8s.portforward import LocalForward, Tunnel

__all__ = ["Ingress", "Login", "find_ingress", "forward", "login_of", "password_of"]


def forward(
    cluster: Cluster,
    ingress: Ingress,
    *,
    port: int,
    on_event: Callable[[str], None] = lambda _t: None,
    on_error: Callable[[str], None] = lambda _t: None,
) -> LocalForward:
    """A local port (not yet started) whose every connection is a port-forward to the ingress pod."""

    def tunnel() -> Tunnel:
        return cluster.port_forward(namespace=ingress.namespace, pod=ingress.pod, port=ingress.pod_port)

    return LocalForward(tunnel, port=port, on_event=on_event, on_error=on_error)
