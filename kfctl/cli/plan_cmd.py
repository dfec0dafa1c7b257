"""`kfctl plan`: print the apply order and the reason for every wait, in brief, in full, or as a graph."""

from __future__ import annotations

from pathlib import Path

import click

from kfctl.app.plan import inventory_as_dict, plan_as_dict, plan_kfdef
from kfctl.catalog.load import load_catalog
from kfctl.cli.options import GRAPH_OUTPUTS, get_options, global_options_with_graphs
from kfctl.cli.output import emit
from kfctl.cli.target import kfdef_target, resolve_kfdef
from kfctl.plan.diagram import application_diagram, object_diagram, to_dot, to_mermaid
from kfctl.plan.graph import Plan
from kfctl.plan.summary import summarize
from kfctl.plan.text import format_plan, format_summary, inventory_line

MORE = "Every object, what it waits for and why: kfctl plan --full"


@click.command()
@kfdef_target
@click.option("--skip-generate", is_flag=True, help="Plan APPDIR/rendered as it is, without rendering first.")
@click.option("--full", is_flag=True, help="Print every object of every wave, what it waits for and why.")
@click.option(
    "--objects", is_flag=True, help="With -o dot or -o mermaid: draw every object and its waits, not the applications."
)
@global_options_with_graphs
def plan(app_dir: Path | None, kfdef_file: Path | None, skip_generate: bool, full: bool, objects: bool) -> None:
    """Print the dependency plan, offline: the order apply follows, and why.

    By default a summary that fits one screen: the applications in apply order (objects, dependsOn, waits on
    other applications' objects), shared objects hoisted ahead of dependsOn, identical copies applied once,
    pod-webhook orderings and the longest chain of waits. --full lists every object of every wave with what
    it waits for and why. -o mermaid (for a Markdown page; GitHub draws it) or -o dot (Graphviz) draws the
    application graph, with --objects the object graph. -o json gives the waves and the summary.

    kfctl writes the graph's text; turning -o dot into a picture needs Graphviz's `dot` program, which is
    not part of kfctl (apt install graphviz, brew install graphviz).

    \b
    Examples:
      kfctl plan demo                # the summary
      kfctl plan demo --full         # every object, what it waits for and why
      kfctl plan demo -o mermaid     # the application graph, for a Markdown page
      kfctl plan demo -o dot --objects | dot -Tsvg > plan.svg   # needs Graphviz
    """
    opts = get_options()
    graph = opts.output in GRAPH_OUTPUTS
    if objects and not graph:
        raise click.UsageError("--objects chooses what -o dot or -o mermaid draws; add one of them")
    if full and graph:
        raise click.UsageError("--full is for the text output; for every object as a graph use --objects")
    kfdef = resolve_kfdef(app_dir, kfdef_file)
    p = plan_kfdef(kfdef, load_catalog(), render=not skip_generate)
    data = plan_as_dict(p) | {"inventory": inventory_as_dict(p, kfdef.namespace)}
    emit(opts, data, _drawn(p, opts.output, objects=objects) if graph else _text(p, kfdef.namespace, full=full))


def _text(p: Plan, namespace: str, *, full: bool) -> str:
    if full:
        return f"{format_plan(p)}\n\n{inventory_line(p, namespace)}"
    return f"{format_summary(summarize(p))}\n\n{inventory_line(p, namespace)}\n\n{MORE}"


def _drawn(p: Plan, fmt: str, *, objects: bool) -> str:
    diagram = object_diagram(p) if objects else application_diagram(summarize(p))
    return to_dot(diagram) if fmt == "dot" else to_mermaid(diagram)
