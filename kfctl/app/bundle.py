"""The rendered objects of a KfDef's applications and their dependencies: the input of every cluster command.

Besides what `generate` rendered, the bundle holds each Secret the catalog generates (kfctl.secrets), and those
that replace upstream's shared login credentials (kfctl.secrets.upstream), planned without data: it is applied,
ordered before the workloads that mount it and recorded like every object, but its
values are added in memory by ``with_secret_values`` once the cluster has been read, never taken from a file.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from kfctl.app.rendered import CACHE_DIR as PARSED_CACHE
from kfctl.app.rendered import read_objects
from kfctl.catalog.model import Catalog
from kfctl.config.model import KfDef
from kfctl.engine import labels
from kfctl.engine.inventory import applyset_id, parent_name
from kfctl.errors import RenderError, UsageError
from kfctl.health.waitrules import SHIPPED
from kfctl.objects import Obj, ObjectKey, key_of
from kfctl.plan.duplicates import Copy, merge_copies
from kfctl.plan.graph import ExternalCheck, Plan, PlannedObject, build_plan
from kfctl.secrets.declared import Declared, declared, shell
from kfctl.secrets.upstream import replace_fixed
from kfctl.secrets.values import SecretValues, with_data


@dataclass(frozen=True)
class Bundle:
    kfdef: KfDef
    objects_by_app: tuple[tuple[str, tuple[Obj, ...]], ...]
    depends_on: dict[str, tuple[str, ...]]
    externals: tuple[ExternalCheck, ...] = ()  # applications the cluster provides (external: true)
    copies: tuple[Copy, ...] = ()  # identical copies of an object in later applications, applied once
    secrets: tuple[Declared, ...] = ()  # the Secrets the applications need: generated ones are planned objects
    # The generated Secrets' data, once read (with_secret_values); None before. In memory only.
    secret_values: SecretValues | None = field(default=None, repr=False, compare=False)

    @property
    def inventory_name(self) -> str:
        return parent_name(self.kfdef.name)

    @property
    def applyset_id(self) -> str:
        return applyset_id(name=self.inventory_name, namespace=self.kfdef.namespace)

    def members(self) -> list[tuple[ObjectKey, str]]:
        return [(key_of(o), app) for app, objs in self.objects_by_app for o in objs]

    def also_in(self) -> dict[ObjectKey, tuple[str, ...]]:
        """Key → the later applications whose identical copy of it was merged away (see ``copies``)."""
        out: dict[ObjectKey, tuple[str, ...]] = {}
        for c in self.copies:
            out[c.key] = (*out.get(c.key, ()), c.dropped_from)
        return out

    def objects(self) -> list[tuple[str, Obj]]:
        """(application, object) for every object kfctl applies."""
        return [(app, o) for app, objs in self.objects_by_app for o in objs]

    def plan(self) -> Plan:
        return build_plan(
            self.objects_by_app,
            depends_on=self.depends_on,
            externals=self.externals,
            copies=self.copies,
            generated=self.generated_keys,
            replaced=frozenset(s.key for s in self.secrets if s.replaces_rendered),
            wait_rules=SHIPPED.with_overrides(self.kfdef.wait_rules),
        )

    def prepare(self, step: PlannedObject) -> Obj:
        """The object as kfctl applies it (labels + content hash); a generated Secret with its data."""
        out = labels.prepare(step.obj, applyset_id=self.applyset_id, kfdef_name=self.kfdef.name, application=step.app)
        if step.key in self.generated_keys:
            return with_data(out, self.secret_values or SecretValues())
        return out

    @property
    def generated_keys(self) -> frozenset[ObjectKey]:
        return frozenset(s.key for s in self.secrets if s.generated)

    def with_secret_values(self, values: SecretValues) -> Bundle:
        """This bundle, its generated Secrets' data read from the cluster or drawn (kfctl.secrets.values)."""
        return dataclasses.replace(self, secret_values=values)


def load_bundle(kfdef: KfDef, catalog: Catalog, *, rendered: Path | None = None, keep_parsed: bool = False) -> Bundle:
    """Read APPDIR/rendered/<app>.yaml of every installed application (run generate first), or ``rendered``/<app>.yaml
    (a private render, kfctl.app.generate.rendered_privately: nothing is cached in APPDIR then). APPDIR's parsed
    copies (kfctl.app.rendered) are used, and a missing one is written only with ``keep_parsed`` (apply, which
    writes APPDIR anyway): plan, diff, check and export write nothing into the app dir. External
    applications become checks of what the cluster provides. An object several applications render is kept
    once (in the first) when the copies are identical; copies that differ are a RenderError."""
    apps = kfdef.enabled_applications()
    by_component = {a.component: a.name for a in apps if a.component}
    names = {a.name for a in apps}
    out: list[tuple[str, tuple[Obj, ...]]] = []
    externals: list[ExternalCheck] = []
    deps: dict[str, tuple[str, ...]] = {}
    sources: dict[str, str] = {}
    for app in apps:
        if app.external:
            component = catalog.components.get(app.component or "")
            externals.append(ExternalCheck(app.name, component.crds if component else ()))
            continue
        path = (rendered or kfdef.app_dir / "rendered") / f"{app.name}.yaml"
        if not path.is_file():
            raise UsageError(f"{path} does not exist", hint=f"run `kfctl generate {kfdef.app_dir}` first")
        cache = None if rendered is not None else kfdef.app_dir / PARSED_CACHE
        out.append((app.name, tuple(read_objects(path, app=app.name, cache=cache, keep=keep_parsed))))
        sources[app.name] = str(path)
        wanted = list(app.depends_on)
        if app.component and app.component in catalog.components:
            wanted += [by_component[c] for c in catalog.components[app.component].depends_on if c in by_component]
        deps[app.name] = tuple(dict.fromkeys(d for d in wanted if d in names and d != app.name))
    out, upstream_secrets = replace_fixed(out)  # upstream's shared login credentials, generated per install
    wanted_secrets = declared(kfdef, catalog) + upstream_secrets
    out = _with_generated_secrets(out, wanted_secrets, sources)
    merged, copies = merge_copies(out, sources=sources)
    return Bundle(kfdef, merged, deps, tuple(externals), copies, tuple(wanted_secrets))


def _with_generated_secrets(
    rendered: list[tuple[str, tuple[Obj, ...]]], wanted: list[Declared], sources: dict[str, str]
) -> list[tuple[str, tuple[Obj, ...]]]:
    """Each application's objects plus the Secrets it generates. A render that holds one itself comes from an
    older kfctl, whose catalog shipped fixed credentials: applying it would put them back, so refuse."""
    extra: dict[str, list[Obj]] = {}
    for secret in wanted:
        if secret.generated:
            extra.setdefault(secret.application, []).append(shell(secret))
    out = []
    for app, objs in rendered:
        keys = {key_of(o) for o in objs}
        stale = [str(key_of(o)) for o in extra.get(app, []) if key_of(o) in keys]
        if stale:
            raise RenderError(
                f"{sources[app]} holds {', '.join(stale)}, which kfctl now generates in the cluster with random values",
                hint=f"run `kfctl generate {Path(sources[app]).parent.parent}` to render the application again",
            )
        out.append((app, (*objs, *extra.get(app, []))))
    return out
