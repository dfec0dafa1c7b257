"""Category "secrets": the Secrets a KfDef brings instead of generated ones (a ``…SecretRef`` parameter) must be
in the cluster with every key their workloads read — the check apply makes before its first write
(:mod:`kfctl.secrets.brought`), asked ahead of time. Reads key names only, never values."""

from __future__ import annotations

from kfctl.check.model import Outcome, PreContext
from kfctl.secrets.brought import brought_problems, create_hint


def brought_secrets(ctx: PreContext) -> Outcome:
    if not ctx.brought:
        return Outcome("skip", "the KfDef brings no Secret: kfctl generates each one at the first apply")
    problems = brought_problems(ctx.cluster, ctx.brought)
    if problems:
        return Outcome(
            "fail",
            f"{len(problems)} of {len(ctx.brought)} Secret(s) the KfDef brings are not ready: {'; '.join(problems)}",
            create_hint(ctx.brought, problems),
        )
    names = ", ".join(f"{s.namespace}/{s.name}" for s in ctx.brought)
    return Outcome("pass", f"the {len(ctx.brought)} Secret(s) the KfDef brings have every key needed: {names}")
