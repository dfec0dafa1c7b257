"""Which apiVersion/kinds of a bundle the cluster does not serve — counted per kind, all at once, before
anything is written. Without this, apply meets them one object at a time, as "no matches for kind" retried
until its timeout, and a kfctl v1-era render has hundreds (kubeflow/manifests v1.2: 65 CRDs at
apiextensions.k8s.io/v1beta1, 40 rbac v1beta1 roles …). A kind served by a CRD the bundle itself installs is
fine: it is served once that CRD is Established."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from kfctl.errors import ApiDeniedError
from kfctl.k8s.api import Cluster, NoKindMatch
from kfctl.objects import Obj, group_of
from kfctl.removed_apis import replacement

CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
APISERVICE = ("apiregistration.k8s.io", "APIService")
ANY_KIND = "*"
SHOWN_APPS = 3
HINT_UNSERVED = (
    "render these objects at a version the cluster serves (kubectl api-resources lists them), or install the CRD "
    "that serves them first (an application marked `external: true` checks it is there); a kfctl v1 KfDef: "
    "`kfctl migrate FILE` moves it onto the catalog"
)


@dataclass(frozen=True)
class Unserved:
    api_version: str
    kind: str
    count: int  # objects of the bundle at this apiVersion/kind
    applications: tuple[str, ...]

    def describe(self) -> str:
        apps = ", ".join(self.applications[:SHOWN_APPS]) + (" …" if len(self.applications) > SHOWN_APPS else "")
        why = replacement(self.api_version, self.kind)
        return f"{self.api_version} {self.kind}: {self.count} object(s) in {apps}" + (f"; {why}" if why else "")


def bundle_served(objects: Iterable[tuple[str, Obj]]) -> set[tuple[str, str, str]]:
    """(group, version, kind) the bundle's own CRDs serve: both spec.versions (v1) and spec.version
    (v1beta1, whose CRD may be unserved itself: then the CRD is what gets named, not each of its objects);
    kind "*" for the group/version of an APIService the bundle registers."""
    out: set[tuple[str, str, str]] = set()
    for _, obj in objects:
        gk = (group_of(str(obj.get("apiVersion", ""))), obj.get("kind"))
        spec = obj.get("spec") or {}
        if gk == APISERVICE:  # an aggregated API the bundle registers: any kind of its group/version, once Available
            out.add((str(spec.get("group", "")), str(spec.get("version", "")), ANY_KIND))
            continue
        if gk != CRD:
            continue
        kind = str((spec.get("names") or {}).get("kind"))
        versions = [str(v.get("name", "")) for v in spec.get("versions") or [] if v.get("served", True)]
        versions += [str(spec["version"])] if spec.get("version") else []
        out.update((str(spec.get("group", "")), v, kind) for v in versions)
    return out


def unserved(cluster: Cluster, objects: Iterable[tuple[str, Obj]]) -> list[Unserved]:
    """Every apiVersion/kind of (application, object) pairs that the cluster does not serve, nor a CRD among
    them will; sorted by apiVersion and kind. One discovery lookup per apiVersion/kind."""
    objects = list(objects)
    own = bundle_served(objects)
    users: dict[tuple[str, str], list[str]] = {}
    for app, obj in objects:
        users.setdefault((str(obj.get("apiVersion", "")), str(obj.get("kind", ""))), []).append(app)
    out = []
    for (api_version, kind), apps in sorted(users.items()):
        group, version = group_of(api_version), api_version.split("/", 1)[-1]
        if (group, version, kind) in own or (group, version, ANY_KIND) in own:
            continue
        try:
            cluster.resource(api_version, kind)
        except NoKindMatch:
            out.append(Unserved(api_version, kind, len(apps), tuple(dict.fromkeys(apps))))
    return out


def refuse_unserved(cluster: Cluster, objects: Iterable[tuple[str, Obj]]) -> None:
    """ApiDeniedError naming every apiVersion/kind the cluster does not serve, before anything is written."""
    missing = unserved(cluster, objects)
    if missing:
        n = sum(m.count for m in missing)
        raise ApiDeniedError(
            f"{n} object(s) of the bundle are of {len(missing)} apiVersion/kind(s) the cluster does not serve; "
            "nothing was written",
            details=[m.describe() for m in missing],
            hint=HINT_UNSERVED,
        )
