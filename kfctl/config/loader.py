"""Load and validate a KfDef file, reporting every problem at once.

Two passes over the document: the shape (known keys, types, required fields) and then the meaning against
the catalog (repos defined, components/overlays/platforms known, parameters declared and well-typed,
dependencies enabled). Each problem names file:line:column and the field path, with a did-you-mean where a
near name exists. Any failure is one ConfigError whose ``details`` hold all problems. This module never
writes the KfDef.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

import yaml

from kfctl import yamlio
from kfctl.catalog import paramtypes
from kfctl.catalog.model import REMOVED_COMPONENTS, Catalog, ParameterSpec, secret_reference_problem
from kfctl.config.located import Located, format_path, load_located
from kfctl.config.located import Path as FieldPath
from kfctl.config.model import (
    API_GROUP,
    BUILTIN_REPO,
    DNS_LABEL,
    DNS_LABEL_RULE,
    SUPPORTED_VERSIONS,
    Application,
    KfDef,
    Mirror,
    Plugin,
    Repo,
)
from kfctl.config.repouri import UriProblem, uri_kind
from kfctl.errors import ConfigError, must_be
from kfctl.health.waitrules import CODED_KINDS, CONDITION_STATUSES, Match, WaitRule, as_text

_REPO_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")  # a directory name under vendor/repos/, .cache/repos/
_FIELD_PATH = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")  # a wait rule's field: status.phase
_API_GROUP = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$")  # "" is the core group

# Keys allowed at each level of the document. The comment says which ones are kfctl's own additions.
# What shows a valid KfDef: init writes one, commented field by field (its --help shows none).
EXAMPLE_HINT = "`kfctl init example --platform kind` writes a valid, commented KfDef into example/ to compare with"


def example_hint(platform: str) -> str:
    """EXAMPLE_HINT for the KfDef's own platform: an aws KfDef is best compared with an aws example (its
    plugin spec), not a kind one."""
    return EXAMPLE_HINT.replace("--platform kind", f"--platform {platform}")


TOP_KEYS = ("apiVersion", "kind", "metadata", "spec", "status")
METADATA_KEYS = ("name", "namespace", "labels", "annotations")
SPEC_KEYS = ("applications", "repos", "plugins", "version", "platform", "mirrors", "waitRules")  # the last 3: ours
MIRROR_KEYS = ("prefix", "location")
WAIT_RULE_KEYS = ("apiGroup", "kind", "ready", "failed")  # ours, as kapp's waitRules
WAIT_MATCH_KEYS = ("condition", "status", "field", "equals")
WAIT_RULES_HINT = (
    "docs/reference/kfdef.md (spec.waitRules) shows each field of a wait rule with an example, as "
    "{apiGroup: db.example.com, kind: Database, ready: [{condition: Deployed}], failed: [{condition: Failed}]}"
)
APP_KEYS = ("name", "kustomizeConfig", "dependsOn", "enabled", "external", "adopt")  # all but the first two: ours
KCONFIG_KEYS = ("repoRef", "overlays", "parameters")
REPOREF_KEYS = ("name", "path")
PARAM_KEYS = ("name", "value")
REPO_KEYS = ("name", "uri", "sha256", "ref")  # sha256, ref: ours
PLUGIN_KEYS = ("kind", "metadata", "spec", "name")
# Platform parameters kfctl v1 never wrote because it named the thing after the install (plugin kind, parameter).
V1_NAMED_AFTER_INSTALL = frozenset({("KfGcpPlugin", "cluster")})

V1ALPHA1_HINT = (
    "kfdef.apps.kubeflow.org/v1alpha1 used spec.components/componentParams/packages; rewrite each component "
    "as an entry of spec.applications[] with kustomizeConfig.repoRef and parameters[], set apiVersion to "
    "kfdef.apps.kubeflow.org/v1, or start from `kfctl init` (docs/kfdef.md: 'Migrating from v1alpha1')"
)


@dataclass
class Problems:
    """Collects problems with their positions; turns them into one ConfigError."""

    file: str
    doc: Located
    items: list[tuple[int, int, str]] = field(default_factory=list)
    hints: list[str] = field(default_factory=list)  # said before the general one, each once
    platform: str = "kind"  # the KfDef's, once known: the example the hint suggests

    def add(
        self,
        path: FieldPath,
        message: str,
        *,
        choices: Iterable[str] = (),
        bad: str = "",
        known: bool = False,
        also: str = "",
    ) -> None:
        """Record a problem; with ``bad``, suggest the nearest of ``choices`` (or list them all if ``known``);
        ``also`` ends the message, after the suggestion."""
        pos = self.doc.at(path)
        choices = sorted(choices)
        hint = did_you_mean(bad, choices) if bad else ""
        if known and not hint:
            hint = f"; known: {', '.join(choices) or 'none'}"
        text = f"{self.file}:{pos.line}:{pos.column} {format_path(path)}: {message}{hint}{also}"
        self.items.append((pos.line, pos.column, text))

    def raise_if_any(self) -> None:
        if not self.items:
            return
        lines = [t for _, _, t in sorted(self.items)]
        count = len(lines)
        raise ConfigError(
            f"{self.file}: {count} problem{'s' if count != 1 else ''} in the KfDef",
            details=lines,
            hint="; ".join([*dict.fromkeys(self.hints), f"fix the fields named above; {example_hint(self.platform)}"]),
        )


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.5)
    return f' (did you mean "{close[0]}"?)' if close else ""


def load_kfdef(path: Path, catalog: Catalog) -> KfDef:
    """Read, validate and resolve ``path``. Raises ConfigError listing every problem."""
    display = str(path)
    try:
        text = yamlio.read_text(path)  # at most yamlio.MAX_BYTES of UTF-8, whatever the file's size
    except FileNotFoundError as e:
        raise ConfigError(f"{display}: no such file", hint="create one with `kfctl init APPDIR --platform kind`") from e
    except OSError as e:
        raise ConfigError(f"{display}: cannot read: {e.strerror or e}") from e
    except yamlio.InputError as e:
        raise ConfigError(yamlio.describe(e, display)) from e
    return parse_kfdef(text, path=path, catalog=catalog)


def load_kfdef_stream(stream: IO[bytes], *, name: str, app_dir: Path, catalog: Catalog) -> KfDef:
    """A KfDef read from a stream (`-f -`, /dev/stdin, a pipe), named ``name`` in messages. It belongs to
    ``app_dir`` (what generate writes, what plan and diff compare with), never to the stream's own directory."""
    try:
        text = yamlio.decode(stream.read(yamlio.MAX_BYTES + 1), name=name)
    except OSError as e:
        raise ConfigError(f"{name}: cannot read: {e.strerror or e}") from e
    except yamlio.InputError as e:
        raise ConfigError(yamlio.describe(e, name)) from e
    return parse_kfdef(text, path=app_dir / "kfdef.yaml", catalog=catalog, display=name)


def parse_kfdef(text: str, *, path: Path, catalog: Catalog, display: str = "") -> KfDef:
    display = display or str(path)
    try:
        docs = load_located(text)
    except yaml.YAMLError as e:  # syntax, or past yamlio's limits: file:line:column either way
        raise ConfigError(yamlio.describe(e, display)) from e
    except (RecursionError, ValueError, TypeError, OverflowError) as e:
        raise ConfigError(f"{display}: invalid YAML: {e}") from e
    docs = [d for d in docs if d.value is not None]
    if len(docs) != 1:
        raise ConfigError(f"{display}: expected exactly one YAML document (a KfDef), found {len(docs)}")
    doc = docs[0]
    problems = Problems(display, doc)
    for p, message in doc.problems:
        problems.add(p, message)
    if not isinstance(doc.value, dict):
        problems.add((), f"a KfDef must be a mapping, got {_type_name(doc.value)}")
        problems.raise_if_any()
    kfdef = _Validator(problems, catalog, path).run(doc.value)
    problems.raise_if_any()
    assert kfdef is not None
    return kfdef


def _env_value(value: Any) -> str:
    """A params.env value as kfctl v1 wrote it: YAML's true/false lower-case, nothing as empty."""
    if value is None:
        return ""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _text(value: Any) -> str:
    """A value to suggest a near name for: text only."""
    return value if isinstance(value, str) else ""


def _type_name(value: Any) -> str:
    return {
        dict: "a mapping",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a number",
        type(None): "nothing (null)",
    }.get(type(value), type(value).__name__)


def _quote_hint(value: Any) -> str:
    """Why a scalar the user meant as text arrived as a number: YAML reads an all-digit
    commit prefix, `1.10` or `yes` as a number or boolean unless it is quoted."""
    if isinstance(value, bool | int | float):
        return " (YAML read the unquoted value as one; put it in quotes)"
    return ""


class _Validator:
    def __init__(self, problems: Problems, catalog: Catalog, path: Path) -> None:
        self.p = problems
        self.catalog = catalog
        self.path = path
        self.plugin_paths: list[FieldPath] = []  # where each accepted plugin sits, for messages
        self.notes: list[str] = []
        self.platform_name = "generic"
        self.install_name = ""
        # A repoRef naming no repo, by name: where each reference is (the first gets the message, naming the
        # others) and the application. Such an application has no component, so what only follows from that
        # (another application "needs component common, which no enabled application installs") is not said.
        self.unknown_repos: dict[str, list[tuple[FieldPath, str]]] = {}
        self.unresolved: dict[str, str] = {}  # application without a repo → the component its path names

    # -- shape helpers -------------------------------------------------------------------------------

    def keys(self, value: Mapping[str, Any], allowed: tuple[str, ...], path: FieldPath) -> None:
        for key in value:
            if key not in allowed:
                self.p.add((*path, key), f'unknown field "{key}"', choices=allowed, bad=key)

    def mapping(self, parent: Mapping[str, Any], key: str, path: FieldPath) -> dict[str, Any] | None:
        value = parent.get(key)
        if value is None:
            return None
        if not isinstance(value, dict):
            self.p.add((*path, key), f"must be a mapping, got {_type_name(value)}")
            return None
        return value

    def seq(self, parent: Mapping[str, Any], key: str, path: FieldPath) -> list[Any]:
        value = parent.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            self.p.add((*path, key), f"must be a list, got {_type_name(value)}")
            return []
        return value

    def string(self, parent: Mapping[str, Any], key: str, path: FieldPath, *, required: bool = False) -> str | None:
        value = parent.get(key)
        if value is None or value == "":
            if required:
                self.p.add((*path, key) if key in parent else path, f"{key} is required")
            return None
        if not isinstance(value, str):
            self.p.add((*path, key), f"must be a string, got {_type_name(value)}{_quote_hint(value)}")
            return None
        return value

    def items(self, parent: Mapping[str, Any], key: str, path: FieldPath) -> Iterable[tuple[FieldPath, dict[str, Any]]]:
        for i, item in enumerate(self.seq(parent, key, path)):
            ipath = (*path, key, i)
            if not isinstance(item, dict):
                self.p.add(ipath, f"must be a mapping, got {_type_name(item)}")
                continue
            yield ipath, item

    # -- the document --------------------------------------------------------------------------------

    def run(self, doc: dict[str, Any]) -> KfDef | None:
        if not {"apiVersion", "kind", "spec"} & doc.keys():
            # Not a KfDef at all (a shadow file parses as a mapping whose one key is the whole line): its keys are
            # the file's content, and an error message must not echo what kfctl was not meant to read.
            self.p.add((), f"not a KfDef: it has none of apiVersion, kind, spec ({len(doc)} other key(s), not shown)")
            return None
        self.keys(doc, TOP_KEYS, ())
        api_version = self.api_version(doc)
        kind = doc.get("kind")
        if kind != "KfDef":
            present = "kind" in doc
            self.p.add(
                ("kind",) if present else (), must_be("" if present else "kind", '"KfDef"', kind, present=present)
            )
        meta = self.mapping(doc, "metadata", ()) or {}
        if "metadata" not in doc:
            self.p.add((), "metadata is required (metadata.name names this platform)")
        else:
            self.keys(meta, METADATA_KEYS, ("metadata",))
        name = self.string(meta, "name", ("metadata",), required=not self.unnamed(meta)) or ""
        if name and not DNS_LABEL.match(name):
            self.p.add(("metadata", "name"), f"{name!r} must be {DNS_LABEL_RULE}")
        if not name and self.unnamed(meta):
            name = self.path.resolve().parent.name
            self.notes.append(
                f"{self.p.file}: metadata.name is not set; the install is named {name!r} after its directory, "
                "as kfctl v1 named it (set metadata.name to keep the name if the directory moves)"
            )
        namespace = self.string(meta, "namespace", ("metadata",)) or "kubeflow"
        if not DNS_LABEL.match(namespace):
            self.p.add(("metadata", "namespace"), f"{namespace!r} must be {DNS_LABEL_RULE}")
        spec = self.mapping(doc, "spec", ()) or {}
        if "spec" not in doc:
            self.p.add((), "spec is required (spec.applications lists what to install)")
        self.keys(spec, SPEC_KEYS, ("spec",))
        version = spec.get("version", "")
        if not isinstance(version, str):
            version = str(version)
        repos = self.repos(spec)
        plugins = self.plugins(spec)
        platform = self.platform(spec, plugins)
        self.platform_name = platform
        if platform in self.catalog.platforms and ("platform" in spec or plugins):
            self.p.platform = platform
        self.install_name = name
        apps = self.applications(spec, repos, platform)
        platform_params = self.platform_parameters(platform, plugins, apps)
        mirrors = self.mirrors(spec)
        wait_rules = self.wait_rules(spec)
        return KfDef(
            path=self.path,
            api_version=api_version,
            name=name,
            namespace=namespace,
            platform=platform,
            version=version,
            applications=tuple(apps),
            repos=tuple(repos.values()),
            plugins=tuple(plugins),
            platform_parameters=platform_params,
            mirrors=tuple(mirrors),
            wait_rules=tuple(wait_rules),
            notes=tuple(self.notes),
            legacy="platform" not in spec,
        )

    def unnamed(self, meta: Mapping[str, Any]) -> bool:
        """kfctl v1 named an install after its app directory, and none of the official v1.x KfDefs has a name:
        without one (the metadata mapping present), the directory's name serves when it is a DNS label."""
        return "name" not in meta and bool(DNS_LABEL.match(self.path.resolve().parent.name))

    def api_version(self, doc: Mapping[str, Any]) -> str:
        value = doc.get("apiVersion")
        supported = [f"{API_GROUP}/{v}" for v in SUPPORTED_VERSIONS]
        if value == f"{API_GROUP}/v1alpha1":
            self.p.add(("apiVersion",), "v1alpha1 is no longer supported; " + V1ALPHA1_HINT)
        elif not isinstance(value, str) or value not in supported:
            self.p.add(
                ("apiVersion",) if "apiVersion" in doc else (),
                must_be(
                    "" if "apiVersion" in doc else "apiVersion",
                    f"one of {', '.join(supported)}",
                    value,
                    present="apiVersion" in doc,
                ),
            )
        return value if isinstance(value, str) else ""

    def repos(self, spec: Mapping[str, Any]) -> dict[str, Repo]:
        repos: dict[str, Repo] = {}
        for path, item in self.items(spec, "repos", ("spec",)):
            self.keys(item, REPO_KEYS, path)
            name = self.string(item, "name", path, required=True)
            uri = self.string(item, "uri", path, required=True)
            sha = self.string(item, "sha256", path)
            ref = self.string(item, "ref", path)
            if sha is not None and not re.fullmatch(r"[0-9a-f]{64}", sha):
                self.p.add((*path, "sha256"), "must be 64 lowercase hex digits")
            if name is not None and not _REPO_NAME.match(name):
                self.p.add(
                    (*path, "name"),
                    f'repo name "{name}" may only use letters, digits, ".", "_" and "-" (it names a directory)',
                )
            if name is None or uri is None:
                continue
            if uri != BUILTIN_REPO.uri:
                try:
                    uri_kind(uri, ref=ref, sha256=sha)
                except UriProblem as e:  # what generate would refuse, said now with the rest
                    self.p.add((*path, e.field), e.message)
                    self.p.hints += [e.hint] if e.hint else []
            if name in repos:
                self.p.add((*path, "name"), f'repo "{name}" is defined twice')
                continue
            repos[name] = Repo(name=name, uri=uri, sha256=sha, ref=ref)
        return repos

    def mirrors(self, spec: Mapping[str, Any]) -> list[Mirror]:
        """Where remote repos and bases are fetched from instead (kfctl.repos.mirror); a relative local
        location is taken from the KfDef's directory."""
        mirrors: list[Mirror] = []
        seen: set[str] = set()
        for path, item in self.items(spec, "mirrors", ("spec",)):
            self.keys(item, MIRROR_KEYS, path)
            prefix = self.string(item, "prefix", path, required=True)
            location = self.string(item, "location", path, required=True)
            if prefix is None or location is None:
                continue
            if prefix in seen:
                self.p.add((*path, "prefix"), f'prefix "{prefix}" is mirrored twice')
                continue
            seen.add(prefix)
            if "://" not in location and not location.startswith("git@"):
                local = Path(location).expanduser()
                location = str(local if local.is_absolute() else (self.path.parent / local).resolve())
            mirrors.append(Mirror(prefix=prefix, location=location))
        return mirrors

    def wait_rules(self, spec: Mapping[str, Any]) -> list[WaitRule]:
        """spec.waitRules: for a custom kind, the conditions or fields that mean ready or failed
        (kfctl.health.waitrules), each replacing kfctl's rule for its kind."""
        rules: list[WaitRule] = []
        seen: dict[tuple[str, str], int] = {}
        said = len(self.p.items)
        for path, item in self.items(spec, "waitRules", ("spec",)):
            self.keys(item, WAIT_RULE_KEYS, path)
            group = item.get("apiGroup")
            if not isinstance(group, str) or not _API_GROUP.match(group):
                self.p.add(
                    (*path, "apiGroup") if "apiGroup" in item else path,
                    "apiGroup is required: the kind's API group as its apiVersion starts (serving.kserve.io for "
                    'serving.kserve.io/v1beta1), "" for the core group'
                    if "apiGroup" not in item
                    else must_be("", 'an API group (lowercase DNS name, or "" for the core group)', group),
                )
                group = None
            kind = self.string(item, "kind", path, required=True)
            ready = self.wait_matches(item, "ready", path)
            failed = self.wait_matches(item, "failed", path)
            if ready == failed == () and set(item) <= set(WAIT_RULE_KEYS):  # (a misspelt key is said already)
                says = "give ready, failed or both, each a list of conditions or fields"
                self.p.add(path, f"the rule for {kind or 'its kind'} says nothing: {says}")
            if group is None or kind is None or ready is None or failed is None or not (ready or failed):
                continue
            if (group, kind) in CODED_KINDS:
                self.p.add(
                    (*path, "kind"),
                    f"{kind} ({group or 'core'}) is judged by kfctl's own rule, which a wait rule cannot replace; "
                    "remove the rule (wait rules are for custom resources)",
                )
                continue
            if (group, kind) in seen:
                first = self.p.doc.at((*path[:-1], seen[(group, kind)])).line
                self.p.add((*path, "kind"), f"a second rule for {kind} ({group}); the first is at line {first}")
                continue
            seen[(group, kind)] = int(path[-1])
            pos = self.p.doc.at(path)
            rules.append(WaitRule(group, kind, ready, failed, source=f"{self.p.file}:{pos.line}:{pos.column}"))
        if len(self.p.items) > said:
            self.p.hints.append(WAIT_RULES_HINT)
        return rules

    def wait_matches(self, rule: Mapping[str, Any], key: str, path: FieldPath) -> tuple[Match, ...] | None:
        """A rule's ready or failed matches; None when one of them is wrong (said)."""
        raw = rule.get(key)
        matches = []
        for tpath, item in self.items(rule, key, path):
            self.keys(item, WAIT_MATCH_KEYS, tpath)
            matches.append(self.wait_match(item, tpath))
        wrong = raw is not None and (not isinstance(raw, list) or len(matches) != len(raw) or None in matches)
        return None if wrong else tuple(t for t in matches if t is not None)

    def wait_match(self, item: Mapping[str, Any], path: FieldPath) -> Match | None:
        if ("condition" in item) == ("field" in item):
            self.p.add(
                path,
                "give condition (a status.conditions type, as Ready) or field (a dotted path, as status.phase), "
                + ("not both" if "condition" in item else "one of them"),
            )
            return None
        if "condition" in item:
            name = self.string(item, "condition", path, required=True)
            status = item.get("status", "True")
            if isinstance(status, bool):
                status = str(status)  # unquoted YAML true: the condition's "True"
            if "equals" in item:
                self.p.add((*path, "equals"), "equals goes with field; a condition's value is its status")
                return None
            if status not in CONDITION_STATUSES:
                self.p.add(
                    (*path, "status"),
                    must_be("", f"one of {', '.join(CONDITION_STATUSES)}", status),
                    choices=CONDITION_STATUSES,
                    bad=_text(status),
                )
                return None
            return Match(condition=name, status=status) if name else None
        field_path = self.string(item, "field", path, required=True)
        if field_path is not None and not _FIELD_PATH.match(field_path):
            self.p.add((*path, "field"), f'"{field_path}" is not a dotted path of field names, as status.phase')
            return None
        if "status" in item:
            self.p.add((*path, "status"), "status goes with condition; a field's value is given by equals")
            return None
        if "equals" not in item or isinstance(item["equals"], dict | list) or item["equals"] is None:
            self.p.add(
                (*path, "equals") if "equals" in item else path,
                f"field {field_path} needs equals: the value (text, number or true/false) that means the verdict",
            )
            return None
        return Match(field=field_path, equals=as_text(item["equals"])) if field_path else None

    def plugins(self, spec: Mapping[str, Any]) -> list[Plugin]:
        plugins: list[Plugin] = []
        for path, item in self.items(spec, "plugins", ("spec",)):
            self.keys(item, PLUGIN_KEYS, path)
            kind = self.string(item, "kind", path, required=True)
            meta = self.mapping(item, "metadata", path) or {}
            pspec = self.mapping(item, "spec", path) or {}
            name = str(meta.get("name") or item.get("name") or "")
            if kind:
                self.plugin_paths.append(path)
                plugins.append(Plugin(kind=kind, name=name, spec=pspec))
        return plugins

    def platform(self, spec: Mapping[str, Any], plugins: list[Plugin]) -> str:
        names = self.catalog.platforms
        value = self.string(spec, "platform", ("spec",))
        if value is not None:
            if value not in names:
                self.p.add(
                    ("spec", "platform"),
                    f'unknown platform "{value}"',
                    choices=names,
                    bad=value,
                    known=True,
                )
                return "generic"
            return value
        by_plugin = {p.plugin: p.name for p in names.values() if p.plugin}
        for plugin in plugins:
            if plugin.kind in by_plugin:
                return by_plugin[plugin.kind]
        return "generic"

    def applications(self, spec: Mapping[str, Any], repos: dict[str, Repo], platform: str) -> list[Application]:
        if "applications" not in spec and isinstance(spec, dict) and spec:
            self.p.add(("spec",), "spec.applications is required (the components to install)")
        apps: list[Application] = []
        seen: dict[str, FieldPath] = {}
        pending_deps: list[tuple[FieldPath, str, tuple[str, ...]]] = []
        for path, item in self.items(spec, "applications", ("spec",)):
            self.keys(item, APP_KEYS, path)
            name = self.string(item, "name", path, required=True)
            if name is None:
                continue
            if not DNS_LABEL.match(name):
                self.p.add((*path, "name"), f"{name!r} must be {DNS_LABEL_RULE}")
            if name in seen:
                first = self.p.doc.at(seen[name])
                self.p.add((*path, "name"), f'application "{name}" is defined twice (first at line {first.line})')
                continue
            seen[name] = (*path, "name")
            app = self.application(path, item, name, repos, platform)
            if app is not None:
                apps.append(app)
                pending_deps.append((path, name, app.depends_on))
        self.report_unknown_repos(repos)
        self.dependencies(apps, pending_deps)
        return apps

    def application(
        self, path: FieldPath, item: dict[str, Any], name: str, repos: dict[str, Repo], platform: str
    ) -> Application | None:
        enabled = self.flag(item, "enabled", path, default=True)
        external = self.flag(item, "external", path, default=False)
        adopt = self.flag(item, "adopt", path, default=False)
        if external and adopt:
            self.p.add(
                (*path, "adopt"),
                "an external application is not applied, so there is nothing to adopt; keep one of external, adopt",
            )
        depends_on: list[str] = []
        for i, dep in enumerate(self.seq(item, "dependsOn", path)):
            if not isinstance(dep, str):
                self.p.add((*path, "dependsOn", i), f"must be an application name, got {_type_name(dep)}")
            else:
                depends_on.append(dep)
        kc = self.mapping(item, "kustomizeConfig", path) or {}
        kpath = (*path, "kustomizeConfig")
        self.keys(kc, KCONFIG_KEYS, kpath)
        repo, repo_path = self.repo_ref(kc, kpath, name, repos)
        component = self.component(repo, repo_path, (*kpath, "repoRef", "path") if "repoRef" in kc else (*path, "name"))
        foreign = repo is not None and not repo.builtin
        overlays, package_overlays = self.overlays(kc, kpath, foreign=foreign)
        if external:
            for unused in ("overlays", "parameters"):
                if kc.get(unused):
                    self.p.add(
                        (*kpath, unused),
                        f"not used: the application is external (the cluster provides it; kfctl renders nothing "
                        f"for it); remove kustomizeConfig.{unused} or external: true",
                    )
        if component and enabled and not external:
            comp = self.catalog.components[component]
            if comp.platforms and platform not in comp.platforms:
                self.p.add(
                    (*path, "name"),
                    f'component "{component}" does not support platform "{platform}" '
                    f"(supported: {', '.join(comp.platforms)})",
                )
        # An unknown component was reported already; its parameters cannot be checked.
        unresolved = repo is None or (repo.builtin and component is None)
        # An external application's parameters were refused above: nothing of it is rendered.
        package: dict[str, str] | None = {} if foreign else None  # where kfctl v1.0's params.env entries go
        if unresolved and not external:
            # What its parameters mean is unknown without its component; their shape is still checked, so a
            # second problem of the application is said with the first (as a repo's params.env entries: any name).
            self.parameters(kc, kpath, None, [], enabled=False, package={})
        params = (
            {}
            if unresolved or external
            else self.parameters(kc, kpath, component, overlays, enabled=enabled, package=package)
        )
        if repo is None:
            return None
        return Application(
            name=name,
            repo=repo,
            path=repo_path,
            component=component,
            overlays=tuple(overlays),
            parameters=params,
            depends_on=tuple(depends_on),
            enabled=enabled,
            external=external,
            adopt=adopt,
            package_overlays=tuple(package_overlays),
            package_parameters=tuple((package or {}).items()),
        )

    def flag(self, item: Mapping[str, Any], key: str, path: FieldPath, *, default: bool) -> bool:
        value = item.get(key, default)
        if not isinstance(value, bool):
            self.p.add((*path, key), f"must be true or false, got {_type_name(value)}")
            return default
        return value

    def repo_ref(
        self, kc: Mapping[str, Any], kpath: FieldPath, name: str, repos: dict[str, Repo]
    ) -> tuple[Repo | None, str]:
        ref = self.mapping(kc, "repoRef", kpath)
        if ref is None:
            return BUILTIN_REPO, f"manifests/{name}"
        rpath = (*kpath, "repoRef")
        self.keys(ref, REPOREF_KEYS, rpath)
        repo_name = self.string(ref, "name", rpath, required=True)
        repo_path = self.string(ref, "path", rpath) or ""
        if repo_path.startswith("/") or ".." in repo_path.split("/"):
            # Outside the repo the generated directory would no longer be self-contained (and could read
            # anything on the machine): vendor/repos/<repo>/ holds the repo and nothing else.
            self.p.add(
                (*rpath, "path"),
                f'path "{repo_path}" must be relative and stay inside the repo (no leading "/", no "..")',
            )
            return None, repo_path
        if repo_name is None:
            return None, repo_path
        if repo_name in repos:
            return repos[repo_name], repo_path
        if repo_name == BUILTIN_REPO.name and not repos:
            return BUILTIN_REPO, repo_path
        self.unknown_repos.setdefault(repo_name, []).append(((*rpath, "name"), name))
        self.unresolved[name] = PurePosixPath(repo_path).name or name
        return None, repo_path

    def report_unknown_repos(self, repos: Mapping[str, Repo]) -> None:
        """One message a repo name that is not defined, at its first reference, naming the others: one typo
        (in spec.repos or in a repoRef) is one problem however many applications it touches."""
        for repo_name, refs in self.unknown_repos.items():
            (first, _), later = refs[0], [app for _, app in refs[1:]]
            also = ""
            if later:
                also = f"; application {later[0]} names it too" if len(later) == 1 else ""
                also = also or f"; applications {', '.join(later)} name it too"
            self.p.add(
                first, f'repo "{repo_name}" is not defined in spec.repos', choices=repos, bad=repo_name, also=also
            )

    def component(self, repo: Repo | None, repo_path: str, where: FieldPath) -> str | None:
        if repo is None or not repo.builtin:
            return None
        parts = [p for p in repo_path.strip("/").split("/") if p]
        if len(parts) == 2 and parts[0] == "manifests":
            name = parts[1]
        elif len(parts) == 1:
            name = parts[0]
        else:
            self.p.add(where, f'path "{repo_path}" in the built-in catalog must be manifests/<component>')
            return None
        if name in self.catalog.components:
            return name
        if name.lower() in REMOVED_COMPONENTS:
            self.p.add(where, f'component "{name}" is not available: {REMOVED_COMPONENTS[name.lower()]}')
            return None
        self.p.add(
            where,
            f'unknown component "{name}"',
            choices=self.catalog.components,
            bad=name,
            known=True,
        )
        return None

    def overlays(self, kc: Mapping[str, Any], kpath: FieldPath, *, foreign: bool) -> tuple[list[str], list[str]]:
        """The catalog's cross-cutting overlays named, and, for an application from a repo, the other names:
        kfctl v1.0 overlays, directories overlays/<name> of the application's package (checked at render)."""
        out: list[str] = []
        package: list[str] = []
        for i, overlay in enumerate(self.seq(kc, "overlays", kpath)):
            opath = (*kpath, "overlays", i)
            if not isinstance(overlay, str):
                self.p.add(opath, f"must be an overlay name, got {_type_name(overlay)}")
            elif overlay in out or overlay in package:
                self.p.add(opath, f'overlay "{overlay}" is listed twice')
            elif foreign and overlay not in self.catalog.overlays:
                package.append(overlay)
            elif overlay not in self.catalog.overlays:
                self.p.add(
                    opath,
                    f'unknown overlay "{overlay}"',
                    choices=self.catalog.overlays,
                    bad=overlay,
                    known=True,
                )
            else:
                out.append(overlay)
        return out, package

    def parameters(
        self,
        kc: Mapping[str, Any],
        kpath: FieldPath,
        component: str | None,
        overlays: list[str],
        *,
        enabled: bool,
        package: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """The parameters the component and the catalog overlays declare, coerced to their types. With
        ``package`` (an application from a repo), a name none of them declares is kfctl v1.0's meaning, an
        entry of the package's params.env, and goes there as a string (checked at render)."""
        declared: dict[str, ParameterSpec] = {}
        if component:
            declared.update(self.catalog.components[component].parameters)
        for overlay in overlays:
            declared.update(self.catalog.overlays[overlay].parameters)
        values: dict[str, Any] = {}
        named: set[str] = set()  # given, if perhaps without a good value: that is said once, not again as "not set"
        for path, item in self.items(kc, "parameters", kpath):
            self.keys(item, PARAM_KEYS, path)
            pname = self.string(item, "name", path, required=True)
            if pname is None:
                continue
            if pname in values or (package is not None and pname in package):
                self.p.add((*path, "name"), f'parameter "{pname}" is set twice')
                continue
            spec = declared.get(pname)
            owner = f'component "{component}"' if component else "this application"
            if spec is None and package is not None and not did_you_mean(pname, declared):
                # Not a misspelt name of a catalog overlay's parameter: a params.env entry, as kfctl v1.0 meant.
                value = item.get("value")
                if isinstance(value, (dict, list)):
                    self.p.add((*path, "value"), f'parameter "{pname}" must be a string, got {_type_name(value)}')
                else:
                    package[pname] = _env_value(value)
                continue
            if spec is None:
                self.p.add(
                    (*path, "name"),
                    f'{owner} has no parameter "{pname}"',
                    choices=declared,
                    bad=pname,
                    known=True,
                )
                continue
            named.add(pname)
            if "value" not in item:
                self.p.add(path, f'parameter "{pname}" needs a value')
                continue
            value, mismatch = paramtypes.check(spec, item["value"], text=self.p.doc.plain_text.get((*path, "value")))
            if mismatch:
                message = f'parameter "{pname}" {mismatch}'
                self.p.add((*path, "value"), message, choices=mismatch.choices, bad=_text(value))
                continue
            problem = secret_reference_problem(self.catalog.components[component], pname, value) if component else None
            if problem:
                self.p.add((*path, "value"), problem)
                continue
            values[pname] = value
        for pname, spec in sorted(declared.items()):
            if enabled and spec.required and pname not in named:
                self.p.add(kpath if kc else kpath[:-1], f'required parameter "{pname}" is not set ({spec.description})')
        return values

    def dependencies(self, apps: list[Application], pending: list[tuple[FieldPath, str, tuple[str, ...]]]) -> None:
        by_name = {a.name: a for a in apps}
        enabled_components = {a.component for a in apps if a.enabled and a.component}
        for path, name, deps in pending:
            for i, dep in enumerate(deps):
                if dep not in by_name and dep not in self.unresolved:
                    self.p.add((*path, "dependsOn", i), f'no application named "{dep}"', choices=by_name, bad=dep)
                elif dep == name:
                    self.p.add((*path, "dependsOn", i), "an application cannot depend on itself")
            app = by_name.get(name)
            # What an external application needs is the cluster's business: kfctl installs none of it.
            if app is None or not app.enabled or app.external or not app.component:
                continue
            for needed in self.catalog.components[app.component].depends_on:
                if needed not in enabled_components and needed not in self.unresolved.values():
                    self.p.add(
                        (*path, "name"),
                        f'component "{app.component}" needs component "{needed}", which no enabled '
                        "application installs; add it to spec.applications",
                    )

    def platform_parameters(self, platform: str, plugins: list[Plugin], apps: list[Application]) -> dict[str, Any]:
        """The platform's parameters from its plugin; a required one is missing only when a chosen component
        reads it (the cluster-autoscaler reads the AWS role; the kubeflow-platform ConfigMap only records it)."""
        spec = self.catalog.platforms.get(platform)
        chosen = {a.component for a in apps if a.component and a.enabled and not a.external}
        if spec is None:
            return {}
        index = next((i for i, p in enumerate(plugins) if spec.plugin and p.kind == spec.plugin), None)
        given = plugins[index].spec if index is not None else {}
        where = self.plugin_paths[index] + ("spec",) if index is not None else ("spec",)
        values: dict[str, Any] = {}
        for pname, pspec in sorted(spec.parameters.items()):
            if pname in given and given[pname] not in (None, ""):
                value, mismatch = paramtypes.check(pspec, given[pname], text=self.p.doc.plain_text.get((*where, pname)))
                if mismatch:
                    self.p.add((*where, pname), str(mismatch), choices=mismatch.choices, bad=_text(value))
                else:
                    values[pname] = value
            elif index is not None and (plugins[index].kind, pname) in V1_NAMED_AFTER_INSTALL and self.install_name:
                # kfctl v1 made the GKE cluster itself, named after the install: its KfDefs never name it.
                values[pname] = self.install_name
                self.notes.append(
                    f"{self.p.file}: plugin {plugins[index].kind} has no {pname}; using {self.install_name!r}, the "
                    "install's name, as kfctl v1 named the cluster it created"
                )
            elif pspec.required_for(chosen):
                readers = ", ".join(sorted(set(pspec.read_by) & chosen))
                self.p.add(
                    where,
                    f'platform "{platform}" requires parameter "{pname}" in the spec of a '
                    f"{spec.plugin} plugin, read by {readers} ({pspec.description})",
                )
        self.unused_plugin_fields(plugins, index, spec.parameters)
        return values

    def unused_plugin_fields(self, plugins: list[Plugin], used: int | None, parameters: Mapping[str, Any]) -> None:
        """kfctl v1's plugins carry fields kfctl has no use for (a GCP plugin's email, ipName, hostname …; a
        KfMinikubePlugin altogether): said in a note, never an error, so a v1 KfDef loads as it is."""
        for i, plugin in enumerate(plugins):
            if i != used:
                self.notes.append(f"{self.p.file}: plugin {plugin.kind} is not used by platform {self.platform_name}")
                continue
            unused = sorted(set(plugin.spec) - set(parameters))
            if unused:
                self.notes.append(f"{self.p.file}: plugin {plugin.kind}: not used by kfctl: {', '.join(unused)}")
