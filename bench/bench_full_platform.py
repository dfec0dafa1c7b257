"""B10: upstream Kubeflow's full platform (kubeflow/manifests v1.11.0, example/: 29 applications) on a fresh
cluster, kfctl against upstream's own install loop and against kapp, on the same rendered bytes.

The bundle is what `kfctl init --upstream v1.11.0` then `kfctl generate` render (the release and its remote bases
served on 127.0.0.1 from ../shared/fixtures by kfctl_testbed, as the full-platform e2e test does), rendered once
before any timing; all.yaml is APPDIR/rendered/<app>.yaml in KfDef order. Per run, one fresh cluster per side, in
an order that rotates from run to run:

- kfctl: `kfctl apply APPDIR --skip-generate` to all-healthy (every object's health, webhooks answering);
- upstream: kubeflow/manifests' README loop, `while ! kubectl apply --server-side --force-conflicts -f all.yaml;
  do sleep 20; done`, then `kubectl wait` for every CRD Established and every Deployment Available (a lower bar
  than kfctl's: no StatefulSet, Certificate or webhook is waited for);
- kapp: `kapp deploy -a kf -f all.yaml -y` with its defaults.

For kfctl and kapp, the readiness critical path the server recorded and each side's overhead over it, as for B6
(bench_platform.readiness).

The real operators the process runtime has binaries for run on every side alike, and the stand-in plays the
webhooks whose servers cannot be built here (testbed/kfctl_testbed/standin.py).
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from bench_platform import PlatformFigures, kapp_install, kfctl_install, plan_graph, upstream_install
from benchlib import REPO, AuditLog, Samples, fresh_cluster, kfctl_argv, log, run_measured
from kfctl_testbed import fileserver, gitserver, upstream_mirror

from kfctl import yamlio

FIXTURES = REPO.parent / "shared" / "fixtures"
RELEASE = "v1.11.0"


@dataclass
class FullPlatformFigures:
    objects: int = 0
    applications: int = 0
    figs: PlatformFigures = field(default_factory=PlatformFigures)

    @property
    def kfctl(self) -> Samples:
        return self.figs.kfctl


@contextmanager
def _no_network() -> Iterator[None]:
    """Everything but 127.0.0.1 goes to a proxy port nothing listens on, for kfctl's fetches and git's."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    saved = {k: os.environ.get(k) for k in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "no_proxy")}
    os.environ.update(http_proxy=dead, https_proxy=dead, HTTP_PROXY=dead, HTTPS_PROXY=dead, no_proxy="127.0.0.1")
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def prepare_app(root: Path) -> tuple[Path, Path, dict[str, Any]]:
    """`kfctl init --upstream` + `generate` through the mirror; all.yaml and what the upstream side waits for."""
    if not (FIXTURES / upstream_mirror.RELEASES[RELEASE]).is_file():
        raise SystemExit(f"B10 needs {FIXTURES / upstream_mirror.RELEASES[RELEASE]} (see ../shared/fixtures)")
    mirror = upstream_mirror.build(FIXTURES, root / "mirror", kustomize=("kubectl", "kustomize"))
    app = root / "full"
    with _no_network(), gitserver.serve(mirror.git_root) as git, fileserver.serve(mirror.files_root) as files:
        pairs = upstream_mirror.Mirror.mirrors(f"http://127.0.0.1:{git.port}/", files.base)
        flags = [arg for prefix, location in pairs for arg in ("--mirror", f"{prefix}={location}")]
        run_measured(kfctl_argv("init", str(app), "--upstream", RELEASE, *flags)).check()
        run_measured(kfctl_argv("generate", str(app))).check()
    doc = yaml.safe_load((app / "kfdef.yaml").read_text())
    objects: list[dict[str, Any]] = []
    for a in doc["spec"]["applications"]:
        objects += [o for o in yamlio.safe_load_all((app / "rendered" / f"{a['name']}.yaml").read_text()) if o]
    all_yaml = root / "full.yaml"
    all_yaml.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    info = {
        "objects": len(objects),
        "graph": plan_graph(app),
        "applications": len(doc["spec"]["applications"]),
        "crds": [o["metadata"]["name"] for o in objects if o["kind"] == "CustomResourceDefinition"],
        "deployments": sorted(
            (o["metadata"].get("namespace") or "default", o["metadata"]["name"])
            for o in objects
            if o["kind"] == "Deployment"
        ),
    }
    return app, all_yaml, info


def measure(root: Path, *, runs: int) -> FullPlatformFigures:
    app, all_yaml, info = prepare_app(root)
    out = FullPlatformFigures(objects=info["objects"], applications=info["applications"])
    figs = out.figs
    log(f"B10 full platform {RELEASE}: {out.objects} objects in {out.applications} applications")
    sides = ["kfctl", "upstream", "kapp"]
    for i in range(runs):
        for side in sides[i % len(sides) :] + sides[: i % len(sides)]:
            audit = AuditLog()
            with fresh_cluster(f"b10-{side}", audit=audit) as kc:
                if side == "kfctl":
                    kfctl_install(kc, app, audit, figs, graph=info["graph"])
                    log(f"B10 run {i + 1}: kfctl {figs.kfctl.values[-1]:.1f}s, re-apply {figs.reapply.values[-1]:.1f}s")
                elif side == "upstream":
                    figs.upstream.add(upstream_install(kc, all_yaml, info, figs))
                    log(
                        f"B10 run {i + 1}: upstream {figs.upstream.values[-1]:.1f}s ({figs.upstream_passes[-1]} passes)"
                    )
                else:
                    kapp_install(kc, all_yaml, audit, figs, graph=info["graph"])
                    log(f"B10 run {i + 1}: kapp {figs.kapp.values[-1]:.1f}s")
    return out
