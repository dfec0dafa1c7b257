"""`kfctl export`: print or write Argo CD / Flux objects for the KfDef's applications."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import click

from kfctl.app import argocd_fleet
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
    help="argocd-plugin: a repo holding only kfdef.yaml and kfdef.lock.",
)
@click.option("--repo-url", required=True, help="The git repository that holds the app directory.")
@click.option("--revision", default="main", show_default=True, help="Branch, tag (refs/tags/X) or commit to follow.")
@click.option(
    "--path",
    "repo_path",
    default=".",
    show_default=True,
    help="Where the app directory sits in the repository.",
)
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Write files here.")
@click.option("--namespace", default=None, help="Their namespace [default: argocd / flux-system].")
@click.option(
    "--prune",
    is_flag=True,
    help="Let Argo CD / Flux delete objects removed from git (off by default); CRDs, Namespaces, PVs, PVCs are kept.",
)
@click.option("--interval", default="10m", show_default=True, help="Flux reconcile interval.")
@click.option(
    "--plugin-image",
    default="",
    help="argocd-plugin: the kfctl sidecar's image (kfctl, kustomize).",
)
@click.option(
    "--fleet",
    "fleet",
    default=None,
    metavar="SELECTOR",
    help="argocd: the clusters' labels, key=value[,key=value].",
)
@click.option(
    "--fleet-parameter",
    "fleet_parameters",
    multiple=True,
    metavar="APP.NAME",
    help="A KfDef parameter clusters may override (repeatable).",
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
    fleet: str | None,
    fleet_parameters: tuple[str, ...],
) -> None:
    """Export the applications as Argo CD Applications or Flux Kustomizations.

    Each builds APPDIR/kustomize/<app>/ from your git repository (commit `kfctl generate`'s output
    first), in the component graph's order: Argo CD sync waves (for a parent app-of-apps), Flux
    dependsOn with wait: true. An application whose own webhooks admit some of its objects comes in
    two parts, <app> and <app>-admitted. --output-dir writes one file per object, a kustomization.yaml
    (stale files removed) and for Argo CD argocd-cm.yaml, the health checks the waves need: apply it
    with `kubectl apply --server-side --field-manager=kfctl -f argocd-cm.yaml`.

    --format argocd-plugin: a repository of kfdef.yaml and kfdef.lock alone, rendered by a kfctl
    sidecar of Argo CD's repo-server (the plugin's ConfigMap, an Application, the sidecar's patch).

    --fleet SELECTOR: applicationset.yaml, applied instead of a parent, makes a parent <cluster>-<name>
    of --output-dir for each Argo CD cluster Secret with those labels, its children pointed at that
    cluster; the Secret's annotation kfctl.kubeflow.org/APP.NAME overrides a --fleet-parameter.

    \b
    Examples:
      kfctl export demo --format argocd --repo-url https://git.example.com/ml/platform.git --path clusters/prod
      kfctl export -f demo/kfdef.yaml --format flux --repo-url ssh://git@git.example.com/ml/platform.git \\
          --revision refs/tags/v1.2.0 --output-dir demo/flux
      kfctl export demo --format argocd-plugin --repo-url https://git.example.com/ml/platform.git \\
          --plugin-image registry.example.com/kfctl:1.0 --output-dir argocd
      kfctl export clusters/prod --format argocd --path clusters/prod --output-dir argocd/prod \\
          --repo-url https://git.example.com/ml/platform.git --fleet kubeflow.org/fleet=prod
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
        fleet=fleet,
        fleet_parameters=fleet_parameters,
    )
    argocd_fleet.check_options(fleet, fleet_parameters, fmt)
    if fleet is not None:
        options = replace(options, fleet_path=argocd_fleet.source_path(kfdef.app_dir, repo_path, output_dir))
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
