"""`kfctl init`: scaffold an app directory with a commented KfDef for a platform and components.

Component names, defaults and dependencies come from the catalog on disk. Refuses to overwrite an existing
KfDef unless forced, and writes through a temp file so a failure never leaves half a file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from kfctl.catalog.model import REMOVED_COMPONENTS, Catalog, first_sentence, with_dependencies
from kfctl.config.loader import did_you_mean
from kfctl.config.model import BUILTIN_REPO, DNS_LABEL, DNS_LABEL_RULE
from kfctl.errors import UsageError
from kfctl.fsutil import write_atomic

KFDEF_FILE = "kfdef.yaml"
GITIGNORE = """\
# kfctl: caches that are re-created on demand. Commit kfdef.yaml, kfdef.lock, kustomize/, vendor/, rendered/.
.cache/
.kfctl-tmp-*/
"""


@dataclass(frozen=True)
class InitResult:
    kfdef: Path
    platform: str
    components: tuple[str, ...]
    added_dependencies: tuple[str, ...]
    required_platform_parameters: tuple[str, ...]


def resolve_components(catalog: Catalog, *, platform: str, requested: list[str] | None) -> tuple[list[str], list[str]]:
    """The requested components (or the platform's defaults) plus their dependencies, in catalog order."""
    plat = catalog.platforms[platform]
    wanted = list(plat.default_components) if requested is None else requested
    problems: list[str] = []
    for name in wanted:
        if name in catalog.components:
            continue
        if name.lower() in REMOVED_COMPONENTS:
            problems.append(f'component "{name}" is not available: {REMOVED_COMPONENTS[name.lower()]}')
        else:
            problems.append(
                f'unknown component "{name}"{did_you_mean(name, catalog.components)}; '
                f"known: {', '.join(sorted(catalog.components))}"
            )
    for name in wanted:
        comp = catalog.components.get(name)
        if comp and comp.platforms and platform not in comp.platforms:
            problems.append(f'component "{name}" does not support platform "{platform}"')
    if problems:  # a word of the command line, as a bad --platform is: a usage error (exit 2)
        raise UsageError(
            "--components: " + problems[0] if len(problems) == 1 else "--components has problems",
            details=problems if len(problems) > 1 else [],
        )
    ordered = with_dependencies(catalog, wanted)
    added = [c for c in ordered if c not in wanted]
    return ordered, added


def render_kfdef(catalog: Catalog, *, name: str, namespace: str, platform: str, components: list[str]) -> str:
    """The text of a new KfDef, with comments that explain each field to a newcomer."""
    plat = catalog.platforms[platform]
    lines = [
        "# A KfDef says which ML platform components to install on which kind of cluster.",
        "# kfctl reads this file and never rewrites it. Next steps:",
        "#   kfctl generate   # render kustomize dirs and YAML into this directory (commit them for GitOps)",
        "#   kfctl apply      # install in dependency order and wait until everything is healthy",
        "apiVersion: kfdef.apps.kubeflow.org/v1",
        "kind: KfDef",
        "metadata:",
        f"  name: {name}  # names this platform install; kfctl labels what it applies with it",
        f"  namespace: {namespace}  # where kfctl keeps its inventory of applied objects",
        "spec:",
        f"  # The cluster kind: one of {', '.join(sorted(catalog.platforms))}. It picks platform patches",
        "  # (autoscaler flags, GPU node labels, identity annotations) and the default components.",
        f"  platform: {platform}",
        "  # Where component manifests come from. kfctl://catalog is the catalog shipped with kfctl;",
        "  # add your own repos (a directory, a tarball, a git URL) for applications of your own.",
        "  repos:",
        f"    - name: {BUILTIN_REPO.name}",
        f"      uri: {BUILTIN_REPO.uri}",
    ]
    if plat.plugin and plat.parameters:
        lines += [
            f"  # Settings of the {platform} platform; kfctl generate fails until the required ones are set.",
            "  plugins:",
            f"    - kind: {plat.plugin}",
            "      metadata:",
            f"        name: {platform}",
            "      spec:",
        ]
        for pname, pspec in sorted(plat.parameters.items()):
            needed = pspec.required_for(components)
            mark = f"required by {', '.join(sorted(set(pspec.read_by) & set(components)))}" if needed else "optional"
            value = '""' if needed or pspec.default is None else json.dumps(pspec.default)
            lines.append(f"        {pname}: {value}  # {mark}: {first_sentence(pspec.description)}")
    lines += [
        "  # Each application is one component, rendered from <repo>/<path> with kustomize.",
        "  #   overlays:   cross-cutting changes, e.g. ha (2 replicas + PDBs), image-mirror (air-gapped)",
        "  #   parameters: the component's settings; `kfctl catalog COMPONENT` lists them",
        "  #   dependsOn:  extra install-order edges to other applications (catalog ones are automatic)",
        "  #   enabled:    false keeps an application in the file without installing it",
        "  applications:",
    ]
    for comp_name in components:
        comp = catalog.components[comp_name]
        summary = first_sentence(comp.description)
        lines += [
            f"    - name: {comp_name}  # {summary}" if summary else f"    - name: {comp_name}",
            "      kustomizeConfig:",
            "        repoRef:",
            f"          name: {BUILTIN_REPO.name}",
            f"          path: manifests/{comp_name}",
        ]
    return "\n".join(lines) + "\n"


def init_app(
    catalog: Catalog,
    *,
    app_dir: Path,
    platform: str,
    components: list[str] | None,
    namespace: str,
    force: bool,
) -> InitResult:
    if platform not in catalog.platforms:
        raise UsageError(
            f'unknown platform "{platform}"{did_you_mean(platform, catalog.platforms)}; '
            f"known: {', '.join(sorted(catalog.platforms))}"
        )
    target = new_kfdef_path(app_dir, namespace=namespace, force=force)
    chosen, added = resolve_components(catalog, platform=platform, requested=components)
    name = name_from_directory(app_dir)
    write_scaffold(target, render_kfdef(catalog, name=name, namespace=namespace, platform=platform, components=chosen))
    required = tuple(sorted(n for n, p in catalog.platforms[platform].parameters.items() if p.required_for(chosen)))
    return InitResult(target, platform, tuple(chosen), tuple(added), required)


def new_kfdef_path(app_dir: Path, *, namespace: str, force: bool) -> Path:
    """APPDIR/kfdef.yaml, once the command line allows writing it (UsageError otherwise)."""
    if not DNS_LABEL.match(namespace):
        raise UsageError(f"--inventory-namespace {namespace!r} must be {DNS_LABEL_RULE}")
    if app_dir.exists() and not app_dir.is_dir():
        raise UsageError(f"{app_dir}: exists and is not a directory")
    target = app_dir / KFDEF_FILE
    if target.exists() and not force:
        raise UsageError(
            f"{target}: already exists; left unchanged",
            hint="pass --force to overwrite it, or choose another APPDIR",
        )
    return target


def write_scaffold(target: Path, text: str) -> None:
    """The KfDef, and a .gitignore beside it with kfctl's lines (an existing one keeps its own and gets the
    missing ones appended, so .cache/ is never committed by accident); each through a temp file."""
    try:
        write_atomic(target, text)
        gitignore = target.parent / ".gitignore"
        have = gitignore.read_text(encoding="utf-8") if gitignore.exists() else ""
        write_atomic(gitignore, with_ignored(have))
    except OSError as e:
        raise UsageError(f"{target}: cannot write: {e.strerror or e}") from e


def with_ignored(text: str) -> str:
    """``text`` (a .gitignore) with kfctl's patterns added where missing; unchanged when it has them all."""
    present = {line.strip() for line in text.splitlines()}
    missing = [line for line in GITIGNORE.splitlines() if not line.startswith("#") and line not in present]
    if not text:
        return GITIGNORE
    if not missing:
        return text
    sep = "" if text.endswith("\n") else "\n"
    return f"{text}{sep}{GITIGNORE.splitlines()[0]}\n" + "".join(f"{line}\n" for line in missing)


def name_from_directory(app_dir: Path) -> str:
    """A DNS label from the directory name ("My Demo" → "my-demo"), "kubeflow" when nothing is left.

    kfctl v1 named an install after its app directory; `init` and `migrate` do the same."""
    raw = app_dir.resolve().name.lower()
    # ASCII only: str.isalnum() accepts "é", which no DNS label may hold.
    cleaned = "".join(c if c.isascii() and c.isalnum() else "-" for c in raw).strip("-")
    while "--" in cleaned:
        cleaned = cleaned.replace("--", "-")
    return cleaned[:63].strip("-") or "kubeflow"
