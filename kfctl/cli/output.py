"""How results and errors reach the terminal: text for people, JSON or YAML (the same documents) for machines.

Commands hand a result (a JSON-able mapping plus its text rendering) to :func:`emit`; errors go through
:func:`emit_error`. Nothing below the CLI prints.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import click
import yaml

from kfctl.cli.context import GlobalOptions
from kfctl.errors import KfctlError


def machine_readable(opts: GlobalOptions) -> bool:
    """``-o json`` or ``-o yaml``: documents for a program, not text for a person."""
    return opts.output in ("json", "yaml")


def glyphs_ok(stream: TextIO | None = None) -> bool:
    """Whether to draw symbols (check's and the live view's marks, a braille spinner) or write words: symbols
    only where the stream takes UTF-8, the user's locale is UTF-8, and no plain output is asked for (NO_COLOR,
    TERM=dumb). The stream alone cannot tell: Python writes UTF-8 under LANG=C too (PEP 538, 540)."""
    encoding = (getattr(stream or sys.stdout, "encoding", "") or "").lower().replace("-", "").replace("_", "")
    if encoding != "utf8" or "NO_COLOR" in os.environ or os.environ.get("TERM") == "dumb":
        return False
    return utf8_locale(os.environ, coerced=bool(sys.flags.utf8_mode) and "PYTHONUTF8" not in os.environ)


def utf8_locale(environ: Mapping[str, str], *, coerced: bool) -> bool:
    """Whether the user's character locale is UTF-8: the first of LC_ALL, LC_CTYPE, LANG that is set, as POSIX
    picks it (none: the C locale, which is not). With ``coerced`` (Python found a C locale at start and entered
    its UTF-8 mode), an LC_CTYPE of C.UTF-8 is the one Python wrote into its own environment (PEP 538), not the
    user's, and is passed over."""
    for var in ("LC_ALL", "LC_CTYPE", "LANG"):
        value = environ.get(var, "")
        if not value or (var == "LC_CTYPE" and coerced and value == "C.UTF-8"):
            continue
        codeset = value.partition(".")[2].partition("@")[0]
        return codeset.lower().replace("-", "") == "utf8"
    return False


# Every document -o json / -o yaml prints carries it (results, each event of a stream, errors). Bumped when a
# field changes meaning or type, or goes; a new field keeps it.
SCHEMA_VERSION = 1


def document(opts: GlobalOptions, data: Mapping[str, Any], *, stream: bool = False) -> str:
    """``data`` as ``-o`` asks, with its ``schemaVersion``: JSON (indented, or one line per document in a
    ``stream`` of events) or YAML (a ``---`` document, so a stream is a multi-document file)."""
    data = {"schemaVersion": SCHEMA_VERSION, **data}
    if opts.output == "yaml":
        return "---\n" + yaml.safe_dump(dict(data), sort_keys=True, default_flow_style=False, width=1000).rstrip("\n")
    return json.dumps(data, sort_keys=True) if stream else json.dumps(data, indent=2, sort_keys=True)


def emit(opts: GlobalOptions, data: Mapping[str, Any], text: str, *, quiet: str | None = None) -> None:
    """Print one command result: ``data`` with ``-o json`` or ``-o yaml``, else ``text``. ``-q`` silences
    progress and notes, never the result a person asked for (``kfctl -q version``, ``plan -q -o mermaid``):
    where ``text`` is notes around a result, ``quiet`` is the result alone, what -q prints ("" for a command
    whose result is the file it wrote: init, migrate)."""
    if machine_readable(opts):
        click.echo(document(opts, data))
    elif opts.quiet and quiet is not None:
        if quiet:
            click.echo(quiet)
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


def shared_note(n: int) -> str:
    """The line under a per-application table that counts an object several applications render under each."""
    return f"{n} object(s) shared by several applications are counted under each, once in the total"


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
    if machine_readable(opts):
        click.echo(document(opts, error_record(err), stream=True), err=True)
    else:
        click.echo(format_error(err), err=True)
    if opts.verbose and (err.__cause__ or err.__context__):
        click.echo("".join(traceback.format_exception(err)), err=True, nl=False)


BUG = "This is a bug in kfctl; re-run with -v for the traceback and report it."


def emit_unexpected(opts: GlobalOptions, exc: BaseException) -> None:
    """A bug in kfctl: say so plainly (an error document with -o json or yaml, as every error); show the
    traceback only with ``-v``."""
    if machine_readable(opts):
        bug = KfctlError(f"{type(exc).__name__}: {exc}", hint=BUG)
        bug.kind = "internal"
        click.echo(document(opts, error_record(bug), stream=True), err=True)
    else:
        click.echo(f"Error (internal): {type(exc).__name__}: {exc}", err=True)
    if opts.verbose:
        click.echo("".join(traceback.format_exception(exc)), err=True, nl=False)
    elif not machine_readable(opts):
        click.echo(BUG, err=True)
    sys.stderr.flush()
