"""The Secrets a KfDef brings instead of generated ones (a component's ``…SecretRef`` parameter) must exist, in
the component's namespace, with every key its workloads read: checked before apply writes anything, so that a
typo is an error naming the Secret, not pods stuck in CreateContainerConfigError. Reads key names only."""

from __future__ import annotations

from collections.abc import Iterable

from kfctl.errors import PlanError
from kfctl.k8s.api import Cluster
from kfctl.secrets.declared import Declared


def brought_problems(cluster: Cluster, wanted: Iterable[Declared]) -> list[str]:
    """One line per brought Secret that is missing or lacks keys ([] when all are ready)."""
    problems: list[str] = []
    for secret in wanted:
        if secret.generated:
            continue
        where = f"Secret {secret.namespace}/{secret.name} ({secret.application} parameter {secret.spec.parameter})"
        live = cluster.get("v1", "Secret", namespace=secret.namespace, name=secret.name)
        if live is None:
            problems.append(f"{where} does not exist; it needs key(s) {', '.join(secret.spec.key_names)}")
            continue
        have = set(live.get("data") or {})
        missing = [k for k in secret.spec.key_names if k not in have]
        if missing:
            problems.append(
                f"{where} lacks key(s) {', '.join(missing)} (it has {', '.join(sorted(have)) or 'no keys'})"
            )
    return problems


def create_hint(wanted: Iterable[Declared], problems: list[str]) -> str:
    """How to make the brought Secrets ``problems`` names: a `kubectl create secret` line each."""
    examples = [
        f"kubectl -n {s.namespace} create secret generic {s.name} "
        + " ".join(f"--from-literal={k}=…" for k in s.spec.key_names)
        for s in wanted
        if not s.generated and any(f"Secret {s.namespace}/{s.name} " in p for p in problems)
    ]
    return (
        "create each with the keys named (" + "; ".join(examples) + "), or drop the parameter from the KfDef "
        "and kfctl generates the Secret at the first apply"
    )


def check_brought(cluster: Cluster, wanted: Iterable[Declared]) -> None:
    """PlanError (exit 5) naming each brought Secret that is missing or incomplete, and how to make it."""
    wanted = list(wanted)
    problems = brought_problems(cluster, wanted)
    if not problems:
        return
    raise PlanError(
        f"{len(problems)} Secret(s) the KfDef brings instead of generated ones are not ready; nothing was written",
        details=problems,
        hint=create_hint(wanted, problems),
    )
