"""How a failed conversation with the API server reaches the user: exit code, message and hint per answer.

The README's table: 6 when kfctl cannot reach or authenticate to the cluster, 7 when the server denies a
request (RBAC, schema, a webhook denial).
"""

from __future__ import annotations

import pytest

from kfctl.app.cluster import identify, talking_to
from kfctl.errors import ClusterError
from kfctl.k8s.api import ApiError, ClusterInfo, RequestStats, Unreachable
from kfctl.objects import Obj

INFO = ClusterInfo(server="https://10.0.0.1:6443", context="prod", kubeconfig="/home/u/.kube/config")


class Refusing:
    """A cluster whose every GET fails with ``err``."""

    info = INFO

    def __init__(self, err: Exception) -> None:
        self.err = err
        self.stats = RequestStats()

    def get(self, api_version: str, kind: str, *, namespace: str, name: str) -> Obj | None:
        raise self.err


@pytest.mark.parametrize(
    ("err", "kind", "code", "message", "hint"),
    [
        pytest.param(
            ApiError(401, "Unauthorized", reason="Unauthorized"),
            "cluster error",
            6,
            "the API server at https://10.0.0.1:6443 refused our credentials: Unauthorized",
            "check the user of context 'prod' in /home/u/.kube/config",
            id="401-is-authentication-exit-6",
        ),
        pytest.param(
            ApiError(403, 'namespaces "kube-system" is forbidden: User "u" cannot get'),
            "API denied",
            7,
            "forbidden: reading namespace kube-system (kfctl's record of which cluster this is): "
            'namespaces "kube-system" is forbidden: User "u" cannot get',
            "grant the user of context 'prod' get on namespaces (e.g. a ClusterRole with get on namespaces), "
            "or use a kubeconfig with more rights",
            id="403-is-a-denial-exit-7",
        ),
        pytest.param(
            Unreachable("GET https://10.0.0.1:6443: connect timeout"),
            "cluster error",
            6,
            "cannot reach the cluster: server https://10.0.0.1:6443 (context prod, kubeconfig /home/u/.kube/config)",
            "is the cluster running? check --kubeconfig/--context (or KUBECONFIG) point at it",
            id="unreachable-exit-6",
        ),
    ],
)
def test_the_first_request_names_what_is_wrong(err: Exception, kind: str, code: int, message: str, hint: str) -> None:
    with pytest.raises(ClusterError) as raised:
        identify(Refusing(err))  # type: ignore[arg-type]
    e = raised.value
    assert (e.kind, e.exit_code, e.message, e.hint) == (kind, code, message, hint)


@pytest.mark.parametrize(
    ("err", "kind", "code", "message"),
    [
        pytest.param(
            ApiError(401, "Unauthorized"),
            "cluster error",
            6,
            "the API server at https://10.0.0.1:6443 refused our credentials while deleting: Unauthorized",
            id="401",
        ),
        pytest.param(
            ApiError(403, "configmaps is forbidden"),
            "API denied",
            7,
            "forbidden while deleting: configmaps is forbidden",
            id="403",
        ),
        pytest.param(
            ApiError(503, "unavailable"),
            "cluster error",
            6,
            "the API server failed while deleting: 503: unavailable",
            id="503",
        ),
        pytest.param(
            Unreachable("reset"),
            "cluster error",
            6,
            "lost the connection to the cluster while deleting: server https://10.0.0.1:6443 "
            "(context prod, kubeconfig /home/u/.kube/config)",
            id="lost-connection",
        ),
    ],
)
def test_a_failure_mid_command_names_what_was_being_done(err: Exception, kind: str, code: int, message: str) -> None:
    with pytest.raises(ClusterError) as raised, talking_to(Refusing(err), "deleting"):  # type: ignore[arg-type]
        raise err
    e = raised.value
    assert (e.kind, e.exit_code, e.message) == (kind, code, message)
