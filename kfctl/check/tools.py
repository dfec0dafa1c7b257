"""Category "tools": the local programs kfctl runs. Only kustomize so far (kfctl.render.kustomize finds it)."""

from __future__ import annotations

import re

from kfctl.check.model import Outcome, PreContext
from kfctl.errors import RenderError
from kfctl.render.kustomize import GET_KUSTOMIZE

# The kustomize kfctl is tested with (e2e/versions.env); older v5 releases work but are less tried.
TESTED = (5, 5)


def kustomize(ctx: PreContext) -> Outcome:
    """Fail when there is no kustomize v5+ (generate cannot render); warn when it is older than the tested one."""
    try:
        found = ctx.find_kustomize()
    except RenderError as e:
        return Outcome("fail", e.message, e.hint or "")
    m = re.search(r"(\d+)\.(\d+)", str(found.version))
    version = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    if version < TESTED:
        return Outcome(
            "warn",
            f"{found.describe()} works, but is older than v{TESTED[0]}.{TESTED[1]}, the version kfctl is tested with",
            f"put kustomize v{TESTED[0]}.{TESTED[1]} or newer on PATH ({GET_KUSTOMIZE})",
        )
    return Outcome("pass", found.describe())
