"""How results and errors reach the terminal: text for people, JSON for machines.

Commands hand a result (a JSON-able mapping plus its text rendering) to :func:`emit`; errors go through
:func:`emit_error`. Nothing below the CLI prints.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Mapping, Sequence
from typing import Any

import click

from kfctl.cli.context import GlobalOptions
from kfctl.errors import KfctlError


def emit(opts: GlobalOptions, data: Mapping[str, Any], text: str) -> None:
    """Print one command result: ``data`` as JSON with ``-o json``, else ``text``. ``-q`` silences progress and
    notes, never the result a person asked for (``kfctl -q version``, ``plan -q -o mermaid > plan.md``)."""
    if opts.output == "json":
        click.echo(json.dumps(data, indent=2, sort_keys=True))
    elif text:
        click.echo(text)


def columns(header: Sequence[str], rows: Sequence[Sequence[object]], *, align: str = "") -> list[str]:
    """A plain table, two spaces between columns; ``align`` has an l or r per column (default: the first
    column left-aligned, the others right-aligned, as numbers are)."""
    align = align or "l" + "r" * (len(header) - 1)
    cells = [[str(c) for c in header], *([str(c) for c in row] for row in rows)]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return [
        "  ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(r, widths, align, strict=True)).rstrip()
        for r in cells
    ]


def format_error(err: KfctlError) -> str:
    """One paragraph: kind and message, every detail on its own line, then the hint."""
    lines = [f"Error ({err.kind}): {err.message}"]
    lines += [f"  {d}" for d in err.details]
    if err.hint:
        lines.append(f"Hint: {err.hint}")
    return "\n".join(lines)


def error_record(err: KfctlError) -> dict[str, Any]:
    return {
        "error": {
            "kind": err.kind,
            "exitCode": err.exit_code,
            "message": err.message,
            "details": err.details,
            "hint": err.hint,
        }
    }


def emit_error(opts: GlobalOptions, err: KfctlError) -> None:
    if opts.output == "json":
        click.echo(json.dumps(error_record(err), sort_keys=True), err=True)
    else:
        click.echo(format_error(err), err=True)
    if opts.verbose and (err.__cause__ or err.__context__):
        click.echo("".join(traceback.format_exception(err)), err=True, nl=False)


def emit_unexpected(opts: GlobalOptions, exc: BaseException) -> None:
    """A bug in kfctl: say so plainly; show the traceback only with ``-v``."""
    click.echo(f"Error (internal): {type(exc).__name__}: {exc}", err=True)
    if opts.verbose:
        click.echo("".join(traceback.format_exception(exc)), err=True, nl=False)
    else:
        click.echo("This is a bug in kfctl; re-run with -v for the traceback and report it.", err=True)
    sys.stderr.flush()
