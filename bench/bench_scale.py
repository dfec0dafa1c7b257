"""B4: kfctl apply of synthetic bundles of 500 to 20,000 objects — seconds per object and peak RSS.

The bundle: one CRD (Widget, namespaced, no controller), 50 Namespaces, and the rest spread round-robin
over them: 60 % ConfigMaps, 20 % Deployments, 20 % Widgets. A KfDef points at it as one application of a
local-directory repo. Deployments have `replicas: 0`: the fake nodes hold 750 pods and two cores cannot
run thousands of pod lifecycles, and the engine's path (apply, poll until the controller has observed the
generation and the rollout is complete) is the same; Widgets wait out the no-status grace window.

Per run and size, on a fresh cluster: `kfctl generate` with its render cache removed (timed apart, ms per
object and kfctl's own peak RSS), then `kfctl apply --skip-generate`, timed from spawn to exit with the
process's own peak RSS (wait4; no child processes without rendering).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from benchlib import Samples, fresh_cluster, kfctl_argv, log, run_measured

NAMESPACES = 50
GROUP = "bench.kfctl.dev"


def synthetic_objects(total: int) -> list[dict[str, Any]]:
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"widgets.{GROUP}"},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
                        }
                    },
                }
            ],
        },
    }
    namespaces = [f"b{i:02d}" for i in range(NAMESPACES)]
    out: list[dict[str, Any]] = [crd]
    out += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in namespaces]
    rest = total - len(out)
    for i in range(rest):
        ns = namespaces[i % NAMESPACES]
        slot = i % 5
        if slot < 3:
            out.append(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"c{i}", "namespace": ns},
                    "data": {"index": str(i), "payload": "x" * 200},
                }
            )
        elif slot == 3:
            labels = {"app": f"d{i}"}
            out.append(
                {
                    "apiVersion": "apps/v1",
                    "kind": "Deployment",
                    "metadata": {"name": f"d{i}", "namespace": ns},
                    "spec": {
                        "replicas": 0,
                        "selector": {"matchLabels": labels},
                        "template": {
                            "metadata": {"labels": labels},
                            "spec": {
                                "containers": [
                                    {"name": "main", "image": "registry.example/bench:1", "args": [f"--index={i}"]}
                                ]
                            },
                        },
                    },
                }
            )
        else:
            out.append(
                {
                    "apiVersion": f"{GROUP}/v1",
                    "kind": "Widget",
                    "metadata": {"name": f"w{i}", "namespace": ns},
                    "spec": {"index": i, "colour": "blue"},
                }
            )
    return out


def write_app(root: Path, total: int) -> Path:
    app = root / f"scale-{total}"
    src = app / "src" / "synthetic"
    src.mkdir(parents=True, exist_ok=True)
    (src / "objects.yaml").write_text(yaml.safe_dump_all(synthetic_objects(total), sort_keys=False))
    (src / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [objects.yaml]\n"
    )
    kfdef = {
        "apiVersion": "kfdef.apps.kubeflow.org/v1",
        "kind": "KfDef",
        "metadata": {"name": f"scale{total}", "namespace": "default"},
        "spec": {
            "platform": "generic",
            "repos": [{"name": "local", "uri": "./src"}],
            "applications": [
                {"name": "synthetic", "kustomizeConfig": {"repoRef": {"name": "local", "path": "synthetic"}}}
            ],
        },
    }
    (app / "kfdef.yaml").write_text(yaml.safe_dump(kfdef, sort_keys=False))
    return app


@dataclass
class ScaleFigures:
    generate: dict[int, Samples] = field(default_factory=dict)
    generate_ms: dict[int, Samples] = field(default_factory=dict)  # per object
    generate_rss_mb: dict[int, Samples] = field(default_factory=dict)  # ru_maxrss wait4 reports for kfctl
    apply: dict[int, Samples] = field(default_factory=dict)
    per_object_ms: dict[int, Samples] = field(default_factory=dict)
    rss_mb: dict[int, Samples] = field(default_factory=dict)
    requests: dict[int, dict[str, Any]] = field(default_factory=dict)


def measure(root: Path, *, runs: int, sizes: list[int]) -> ScaleFigures:
    figs = ScaleFigures()
    apps = {n: write_app(root, n) for n in sizes}
    for n in sizes:
        for d in (figs.generate, figs.generate_ms, figs.generate_rss_mb, figs.apply, figs.per_object_ms, figs.rss_mb):
            d[n] = Samples()
    for i in range(runs):
        for n in sizes:
            with fresh_cluster(f"scale{n}") as kc:
                shutil.rmtree(apps[n] / ".cache" / "render", ignore_errors=True)  # a cold render every run
                gen = run_measured(kfctl_argv("generate", str(apps[n])), timeout=3600).check()
                run = run_measured(
                    kfctl_argv("apply", str(apps[n]), "--skip-generate", "-o", "json", "--kubeconfig", kc),
                    timeout=3600,
                ).check()
            objects = int(run.summary().get("objects", n))
            figs.generate[n].add(gen.seconds)
            figs.generate_ms[n].add(1000 * gen.seconds / n)
            figs.generate_rss_mb[n].add(gen.max_rss_mb)
            figs.apply[n].add(run.seconds)
            figs.per_object_ms[n].add(1000 * run.seconds / objects)
            figs.rss_mb[n].add(run.max_rss_mb)
            figs.requests[n] = run.summary().get("requests", {})
            log(f"run {i + 1}: {objects} objects: apply {run.seconds:.1f}s, peak RSS {run.max_rss_mb:.0f} MB")
    return figs
