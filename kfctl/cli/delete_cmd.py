"""`kfctl delete`: the command-line face of kfctl.app.delete."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from kfctl import wording
from kfctl.app.delete import DeletePreview, DeleteSummary, delete_kfdef, preview_delete
from kfctl.cli.options import dry_run_option, get_options, global_options
from kfctl.cli.output import document, emit, machine_readable, shared_note
from kfctl.cli.progress import EventRenderer, lock_timeout_option
from kfctl.cli.removal import uninstall_options
from kfctl.cli.target import cluster_of, kfdef_target, resolve_kfdef
from kfctl.config.model import KfDef
from kfctl.engine.remove import RemoveOptions
from kfctl.errors import CancelledError, UsageError


@click.command()
@kfdef_target
@uninstall_options
@click.option("--force", is_flag=True, help="Delete even from a cluster other than the one applied to.")
@dry_run_option("Say what would be deleted, kept and skipped, by delete's own rules; delete nothing (=server).")
@click.option("--yes", "-y", is_flag=True, help="Do not ask for confirmation (asked only when stdin is a terminal).")
@lock_timeout_option
@global_options
def delete(
    app_dir: Path | None,
    kfdef_file: Path | None,
    removal: RemoveOptions,
    force: bool,
    dry_run: str,
    yes: bool,
    lock_timeout: float,
) -> None:
    """Uninstall everything kfctl applied for this KfDef, in reverse dependency order.

    Webhooks and API services go first, custom resources while their controllers still run,
    then CRDs, workloads, RBAC, namespaces last; each phase waits until its objects are gone and
    names objects stuck on finalizers. PVCs (and the namespaces holding them, and the generated
    Secrets that open their data) stay unless --delete-storage; namespaces holding objects kfctl
    did not apply (named in the output) stay unless --force-namespaces, and a namespace whose
    contents cannot all be listed is not deleted either: the run fails naming the kinds, and a
    re-run finishes the job; objects kfctl adopted rather than created (apply --adopt: a Helm
    release's, a namespace that existed before) stay unless --delete-adopted. Only objects still
    carrying kfctl's label and UID are touched.

    On a terminal it first says how many objects it would delete and keep, and asks (--yes skips the
    question; with stdin not a terminal, as in scripts and CI, it does not ask). --dry-run lists each
    object's verdict and deletes nothing. An object several applications render counts under each of
    them in the live view, once in the total.

    \b
    Examples:
      kfctl delete demo --dry-run
      kfctl delete demo
      kfctl delete demo --delete-storage --yes
    """
    opts = get_options()
    if dry_run == "client":
        raise UsageError(
            "delete --dry-run=client: what delete removes is recorded in the cluster (kfctl's inventory), so its "
            "dry run reads the cluster",
            hint="use --dry-run (=server): it reads, and deletes nothing",
        )
    kfdef = resolve_kfdef(app_dir, kfdef_file)
    preview = functools.partial(preview_delete, kfdef, open_cluster=cluster_of(opts), options=removal, force=force)
    if dry_run == "server":
        p = preview()
        emit(opts, p.as_dict(), format_preview(kfdef, p))
        return
    if not yes and stdin_is_a_terminal():
        p = preview()
        if not p.found:
            emit(opts, p.as_dict(), nothing_to_delete(kfdef))
            return
        question = f"Delete install {kfdef.name}? {counted(p)} (kfctl delete --dry-run lists each object)"
        if not click.confirm(question, default=False, err=True):
            raise CancelledError("nothing was deleted", hint="kfctl delete --dry-run lists what delete would remove")
    with EventRenderer(opts, mode="delete") as renderer:
        s = delete_kfdef(
            kfdef,
            open_cluster=cluster_of(opts),
            reporter=renderer,
            options=removal,
            force=force,
            lock_timeout=lock_timeout,
        )
    if machine_readable(opts):
        click.echo(document(opts, {"summary": s.as_dict()}, stream=True))
    else:
        emit(opts, {}, format_deleted(kfdef, s))
    if s.error is not None:
        raise s.error


def stdin_is_a_terminal() -> bool:
    """Whether a person may answer a question: scripts, CI and tests (stdin a pipe or /dev/null) are never asked."""
    return sys.stdin is not None and sys.stdin.isatty()


def format_deleted(kfdef: KfDef, s: DeleteSummary) -> str:
    """The end of a delete: how many objects went (a shared one once, though the live view counts it under each
    of its applications), what was kept and released."""
    if not s.found:
        return nothing_to_delete(kfdef)
    lines = [f"Deleted {s.deleted} object(s) in {s.seconds:.1f}s"]
    if s.shared:
        lines.append(shared_note(s.shared))
    if s.kept:
        lines += ["Kept:", *(f"  {k}" for k in s.kept)]
    if s.released:
        lines.append(
            f"Released {len(s.released)} kept object(s): no longer labelled as this install's, so another "
            "install may use them; a reinstall of this KfDef takes them back, `kfctl delete --delete-storage` "
            "removes them"
        )
    return "\n".join(lines)


def nothing_to_delete(kfdef: KfDef) -> str:
    return f"Nothing to delete: no kfctl inventory for {kfdef.name} in namespace {kfdef.namespace}"


# A verdict as a person reads it, kubectl's "deleted (dry run)".
WORDS = {"delete": "deleted", "keep": "kept", "skip": "skipped", "error": "unknown"}


def format_preview(kfdef: KfDef, p: DeletePreview) -> str:
    """A line per object, in the order delete would go, then the counts."""
    if not p.found:
        return nothing_to_delete(kfdef)
    lines = [f"{o.member.key}: {WORDS[o.verdict]} (dry run)" + (f": {o.reason}" if o.reason else "") for o in p.objects]
    lines.append(f"{wording.counted(len(p.objects), 'object')}: {counted(p)} (dry run: nothing was deleted)")
    return "\n".join(lines)


def counted(p: DeletePreview) -> str:
    return ", ".join(f"{n} {WORDS[verdict]}" for verdict, n in p.counts().items() if n) or "none"
