"""The rendered objects of a KfDef's applications and their dependencies: the input of every cluster command."""

from __future__ import annotations

from dataclasses import dataclass

from kfctl.catalog.model import Catalog
from kfctl.config.model import KfDef
from kfctl.engine import labels
from kfctl.engine.inventory import applyset_id, parent_name
from kfctl.errors import UsageError
from kfctl.objects import Obj, ObjectKey, key_of, parse_stream
from kfctl.plan.duplicates import Copy, merge_copies
from kfctl.plan.graph import ExternalCheck, Plan, Step, build_plan


@dataclass(frozen=True)
class Bundle:
    kfdef: KfDef
    objects_by_app: tuple[tuple[str, tuple[Obj, ...]], ...]
    depends_on: dict[str, tuple[str, ...]]
    externals: tuple[ExternalCheck, ...] = ()  # applications the cluster provides (external: true)
    copies: tuple[Copy, ...] = ()  # identical copies of an object in later applications, applied once

    @property
    def inventory_name(self) -> str:
        return parent_name(self.kfdef.name)

    @property
    def applyset_id(self) -> str:
        return applyset_id(name=self.inventory_name, namespace=self.kfdef.namespace)

    def members(self) -> list[tuple[ObjectKey, str]]:
        return [(key_of(o), app) for app, objs in self.objects_by_app for o in objs]

    def objects(self) -> list[tuple[str, Obj]]:
        """(application, object) for every object kfctl applies."""
        return [(app, o) for app, objs in self.objects_by_app for o in objs]

    def plan(self) -> Plan:
        return build_plan(self.objects_by_app, depends_on=self.depends_on, externals=self.externals, copies=self.copies)

    def prepare(self, step: Step) -> Obj:
        """The object as kfctl applies it (labels + content hash)."""
        assert step.obj is not None
        return labels.prepare(step.obj, applyset_id=self.applyset_id, kfdef_name=self.kfdef.name, application=step.app)


def load_bundle(kfdef: KfDef, catalog: Catalog) -> Bundle:
    """Read APPDIR/rendered/<app>.yaml of every installed application (run generate first); external
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
        path = kfdef.app_dir / "rendered" / f"{app.name}.yaml"
        if not path.is_file():
            raise UsageError(f"{path} does not exist", hint=f"run `kfctl generate {kfdef.app_dir}` first")
        out.append((app.name, tuple(parse_stream(path.read_text(encoding="utf-8"), source=str(path)))))
        sources[app.name] = str(path)
        wanted = list(app.depends_on)
        if app.component and app.component in catalog.components:
            wanted += [by_component[c] for c in catalog.components[app.component].depends_on if c in by_component]
        deps[app.name] = tuple(dict.fromkeys(d for d in wanted if d in names and d != app.name))
    merged, copies = merge_copies(out, sources=sources)
    return Bundle(kfdef, merged, deps, tuple(externals), copies)
