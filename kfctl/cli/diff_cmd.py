"""`kfctl diff`: what `kfctl apply` would change (a server-side dry run; with --detailed-exitcode,
exit 15 when something differs)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from kfctl.app.diff import DiffReport, diff_kfdef
from kfctl.catalog.load import load_catalog
from kfctl.cli.options import detailed_exitcode_option, get_options, global_options
from kfctl.cli.output import columns, emit, shared_note
from kfctl.cli.target import cluster_of, kfdef_target, resolve_kfdef
from kfctl.errors import Changed


@click.command()
@kfdef_target
@click.option("--skip-generate", is_flag=True, help="Compare APPDIR/rendered as it is, without rendering first.")
@detailed_exitcode_option
@global_options
def diff(app_dir: Path | None, kfdef_file: Path | None, skip_generate: bool, detailed_exitcode: bool) -> None:
    """Show what apply would create, change (as JSON patches) and prune. Secret values are masked.

    A summary per application comes first (added, changed, removed, and changes the API server refuses as
    immutable, which `kfctl apply --recreate-immutable` deletes and recreates), then every change. An object
    several applications render counts under each of them, once in the total.

    \b
    Exit codes: 0 (with --detailed-exitcode: 0 no differences, 15 some).
    Examples:
      kfctl diff demo
      kfctl diff demo -o json | jq '.summary'
      kfctl diff demo --detailed-exitcode > diff.txt; [ $? -eq 15 ] && echo "the cluster differs"
    """
    opts = get_options()
    kfdef = resolve_kfdef(app_dir, kfdef_file)
    report = diff_kfdef(
        kfdef,
        load_catalog(),
        open_cluster=cluster_of(opts),
        render=not skip_generate,
    )
    emit(opts, report.as_dict(), format_diff(report))
    if report.diffs and detailed_exitcode:
        opts.exit_code = Changed.exit_code


SIGNS = {"create": "+", "prune": "-", "update": "~", "recreate": "!"}


def format_diff(report: DiffReport) -> str:
    """The summary table, the objects apply cannot change in place, then each change with its patch."""
    summary = report.summary()
    lines = []
    if report.diffs:
        head = ("APPLICATION", "ADDED", "CHANGED", "REMOVED", "RECREATE", "UNCHANGED")
        order = ("create", "update", "prune", "recreate", "unchanged")
        rows: list[list[object]] = [
            [app or "(unknown)", *(counts[k] for k in order)] for app, counts in summary.items()
        ]
        totals = report.totals()  # a shared object once, though its applications' rows each count it
        lines += columns(head, [*rows, ["total", *(totals[k] for k in order)]])
        if report.shared:
            lines.append(shared_note(report.shared))
        recreate = [d for d in report.diffs if d.action == "recreate"]
        if recreate:
            lines.append("")
            lines.append(f"{len(recreate)} object(s) cannot be changed in place (immutable fields); `kfctl apply`")
            lines.append("stops on them unless run with --recreate-immutable, which deletes and recreates them:")
            for d in recreate:
                lines.append(f"  {d.subject}  [{d.application}]: {', '.join(d.immutable)}")
        lines.append("")
    for d in report.diffs:
        lines.append(f"{SIGNS[d.action]} {d.subject} ({d.action})")
        for op in d.patch:
            value = f" {json.dumps(op['value'], sort_keys=True)}" if "value" in op else ""
            lines.append(f"    {op['op']} {op['path']}{value}")
        if d.reason:
            lines.append(f"    {d.reason}")
    lines.append(f"{len(report.diffs)} change(s), {report.unchanged} unchanged")
    return "\n".join(lines)
