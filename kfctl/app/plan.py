"""`kfctl plan`: the order apply would follow, and why, without touching the cluster."""

from __future__ import annotations

from typing import Any

from kfctl.app.bundle import load_bundle
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.config.model import KfDef
from kfctl.plan.graph import Plan


def plan_kfdef(kfdef: KfDef, catalog: Catalog, *, render: bool = True) -> Plan:
    if render:
        generate(kfdef, catalog)
    return load_bundle(kfdef, catalog).plan()


def plan_as_dict(plan: Plan) -> dict[str, Any]:
    return {
        "waves": [
            [
                {
                    "step": sid,
                    "application": plan.steps[sid].app,
                    "kind": plan.steps[sid].kind,
                    "dependsOn": [
                        {"step": e.dependency, "rule": e.rule.name, "orderOnly": e.rule.order_only}
                        for e in plan.deps.get(sid, [])
                    ],
                }
                for sid in wave
            ]
            for wave in plan.waves()
        ]
    }
