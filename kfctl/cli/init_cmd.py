"""`kfctl init`: the command-line face of kfctl.app.init."""

from __future__ import annotations

from pathlib import Path

import click

from kfctl.app.init import init_app
from kfctl.catalog.load import load_catalog
from kfctl.cli.options import get_options, global_options
from kfctl.cli.output import emit


@click.command()
@click.argument("app_dir", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--platform",
    "-p",
    required=True,
    metavar="NAME",
    help="Cluster kind: kind, gcp, aws, azure or generic (an existing cluster).",
)
@click.option(
    "--components",
    "-c",
    metavar="A,B,...",
    default=None,
    help="Components to install (default: the platform's set). Dependencies are added automatically.",
)
@click.option("--namespace", "-n", default="kubeflow", show_default=True, help="Namespace of kfctl's inventory.")
@click.option("--force", is_flag=True, help="Overwrite an existing APPDIR/kfdef.yaml.")
@global_options
def init(app_dir: Path, platform: str, components: str | None, namespace: str, force: bool) -> None:
    """Scaffold APPDIR with a commented KfDef for a platform and a set of components.

    Works offline: component names come from the catalog shipped with kfctl. An existing
    kfdef.yaml is never overwritten without --force.

    \b
    Examples:
      kfctl init demo --platform kind
      kfctl init prod --platform aws --components training-operator,katib
    """
    opts = get_options()
    requested = [c.strip() for c in components.split(",") if c.strip()] if components is not None else None
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
    )
