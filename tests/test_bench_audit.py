"""bench/benchlib.py's AuditLog: requests counted on the server by user agent; what counts as a write."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from benchlib import AuditLog


def event(audit_id: str, verb: str, uri: str, *, resource: str, subresource: str = "", agent: str = "kfctl") -> str:
    ref: dict[str, Any] = {"resource": resource} | ({"subresource": subresource} if subresource else {})
    return json.dumps(
        {"auditID": audit_id, "verb": verb, "requestURI": uri, "userAgent": agent, "objectRef": ref, "stage": "x"}
    )


@pytest.mark.parametrize(
    ("line", "writes"),
    [
        pytest.param(event("a", "patch", "/api/v1/namespaces/k/configmaps/c", resource="configmaps"), 1, id="a patch"),
        pytest.param(
            event("a", "patch", "/api/v1/namespaces/k/configmaps/c?dryRun=All", resource="configmaps"),
            0,
            id="a server-side dry run",
        ),
        pytest.param(
            event(
                "a",
                "create",
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                resource="selfsubjectaccessreviews",
            ),
            0,
            id="an access review: answered, not stored",
        ),
        pytest.param(
            event(
                "a",
                "create",
                "/api/v1/namespaces/k/services/https:hook:443/proxy/validate",
                resource="services",
                subresource="proxy",
            ),
            0,
            id="a POST through a Service's proxy (kfctl asking a webhook backend)",
        ),
        pytest.param(
            event("a", "create", "/api/v1/namespaces/k/secrets", resource="secrets", agent="kapp/v0.64.2"),
            0,
            id="another agent's request is not counted",
        ),
    ],
)
def test_writes(tmp_path: Path, line: str, writes: int) -> None:
    path = tmp_path / "audit.log"
    path.write_text(line + "\n" + line + "\n")  # a request logs one line per stage: counted once
    counted = AuditLog(path).requests("kfctl")
    assert counted.writes == writes
    assert counted.total == (0 if "kapp" in line else 1)
