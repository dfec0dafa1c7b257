"""Turn a kfctl v1 KfDef into one on the built-in catalog: the pure part of `kfctl migrate`.

A raw YAML document in; out come the new document, what became of every application and setting, and the
text of the new file. Which v1 package became which component is data in :mod:`kfctl.migrate.legacy`; this
module applies it and adds what the catalog needs besides (the dependencies of the chosen components, the
platform's parameters). It reads and writes no files and prints nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import yaml

from kfctl.catalog import paramtypes
from kfctl.catalog.model import Catalog, with_dependencies
from kfctl.config.model import API_GROUP, BUILTIN_REPO, SUPPORTED_VERSIONS
from kfctl.errors import ConfigError, must_be
from kfctl.migrate import legacy

UNKNOWN = "not a kfctl v1 package kfctl migrate knows; add it back by hand (as an application from a repo of yours)"


@dataclass(frozen=True)
class Part:
    """One package of an umbrella stack (kubeflow-apps) and what became of it."""

    path: str
    components: tuple[str, ...]
    dropped: str | None = None


@dataclass(frozen=True)
class AppMapping:
    """What became of one v1 application: catalog components, or the reason it has none."""

    name: str
    path: str  # its repoRef path; "" without one
    components: tuple[str, ...] = ()
    dropped: str | None = None
    note: str = ""  # what the successor does not do that the v1 application did
    parts: tuple[Part, ...] = ()  # an umbrella stack's packages
    kept: bool = False  # an application from a repo of the user's own: written as it was


Outcome = Literal["carried", "not needed", "dropped"]


@dataclass(frozen=True)
class Setting:
    """A parameter, overlay or plugin field of the v1 KfDef and what became of it."""

    source: str  # the v1 application, or "plugin <kind>"
    kind: Literal["parameter", "overlay", "plugin"]
    name: str
    value: str
    outcome: Outcome
    target: str  # where a carried value went ("notebook-controller.useIstio"), or the component it concerned
    reason: str = ""


@dataclass(frozen=True)
class Migration:
    document: dict[str, Any]
    name: str
    name_from_directory: bool  # metadata.name was not set: kfctl v1 named the install after its directory
    namespace: str
    platform: str
    platform_from: str  # how the platform was chosen, for a person
    applications: tuple[AppMapping, ...]
    components: tuple[str, ...]  # the catalog applications written, in the file's order
    added: tuple[str, ...]  # of those, the ones no v1 application asked for: dependencies of the others
    settings: tuple[Setting, ...]
    unset: tuple[str, ...]  # required platform parameters without a value: "name (description)"
    replaced_repos: tuple[tuple[str, str], ...] = ()  # (name, uri) of each kubeflow/manifests repo the catalog replaces

    @property
    def written(self) -> tuple[str, ...]:
        """Every application of the new file: the catalog's, then those kept from the user's own repos."""
        return (*self.components, *(a.name for a in self.applications if a.kept))

    @property
    def dropped(self) -> bool:
        """Whether anything of the v1 KfDef has no place in the new one (`kfctl migrate --check` fails)."""
        return (
            any(a.dropped for a in self.applications)
            or any(p.dropped for a in self.applications for p in a.parts)
            or any(s.outcome == "dropped" for s in self.settings)
        )


def migrate(doc: Any, catalog: Catalog, *, default_name: str) -> Migration:
    """The v1 KfDef ``doc`` (as YAML loaded it) on ``catalog``. ``default_name`` names the install when
    metadata.name is not set (every official v1 KfDef lacks it: kfctl v1 used the app directory's name)."""
    spec = _shape(doc)
    meta = _mapping(doc.get("metadata"))
    named = isinstance(meta.get("name"), str) and bool(meta["name"])
    name = str(meta["name"]) if named else default_name
    namespace = str(meta.get("namespace") or "kubeflow")
    repos = {r["name"]: r for r in _mappings(spec.get("repos")) if isinstance(r.get("name"), str)}
    settings: list[Setting] = []
    platform, platform_from, plugin = _platform(spec, catalog, settings)
    state = _Applications(catalog, platform, repos, settings)
    for app in _mappings(spec.get("applications")):
        state.add(app)
    ordered = with_dependencies(catalog, state.requested)
    added = tuple(c for c in ordered if c not in state.requested)
    plugin_values, unset = _platform_parameters(
        catalog, platform, plugin, name=name, settings=settings, components=ordered
    )
    document = _document(
        catalog,
        name=name,
        namespace=namespace,
        platform=platform,
        components=ordered,
        state=state,
        plugin_values=plugin_values,
    )
    return Migration(
        document=document,
        name=name,
        name_from_directory=not named,
        namespace=namespace,
        platform=platform,
        platform_from=platform_from,
        applications=tuple(state.mappings),
        components=tuple(ordered),
        added=added,
        settings=tuple(settings),
        unset=unset,
        replaced_repos=tuple(
            (str(r["name"]), str(r.get("uri") or ""))
            for r in repos.values()
            if r not in state.kept_repos and r.get("uri") != BUILTIN_REPO.uri
        ),
    )


def _shape(doc: Any) -> dict[str, Any]:
    """The spec of a v1 KfDef; a ConfigError for anything that is not one."""
    if not isinstance(doc, dict) or doc.get("kind") != "KfDef":
        raise ConfigError("not a KfDef: expected a mapping with kind: KfDef")
    version = doc.get("apiVersion")
    supported = [f"{API_GROUP}/{v}" for v in SUPPORTED_VERSIONS]
    if version not in supported:
        raise ConfigError(
            must_be("apiVersion", f"one of {', '.join(supported)}", version, present="apiVersion" in doc),
            hint="kfctl migrate reads the KfDefs of kfctl v1.0 to v1.2; a v1alpha1 one (kfctl v0.x) has no "
            "spec.applications to map",
        )
    spec = doc.get("spec")
    if not isinstance(spec, dict) or not isinstance(spec.get("applications"), list):
        raise ConfigError("spec.applications: expected the list of applications of a v1 KfDef")
    return spec


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _mappings(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _text(value: Any) -> str:
    """A scalar as kfctl v1 passed it to params.env: YAML true is "true", not Python's "True"."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _platform(
    spec: Mapping[str, Any], catalog: Catalog, settings: list[Setting]
) -> tuple[str, str, dict[str, Any] | None]:
    """The catalog platform, why, and the v1 plugin it came from. kfctl v1 had no platform field: the plugin
    kind said it (KfGcpPlugin, KfAwsPlugin), and a KfDef without one was for an existing cluster."""
    by_kind = {p.plugin: (p.name, "") for p in catalog.platforms.values() if p.plugin} | legacy.LEGACY_PLUGINS
    plugins = _mappings(spec.get("plugins"))
    chosen: tuple[str, str, dict[str, Any] | None] | None = None
    given = spec.get("platform")
    if isinstance(given, str) and given in catalog.platforms:  # a KfDef of today's kfctl: its own plugin
        own = catalog.platforms[given].plugin
        chosen = (given, "spec.platform", next((p for p in plugins if own and p.get("kind") == own), None))
    for plugin in plugins:
        kind = plugin.get("kind")
        if chosen is not None and plugin is chosen[2]:
            continue
        if kind in by_kind and chosen is None:
            platform, why = by_kind[kind]
            chosen = (platform, f"plugin {kind}" + (f": {why}" if why else ""), plugin)
            continue
        reason = (
            f"a second platform plugin; platform {chosen[0]} was chosen"
            if kind in by_kind and chosen is not None
            else "a plugin kind kfctl v1 did not have and no catalog platform takes"
        )
        settings.append(Setting(f"plugin {kind}", "plugin", str(kind), "", "dropped", "", reason))
    return chosen or ("generic", "no plugin: an existing cluster", None)


class _Applications:
    """Walks the v1 applications once, collecting mappings, the components asked for and their settings."""

    def __init__(
        self, catalog: Catalog, platform: str, repos: dict[str, dict[str, Any]], settings: list[Setting]
    ) -> None:
        self.catalog = catalog
        self.platform = platform
        self.repos = repos
        self.settings = settings
        self.mappings: list[AppMapping] = []
        self.requested: list[str] = []  # components, in the order v1 applications first asked for them
        self.parameters: dict[str, dict[str, tuple[Any, str]]] = {}  # component → name → (value, from app)
        self.overlays: dict[str, list[str]] = {}
        self.kept: list[dict[str, Any]] = []  # applications from the user's own repos, verbatim
        self.kept_repos: list[dict[str, Any]] = []

    def add(self, app: dict[str, Any]) -> None:
        name = str(app.get("name") or "")
        kc = _mapping(app.get("kustomizeConfig"))
        ref = _mapping(kc.get("repoRef"))
        path = str(ref.get("path") or "").strip("/")
        repo = self.repos.get(str(ref.get("name") or ""))
        if repo is not None and repo.get("uri") == BUILTIN_REPO.uri:
            component = path.removeprefix("manifests/")
            outcome = legacy.Successor((component,)) if component in self.catalog.components else None
            self.map(name, path, ("", outcome) if outcome else None, kc)
        elif repo is not None and not _kubeflow_manifests(repo):
            self.keep(name, path, app, repo)
        elif path in legacy.STACKS:
            self.stack(name, path)
        else:
            self.map(name, path, legacy.package_outcome(path, name), kc)

    def map(self, name: str, path: str, found: tuple[str, legacy.Outcome] | None, kc: Mapping[str, Any]) -> None:
        """``found``: the legacy table's key and outcome for the application (None: not in the table)."""
        if found is None:
            self.mappings.append(AppMapping(name, path, dropped=UNKNOWN))
            return
        key, outcome = found
        if isinstance(outcome, legacy.NoSuccessor):
            self.mappings.append(AppMapping(name, path, dropped=outcome.reason))
            return
        unsupported = self.unsupported(outcome.components)
        if unsupported:
            self.mappings.append(AppMapping(name, path, dropped=unsupported))
            return
        self.request(outcome.components)
        self.mappings.append(AppMapping(name, path, outcome.components, note=outcome.note))
        self.settings_of(name, key, outcome.components[0], kc)

    def stack(self, name: str, path: str) -> None:
        parts: list[Part] = []
        components: list[str] = []
        for part_path in legacy.STACKS[path]:
            found = legacy.package_outcome(part_path, "")
            outcome = found[1] if found else None
            if outcome is None or isinstance(outcome, legacy.NoSuccessor):
                parts.append(Part(part_path, (), outcome.reason if outcome else UNKNOWN))
                continue
            unsupported = self.unsupported(outcome.components)
            if unsupported:
                parts.append(Part(part_path, (), unsupported))
                continue
            parts.append(Part(part_path, outcome.components))
            components += [c for c in outcome.components if c not in components]
        self.request(tuple(components))
        note = f"stack {path} of kubeflow/manifests v1.2; its packages one by one below"
        self.mappings.append(AppMapping(name, path, tuple(components), note=note, parts=tuple(parts)))

    def keep(self, name: str, path: str, app: dict[str, Any], repo: dict[str, Any]) -> None:
        if name in self.catalog.components:
            # The catalog application of that name would clash with it ("defined twice").
            reason = f'its name is the catalog component "{name}"\'s; rename it and add it back'
            self.mappings.append(AppMapping(name, path, dropped=reason))
            return
        self.kept.append(app)
        if repo not in self.kept_repos:
            self.kept_repos.append(repo)
        self.mappings.append(AppMapping(name, path, kept=True, note=f"from your repo {repo['name']}, as it was"))

    def unsupported(self, components: tuple[str, ...]) -> str:
        for c in components:
            platforms = self.catalog.components[c].platforms
            if platforms and self.platform not in platforms:
                return f'catalog component "{c}" does not support platform "{self.platform}"'
        return ""

    def request(self, components: tuple[str, ...]) -> None:
        self.requested += [c for c in components if c not in self.requested]

    def settings_of(self, app: str, key: str, component: str, kc: Mapping[str, Any]) -> None:
        """The v1.0 parameters and overlays of one application, carried to ``component`` or reported."""
        for item in _mappings(kc.get("parameters")):
            pname = str(item.get("name") or "")
            value = item.get("value")
            outcome, target, reason = self.parameter(component, pname, value)
            if outcome == "carried":
                taken = self.parameters.setdefault(component, {})
                param = target.split(".", 1)[1]
                if param in taken and taken[param][0] != self.coerced(component, param, value):
                    first_value, first_app = taken[param]
                    outcome, reason = "dropped", f"conflicts with {first_value!r} from application {first_app}"
                else:
                    taken.setdefault(param, (self.coerced(component, param, value), app))
            self.settings.append(Setting(app, "parameter", pname, _text(value), outcome, target, reason))
        overlays = kc.get("overlays")
        for overlay in overlays if isinstance(overlays, list) else []:
            outcome, reason = self.overlay(key, component, str(overlay))
            if outcome == "carried":
                self.overlays.setdefault(component, [])
                if overlay not in self.overlays[component]:
                    self.overlays[component].append(str(overlay))
            self.settings.append(Setting(app, "overlay", str(overlay), "", outcome, component, reason))

    def parameter(self, component: str, pname: str, value: Any) -> tuple[Outcome, str, str]:
        comp = self.catalog.components[component]
        rule = legacy.PARAMETERS.get((component, pname))
        if rule is None and pname == "namespace":
            rule = legacy.Fixed(comp.namespace, f"the catalog installs {component} into namespace {comp.namespace}")
        if rule is None and pname in comp.parameters:
            rule = legacy.Carry(pname)
        if rule is None:
            rule = legacy.Drop(f"{component} has no such parameter (`kfctl catalog {component}` lists them)")
        if isinstance(rule, legacy.Carry):
            if value is None:
                return "dropped", component, "no value"
            _, mismatch = paramtypes.check(comp.parameters[rule.parameter], _text(value))
            if mismatch:
                return "dropped", component, f"{component}.{rule.parameter} {mismatch}"
            return "carried", f"{component}.{rule.parameter}", ""
        if isinstance(rule, legacy.Fixed):
            if _text(value) == rule.value:
                return "not needed", component, rule.reason
            return "dropped", component, rule.reason
        return "dropped", component, rule.reason

    def coerced(self, component: str, param: str, value: Any) -> Any:
        """The value as the catalog parameter's type (v1 values were params.env strings), None if it is not one."""
        typed, mismatch = paramtypes.check(self.catalog.components[component].parameters[param], _text(value))
        return None if mismatch else typed

    def overlay(self, key: str, component: str, overlay: str) -> tuple[Outcome, str]:
        if overlay in self.catalog.overlays:
            return "carried", ""
        rule = legacy.OVERLAYS.get((key, overlay)) or legacy.OVERLAYS.get(("*", overlay))
        if isinstance(rule, legacy.Fixed):
            return "not needed", rule.reason
        if isinstance(rule, legacy.Drop):
            return "dropped", rule.reason
        return "dropped", f"an overlay of the v1 package; the catalog's {component} has none like it"


def _kubeflow_manifests(repo: Mapping[str, Any]) -> bool:
    """The kubeflow/manifests repo of the official KfDefs (or a fork of it kept under its usual name)."""
    return repo.get("name") == BUILTIN_REPO.name or "kubeflow/manifests" in str(repo.get("uri") or "")


def _platform_parameters(
    catalog: Catalog,
    platform: str,
    plugin: dict[str, Any] | None,
    *,
    name: str,
    settings: list[Setting],
    components: list[str],
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """The values of the platform's parameters: from the v1 plugin's spec, from the install's name where
    kfctl v1 took the cluster's name from it, and "" for a required one nobody knows (the user sets it)."""
    plat = catalog.platforms[platform]
    values: dict[str, Any] = {}
    if plugin is not None:
        kind = str(plugin.get("kind"))
        source = f"plugin {kind}"
        for field, value in _mapping(plugin.get("spec")).items():
            # v1's GcpPluginSpec project and zone, AwsPluginSpec region: the catalog parameters of those names.
            param = field if field in plat.parameters else None
            mismatch = paramtypes.check(plat.parameters[param], value)[1] if param and value not in (None, "") else None
            if param is not None and value not in (None, "") and mismatch is None:
                values[param] = value
                settings.append(Setting(source, "plugin", field, _text(value), "carried", f"{platform}.{param}"))
            elif mismatch is not None:
                reason = f"{platform}.{param} {mismatch}"
                settings.append(Setting(source, "plugin", field, _text(value), "dropped", platform, reason))
            else:
                reason = legacy.PLUGIN_FIELD_REASONS.get(
                    field, f"a kfctl v1 {kind} setting with no equivalent in platform {platform}"
                )
                shown = "…" if isinstance(value, (dict, list)) else _text(value)
                settings.append(Setting(source, "plugin", field, shown, "dropped", platform, reason))
    if platform in legacy.NAME_SETTINGS:
        param, why = legacy.NAME_SETTINGS[platform]
        if param in plat.parameters and param not in values:
            values[param] = name
            settings.append(Setting("metadata.name", "plugin", "name", name, "carried", f"{platform}.{param}", why))
    unset = []
    for pname, param_spec in sorted(plat.parameters.items()):
        if param_spec.required_for(components) and pname not in values:
            values[pname] = ""
            unset.append(f"{pname} ({' '.join(param_spec.description.split())})")
    return dict(sorted(values.items())), tuple(unset)


def _document(
    catalog: Catalog,
    *,
    name: str,
    namespace: str,
    platform: str,
    components: list[str],
    state: _Applications,
    plugin_values: dict[str, Any],
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "platform": platform,
        "repos": [{"name": BUILTIN_REPO.name, "uri": BUILTIN_REPO.uri}, *state.kept_repos],
    }
    plat = catalog.platforms[platform]
    if plugin_values and plat.plugin:
        spec["plugins"] = [{"kind": plat.plugin, "metadata": {"name": platform}, "spec": plugin_values}]
    apps: list[dict[str, Any]] = []
    for component in components:
        kc: dict[str, Any] = {"repoRef": {"name": BUILTIN_REPO.name, "path": f"manifests/{component}"}}
        if state.overlays.get(component):
            kc["overlays"] = state.overlays[component]
        params = state.parameters.get(component, {})
        if params:
            kc["parameters"] = [{"name": p, "value": v} for p, (v, _app) in params.items()]
        apps.append({"name": component, "kustomizeConfig": kc})
    spec["applications"] = apps + state.kept
    return {
        "apiVersion": f"{API_GROUP}/v1",
        "kind": "KfDef",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def render(migration: Migration, *, source: str) -> str:
    """The new KfDef's text: a comment header (where it came from, what was dropped and why, what to set),
    then the document. The header is the record a reviewer reads in the commit that adds the file."""
    m = migration
    lines = [f"# Migrated from {source} by `kfctl migrate`: its kfctl v1 applications mapped to kfctl's catalog."]
    if m.name_from_directory:
        lines.append(
            f"# metadata.name was not set: the install is named {m.name!r} after the file's directory, as kfctl v1 "
            "named installs."
        )
    lines.append(f"# Platform {m.platform}: {m.platform_from}.")
    lines.append("# Applications (v1 -> catalog):")
    for a in m.applications:
        if a.dropped is None:
            target = "kept, " + a.note if a.kept else ", ".join(a.components)
            lines.append(f"#   {a.name} -> {target}")
    if m.added:
        lines.append(f"#   (added, needed by the others: {', '.join(m.added)})")
    lines += [f"# {line}" for line in replaced_repo_lines(m)]
    dropped = [a for a in m.applications if a.dropped]
    parts = [(a, p) for a in m.applications for p in a.parts if p.dropped]
    if dropped or parts:
        lines.append("# Not migrated (no successor in the catalog):")
        lines += [f"#   {a.name} ({a.path or 'no repoRef'}): {a.dropped}" for a in dropped]
        lines += [f"#   {a.name} / {p.path}: {p.dropped}" for a, p in parts]
    lost = [s for s in m.settings if s.outcome == "dropped"]
    if lost:
        lines.append("# Settings dropped:")
        lines += [f"#   {describe(s)}: {s.reason}" for s in lost]
    if m.unset:
        lines.append(f"# Set before `kfctl generate` (plugin spec of platform {m.platform}):")
        lines += [f"#   {u}" for u in m.unset]
    body = yaml.safe_dump(m.document, sort_keys=False, default_flow_style=False, allow_unicode=True, width=120)
    return "\n".join(lines) + "\n" + body


def replaced_repo_lines(m: Migration) -> list[str]:
    """One line per v1 repo the catalog takes the place of: which, and with what."""
    return [
        f"Repo {name}: {uri or '(no uri)'} replaced by {BUILTIN_REPO.uri}, the catalog built into kfctl"
        for name, uri in m.replaced_repos
    ]


def describe(s: Setting) -> str:
    """A setting as a person names it: "katib-controller parameter namespace=katib", "plugin KfGcpPlugin
    spec.project=my-proj", "metadata.name=kf" (not "plugin KfGcpPlugin plugin project=…")."""
    value = f"={s.value}" if s.value else ""
    if s.kind != "plugin":
        return f"{s.source} {s.kind} {s.name}{value}"
    if s.source == f"plugin {s.name}":  # the whole plugin
        return s.source
    if s.source == f"metadata.{s.name}":
        return f"{s.source}{value}"
    return f"{s.source} spec.{s.name}{value}"
