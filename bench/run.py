"""kfctl's benchmarks, B1 to B9, each measured against its peer in the same run; prints a table of ratios.

    .venv/bin/python bench/run.py [--runs 3] [--only B1,…,B9] [--sizes 500,2000,5000] [--json FILE]

B1 time to all-healthy (full catalog, fresh cluster) vs upstream's `while ! kubectl apply …; sleep 20` +
   `kubectl wait`; B2 the same kfctl apply vs one `kubectl apply --server-side` of the bundle pre-sorted
   (CRDs first, Established); B3 no-op re-apply vs the first apply, and its write requests; B4 seconds per
   object and peak RSS at 500/2,000/5,000 synthetic objects; B5 `kfctl generate` vs `kustomize build` of
   the same dirs one after another; B6 the same kfctl apply vs `kapp deploy` of the same bytes, and (B6')
   both again with nothing changed, with requests counted in the API server's audit log; B7 kfctl's requests
   per object on a first apply; B8 kfctl apply vs Flux and Argo CD reconciling kfctl's export; B9 `kfctl check` of the
   installed full catalog vs `kubectl wait` of its Deployments and a `kubectl create --dry-run=server` of the
   same samples; B10 upstream Kubeflow's full platform (v1.11.0, 29 applications) with kfctl vs upstream's loop
   vs `kapp deploy`, on the same rendered bytes. See bench/README.md for what each side runs and why.

Ratios are kfctl / peer (lower is better): the ratio of the medians, with the range of the per-run
ratios. Every run starts its own fresh cluster(s) with `e2e/cluster up --local`; never a timed test.
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

import bench_full_platform
import bench_generate
import bench_gitops
import bench_platform
import bench_scale
from benchlib import RequestCount, Samples, log, setup_path

from kfctl.plan.latency import bucket_labels

ALL = ("B1", "B2", "B3", "B4", "B5", "B6", "B7", "B8", "B9", "B10")


def ratio(ours: Samples | list[float], peer: Samples | list[float]) -> str:
    a = ours.values if isinstance(ours, Samples) else ours
    b = peer.values if isinstance(peer, Samples) else peer
    if not a or not b:
        return "-"
    med = statistics.median(a) / statistics.median(b)
    per_run = [x / y for x, y in zip(a, b, strict=True)]
    if len(per_run) < 2:
        return f"{med:.2f}×"
    return f"{med:.2f}× [{min(per_run):.2f}–{max(per_run):.2f}]"


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def platform_vs_kapp(p: bench_platform.PlatformFigures, what: str) -> list[tuple[str, str, str, str, str, str, str]]:
    """B6 and B6': kfctl's first apply and no-op re-apply against kapp deploy's, with requests from the audit log."""

    def requests(counts: list[RequestCount]) -> str:
        return f"{Samples([float(c.total) for c in counts]).describe('{:.0f}')} requests"

    first = statistics.median(p.kfctl.values) / statistics.median(p.kapp.values)
    noop = statistics.median(p.reapply.values) / statistics.median(p.kapp_noop.values)
    return [
        (
            "B6 all-healthy vs kapp",
            f"kfctl apply: {p.kfctl.describe()} s, {requests(p.kfctl_requests)}",
            f"kapp deploy: {p.kapp.describe()} s, {requests(p.kapp_requests)}",
            ratio(p.kfctl, p.kapp),
            "≤ 0.5×",
            verdict(first <= 0.5),
            what,
        ),
        (
            "B6' no-op vs kapp",
            f"kfctl re-apply: {p.reapply.describe()} s, {requests(p.reapply_requests)}, "
            f"writes {[c.writes for c in p.reapply_requests]}",
            f"kapp deploy again: {p.kapp_noop.describe()} s, {requests(p.kapp_noop_requests)}, "
            f"writes {[c.writes for c in p.kapp_noop_requests]}",
            ratio(p.reapply, p.kapp_noop),
            "≤ 0.5×",
            verdict(noop <= 0.5),
            what,
        ),
    ]


def readiness_rows(
    p: bench_platform.PlatformFigures, label: str, what: str, *, with_kapp: bool
) -> list[tuple[str, str, str, str, str, str, str]]:
    """Goal L (issue 32): each side's overhead over the readiness critical path the API server recorded
    (bench/readiness_path.py), and goal S: kfctl's scheduling latency, p50/p95/max per run."""

    def side(wall: Samples, path: Samples, overhead: Samples) -> str:
        share = Samples([o / x for o, x in zip(overhead.values, path.values, strict=True) if x > 0])
        return (
            f"{wall.describe()} s = path {path.describe('{:.0f}')} s + overhead {overhead.describe('{:.1f}')} s "
            f"({share.describe('{:.0%}')} of the path)"
        )

    rows = []
    if p.kfctl_path.values:
        shares = [o / x for o, x in zip(p.kfctl_overhead.values, p.kfctl_path.values, strict=True) if x > 0]
        kapp = with_kapp and bool(p.kapp_path.values)
        rows.append(
            (
                f"{label} overhead over readiness path",
                f"kfctl apply: {side(p.kfctl, p.kfctl_path, p.kfctl_overhead)}",
                f"kapp deploy: {side(p.kapp, p.kapp_path, p.kapp_overhead)}" if kapp else "-",
                ratio(p.kfctl_overhead, p.kapp_overhead) + " (overheads)" if kapp else "",
                "≤ 10 % of the path",
                verdict(bool(shares) and statistics.median(shares) <= 0.10),
                f"{what}; server timestamps, 1 s resolution; kfctl's path (last run) "
                f"{p.kfctl_chains[-1]}" + (f"; kapp's {p.kapp_chains[-1]}" if kapp else ""),
            )
        )
    if p.scheduling_p95.values:
        ok = p.scheduling_p95.median <= 0.5 and p.scheduling_max.median <= 1.0
        rows.append(
            (
                f"{label} scheduling latency",
                f"p50 {p.scheduling_median.describe('{:.2f}')} s, p95 {p.scheduling_p95.describe('{:.2f}')} s, "
                f"max {p.scheduling_max.describe('{:.2f}')} s",
                "last dependency ready → dependent applied, per run",
                "",
                "p95 ≤ 0.5 s, max ≤ 1 s",
                verdict(ok),
                f"{what}; {latency_histogram(p)}",
            )
        )
    return rows


def latency_histogram(p: bench_platform.PlatformFigures) -> str:
    """Every run's latencies by bucket, and those over 0.5 s by cause: queued for the CRD gate or an apply slot
    (the scheduler had the step, the slots were busy), or the request's own time."""
    runs = len(p.scheduling_p95.values)
    buckets = ", ".join(f"{k} {p.scheduling_histogram[k]}" for k in bucket_labels() if k in p.scheduling_histogram)
    causes = ", ".join(f"{k} {v}" for k, v in sorted(p.scheduling_causes.items())) or "none"
    return f"steps per bucket over {runs} run(s): {buckets or '-'}; over 0.5 s by cause: {causes}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="runs per benchmark (medians need ≥ 3)")
    parser.add_argument("--only", default=",".join(ALL), help=f"comma-separated subset of {','.join(ALL)}")
    parser.add_argument("--sizes", default="500,2000,5000", help="B4 bundle sizes")
    parser.add_argument("--json", type=Path, help="also write every sample to this file")
    args = parser.parse_args()
    only = {s.strip().upper() for s in args.only.split(",") if s.strip()}
    unknown = only - set(ALL)
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(sorted(unknown))}; choose from {', '.join(ALL)}")
    sizes = [int(s) for s in args.sizes.split(",")]
    bins = setup_path()
    log(f"binaries from {bins}; {args.runs} run(s) of {', '.join(sorted(only))}")

    rows: list[tuple[str, str, str, str, str, str, str]] = []
    notes: list[str] = []
    record: dict[str, Any] = {"runs": args.runs}
    with tempfile.TemporaryDirectory(prefix="kfctl-bench-") as tmp:
        root = Path(tmp)
        if only & {"B1", "B2", "B3", "B6", "B7", "B9"}:
            p = bench_platform.measure(
                root,
                runs=args.runs,
                with_b1="B1" in only,
                with_b2="B2" in only,
                with_b6="B6" in only,
                with_b9="B9" in only,
            )
            record["platform"] = {k: getattr(v, "values", v) for k, v in p.__dict__.items()}
            what = f"full catalog, {p.objects} objects"
            if "B1" in only:
                ok = statistics.median(p.kfctl.values) / statistics.median(p.upstream.values) <= 0.5
                rows.append(
                    (
                        "B1 all-healthy, fresh cluster",
                        f"kfctl apply: {p.kfctl.describe()} s",
                        f"upstream loop + wait: {p.upstream.describe()} s",
                        ratio(p.kfctl, p.upstream),
                        "≤ 0.5×",
                        verdict(ok),
                        what,
                    )
                )
                notes.append(
                    f"B1 upstream passes per run: {p.upstream_passes}; first pass: {'; '.join(p.upstream_first_errors)}"
                )
            if "B2" in only:
                ok = statistics.median(p.kfctl.values) / statistics.median(p.presorted.values) <= 0.45
                rows.append(
                    (
                        "B2 raw apply",
                        f"kfctl apply: {p.kfctl.describe()} s",
                        f"kubectl, CRDs first: {p.presorted.describe()} s",
                        ratio(p.kfctl, p.presorted),
                        "≤ 0.45×",
                        verdict(ok),
                        what,
                    )
                )
                notes.append(f"B2 kubectl passes of rest.yaml per run: {p.presorted_passes}")
                notes.append(
                    f"B2 kfctl's last object applied at {p.kfctl_applied.describe()} s after start "
                    f"(ratio to peer {ratio(p.kfctl_applied, p.presorted)}); the rest is waiting for health"
                )
            if "B3" in only:
                ok = statistics.median(p.reapply_ratio.values) <= 0.3 and all(w == 0 for w in p.reapply_writes)
                rows.append(
                    (
                        "B3 no-op re-apply",
                        f"re-apply: {p.reapply.describe()} s, writes {p.reapply_writes}",
                        f"first apply: {p.kfctl.describe()} s, writes {p.first_writes}",
                        ratio(p.reapply, p.kfctl),
                        "≤ 0.3×, 0 writes",
                        verdict(ok),
                        what,
                    )
                )
            if "B6" in only:
                rows += platform_vs_kapp(p, what)
            if only & {"B1", "B6"}:
                rows += readiness_rows(p, "L", what, with_kapp="B6" in only)
            if only & {"B6", "B7"}:
                per_object = [r.total / p.objects for r in p.kfctl_requests]
                rows.append(
                    (
                        "B7 requests per object",
                        f"first apply: {Samples(per_object).describe()} "
                        f"({Samples([float(r.total) for r in p.kfctl_requests]).describe('{:.0f}')} requests)",
                        f"writes {[r.writes for r in p.kfctl_requests]}; by verb {p.kfctl_requests[-1].by_verb}; "
                        f"scheduling latency (last dependency ready → applied) median "
                        f"{p.scheduling_median.describe('{:.3f}')} s, max {p.scheduling_max.describe('{:.3f}')} s",
                        "",
                        "≤ 1.3",
                        verdict(statistics.median(per_object) <= 1.3),
                        f"{what}; counted in the API server's audit log",
                    )
                )
            if "B9" in only:
                ok = statistics.median(p.check.values) < 5.0
                rows.append(
                    (
                        "B9 check, installed",
                        f"kfctl check: {p.check.describe()} s",
                        f"kubectl wait + dry runs: {p.check_peer.describe()} s",
                        ratio(p.check, p.check_peer),
                        "< 5 s",
                        verdict(ok),
                        f"{what}; verdicts {p.check_verdicts}",
                    )
                )
        if "B4" in only:
            s = bench_scale.measure(root, runs=args.runs, sizes=sizes)
            record["scale"] = {
                str(n): {
                    "generate": s.generate[n].values,
                    "generate_ms_per_object": s.generate_ms[n].values,
                    "generate_rss_mb": s.generate_rss_mb[n].values,
                    "apply": s.apply[n].values,
                    "per_object_ms": s.per_object_ms[n].values,
                    "rss_mb": s.rss_mb[n].values,
                    "requests": s.requests.get(n),
                }
                for n in sizes
            }
            small, big = min(sizes), max(sizes)
            linear = s.per_object_ms[big].median / s.per_object_ms[small].median
            gen_linear = s.generate_ms[big].median / s.generate_ms[small].median
            rss_goal = 400 if big >= 20_000 else 300
            for n in sizes:
                rows.append(
                    (
                        f"B4 scale {n:,} objects",
                        f"apply {s.apply[n].describe('{:.1f}')} s = {s.per_object_ms[n].describe('{:.1f}')} ms/obj",
                        f"peak RSS {s.rss_mb[n].describe('{:.0f}')} MB",
                        f"{s.per_object_ms[n].median / s.per_object_ms[small].median:.2f}× ms/obj of {small:,}",
                        f"≤ 1.25×; ≤ {rss_goal} MB" if n == big else "",
                        verdict(linear <= 1.25 and s.rss_mb[big].median <= rss_goal) if n == big else "",
                        f"generate {s.generate[n].describe()} s = {s.generate_ms[n].describe()} ms/obj "
                        f"({s.generate_ms[n].median / s.generate_ms[small].median:.2f}× of {small:,}), "
                        f"peak RSS {s.generate_rss_mb[n].describe('{:.0f}')} MB"
                        + (f"; goal ≤ 1.5×: {verdict(gen_linear <= 1.5)}" if n == big else ""),
                    )
                )
        if "B5" in only:
            g = bench_generate.measure(root, runs=args.runs)
            record["generate"] = g.__dict__
            cold = statistics.median(g.ours) / statistics.median(g.peer)
            one = statistics.median(g.one_change) / statistics.median(g.peer)
            rows.append(
                (
                    "B5 generate, cold",
                    f"kfctl generate: {Samples(g.ours).describe()} s",
                    f"kustomize build × {g.applications}: {Samples(g.peer).describe()} s",
                    ratio(g.ours, g.peer),
                    "≤ 1.1×",
                    verdict(cold <= 1.1),
                    f"{g.kustomize}; render cache removed first",
                )
            )
            rows.append(
                (
                    "B5 generate, one parameter",
                    f"kfctl generate: {Samples(g.one_change).describe()} s",
                    f"kustomize build × {g.applications}: {Samples(g.peer).describe()} s",
                    ratio(g.one_change, g.peer),
                    "≤ 0.3×",
                    verdict(one <= 0.3),
                    f"{bench_generate.CHANGED_APP} {bench_generate.CHANGED_PARAMETER} changed, render cache warm",
                )
            )
        if "B10" in only:  # bench/bench_full_platform.py
            full = bench_full_platform.measure(root, runs=args.runs)
            f10 = full.figs
            record["full_platform"] = {k: getattr(v, "values", v) for k, v in f10.__dict__.items()}
            what = f"upstream v1.11.0 full platform, {full.objects} objects, {full.applications} applications"
            loop = statistics.median(f10.kfctl.values) / statistics.median(f10.upstream.values)
            vs_kapp = statistics.median(f10.kfctl.values) / statistics.median(f10.kapp.values)
            rows.append(
                (
                    "B10 full platform vs upstream loop",
                    f"kfctl apply: {f10.kfctl.describe()} s",
                    f"upstream loop + wait: {f10.upstream.describe()} s",
                    ratio(f10.kfctl, f10.upstream),
                    "≤ 0.3×",
                    verdict(loop <= 0.3),
                    f"{what}; loop passes {f10.upstream_passes}",
                )
            )
            rows.append(
                (
                    "B10 full platform vs kapp",
                    f"kfctl apply: {f10.kfctl.describe()} s",
                    f"kapp deploy: {f10.kapp.describe()} s",
                    ratio(f10.kfctl, f10.kapp),
                    "≤ 0.5×",
                    verdict(vs_kapp <= 0.5),
                    f"{what}; kfctl re-apply {f10.reapply.describe()} s, writes {f10.reapply_writes}",
                )
            )
            rows += readiness_rows(f10, "B10", what, with_kapp=True)
        if "B8" in only:  # bench/bench_gitops.py
            f = bench_gitops.measure(root, runs=args.runs)
            record["gitops"] = {k: getattr(v, "values", v) for k, v in f.__dict__.items()}
            what = f"default kind platform, {f.objects} objects, {f.kustomizations} Kustomizations"
            peers = (
                ("Flux, its defaults", "kfctl export + Flux", f.flux),
                ("Flux, --requeue-dependency=5s", "kfctl export + Flux", f.flux_fast),
                ("Argo CD, resync 20 s", "kfctl export + Argo CD", f.argocd),
            )
            for label, peer, samples in peers:
                rows.append(
                    (
                        f"B8 all-Ready vs {label}",
                        f"kfctl apply: {f.kfctl.describe()} s",
                        f"{peer}: {samples.describe()} s",
                        ratio(f.kfctl, samples),
                        "none set",
                        "",
                        what,
                    )
                )

    headers = ("benchmark", "kfctl (median [min–max])", "peer / measure", "ratio", "goal", "", "notes")
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)] if rows else []
    print(f"kfctl benchmarks, {args.runs} run(s) each, 2-core machine, local kwok control plane")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    for n in notes:
        print(n)
    if args.json:
        args.json.write_text(json.dumps(record, indent=2, default=str))
    return 0


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    """`kill PID` ends the bench like Ctrl-C: the `finally` blocks stop every cluster it started (the
    default action would leave them running, detached)."""
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    sys.exit(main())
