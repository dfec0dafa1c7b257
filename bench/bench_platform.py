"""B1, B2, B3: the full catalog on a fresh cluster, kfctl against upstream's install methods.

The bundle is the full catalog of the generic platform (every component it allows), rendered once by
`kfctl generate` before any timing; every side applies exactly those rendered files
(all.yaml = APPDIR/rendered/<app>.yaml in KfDef order). Per run, three fresh clusters, in an order that
rotates from run to run:

- kfctl: `kfctl apply APPDIR --skip-generate` (apply in dependency order, wait until everything is
  healthy, write the inventory) — the B1 and B2 sample; then on the same cluster the same command again,
  the B3 no-op re-apply (its time and its write requests).
- B1 peer, upstream kubeflow/manifests: `while ! kubectl apply --server-side --force-conflicts -f all.yaml;
  do sleep 20; done`, then `kubectl wait` for every CRD Established and every Deployment Available.
- B6 peer, kapp (carvel.dev/kapp, built from its Go module by bench/build-kapp): `kapp deploy -a kf -f all.yaml
  -y` (its default ordering — CRDs and Namespaces first — and its default waiting), then the same command again,
  the B6' no-op re-deploy. Every cluster's API server writes an audit log: requests are counted there, by user
  agent, the same way for kfctl and kapp (B7: kfctl's requests per object on a first apply).
- B9, on the kfctl side's cluster once installed: `kfctl check APPDIR` (each application's health, a dry-run
  create per installed component through its webhooks); its peer is what a person would type for the same
  answers: `kubectl wait --for=condition=Available` of every Deployment of the bundle and one
  `kubectl create --dry-run=server` of the same samples (kfctl.check.samples), in the same namespaces.
- B2 peer, raw apply: the same bundle pre-sorted, CRDs first: `kubectl apply --server-side -f crds.yaml`,
  `kubectl wait` Established, then `until kubectl apply --server-side -f rest.yaml; do sleep 1; done` (the
  real operators' failurePolicy=Fail webhooks refuse what they admit until their servers answer; one pass
  cannot succeed); no health wait.

What the missing containers would do (cert-manager issuing and injecting CAs, cert-manager-webhook's own
CA Secret, volume provisioning) the e2e stand-in controller does, on every cluster alike.
"""

from __future__ import annotations

import itertools
import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import readiness_path
import yaml
from benchlib import (
    AuditLog,
    Measured,
    RequestCount,
    Samples,
    fresh_cluster,
    full_catalog_app,
    kapp,
    kfctl_argv,
    kubectl,
    log,
    run_measured,
)

from kfctl import yamlio
from kfctl.check.samples import SAMPLES

PLATFORM = "generic"
UPSTREAM_SLEEP = 20.0
UPSTREAM_MAX_PASSES = 10
PRESORTED_SLEEP = 1.0  # the B2 peer's pause between passes of rest.yaml: the tightest loop a person would write
PRESORTED_MAX_PASSES = 300


@dataclass
class PlatformFigures:
    objects: int = 0
    components: list[str] = field(default_factory=list)
    kfctl: Samples = field(default_factory=Samples)  # B1/B2: fresh apply to all-healthy
    kfctl_applied: Samples = field(default_factory=Samples)  # the last object's apply, from process start
    reapply: Samples = field(default_factory=Samples)  # B3
    reapply_ratio: Samples = field(default_factory=Samples)
    reapply_writes: list[int] = field(default_factory=list)
    first_writes: list[int] = field(default_factory=list)
    upstream: Samples = field(default_factory=Samples)  # B1 peer
    upstream_passes: list[int] = field(default_factory=list)
    presorted_passes: list[int] = field(default_factory=list)
    upstream_first_errors: list[str] = field(default_factory=list)
    presorted: Samples = field(default_factory=Samples)  # B2 peer
    kfctl_requests: list[RequestCount] = field(default_factory=list)  # B6/B7, from the audit log
    # B7: per first apply, seconds from a step's last dependency ready to its apply returning (median, max)
    scheduling_median: Samples = field(default_factory=Samples)
    scheduling_max: Samples = field(default_factory=Samples)
    reapply_requests: list[RequestCount] = field(default_factory=list)  # B6'
    kapp: Samples = field(default_factory=Samples)  # B6 peer: kapp deploy to done
    kapp_requests: list[RequestCount] = field(default_factory=list)
    kapp_noop: Samples = field(default_factory=Samples)  # B6' peer: kapp deploy again, nothing changed
    kapp_noop_requests: list[RequestCount] = field(default_factory=list)
    check: Samples = field(default_factory=Samples)  # B9: kfctl check of the installed platform
    check_peer: Samples = field(default_factory=Samples)  # B9 peer: kubectl wait + dry-run creates
    check_verdicts: list[str] = field(default_factory=list)
    scheduling_p95: Samples = field(default_factory=Samples)
    # Goal S explained: every run's latencies by bucket, and those over 0.5 s by cause (kfctl.plan.latency), summed
    scheduling_histogram: Counter[str] = field(default_factory=Counter)
    scheduling_causes: Counter[str] = field(default_factory=Counter)
    # The readiness critical path the server recorded (bench/readiness_path.py) and each side's overhead over it
    kfctl_path: Samples = field(default_factory=Samples)
    kfctl_overhead: Samples = field(default_factory=Samples)
    kfctl_chains: list[str] = field(default_factory=list)
    kapp_path: Samples = field(default_factory=Samples)
    kapp_overhead: Samples = field(default_factory=Samples)
    kapp_chains: list[str] = field(default_factory=list)


def prepare_app(root: Path) -> tuple[Path, Path, Path, Path, dict[str, Any]]:
    """Init + generate the full catalog; write all.yaml, crds.yaml, rest.yaml. Untimed."""
    app = root / "platform"
    doc = full_catalog_app(app, platform=PLATFORM)
    run_measured(kfctl_argv("generate", str(app))).check()
    objects: list[dict[str, Any]] = []
    for a in doc["spec"]["applications"]:
        objects += [o for o in yamlio.safe_load_all((app / "rendered" / f"{a['name']}.yaml").read_text()) if o]
    crds = [o for o in objects if o["kind"] == "CustomResourceDefinition"]
    rest = [o for o in objects if o["kind"] != "CustomResourceDefinition"]
    files = {"all": objects, "crds": crds, "rest": rest}
    for name, objs in files.items():
        (root / f"{name}.yaml").write_text(yaml.safe_dump_all(objs, sort_keys=False))
    info = {
        "objects": len(objects),
        "graph": plan_graph(app),
        "components": [a["name"] for a in doc["spec"]["applications"]],
        "crds": [o["metadata"]["name"] for o in crds],
        "deployments": sorted(
            (o["metadata"].get("namespace") or "default", o["metadata"]["name"])
            for o in objects
            if o["kind"] == "Deployment"
        ),
    }
    return app, root / "all.yaml", root / "crds.yaml", root / "rest.yaml", info


def plan_graph(app: Path) -> readiness_path.Graph:
    """The apply plan's steps and edges, from `kfctl plan` of what generate rendered. Untimed."""
    out = run_measured(kfctl_argv("plan", str(app), "--skip-generate", "-o", "json")).check()
    return readiness_path.plan_graph(json.loads(out.stdout))


# What may record a Ready transition besides custom resources: workloads (by their pods), CRDs, APIServices, Jobs.
_BUILTIN_READY = ("pods", "deployments.apps", "statefulsets.apps", "daemonsets.apps", "jobs.batch")
_BUILTIN_GROUPS = frozenset(
    {
        "",
        "apps",
        "batch",
        "policy",
        "autoscaling",
        "rbac.authorization.k8s.io",
        "networking.k8s.io",
        "storage.k8s.io",
        "scheduling.k8s.io",
        "admissionregistration.k8s.io",
        "coordination.k8s.io",
        "node.k8s.io",
    }
)


def readiness(kc: str, graph: readiness_path.Graph, wall: float) -> readiness_path.CriticalPath:
    """Read the objects' Ready transitions back from the cluster (after the side finished, untimed) and lay them
    along the plan: the critical path as the server saw it."""
    kinds = sorted({(g, k) for g, k, _, _ in graph.objects.values() if g not in _BUILTIN_GROUPS})
    resources = [*_BUILTIN_READY, *(f"{k.lower()}.{g}" for g, k in kinds)]
    items: list[dict[str, Any]] = []
    got = _kubectl(kc, "get", ",".join(resources), "-A", "-o", "json")
    if got.code == 0:
        items = json.loads(got.stdout)["items"]
    else:  # a kind the cluster does not serve: read the others one by one
        for r in resources:
            one = _kubectl(kc, "get", r, "-A", "-o", "json")
            if one.code == 0:
                items += json.loads(one.stdout)["items"]
    path = readiness_path.critical_path(graph, readiness_path.timelines(items))
    log(f"readiness path {path.describe()}; overhead {path.overhead(wall):.1f}s of {wall:.1f}s")
    return path


def _kubectl(kc: str, *args: str) -> Measured:
    return run_measured([kubectl(), "--kubeconfig", kc, *args], timeout=900)


def _wait_crds(kc: str, crds: list[str]) -> None:
    _kubectl(kc, "wait", "--for=condition=Established", "--timeout=600s", *[f"crd/{n}" for n in crds]).check()


def _wait_deployments(kc: str, deployments: list[tuple[str, str]]) -> None:
    for ns, group in itertools.groupby(deployments, key=lambda d: d[0]):
        names = [f"deployment/{n}" for _, n in group]
        _kubectl(kc, "wait", "--for=condition=Available", "--timeout=600s", "-n", ns, *names).check()


def upstream_install(kc: str, all_yaml: Path, info: dict[str, Any], figs: PlatformFigures) -> float:
    """kubeflow/manifests' README method, then kubectl wait; seconds from the first pass to the last wait."""
    start = time.perf_counter()
    passes = 0
    while True:
        passes += 1
        r = _kubectl(kc, "apply", "--server-side", "--force-conflicts", "-f", str(all_yaml))
        if r.code == 0:
            break
        if passes == 1:
            lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
            nomatch = sum("ensure CRDs are installed first" in ln or "no matches for kind" in ln for ln in lines)
            figs.upstream_first_errors.append(f"{len(lines)} error lines, {nomatch} 'no matches for kind'")
        if passes >= UPSTREAM_MAX_PASSES:
            raise RuntimeError(f"upstream loop still failing after {passes} passes: {r.stderr[-1500:]}")
        time.sleep(UPSTREAM_SLEEP)
    figs.upstream_passes.append(passes)
    _wait_crds(kc, info["crds"])
    _wait_deployments(kc, info["deployments"])
    return time.perf_counter() - start


def presorted_install(kc: str, crds_yaml: Path, rest_yaml: Path, info: dict[str, Any], figs: PlatformFigures) -> float:
    """B2 peer: CRDs, their wait, then rest.yaml again every second until the server accepts all of it."""
    start = time.perf_counter()
    _kubectl(kc, "apply", "--server-side", "-f", str(crds_yaml)).check()
    _wait_crds(kc, info["crds"])
    passes = 0
    while True:
        passes += 1
        r = _kubectl(kc, "apply", "--server-side", "-f", str(rest_yaml))
        if r.code == 0:
            break
        if passes >= PRESORTED_MAX_PASSES:
            raise RuntimeError(f"rest.yaml still refused after {passes} passes: {r.stderr[-1500:]}")
        time.sleep(PRESORTED_SLEEP)
    figs.presorted_passes.append(passes)
    return time.perf_counter() - start


def kapp_install(
    kc: str, all_yaml: Path, audit: AuditLog, figs: PlatformFigures, *, graph: readiness_path.Graph | None = None
) -> None:
    """B6/B6' peer: kapp deploy of the same bytes with its defaults, then again with nothing changed; with the
    plan's ``graph``, the readiness path the server recorded in between."""
    argv = [kapp(), "deploy", "-a", "kf", "-f", str(all_yaml), "-y", "--kubeconfig", kc]
    first = run_measured(argv, timeout=1800).check()
    if graph is not None:
        path = readiness(kc, graph, first.seconds)
        figs.kapp_path.add(path.seconds)
        figs.kapp_overhead.add(path.overhead(first.seconds))
        figs.kapp_chains.append(path.describe())
    mark = audit.mark()
    again = run_measured(argv, timeout=1800).check()
    figs.kapp.add(first.seconds)
    figs.kapp_requests.append(audit.requests("kapp", until=mark))
    figs.kapp_noop.add(again.seconds)
    figs.kapp_noop_requests.append(audit.requests("kapp", since=mark))


def kfctl_install(
    kc: str, app: Path, audit: AuditLog, figs: PlatformFigures, *, graph: readiness_path.Graph | None = None
) -> None:
    """The kfctl side: a first apply, then the no-op re-apply; with the plan's ``graph``, the readiness path
    the server recorded in between."""
    first = run_measured(kfctl_argv("apply", str(app), "--skip-generate", "-o", "json", "--kubeconfig", kc)).check()
    if graph is not None:
        path = readiness(kc, graph, first.seconds)
        figs.kfctl_path.add(path.seconds)
        figs.kfctl_overhead.add(path.overhead(first.seconds))
        figs.kfctl_chains.append(path.describe())
    mark = audit.mark()
    again = run_measured(kfctl_argv("apply", str(app), "--skip-generate", "-o", "json", "--kubeconfig", kc)).check()
    figs.kfctl_requests.append(audit.requests("kfctl", until=mark))
    figs.reapply_requests.append(audit.requests("kfctl", since=mark))
    figs.kfctl.add(first.seconds)
    figs.first_writes.append(int(first.summary().get("requests", {}).get("writes", -1)))
    latency = first.summary().get("schedulingLatency") or {}
    if latency:
        figs.scheduling_median.add(float(latency["median"]))
        figs.scheduling_max.add(float(latency["max"]))
        figs.scheduling_p95.add(float(latency["p95"]))
        figs.scheduling_histogram.update(latency.get("histogram") or {})
        figs.scheduling_causes.update(latency.get("longByCause") or {})
    events = [d for d in first.json_lines() if "event" in d]
    applied = [d["ts"] for d in events if d["event"] in ("Created", "Configured", "Unchanged")]
    # Events carry wall-clock stamps; the process took `seconds` and its last event came just before exit.
    if applied and events:
        figs.kfctl_applied.add(first.seconds - (events[-1]["ts"] - max(applied)))
    figs.reapply.add(again.seconds)
    figs.reapply_ratio.add(again.seconds / first.seconds)
    figs.reapply_writes.append(int(again.summary().get("requests", {}).get("writes", -1)))


def samples_yaml(root: Path, components: list[str]) -> Path:
    """The dry-run samples kfctl check sends for these components, as one file for the B9 peer. Katib's
    Experiment is left out: it needs a namespace labelled for its metrics collector, which the bundle has
    not, so kubectl would stop at its denial (kfctl check warns and goes on)."""
    objects = [
        o
        for s in SAMPLES
        if s.component in components and not s.namespace_labels
        for o in s.instantiate(name="bench-check", namespace="kubeflow")
    ]
    path = root / "samples.yaml"
    path.write_text(yaml.safe_dump_all(objects, sort_keys=False))
    return path


def check_both(kc: str, app: Path, samples: Path, info: dict[str, Any], figs: PlatformFigures) -> None:
    """B9: kfctl check, then the peer, on the installed platform's cluster."""
    ours = run_measured(kfctl_argv("check", str(app), "-o", "json", "--kubeconfig", kc))
    if ours.code not in (0, 13):  # 13: warnings only (Katib's Experiment without a labelled namespace)
        ours.check()
    figs.check.add(ours.seconds)
    figs.check_verdicts.append(json.loads(ours.stdout)["summary"]["verdict"])
    start = time.perf_counter()
    _wait_deployments(kc, info["deployments"])
    _kubectl(kc, "create", "--dry-run=server", "-f", str(samples)).check()
    figs.check_peer.add(time.perf_counter() - start)


def measure(
    root: Path, *, runs: int, with_b1: bool = True, with_b2: bool = True, with_b6: bool = True, with_b9: bool = True
) -> PlatformFigures:
    app, all_yaml, crds_yaml, rest_yaml, info = prepare_app(root)
    figs = PlatformFigures(objects=info["objects"], components=info["components"])
    samples = samples_yaml(root, info["components"])  # catalog applications are named after their component
    log(f"platform: {figs.objects} objects, components {', '.join(figs.components)}")
    sides = [
        "kfctl",
        *(["upstream"] if with_b1 else []),
        *(["presorted"] if with_b2 else []),
        *(["kapp"] if with_b6 else []),
    ]
    for i in range(runs):
        order = sides[i % len(sides) :] + sides[: i % len(sides)]
        for side in order:
            audit = AuditLog()
            with fresh_cluster(side, audit=audit) as kc:
                if side == "kfctl":
                    kfctl_install(kc, app, audit, figs, graph=info["graph"])
                    log(
                        f"run {i + 1}: kfctl {figs.kfctl.values[-1]:.1f}s ({figs.kfctl_requests[-1].total} requests), "
                        f"re-apply {figs.reapply.values[-1]:.1f}s"
                    )
                    if with_b9:
                        check_both(kc, app, samples, info, figs)
                        log(
                            f"run {i + 1}: kfctl check {figs.check.values[-1]:.1f}s, "
                            f"kubectl {figs.check_peer.values[-1]:.1f}s"
                        )
                elif side == "kapp":
                    kapp_install(kc, all_yaml, audit, figs, graph=info["graph"])
                    log(
                        f"run {i + 1}: kapp {figs.kapp.values[-1]:.1f}s ({figs.kapp_requests[-1].total} requests), "
                        f"no-op {figs.kapp_noop.values[-1]:.1f}s"
                    )
                elif side == "upstream":
                    figs.upstream.add(upstream_install(kc, all_yaml, info, figs))
                    log(f"run {i + 1}: upstream {figs.upstream.values[-1]:.1f}s ({figs.upstream_passes[-1]} passes)")
                else:
                    figs.presorted.add(presorted_install(kc, crds_yaml, rest_yaml, info, figs))
                    log(
                        f"run {i + 1}: presorted kubectl {figs.presorted.values[-1]:.1f}s "
                        f"({figs.presorted_passes[-1]} passes)"
                    )
    return figs
