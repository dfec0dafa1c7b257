"""The global options, accepted both before and after the command name.

``kfctl -v apply`` and ``kfctl apply -v`` mean the same, as with kubectl. Each option stores into the
shared :class:`GlobalOptions` through a callback instead of becoming a function argument.

Every command writes text, JSON or YAML (the same documents as JSON, kubectl's `-o yaml`); ``kfctl plan``
also draws graphs (``-o dot``, ``-o mermaid``). The group
parses ``-o`` before it knows the command, so it takes every format and each command refuses one it does
not write, naming the command that does.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from kfctl.cli.context import GlobalOptions, OutputFormat

F = TypeVar("F", bound=Callable[..., Any])

TEXT_OUTPUTS: tuple[OutputFormat, ...] = ("text", "json", "yaml")
GRAPH_OUTPUTS: tuple[OutputFormat, ...] = ("dot", "mermaid")
GRAPH_COMMAND = "kfctl plan"  # the one command that draws graphs


def _not_here(fmt: str, ctx: click.Context | None) -> str:
    where = ctx.command_path if ctx else "this command"
    return f"-o {fmt} draws a graph, which only `{GRAPH_COMMAND}` does; {where} takes -o text, -o json or -o yaml"


class _OutputChoice(click.Choice[str]):
    """click.Choice, with an error naming the command that takes a graph format this one does not."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        if value in GRAPH_OUTPUTS and value not in self.choices:
            self.fail(_not_here(value, ctx), param, ctx)
        return str(super().convert(value, param, ctx))


def _store_output(outputs: tuple[OutputFormat, ...]) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        opts = ctx.ensure_object(GlobalOptions)
        if value is not None:
            opts.output = value
        elif opts.output not in outputs:  # given before the command name, where every format is taken
            raise click.UsageError(_not_here(opts.output, ctx), ctx)

    return callback


def _store(attr: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        opts = ctx.ensure_object(GlobalOptions)
        if attr == "verbose":
            opts.verbose += int(value or 0)
        elif value not in (None, False):
            setattr(opts, attr, value)

    return callback


def global_options(func: F) -> F:
    """Attach -v/-q/-o/--kubeconfig/--context to a command that writes text or JSON."""
    return _attach(func, outputs=TEXT_OUTPUTS)


def global_options_with_graphs(func: F) -> F:
    """The same, ``-o`` also taking dot and mermaid: for `kfctl plan`, and for the group (see above)."""
    return _attach(func, outputs=TEXT_OUTPUTS + GRAPH_OUTPUTS)


def _attach(func: F, *, outputs: tuple[OutputFormat, ...]) -> F:
    for option in reversed(global_params(outputs)):
        func = _add_param(func, option)
    return func


def _add_param(func: F, param: click.Parameter) -> F:
    """What ``@click.option`` does with the option it builds: queue it for the command made of ``func``."""
    if isinstance(func, click.Command):
        func.params.append(param)
    else:
        func.__dict__.setdefault("__click_params__", []).append(param)
    return func


def global_params(outputs: tuple[OutputFormat, ...]) -> list[click.Option]:
    """-v/-q/-o/--kubeconfig/--context as click options, ``-o`` taking ``outputs``: attached to every command
    (global_options) and to every group (kfctl.cli.group), so that each is accepted before or after any
    command name."""
    graphs = f"; dot or mermaid: a graph ({GRAPH_COMMAND})" if set(GRAPH_OUTPUTS) <= set(outputs) else ""
    return [
        click.Option(
            ["-v", "--verbose"],
            count=True,
            expose_value=False,
            callback=_store("verbose"),
            help="More detail; shows tracebacks of errors. Repeat for more.",
        ),
        click.Option(
            ["-q", "--quiet"],
            is_flag=True,
            expose_value=False,
            callback=_store("quiet"),
            help="Print only errors and the result asked for.",
        ),
        click.Option(
            ["-o", "--output"],
            type=_OutputChoice(outputs),
            default=None,
            expose_value=False,
            callback=_store_output(outputs),
            help=f"Output format: text for people, json or yaml for machines{graphs}.",
        ),
        click.Option(
            ["--kubeconfig"],
            type=click.Path(dir_okay=False),
            default=None,
            expose_value=False,
            callback=_store("kubeconfig"),
            help="The kubeconfig (default: $KUBECONFIG, ~/.kube/config).",
        ),
        click.Option(
            ["--context", "kube_context"],
            default=None,
            expose_value=False,
            callback=_store("context"),
            help="The kubeconfig context to use (default: its current-context).",
        ),
    ]


def get_options() -> GlobalOptions:
    return click.get_current_context().ensure_object(GlobalOptions)


class OnceOption(click.Option):
    """An option that takes one value and refuses a second: a choice such as init's --upstream or --platform
    named twice is a mistake to say, not a value to drop (click keeps the last). The parser collects every
    occurrence (as for ``multiple``), the option is single-valued everywhere else (help, docs, the value)."""

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        self.multiple = True
        try:
            super().add_to_parser(parser, ctx)
        finally:
            self.multiple = False

    def process_value(self, ctx: click.Context, value: Any) -> Any:
        if isinstance(value, (list, tuple)):
            if len(value) > 1:
                name = max(self.opts, key=len)
                raise click.UsageError(f"{name} given {len(value)} times ({', '.join(value)}); give it once", ctx)
            value = value[0] if value else None
        return super().process_value(ctx, value)


# apply and diff: success is 0 whether or not anything changed, unless the script asks to tell them apart.
detailed_exitcode_option = click.option(
    "--detailed-exitcode",
    is_flag=True,
    help="Exit 15, not 0, when something changed (apply) or differs (diff), as Terraform's.",
)


DRY_RUN_MODES = {"none": [], "server": ["--dry-run"], "client": ["--dry-run-client"]}


def dry_run_option(help_text: str) -> Callable[[F], F]:
    """``--dry-run`` (a flag: server), and the hidden ``--dry-run-client`` that :func:`kubectl_dry_run` turns
    ``--dry-run=client`` into; the command gets ``dry_run``: "none", "server" or "client"."""

    def decorate(func: F) -> F:
        func = click.option("--dry-run-client", "dry_run", flag_value="client", hidden=True)(func)
        return click.option("--dry-run", "dry_run", flag_value="server", default="none", help=help_text)(func)

    return decorate


def kubectl_dry_run(argv: list[str]) -> list[str]:
    """kubectl's ``--dry-run=none|client|server`` on top of kfctl's bare ``--dry-run`` (a server-side dry run),
    which must stay a flag: an option with an optional value would take ``kfctl apply --dry-run demo``'s APPDIR
    as its value. Nothing after ``--`` is touched."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            return out + argv[i:]
        if arg.startswith("--dry-run="):
            mode = arg.split("=", 1)[1]
            if mode not in DRY_RUN_MODES:
                raise click.UsageError(f"--dry-run={mode}: choose --dry-run=server (or --dry-run), client or none")
            out += DRY_RUN_MODES[mode]
        else:
            out.append(arg)
    return out


def output_asked(argv: list[str]) -> OutputFormat | None:
    """The ``-o json`` or ``-o yaml`` a command line gives (the last ``-o`` wins), read from its words: for an
    error met before click parsed ``-o``, which must obey it all the same. Nothing after ``--`` is read."""
    last = ""
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg in ("-o", "--output"):
            last = argv[i + 1] if i + 1 < len(argv) else ""
        elif arg.startswith("--output="):
            last = arg.split("=", 1)[1]
        elif arg.startswith("-o") and not arg.startswith("--"):
            last = arg[2:]
    return DOCUMENT_OUTPUTS.get(last)


DOCUMENT_OUTPUTS: dict[str, OutputFormat] = {"json": "json", "yaml": "yaml"}
