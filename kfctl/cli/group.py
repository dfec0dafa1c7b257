"""The click group every kfctl group is made of (``kfctl`` itself, ``kfctl secrets``): the global options are
its own too, and an unknown command gets kfctl's did-you-mean.

So ``kfctl -o json secrets apply``, ``kfctl secrets -o json apply`` and ``kfctl secrets apply -o json`` mean
the same, as the README promises for every command name and subcommand: each group and each command takes
-v/-q/-o/--kubeconfig/--context (kfctl.cli.options), and what any of them says is stored in the one
GlobalOptions of the run.
"""

from __future__ import annotations

import difflib
from typing import Any, ClassVar

import click

from kfctl.cli.context import OutputFormat
from kfctl.cli.options import TEXT_OUTPUTS, global_params
from kfctl.cli.signals import Terminated
from kfctl.errors import InterruptedError_, TerminatedError, UsageError


class CommandGroup(click.Group):
    """A click group with kfctl's global options and kfctl's error for an unknown command."""

    outputs: ClassVar[tuple[OutputFormat, ...]] = TEXT_OUTPUTS  # what its -o takes

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.params.extend(global_params(self.outputs))

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """An unknown command names the nearest ones, as git and kubectl do (`kfctl genrate`)."""
        name = args[0] if args else ""
        if name and not name.startswith("-") and self.get_command(ctx, name) is None:
            near = difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.6)
            guess = f' (did you mean "{near[0]}"?)' if near else ""
            raise UsageError(f'unknown command "{name}"{guess}', hint=f"`{ctx.command_path} --help` lists the commands")
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        """Ctrl-C in a command is kfctl's error, printed as every error is: click's own handling of it would
        print a blank line first and turn it into an Abort, which says nothing of what was interrupted."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            raise interrupted(e) from e


def interrupted(e: KeyboardInterrupt) -> InterruptedError_:
    """Ctrl-C's error, or SIGTERM's (kfctl.cli.signals)."""
    if isinstance(e, Terminated):
        return TerminatedError("terminated (SIGTERM)")
    return InterruptedError_("interrupted by the user")
