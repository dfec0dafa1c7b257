"""`kfctl catalog`: what the built-in catalog offers — components, their parameters, overlays, platforms."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import click

from kfctl.catalog.load import load_catalog
from kfctl.catalog.model import REMOVED_COMPONENTS, Catalog, ParameterSpec, first_sentence
from kfctl.cli import completion
from kfctl.cli.options import get_options, global_options
from kfctl.cli.output import emit
from kfctl.config.loader import did_you_mean
from kfctl.errors import UsageError


def _param(p: ParameterSpec) -> dict[str, Any]:
    return {"name": p.name, "type": p.type, "default": p.default, "required": p.required, "description": p.description}


def _parameter_lines(parameters: Mapping[str, ParameterSpec]) -> list[str]:
    lines = ["  parameters:" if parameters else "  parameters: none"]
    for p in parameters.values():
        default = "required" if p.required else f"default {p.default!r}"
        lines.append(f"    {p.name} ({p.type}, {default}): {p.description}")
    return lines


def _component_text(catalog: Catalog, name: str) -> tuple[dict[str, Any], str]:
    c = catalog.components[name]
    data = {
        "name": c.name,
        "description": c.description,
        "namespace": c.namespace,
        "dependsOn": list(c.depends_on),
        "platforms": list(c.platforms),
        "overlays": list(c.overlays),
        "parameters": [_param(p) for p in c.parameters.values()],
        "secrets": [
            {"name": s.name, "keys": list(s.key_names), "protects": s.protects, "parameter": s.parameter}
            for s in c.secrets
        ],
        "health": c.health,
    }
    lines = [
        f"{c.name} (namespace {c.namespace or '-'})",
        f"  {c.description}",
        f"  depends on: {', '.join(c.depends_on) or '-'}",
        f"  platforms:  {', '.join(c.platforms) or 'all'}",
        *_parameter_lines(c.parameters),
    ]
    for s in c.secrets:
        bring = f"; bring your own with {s.parameter}" if s.parameter else ""
        lines.append(f"  generated Secret {s.name} (keys {', '.join(s.key_names)}){bring}")
    if c.health:
        lines.append(f"  health: {' '.join(c.health.split())}")
    return data, "\n".join(lines)


def _platform_text(catalog: Catalog, name: str) -> tuple[dict[str, Any], str]:
    p = catalog.platforms[name]
    data = {
        "name": p.name,
        "description": p.description,
        "plugin": p.plugin,
        "storageClass": p.storage_class,
        "defaultComponents": list(p.default_components),
        "patchedComponents": list(p.patched_components),
        "parameters": [_param(x) for x in p.parameters.values()],
    }
    lines = [
        f"{p.name} (platform)",
        f"  {p.description}",
        f"  plugin:     {p.plugin or 'none (no spec to fill in)'}",
        f"  storage:    StorageClass {p.storage_class or '(the cluster default)'}",
        f"  default:    {', '.join(p.default_components)}",
        f"  patches:    {', '.join(p.patched_components) or '-'}",
        *_parameter_lines(p.parameters),
        f"  scaffold:   kfctl init APPDIR --platform {p.name}",
    ]
    return data, "\n".join(lines)


@click.command()
@click.argument("name", metavar="[NAME]", required=False, shell_complete=completion.catalog_entries)
@global_options
def catalog(name: str | None) -> None:
    """List the built-in components, overlays and platforms, or show one of them: a component's or an
    overlay's parameters, a platform's defaults and parameters.

    \b
    Examples:
      kfctl catalog
      kfctl catalog katib -o json
      kfctl catalog image-mirror
      kfctl catalog aws
    """
    opts = get_options()
    cat = load_catalog()
    component = name
    if component is not None and component not in cat.components and component in cat.platforms:
        data, text = _platform_text(cat, component)
        emit(opts, data, text)
        return
    if component is not None and component in cat.overlays:
        overlay = cat.overlays[component]
        lines = [f"{overlay.name} (overlay)", f"  {overlay.description}", *_parameter_lines(overlay.parameters)]
        data = {
            "name": overlay.name,
            "description": overlay.description,
            "parameters": [_param(p) for p in overlay.parameters.values()],
        }
        emit(opts, data, "\n".join(lines))
        return
    if component is not None:
        if component not in cat.components:
            if component.lower() in REMOVED_COMPONENTS:
                raise UsageError(f'component "{component}" is not available: {REMOVED_COMPONENTS[component.lower()]}')
            raise UsageError(
                f'unknown component "{component}"'
                + did_you_mean(component, [*cat.components, *cat.overlays, *cat.platforms]),
                hint="`kfctl catalog` lists the components, overlays and platforms",
            )
        data, text = _component_text(cat, component)
        emit(opts, data, text)
        return
    lines = ["Components:"]
    lines += [f"  {c.name:<22} {first_sentence(c.description, width=76)}" for c in cat.components.values()]
    lines.append("Overlays:")
    lines += [f"  {o.name:<22} {first_sentence(o.description, width=76)}" for o in cat.overlays.values()]
    lines.append("Platforms:")
    lines += [f"  {p.name:<22} default: {', '.join(p.default_components)}" for p in cat.platforms.values()]
    emit(
        opts,
        {
            "components": {n: c.description for n, c in cat.components.items()},
            "overlays": {
                n: {"description": o.description, "parameters": [_param(p) for p in o.parameters.values()]}
                for n, o in cat.overlays.items()
            },
            "platforms": {
                n: {
                    "plugin": p.plugin,
                    "defaultComponents": list(p.default_components),
                    "parameters": [_param(x) for x in p.parameters.values()],
                }
                for n, p in cat.platforms.items()
            },
        },
        "\n".join(lines),
    )
