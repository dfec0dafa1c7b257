"""`kfctl init`: the command-line face of kfctl.app.init."""

from __future__ import annotations

from pathlib import Path

import click

from kfctl.app.init import init_app
from kfctl.app.init_upstream import init_upstream
from kfctl.catalog.load import load_catalog
from kfctl.cli import completion
from kfctl.cli.options import OnceOption, get_options, global_options
from kfctl.cli.output import emit
from kfctl.cli.target import AppDir
from kfctl.errors import UsageError
from kfctl.repos.mirror import parse_flags
from kfctl.wording import counted


@click.command()
@click.argument("app_dir", type=AppDir(file_okay=False, path_type=Path, kfdef_flag=False))
@click.option(
    "--platform",
    "-p",
    cls=OnceOption,
    default=None,
    metavar="NAME",
    shell_complete=completion.platforms,
    help="Cluster kind: kind, gcp, aws, azure or generic (an existing cluster). Required without --upstream.",
)
@click.option(
    "--upstream",
    metavar="RELEASE",
    cls=OnceOption,
    default=None,
    help="Scaffold upstream Kubeflow's full platform instead: one application per resource line of the "
    "release's example/kustomization.yaml. A tag (v1.11.0) or the URL or path of a release archive.",
)
@click.option(
    "--mirror",
    "mirror_flags",
    multiple=True,
    metavar="URL_PREFIX=LOCATION",
    help="With --upstream: fetch URLs starting with URL_PREFIX from LOCATION; written into spec.mirrors.",
)
@click.option(
    "--components",
    "-c",
    metavar="A,B,...",
    default=None,
    shell_complete=completion.components,
    help="Components to install (default: the platform's set). Dependencies are added automatically.",
)
@click.option(
    "--inventory-namespace",
    "-n",
    "namespace",
    default="kubeflow",
    show_default=True,
    metavar="NS",
    help="Where kfctl keeps its record of the install and its lock (metadata.namespace). Objects go where their "
    "manifests say (kfctl plan shows it).",
)
@click.option("--force", is_flag=True, help="Overwrite an existing APPDIR/kfdef.yaml.")
@global_options
def init(
    app_dir: Path,
    platform: str | None,
    upstream: str | None,
    mirror_flags: tuple[str, ...],
    components: str | None,
    namespace: str,
    force: bool,
) -> None:
    """Scaffold APPDIR with a commented KfDef for a platform and a set of components.

    Works offline: component names come from the catalog shipped with kfctl. An existing
    kfdef.yaml is never overwritten without --force.

    With --upstream RELEASE it scaffolds upstream Kubeflow's full platform instead (Istio and
    login, the dashboard, profiles, notebooks, Pipelines, Katib, KServe, Spark ...): it fetches
    the release and writes one application per line of its example/kustomization.yaml.

    \b
    Examples:
      kfctl init demo --platform kind
      kfctl init prod --platform aws --components training-operator,katib
      kfctl init kubeflow --upstream v1.11.0
      kfctl init kubeflow --upstream v1.11.0 --mirror https://github.com/=https://git.internal/github/
    """
    opts = get_options()
    if upstream is not None:
        if components is not None:
            raise UsageError("--components picks catalog components; --upstream takes the release's own lines")
        mirrors = parse_flags(mirror_flags, base_dir=Path.cwd())
        up = init_upstream(
            app_dir=app_dir,
            release=upstream,
            namespace=namespace,
            platform=platform or "generic",
            mirrors=mirrors,
            force=force,
        )
        applications = counted(len(up.applications), "application")
        text = [f"Wrote {up.kfdef} (upstream Kubeflow {up.release}, {applications} from {up.uri})"]
        if up.not_applied:
            text.append(f"Not applied (kustomize Components of upstream's example): {', '.join(up.not_applied)}")
        text.append(f"Next: kfctl generate {app_dir}")
        emit(
            opts,
            {
                "kfdef": str(up.kfdef),
                "release": up.release,
                "uri": up.uri,
                "applications": list(up.applications),
                "notApplied": list(up.not_applied),
            },
            "\n".join(text),
            quiet="",  # the result is the file
        )
        return
    if mirror_flags:
        raise UsageError("--mirror goes with --upstream (for the catalog, set spec.mirrors in the KfDef)")
    if platform is None:
        raise UsageError(
            "Missing option '--platform' / '-p'.",
            hint="name the cluster kind (kfctl init demo --platform kind), or scaffold upstream Kubeflow (--upstream)",
        )
    requested = [c.strip() for c in components.split(",") if c.strip()] if components is not None else None
    if requested == []:
        raise UsageError(
            f"--components {components!r} names no component: a KfDef without applications installs nothing",
            hint="leave --components out for the platform's defaults, or name some: kfctl catalog lists them",
        )
    result = init_app(
        load_catalog(),
        app_dir=app_dir,
        platform=platform,
        components=requested,
        namespace=namespace,
        force=force,
    )
    text = [f"Wrote {result.kfdef} (platform {result.platform}): {', '.join(result.components)}"]
    if result.added_dependencies:
        text.append(f"Added dependencies: {', '.join(result.added_dependencies)}")
    if result.required_platform_parameters:
        text.append(f"Set {', '.join(result.required_platform_parameters)} in the plugin spec before `kfctl generate`.")
    text.append(f"Next: kfctl generate {app_dir}")
    emit(
        opts,
        {
            "kfdef": str(result.kfdef),
            "platform": result.platform,
            "components": list(result.components),
            "addedDependencies": list(result.added_dependencies),
            "requiredPlatformParameters": list(result.required_platform_parameters),
        },
        "\n".join(text),
        quiet="",  # the result is the file
    )
