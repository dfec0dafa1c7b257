"""The global options, accepted both before and after the command name.

``kfctl -v apply`` and ``kfctl apply -v`` mean the same, as with kubectl. Each option stores into the
shared :class:`GlobalOptions` through a callback instead of becoming a function argument.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from kfctl.cli.context import GlobalOptions

F = TypeVar("F", bound=Callable[..., Any])


def _store(attr: str) -> Callable[[click.Context, click.Parameter, Any], None]:
    def callback(ctx: click.Context, _param: click.Parameter, value: Any) -> None:
        opts = ctx.ensure_object(GlobalOptions)
        if attr == "verbose":
            opts.verbose += int(value or 0)
        elif value not in (None, False):
            setattr(opts, attr, value)

    return callback


def global_options(func: F) -> F:
    """Attach -v/-q/-o/--kubeconfig/--context to a group or command."""
    decorators = [
        click.option(
            "-v",
            "--verbose",
            count=True,
            expose_value=False,
            callback=_store("verbose"),
            help="More detail; shows tracebacks of errors. Repeat for more.",
        ),
        click.option(
            "-q",
            "--quiet",
            is_flag=True,
            expose_value=False,
            callback=_store("quiet"),
            help="Print only errors.",
        ),
        click.option(
            "-o",
            "--output",
            type=click.Choice(["text", "json"]),
            default=None,
            expose_value=False,
            callback=_store("output"),
            help="Output format: text for people, json for machines.",
        ),
        click.option(
            "--kubeconfig",
            type=click.Path(dir_okay=False),
            default=None,
            expose_value=False,
            callback=_store("kubeconfig"),
            help="Path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config).",
        ),
        click.option(
            "--context",
            "kube_context",
            default=None,
            expose_value=False,
            callback=_store("context"),
            help="The kubeconfig context to use (default: its current-context).",
        ),
    ]
    for d in reversed(decorators):
        func = d(func)
    return func


def get_options() -> GlobalOptions:
    return click.get_current_context().ensure_object(GlobalOptions)


# apply and diff: success is 0 whether or not anything changed, unless the script asks to tell them apart.
detailed_exitcode_option = click.option(
    "--detailed-exitcode",
    is_flag=True,
    help="Exit 15 instead of 0 when the run succeeded and something changed (apply) or differs (diff), as "
    "Terraform's -detailed-exitcode; errors keep their own codes.",
)
