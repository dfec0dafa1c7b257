"""`kfctl generate` (alias `build`)."""

from __future__ import annotations

from pathlib import Path

import click

from kfctl.app.argocd_plugin import waved_objects
from kfctl.app.export import stream_documents
from kfctl.app.generate import generate as run_generate
from kfctl.catalog.load import load_catalog
from kfctl.cli.options import get_options, global_options
from kfctl.cli.output import emit, machine_readable
from kfctl.cli.target import kfdef_target, resolve_kfdef
from kfctl.errors import UsageError
from kfctl.repos.mirror import parse_flags
from kfctl.wording import counted


@click.command()
@kfdef_target
@click.option("--check", is_flag=True, help="Render and compare; exit 9 listing stale files, write nothing.")
@click.option("--jobs", "-j", type=click.IntRange(1, 32), default=None, help="Applications rendered in parallel.")
@click.option(
    "--offline", is_flag=True, help="Use only the repo cache and the lock file: no network, no git; fail on a miss."
)
@click.option(
    "--refresh",
    is_flag=True,
    help="Ignore the lock file: resolve every repo and remote base again, rewrite the lock, say what moved.",
)
@click.option(
    "--mirror",
    "mirror_flags",
    multiple=True,
    metavar="URL_PREFIX=LOCATION",
    help="Fetch URLs starting with URL_PREFIX (repos and remote bases) from LOCATION: a git or HTTP(S) base URL, "
    "file://…, or a local directory. Repeatable; before the KfDef's spec.mirrors.",
)
@click.option(
    "--stdout",
    "to_stdout",
    is_flag=True,
    help="Then print every rendered object, each with the Argo CD sync wave of its part, and the notes to stderr: "
    "what Argo CD's kfctl plugin syncs (kfctl export --format argocd-plugin).",
)
@global_options
def generate(
    app_dir: Path | None,
    kfdef_file: Path | None,
    check: bool,
    jobs: int | None,
    offline: bool,
    refresh: bool,
    mirror_flags: tuple[str, ...],
    to_stdout: bool,
) -> None:
    """Render every application of the KfDef through kustomize.

    Writes APPDIR/kustomize/<app>/ (plain kustomize, with the catalog parts and the repo files its
    kustomizations use vendored into APPDIR/vendor/) and APPDIR/rendered/<app>.yaml.
    `kustomize build APPDIR/kustomize/<app>` reproduces rendered/<app>.yaml byte for byte, so the
    directory can live in a GitOps repo.
    A failed render leaves the previous output untouched; the KfDef is never rewritten.

    Repos that are archives or git are fetched into APPDIR/.cache/repos/ and recorded in a lock
    file beside the KfDef (kfdef.yaml -> kfdef.lock), so later runs can be --offline. Remote
    kustomize bases their kustomizations name (https://github.com/org/repo//path?ref=TAG, a plain
    https://…/file.yaml) are fetched once into APPDIR/.cache/remote/, pinned in the lock (commit,
    or sha256 and size), vendored under APPDIR/vendor/remote/ and referred to by a local path, so
    `kustomize build` of the output needs no network. A pinned ref that now resolves to another
    commit, or a file whose sha256 changed, is an error; --refresh accepts it and says what moved.

    \b
    Examples:
      kfctl generate demo
      kfctl generate -f demo/kfdef.yaml --check   # CI: fail if committed output is stale
      kfctl generate demo --offline               # no network: cache + kfdef.lock only
      kfctl generate demo --mirror https://github.com/=http://mirror.internal/github/
      kfctl generate demo --stdout | kubectl apply --server-side -f -
    """
    opts = get_options()
    if offline and refresh:
        raise UsageError("--offline and --refresh contradict each other: refreshing needs the network")
    if to_stdout and (check or machine_readable(opts)):
        raise UsageError("--stdout prints the objects as YAML; it goes without --check and -o json/yaml")
    kfdef = resolve_kfdef(app_dir, kfdef_file)
    mirrors = parse_flags(mirror_flags, base_dir=Path.cwd())
    catalog = load_catalog()
    result = run_generate(kfdef, catalog, check=check, jobs=jobs, offline=offline, refresh=refresh, mirrors=mirrors)
    verb = "Checked" if check else "Rendered"
    lines = [
        f"{verb} {len(result.applications)} application(s), {counted(result.objects, 'object')}, "
        f"with {result.kustomize} in {result.seconds:.1f}s"
    ]
    if not check:
        written = [p for p in result.changed if p not in result.removed]
        lines.append(
            f"{len(written)} file(s) changed"
            + (f": {', '.join(written[:10])}" if written else "")
            + (" …" if len(written) > 10 else "")
        )
        if result.removed:  # named, all of them: a file of the user's there would be gone without a word
            lines.append(f"{len(result.removed)} file(s) removed (no longer rendered): {', '.join(result.removed)}")
    where = result.app_dir / "vendor"
    size = f"{result.vendored_files} file(s), {_size(result.vendored_bytes)}"
    lines.append(f"{where} is up to date: {size}" if check else f"Vendored {size} into {where}")
    lines += result.vendor_fallbacks
    if result.translated:
        lines.append(
            f"Rewrote {len(result.translated)} vendored file(s) so that kustomize v5 renders what kustomize v3 did "
            "(each file's header says what): " + ", ".join(t.split(": ", 1)[0] for t in result.translated)
        )
    if result.remote_bases:
        lines.append(f"Vendored {result.remote_bases} remote base(s) into {result.app_dir / 'vendor' / 'remote'}")
    if result.fetched:
        lines.append(f"Fetched: {', '.join(result.fetched)}")
    lines += [f"Re-pinned {line}" for line in result.repinned]
    if result.lock_written:
        lines.append(f"Wrote {kfdef.path.with_suffix('.lock')}")
    if not machine_readable(opts):
        for warning in result.warnings:
            click.echo(f"Warning: {warning}", err=True)
    if to_stdout:
        if not opts.quiet:
            click.echo("\n".join(lines), err=True)
        click.echo(stream_documents(waved_objects(kfdef, catalog)), nl=False)
        return
    emit(
        opts,
        {
            "appDir": str(result.app_dir),
            "applications": list(result.applications),
            "objects": result.objects,
            "changed": list(result.changed),
            "removed": list(result.removed),
            "check": check,
            "kustomize": result.kustomize,
            "fetched": list(result.fetched),
            "remoteBases": result.remote_bases,
            "repinned": list(result.repinned),
            "warnings": list(result.warnings),
            "lockWritten": result.lock_written,
            "vendored": {
                "files": result.vendored_files,
                "bytes": result.vendored_bytes,
                "fallbacks": list(result.vendor_fallbacks),
                "translated": list(result.translated),
            },
        },
        "\n".join(lines),
    )


def _size(n: int) -> str:
    """1536 -> "1.5 KB"."""
    if n < 1024:
        return f"{n} B"
    if n < 1024**2:
        return f"{n / 1024:.1f} KB"
    return f"{n / 1024**2:.1f} MB"
