"""`kfctl check`: does the installed platform work? `kfctl check --pre`: will it install on this cluster? Named
checks by category, a hint per failure, one summary line; exit 0 all passed, 13 warnings only, 14 failures."""

from __future__ import annotations

from pathlib import Path

import click

from kfctl.app.check import check_before_install, check_installed
from kfctl.catalog.load import load_catalog
from kfctl.check.model import CheckReport
from kfctl.check.runner import PRE_CHECKS, PROBES, SMOKES
from kfctl.cli.options import get_options, global_options
from kfctl.cli.output import emit, glyphs_ok
from kfctl.cli.progress import Duration, check_progress
from kfctl.cli.target import cluster_of, kfdef_target, resolve_kfdef
from kfctl.errors import CheckFailed, CheckWarned, UsageError

SYMBOLS = {"pass": "✓", "warn": "‼", "fail": "×", "skip": "-"}
WORDS = {"pass": "ok", "warn": "warn", "fail": "fail", "skip": "skip"}


def _names(_ctx: click.Context, _param: click.Parameter, value: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(n.strip() for v in value for n in v.split(",") if n.strip())


@click.command()
@kfdef_target
@click.option(
    "--pre",
    is_flag=True,
    help="Check the cluster before installing instead (without it: check the installed platform).",
)
@click.option(
    "--skip-generate", is_flag=True, help="With --pre: check APPDIR/rendered as it is, without rendering first."
)
@click.option(
    "--smoke",
    is_flag=True,
    help="Also run tiny jobs to their end (SMOKES), each in a namespace of its own deleted after it (also on Ctrl-C).",
)
@click.option(
    "--smoke-timeout",
    type=Duration(),
    default="5m",
    show_default=True,
    metavar="DURATION",
    help="How long each --smoke job may take to finish.",
)
@click.option("--only", multiple=True, callback=_names, metavar="NAME[,NAME]", help="Run only these checks.")
@click.option("--skip", multiple=True, callback=_names, metavar="NAME[,NAME]", help="Leave out these checks.")
@global_options
def check(
    app_dir: Path | None,
    kfdef_file: Path | None,
    pre: bool,
    skip_generate: bool,
    smoke: bool,
    smoke_timeout: float,
    only: tuple[str, ...],
    skip: tuple[str, ...],
) -> None:
    """Check that the platform of APPDIR works on the target cluster, after installing it (with --pre: that it
    can be installed there, before installing it).

    kfctl check: cluster-reachable; one check per application (what `kfctl status` reports); per installed
    component, or kind the cluster serves whoever installed it, a server-side dry-run create of a small valid
    resource through its webhooks: PROBES. A failed probe says why (kind not served, Service missing, backend
    not ready, CA bundle not injected, or the webhook's denial, quoted). With an Istio Gateway: login
    and dashboard (a login through it as a browser's, the dashboard's answer for that user; a failure names the hop).

    --smoke also runs a TFJob, a PyTorchJob and a TrainJob (where served) to their end, each in a
    namespace kfctl-smoke-… (a Profile's where profiles are served), deleted afterwards.

    --pre renders APPDIR (unless --skip-generate), then checks: CHECKS.

    \b
    -o json prints {"checks": [{"category", "name", "verdict", "message", "hint"}], "summary": {"pass", "warn",
    "fail", "skip": counts, "verdict": "pass|warn|fail", "seconds"}}; hint is "" for a pass.
    Exit codes: 0 every check passed (or was skipped), 13 warnings only, 14 a check failed.
    Examples:
      kfctl check demo
      kfctl check demo --only inferenceservice,kserve
      kfctl check demo --smoke --only smoke-tfjob
      kfctl check --pre demo
      kfctl check --pre demo --skip node-capacity -o json | jq '.checks[] | select(.verdict=="fail")'
    """
    opts = get_options()
    kfdef = resolve_kfdef(app_dir, kfdef_file)
    connect = cluster_of(opts)

    if pre and smoke:
        raise UsageError("--smoke checks an installed platform", hint="run kfctl check --smoke after kfctl apply")
    if pre:
        report = check_before_install(
            kfdef, load_catalog(), open_cluster=connect, render=not skip_generate, only=only, skip=skip
        )
    else:
        if skip_generate:
            raise UsageError("--skip-generate goes with --pre", hint="kfctl check (without --pre) renders nothing")
        with check_progress(opts) as progress:
            report = check_installed(
                kfdef,
                load_catalog(),
                open_cluster=connect,
                only=only,
                skip=skip,
                smoke_timeout=smoke_timeout if smoke else 0.0,
                on_start=progress,
            )
    emit(opts, report.as_dict(), format_report(report, symbols=glyphs_ok(), pre=pre))
    if report.verdict == "fail":
        opts.exit_code = CheckFailed.exit_code
    elif report.verdict == "warn":
        opts.exit_code = CheckWarned.exit_code


assert check.help is not None
check.help = check.help.replace("CHECKS", ", ".join(f"{c.name} ({c.category})" for c in PRE_CHECKS)).replace(
    "PROBES", ", ".join(PROBES)
)
for param in check.params:
    if param.name == "smoke" and isinstance(param, click.Option) and param.help:
        param.help = param.help.replace("SMOKES", ", ".join(SMOKES))


def format_report(report: CheckReport, *, symbols: bool, pre: bool = True) -> str:
    marks = SYMBOLS if symbols else WORDS
    lines: list[str] = []
    category = None
    for r in report.results:
        if r.category != category:
            category = r.category
            lines.append(category)
        lines.append(f"  {marks[r.verdict]} {r.name}: {r.message}")
        if r.hint and r.verdict in ("fail", "warn"):
            lines.append(f"      hint: {r.hint}")
    counts = [f"{report.count('pass')} passed", f"{report.count('warn')} warning(s)", f"{report.count('fail')} failed"]
    if report.count("skip"):
        counts.append(f"{report.count('skip')} skipped")
    if pre:
        verdict = {"pass": "ready to install", "warn": "ready, with warnings", "fail": "not ready"}[report.verdict]
    else:
        verdict = {"pass": "platform works", "warn": "works, with warnings", "fail": "not working"}[report.verdict]
    lines.append(f"{verdict}: {len(report.results)} checks, {', '.join(counts)} ({report.seconds:.1f}s)")
    return "\n".join(lines)
