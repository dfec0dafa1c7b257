"""kfctl's benchmarks, B1 to B10, each measured against its peer in the same run; prints a table of ratios.

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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bench_full_platform
import bench_generate
import bench_gitops
import bench_platform
import bench_scale
from benchlib import RequestCount, Samples, log, setup_path

from kfctl.plan.latency import bucket_labels

Row = tuple[str, str, str, str, str, str, str]  # benchmark, kfctl, peer, ratio, goal, verdict, notes
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


def versus(
    benchmark: str, ours: tuple[str, Samples], peer: tuple[str, Samples], goal: str, met: str, notes: str
) -> Row:
    """A row setting kfctl's seconds beside a peer's: each side's median [min-max] and the ratio of the two."""
    (label, a), (peer_label, b) = ours, peer
    return (benchmark, f"{label}: {a.describe()} s", f"{peer_label}: {b.describe()} s", ratio(a, b), goal, met, notes)


def verdict(ok: bool) -> str:
    return "met" if ok else "MISSED"


def platform_vs_kapp(p: bench_platform.PlatformFigures, what: str) -> list[Row]:
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


def readiness_rows(p: bench_platform.PlatformFigures, label: str, what: str, *, with_kapp: bool) -> list[Row]:
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


PLATFORM = frozenset({"B1", "B2", "B3", "B6", "B7", "B9"})  # measured together on the full catalog (bench_platform.py)


@dataclass
class Report:
    """What the benchmarks asked for produce: the table's rows, the notes under it, every sample (for --json)."""

    rows: list[Row] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)


def parse_args() -> tuple[argparse.Namespace, set[str], list[int]]:
    """The command line: the options, the benchmarks asked for (--only) and B4's sizes."""
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
    return args, only, [int(s) for s in args.sizes.split(",")]


def main() -> int:
    """Each benchmark asked for measures and adds its rows, in the order below; then the table is printed."""
    args, only, sizes = parse_args()
    bins = setup_path()
    log(f"binaries from {bins}; {args.runs} run(s) of {', '.join(sorted(only))}")
    report = Report(record={"runs": args.runs})
    with tempfile.TemporaryDirectory(prefix="kfctl-bench-") as tmp:
        root = Path(tmp)
        if only & PLATFORM:
            platform_benchmarks(root, only, runs=args.runs, report=report)
        if "B4" in only:
            scale_benchmark(root, runs=args.runs, sizes=sizes, report=report)
        if "B5" in only:
            generate_benchmark(root, runs=args.runs, report=report)
        if "B10" in only:
            full_platform_benchmark(root, runs=args.runs, report=report)
        if "B8" in only:
            gitops_benchmark(root, runs=args.runs, report=report)
    print_table(report, runs=args.runs)
    if args.json:
        args.json.write_text(json.dumps(report.record, indent=2, default=str))
    return 0


def platform_benchmarks(root: Path, only: set[str], *, runs: int, report: Report) -> None:
    """B1, B2, B3, B6, B7, B9 and L: one measurement of the full catalog (bench_platform.py), a row per benchmark."""
    p = bench_platform.measure(
        root,
        runs=runs,
        with_b1="B1" in only,
        with_b2="B2" in only,
        with_b6="B6" in only,
        with_b9="B9" in only,
    )
    report.record["platform"] = {k: getattr(v, "values", v) for k, v in p.__dict__.items()}
    what = f"full catalog, {p.objects} objects"
    if "B1" in only:
        b1_row(p, what, report)
    if "B2" in only:
        b2_rows(p, what, report)
    if "B3" in only:
        b3_row(p, what, report)
    if "B6" in only:
        report.rows += platform_vs_kapp(p, what)
    if only & {"B1", "B6"}:
        report.rows += readiness_rows(p, "L", what, with_kapp="B6" in only)
    if only & {"B6", "B7"}:
        b7_row(p, what, report)
    if "B9" in only:
        b9_row(p, what, report)


def b1_row(p: bench_platform.PlatformFigures, what: str, report: Report) -> None:
    """B1: time to all-healthy against upstream's apply loop."""
    ok = statistics.median(p.kfctl.values) / statistics.median(p.upstream.values) <= 0.5
    report.rows.append(
        versus(
            "B1 all-healthy, fresh cluster",
            ("kfctl apply", p.kfctl),
            ("upstream loop + wait", p.upstream),
            "≤ 0.5×",
            verdict(ok),
            what,
        )
    )
    report.notes.append(
        f"B1 upstream passes per run: {p.upstream_passes}; first pass: {'; '.join(p.upstream_first_errors)}"
    )


def b2_rows(p: bench_platform.PlatformFigures, what: str, report: Report) -> None:
    """B2: the same apply against one kubectl apply of the bundle, CRDs first."""
    ok = statistics.median(p.kfctl.values) / statistics.median(p.presorted.values) <= 0.45
    report.rows.append(
        versus(
            "B2 raw apply",
            ("kfctl apply", p.kfctl),
            ("kubectl, CRDs first", p.presorted),
            "≤ 0.45×",
            verdict(ok),
            what,
        )
    )
    report.notes.append(f"B2 kubectl passes of rest.yaml per run: {p.presorted_passes}")
    report.notes.append(
        f"B2 kfctl's last object applied at {p.kfctl_applied.describe()} s after start "
        f"(ratio to peer {ratio(p.kfctl_applied, p.presorted)}); the rest is waiting for health"
    )


def b3_row(p: bench_platform.PlatformFigures, what: str, report: Report) -> None:
    """B3: a no-op re-apply against the first apply, and its writes."""
    ok = statistics.median(p.reapply_ratio.values) <= 0.3 and all(w == 0 for w in p.reapply_writes)
    report.rows.append(
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


def b7_row(p: bench_platform.PlatformFigures, what: str, report: Report) -> None:
    """B7: requests per object on a first apply, from the API server's audit log."""
    per_object = [r.total / p.objects for r in p.kfctl_requests]
    report.rows.append(
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


def b9_row(p: bench_platform.PlatformFigures, what: str, report: Report) -> None:
    """B9: kfctl check of the installed catalog against kubectl wait and dry runs."""
    ok = statistics.median(p.check.values) < 5.0
    report.rows.append(
        versus(
            "B9 check, installed",
            ("kfctl check", p.check),
            ("kubectl wait + dry runs", p.check_peer),
            "< 5 s",
            verdict(ok),
            f"{what}; verdicts {p.check_verdicts}",
        )
    )


def scale_benchmark(root: Path, *, runs: int, sizes: list[int], report: Report) -> None:
    """B4: seconds per object and peak RSS at each size (bench_scale.py)."""
    s = bench_scale.measure(root, runs=runs, sizes=sizes)
    report.record["scale"] = {
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
        report.rows.append(
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


def generate_benchmark(root: Path, *, runs: int, report: Report) -> None:
    """B5: kfctl generate against kustomize build, cold and after one change (bench_generate.py)."""
    g = bench_generate.measure(root, runs=runs)
    report.record["generate"] = g.__dict__
    cold = statistics.median(g.ours) / statistics.median(g.peer)
    one = statistics.median(g.one_change) / statistics.median(g.peer)
    report.rows.append(
        versus(
            "B5 generate, cold",
            ("kfctl generate", Samples(g.ours)),
            (f"kustomize build × {g.applications}", Samples(g.peer)),
            "≤ 1.1×",
            verdict(cold <= 1.1),
            f"{g.kustomize}; render cache removed first",
        )
    )
    report.rows.append(
        versus(
            "B5 generate, one parameter",
            ("kfctl generate", Samples(g.one_change)),
            (f"kustomize build × {g.applications}", Samples(g.peer)),
            "≤ 0.3×",
            verdict(one <= 0.3),
            f"{bench_generate.CHANGED_APP} {bench_generate.CHANGED_PARAMETER} changed, render cache warm",
        )
    )


def full_platform_benchmark(root: Path, *, runs: int, report: Report) -> None:
    """B10: upstream's full platform, kfctl against upstream's loop and kapp (bench_full_platform.py)."""
    full = bench_full_platform.measure(root, runs=runs)
    f10 = full.figs
    report.record["full_platform"] = {k: getattr(v, "values", v) for k, v in f10.__dict__.items()}
    what = f"upstream v1.11.0 full platform, {full.objects} objects, {full.applications} applications"
    loop = statistics.median(f10.kfctl.values) / statistics.median(f10.upstream.values)
    vs_kapp = statistics.median(f10.kfctl.values) / statistics.median(f10.kapp.values)
    report.rows.append(
        versus(
            "B10 full platform vs upstream loop",
            ("kfctl apply", f10.kfctl),
            ("upstream loop + wait", f10.upstream),
            "≤ 0.3×",
            verdict(loop <= 0.3),
            f"{what}; loop passes {f10.upstream_passes}",
        )
    )
    report.rows.append(
        versus(
            "B10 full platform vs kapp",
            ("kfctl apply", f10.kfctl),
            ("kapp deploy", f10.kapp),
            "≤ 0.5×",
            verdict(vs_kapp <= 0.5),
            f"{what}; kfctl re-apply {f10.reapply.describe()} s, writes {f10.reapply_writes}",
        )
    )
    report.rows += readiness_rows(f10, "B10", what, with_kapp=True)


def gitops_benchmark(root: Path, *, runs: int, report: Report) -> None:
    """B8: kfctl apply against Flux and Argo CD syncing kfctl's export (bench_gitops.py)."""
    f = bench_gitops.measure(root, runs=runs)
    report.record["gitops"] = {k: getattr(v, "values", v) for k, v in f.__dict__.items()}
    what = f"default kind platform, {f.objects} objects, {f.kustomizations} Kustomizations"
    peers = (
        ("Flux, its defaults", "kfctl export + Flux", f.flux),
        ("Flux, --requeue-dependency=5s", "kfctl export + Flux", f.flux_fast),
        ("Argo CD, resync 20 s", "kfctl export + Argo CD", f.argocd),
    )
    for label, peer, samples in peers:
        report.rows.append(
            versus(
                f"B8 all-Ready vs {label}",
                ("kfctl apply", f.kfctl),
                (f"{peer}", samples),
                "none set",
                "",
                what,
            )
        )


def print_table(report: Report, *, runs: int) -> None:
    headers = ("benchmark", "kfctl (median [min–max])", "peer / measure", "ratio", "goal", "", "notes")
    rows = report.rows
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)] if rows else []
    print(f"kfctl benchmarks, {runs} run(s) each, 2-core machine, local kwok control plane")
    print("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)))
    for n in report.notes:
        print(n)


def _exit_on_sigterm(signum: int, _frame: object) -> None:
    """`kill PID` ends the bench like Ctrl-C: the `finally` blocks stop every cluster it started (the
    default action would leave them running, detached)."""
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    sys.exit(main())
