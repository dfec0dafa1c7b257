"""`kfctl apply`: the command-line face of kfctl.app.apply."""

from __future__ import annotations

from pathlib import Path

import click

from kfctl.app.apply import ApplySummary, apply_kfdef
from kfctl.app.dry_run import VERDICTS, DryRunReport, Verdict, dry_run_apply
from kfctl.app.plan import plan_as_dict, plan_kfdef
from kfctl.catalog.load import load_catalog
from kfctl.cli.context import GlobalOptions
from kfctl.cli.options import detailed_exitcode_option, dry_run_option, get_options, global_options
from kfctl.cli.output import columns, document, emit, machine_readable, shared_note
from kfctl.cli.progress import Duration, EventRenderer, lock_timeout_option
from kfctl.cli.removal import prune_options
from kfctl.cli.target import cluster_of, kfdef_target, resolve_kfdef
from kfctl.config.model import KfDef
from kfctl.engine.apply import ApplyOptions
from kfctl.engine.remove import RemoveOptions
from kfctl.errors import ApiDeniedError, Changed, OwnershipError
from kfctl.plan.summary import summarize
from kfctl.plan.text import format_summary
from kfctl.wording import counted


@click.command()
@kfdef_target
@click.option("--timeout", type=Duration(), default="30m", show_default=True, help="Limit for the whole run.")
@click.option(
    "--wait-timeout",
    type=Duration(),
    default="5m",
    show_default=True,
    help="Limit for one object to become healthy.",
)
@click.option(
    "--concurrency", type=click.IntRange(1, 64), default=8, show_default=True, help="API requests in flight at once."
)
@click.option(
    "--recreate-immutable",
    is_flag=True,
    help="Delete and recreate an object whose immutable fields changed.",
)
@prune_options
@click.option(
    "--adopt",
    is_flag=True,
    help="Take over objects of another owner (Helm, Argo CD…) instead of exit 11; delete and prune keep them.",
)
@click.option("--skip-generate", is_flag=True, help="Apply APPDIR/rendered as it is, without rendering first.")
@dry_run_option("Server-side dry run of every write (=server; =client: the plan, no cluster). Nothing persisted.")
@lock_timeout_option
@detailed_exitcode_option
@global_options
def apply(
    app_dir: Path | None,
    kfdef_file: Path | None,
    timeout: float,
    wait_timeout: float,
    concurrency: int,
    recreate_immutable: bool,
    prune: RemoveOptions | None,
    adopt: bool,
    skip_generate: bool,
    dry_run: str,
    lock_timeout: float,
    detailed_exitcode: bool,
) -> None:
    """Render, then apply every object in dependency order, wait until healthy, prune what was removed.

    Server-side apply (field manager kfctl) in the order `kfctl plan` shows. An untouched platform
    re-applies with no write; a field someone changed is put back (Corrected). Objects of another owner
    stop the run before any write (exit 11) unless adopted.

    --dry-run (=server) sends each write as a server-side dry run and prints the server's verdict per
    object (created, configured, unchanged, pruned, recreate, pending, foreign, denied); --dry-run=client
    prints the plan without the cluster.

    \b
    Exit codes: 0 applied (with --detailed-exitcode: 0 nothing changed, 15 something did),
    6 cluster unreachable, 7 denied, 8 unhealthy, 11 owned by someone else, 12 lock held.

    \b
    Examples:
      kfctl apply demo
      kfctl apply -f demo/kfdef.yaml --wait-timeout 10m -o json
      kfctl apply demo --dry-run
      kfctl apply demo --dry-run=client
    """
    opts = get_options()
    kfdef = resolve_kfdef(app_dir, kfdef_file)
    if dry_run == "client":
        _client_dry_run(opts, kfdef, render=not skip_generate)
        return
    if dry_run == "server":
        _server_dry_run(opts, kfdef, render=not skip_generate, detailed_exitcode=detailed_exitcode)
        return
    options = ApplyOptions(
        concurrency=concurrency, wait_timeout=wait_timeout, timeout=timeout, recreate_immutable=recreate_immutable
    )
    with EventRenderer(opts) as renderer:
        summary = apply_kfdef(
            kfdef,
            load_catalog(),
            open_cluster=cluster_of(opts),
            reporter=renderer,
            options=options,
            prune=prune,
            render=not skip_generate,
            adopt=adopt,
            lock_timeout=lock_timeout,
        )
    _report(opts, summary, detailed_exitcode=detailed_exitcode)


def _client_dry_run(opts: GlobalOptions, kfdef: KfDef, *, render: bool) -> None:
    """--dry-run=client: the plan, from the render alone."""
    p = plan_kfdef(kfdef, load_catalog(), render=render)
    emit(opts, plan_as_dict(p), f"{format_summary(summarize(p))}\n\n(client dry run: nothing was sent)")


def _server_dry_run(opts: GlobalOptions, kfdef: KfDef, *, render: bool, detailed_exitcode: bool) -> None:
    """--dry-run (=server): each write as a server-side dry run, the server's verdict per object; what apply would
    stop on (a denial, another owner's object) is the command's error."""
    report = dry_run_apply(kfdef, load_catalog(), open_cluster=cluster_of(opts), render=render)
    emit(opts, report.as_dict(), format_dry_run(report, verbose=opts.verbose > 0))
    refusals = (
        (ApiDeniedError, "denied", "the server-side dry run refused {n} object(s)", HINT_DENIED),
        (
            OwnershipError,
            "foreign",
            "{n} object(s) have another owner; apply would write nothing",
            HINT_OWNED,
        ),
    )
    for error, verdict, message, hint in refusals:
        refused = [v for v in report.verdicts if v.verdict == verdict]
        if refused:
            raise error(message.format(n=len(refused)), details=_listed(refused), hint=hint)
    if report.changes and detailed_exitcode:
        opts.exit_code = Changed.exit_code


def _report(opts: GlobalOptions, s: ApplySummary, *, detailed_exitcode: bool) -> None:
    """The end of an apply: the table per application, the critical path and the totals; the run's error raised."""
    text = (
        f"{counted(s.objects, 'object')}: {s.created} created, {s.configured} configured, "
        + (f"{s.corrected} corrected, " if s.corrected else "")
        + (f"{s.adopted} adopted, " if s.adopted else "")
        + (f"{s.recreated} recreated, " if s.recreated else "")
        + f"{s.unchanged} unchanged, {s.pruned} pruned in {s.seconds:.1f}s "
        f"({s.requests.get('writes', 0)} write requests, {s.requests.get('total', 0)} in all)"
    )
    if s.kept:
        text += "\nKept (not pruned without a flag):\n" + "\n".join(f"  {k}" for k in s.kept)
    text = "\n".join([*format_applications(s), text])
    data = {"summary": s.as_dict()}
    if machine_readable(opts):
        click.echo(document(opts, data, stream=True))
    elif s.error is None:
        emit(opts, data, text)
    else:
        click.echo(text, err=True)
    if s.error is not None:
        raise s.error
    if s.changed and detailed_exitcode:
        opts.exit_code = Changed.exit_code


HINT_DENIED = "kfctl apply would stop on them: fix the objects (or the policy refusing them) and re-run"
HINT_OWNED = "mark the application `external: true`, or take the objects over with --adopt"

# Critical-path segments shorter than this are left out of the line (the total still counts them).
SHOWN_SEGMENT = 0.1


def format_applications(s: ApplySummary) -> list[str]:
    """The table per application, then the critical path: what decided the run's time."""
    if not s.applications:
        return []
    head = ("APPLICATION", "STATE", "OBJECTS", "CREATED", "CONFIGURED", "UNCHANGED", "PRUNED", "HEALTHY AT")
    rows = [
        [a.name, a.state, a.objects, a.created, a.configured, a.unchanged, a.pruned, _seconds(a.seconds)]
        for a in s.applications
    ]
    lines = columns(head, rows)
    if s.shared:
        lines.append(shared_note(s.shared))
    if s.critical_path:
        total = sum(c.seconds for c in s.critical_path)
        shown = [c for c in s.critical_path if c.seconds >= SHOWN_SEGMENT] or s.critical_path[-1:]
        chain = " → ".join(f"{c.step} {c.seconds:.1f}s" for c in shown)
        lines.append(f"critical path ({total:.1f}s): {chain}")
    return lines


def format_dry_run(report: DryRunReport, *, verbose: bool = False) -> str:
    """A line per object that would change (every object with -v), the counts per application (a shared object
    under each), one total (a shared object once)."""
    lines = [
        f"{v.subject}: {v.verdict} (server dry run)" + (f": {v.message}" if v.message else "")
        for v in report.verdicts
        if verbose or v.verdict != "unchanged"
    ]
    head = ("APPLICATION", *(v.upper() for v in VERDICTS))
    rows = [[app, *counts.values()] for app, counts in report.by_application().items()]
    lines += [*([""] if lines else []), *columns(head, rows)] if rows else []
    if report.shared:
        lines.append(shared_note(report.shared))
    counts = ", ".join(f"{n} {verdict}" for verdict, n in report.counts().items() if n)
    lines.append(
        f"{counted(len(report.verdicts), 'object')}: {counts or 'none'} (server-side dry run: nothing persisted)"
    )
    return "\n".join(lines)


def _listed(verdicts: list[Verdict], shown: int = 5) -> list[str]:
    more = [f"… and {len(verdicts) - shown} more (listed above)"] if len(verdicts) > shown else []
    return [f"{v.subject}: {v.message}" for v in verdicts[:shown]] + more


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}s"
