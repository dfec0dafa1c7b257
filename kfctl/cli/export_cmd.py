"""`kfctl export`: print or write Argo CD / Flux objects for the KfDef's applications."""

from __future__ import annotations

from pathlib import Path

import click

from kfctl.app.argocd_plugin import export_plugin
from kfctl.app.export import FORMATS, ExportOptions, dump_documents, export, write_files
from kfctl.catalog.load import load_catalog
from kfctl.cli.options import get_options, global_options
from kfctl.cli.output import emit, machine_readable
from kfctl.cli.target import kfdef_target, resolve_kfdef
from kfctl.errors import UsageError


@click.command("export")
@kfdef_target
@click.option(
    "--format",
    "fmt",
    type=click.Choice(FORMATS),
    required=True,
    help="argocd, flux, or argocd-plugin (a repo holding only kfdef.yaml and kfdef.lock, rendered by Argo CD).",
)
@click.option("--repo-url", required=True, help="The git repository that holds the app directory.")
@click.option("--revision", default="main", show_default=True, help="Branch, tag (refs/tags/X) or commit to follow.")
@click.option(
    "--path",
    "repo_path",
    default=".",
    show_default=True,
    help="Where the app directory sits inside the repository (its kustomize/<app>/ dirs are referenced).",
)
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Write files here.")
@click.option("--namespace", default=None, help="Namespace of the exported objects [default: argocd / flux-system].")
@click.option(
    "--prune",
    is_flag=True,
    help="Let Argo CD / Flux delete objects removed from git (off by default); CRDs, Namespaces, PVs, PVCs are kept.",
)
@click.option("--interval", default="10m", show_default=True, help="Flux reconcile interval.")
@click.option(
    "--plugin-image",
    default="",
    help="argocd-plugin: the image of the repo-server's kfctl sidecar (holding kfctl and kustomize).",
)
@global_options
def export_cmd(
    app_dir: Path | None,
    kfdef_file: Path | None,
    fmt: str,
    repo_url: str,
    revision: str,
    repo_path: str,
    output_dir: Path | None,
    namespace: str | None,
    prune: bool,
    interval: str,
    plugin_image: str,
) -> None:
    """Export the applications as Argo CD Applications or Flux Kustomizations.

    Each object builds APPDIR/kustomize/<app>/ from your git repository (run `kfctl generate`
    and commit its output first). Install order follows the component graph: Argo CD sync waves
    (they order Applications synced by a parent app-of-apps), Flux dependsOn with wait: true.
    An application whose own webhooks admit some of its objects comes in two parts, <app> and
    <app>-admitted after it, so that its webhook's backend can always be applied first. Prune is
    off unless --prune; with it, CRDs, Namespaces, PVs and PVCs are kept as kfctl apply keeps them.
    Output is deterministic; with --output-dir, one file per object plus a kustomization.yaml,
    and stale files of an earlier export are removed. For Argo CD it also writes argocd-cm.yaml,
    the health checks sync waves need (Application, Kubeflow's kinds): apply it with
    `kubectl apply --server-side --field-manager=kfctl -f argocd-cm.yaml`.

    --format argocd-plugin is for a repository holding only kfdef.yaml and kfdef.lock: Argo CD's
    repo-server renders it with a kfctl sidecar (a Config Management Plugin running
    `kfctl generate . --stdout`). It exports the plugin's ConfigMap, one Application for the platform
    and, with --output-dir, argocd-cm.yaml and the sidecar's patch of argocd-repo-server.

    \b
    Examples:
      kfctl export demo --format argocd --repo-url https://git.example.com/ml/platform.git --path clusters/prod
      kfctl export -f demo/kfdef.yaml --format flux --repo-url ssh://git@git.example.com/ml/platform.git \\
          --revision refs/tags/v1.2.0 --output-dir demo/flux
      kfctl export demo --format argocd-plugin --repo-url https://git.example.com/ml/platform.git \\
          --plugin-image registry.example.com/kfctl:1.0 --output-dir argocd
    """
    opts = get_options()
    kfdef = resolve_kfdef(app_dir, kfdef_file)
    options = ExportOptions(
        format=fmt,
        repo_url=repo_url,
        revision=revision,
        path=repo_path,
        namespace=namespace,
        prune=prune,
        interval=interval,
    )
    if plugin_image and fmt != "argocd-plugin":
        raise UsageError("--plugin-image goes with --format argocd-plugin")
    if fmt == "argocd-plugin":
        result = export_plugin(kfdef, options, plugin_image)
    else:
        result = export(kfdef, load_catalog(), options)
    if result.missing and not opts.quiet:
        click.echo(
            f"Warning: {kfdef.app_dir}/kustomize/ has no directory for: {', '.join(result.missing)}; "
            "run `kfctl generate` and commit the output before syncing",
            err=True,
        )
    data = {"format": fmt, "objects": list(result.objects), "waves": result.waves}
    if output_dir is None:
        if machine_readable(opts):
            emit(opts, data, "")
        else:
            click.echo(dump_documents(result.objects), nl=False)
        if result.files and not opts.quiet:
            names = " and ".join(name for name, _ in result.files)
            click.echo(f"Note: with --output-dir, kfctl also writes {names} (for Argo CD's own install)", err=True)
        return
    files, removed = write_files(kfdef, result, output_dir)
    text = f"Wrote {len(files)} file(s) to {output_dir}" + (f"; removed {', '.join(removed)}" if removed else "")
    emit(opts, {**data, "outputDir": str(output_dir), "files": files, "removed": removed}, text)
