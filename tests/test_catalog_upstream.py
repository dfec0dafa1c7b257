"""The catalog against upstream Kubeflow: names, namespaces, labels, selectors, Service ports, webhook services.

A runbook written for upstream (``kubectl wait pod -l control-plane=controller-manager -n kubeflow-system`` in
kubeflow/manifests' own ``tests/trainer_test.sh``, a Service's port, a webhook's path) must work on a kfctl
install, and an install must be movable between the catalog and upstream's tree (selectors are immutable). So
for each catalog component that upstream ships, the catalog's render (``kfctl generate`` on kind) is compared
with ``kustomize build`` of the matching application of the kubeflow/manifests v1.11.0 release, read from
../shared/fixtures at test time (the remote bases its kustomizations fetch from GitHub are read from their
fixtures too, so the build is offline).

Compared per object (keyed group/kind/namespace/name): that it exists on both sides, metadata.labels, the pod
template's labels, a workload's spec.selector, a Service's selector and ports, a webhook configuration's
webhooks (each one's service name, namespace, path and port), a CRD's conversion webhook service and an
APIService's service. Every difference is listed in one table; each one kept must be justified in
``manifests/<component>/upstream.yaml`` (``differences:`` entries with objects, fields and why), and an
unjustified difference fails, naming component, object, field, ours and upstream's. A justification that
matches nothing fails too, so the files never outlive the differences they explain.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tarfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from test_plan_graph import check_snapshot
from upstream import shared_fixture

from kfctl import yamlio
from kfctl.app.generate import generate
from kfctl.app.init import init_app
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef
from kfctl.render.kustomize import UNRESTRICTED, find_kustomize

RELEASE = "v1.11.0"
RELEASE_FIXTURE = f"kubeflow-manifests-{RELEASE}.tar.gz"
# What upstream's kustomizations fetch from GitHub, and the fixture that holds each (see its README).
# org/repo@tag -> fixture; JobSet's release asset manifests.yaml is built from its config/default.
REMOTE_SOURCES = {
    "argoproj/argo-workflows@v3.7.3": "argo-workflows-v3.7.3-manifests.tar.gz",
    "kubernetes-sigs/lws@v0.7.0": "lws-v0.7.0-config.tar.gz",
    "kubernetes-sigs/jobset@v0.10.1": "jobset-v0.10.1-config.tar.gz",
}
_GIT_URL = re.compile(r"https://github\.com/(?P<repo>[^/]+/[^/]+?)/+(?P<path>[^?]*)\?ref=(?P<tag>[^&\s]+)")
_ASSET_URL = re.compile(r"https://github\.com/(?P<repo>[^/]+/[^/]+)/releases/download/(?P<tag>[^/]+)/manifests\.yaml")
UPSTREAM_FILE = "upstream.yaml"
ABSENT = "-"


# --- rendering ---------------------------------------------------------------------------------------------


def _unpack(tarball: Path, into: Path) -> Path:
    with tarfile.open(tarball) as tf:
        tf.extractall(into, filter="data")
    (top,) = [p for p in into.iterdir() if p.is_dir()]
    return top


def _offline_release(root: Path) -> Path:
    """The release unpacked under ``root``, its remote bases pointed at the unpacked fixtures that hold them."""
    release = _unpack(shared_fixture(RELEASE_FIXTURE), root / "release")
    sources = {
        key: _unpack(shared_fixture(fixture), root / key.replace("/", "_")) for key, fixture in REMOTE_SOURCES.items()
    }
    for kfile in release.rglob("kustomization.yaml"):
        text = kfile.read_text(encoding="utf-8")
        if "https://github.com/" not in text:
            continue

        def local(m: re.Match[str], kfile: Path = kfile) -> str:
            source = sources.get(f"{m.group('repo')}@{m.group('tag')}")
            if source is None:  # a base no compared application uses (training-operator v2's JobSet v0.6.0)
                return m.group(0)
            # kustomize takes no absolute path
            return os.path.relpath(source / (m.groupdict().get("path") or "config/default"), kfile.parent)

        text = _ASSET_URL.sub(local, text)
        text = _GIT_URL.sub(local, text)
        kfile.write_text(text, encoding="utf-8")
    return release


def _objects(text: str) -> list[dict[str, Any]]:
    return [o for o in yamlio.safe_load_all(text) if o]


def _build(directory: Path) -> list[dict[str, Any]]:
    k = find_kustomize()
    out = subprocess.run([*k.argv, *UNRESTRICTED, str(directory)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, f"kustomize build {directory}: {out.stderr[-2000:]}"
    return _objects(out.stdout)


# --- what is compared --------------------------------------------------------------------------------------


@dataclass(frozen=True, order=True)
class Key:
    kind: str
    namespace: str
    name: str
    group: str = ""

    def __str__(self) -> str:
        where = f"{self.namespace}/" if self.namespace else ""
        return f"{self.kind} {where}{self.name}"


def key_of(obj: Mapping[str, Any], *, cluster_scoped: frozenset[str] = frozenset()) -> Key:
    """Its key; a namespace kustomize set on a custom resource its CRD makes cluster-scoped is dropped, as the
    API server drops it (kustomize cannot know the scope of a kind it has no schema for)."""
    meta = obj.get("metadata") or {}
    kind = str(obj.get("kind", ""))
    return Key(
        kind=kind,
        namespace="" if kind in cluster_scoped else str(meta.get("namespace") or ""),
        name=str(meta.get("name", "")),
        group=str(obj.get("apiVersion", "")).rpartition("/")[0],
    )


WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet")
WEBHOOK_CONFIGS = ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")


def _show(value: Any) -> str:
    if value is None:
        return ABSENT
    if isinstance(value, str):
        return value
    return yaml.safe_dump(value, default_flow_style=True, sort_keys=True, width=10_000).strip()


def _pod_ports(objects: Iterable[Mapping[str, Any]]) -> list[tuple[dict[str, str], dict[str, int]]]:
    """(pod template labels, container port name -> number) of every workload in a render."""
    out = []
    for obj in objects:
        if obj.get("kind") not in WORKLOADS:
            continue
        template = (obj.get("spec") or {}).get("template") or {}
        labels = (template.get("metadata") or {}).get("labels") or {}
        names = {
            str(p["name"]): int(p["containerPort"])
            for c in (template.get("spec") or {}).get("containers") or []
            for p in c.get("ports") or []
            if p.get("name")
        }
        out.append((labels, names))
    return out


def _target_port(
    port: Mapping[str, Any], selector: Mapping[str, str], pods: list[tuple[dict[str, str], dict[str, int]]]
) -> Any:
    """A Service port's targetPort as a number where the pods it selects name it (a named targetPort and the
    number it stands for are the same port on the wire)."""
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, str) and selector:
        for labels, names in pods:
            if target in names and all(labels.get(k) == v for k, v in selector.items()):
                return names[target]
    return target


def compared_fields(obj: Mapping[str, Any], *, pods: list[tuple[dict[str, str], dict[str, int]]]) -> dict[str, str]:
    """field -> value as text, for the fields this test compares; each label is a field of its own. ``pods``
    are the workloads of the same render, to resolve a Service's named targetPorts."""
    out: dict[str, str] = {}
    meta = obj.get("metadata") or {}
    for k, v in (meta.get("labels") or {}).items():
        out[f"metadata.labels[{k}]"] = _show(v)
    spec = obj.get("spec") or {}
    kind = obj.get("kind")
    if kind in WORKLOADS:
        out["spec.selector"] = _show(spec.get("selector"))
        template_labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        for k, v in template_labels.items():
            out[f"spec.template.metadata.labels[{k}]"] = _show(v)
    elif kind == "Service":
        selector = spec.get("selector") or {}
        out["spec.selector"] = _show(selector or None)
        ports = [
            {
                "name": p.get("name"),
                "port": p.get("port"),
                "targetPort": _target_port(p, selector, pods),
                "protocol": p.get("protocol", "TCP"),
            }
            for p in spec.get("ports") or []
        ]
        out["spec.ports"] = _show(sorted(ports, key=lambda p: (int(p["port"]), str(p["name"]))))
    elif kind in WEBHOOK_CONFIGS:
        for hook in obj.get("webhooks") or []:
            service = (hook.get("clientConfig") or {}).get("service")
            out[f"webhooks[{hook.get('name')}].clientConfig.service"] = _show(_service_ref(service))
    elif kind == "CustomResourceDefinition":
        conversion = (spec.get("conversion") or {}).get("webhook") or {}
        service = (conversion.get("clientConfig") or {}).get("service")
        if service:
            out["spec.conversion.webhook.clientConfig.service"] = _show(_service_ref(service))
    elif kind == "APIService":
        out["spec.service"] = _show(_service_ref(spec.get("service")))
    return out


def _service_ref(service: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not service:
        return None
    return {
        "name": service.get("name"),
        "namespace": service.get("namespace"),
        "path": service.get("path"),
        "port": service.get("port", 443),
    }


@dataclass(frozen=True, order=True)
class Difference:
    component: str  # ours that renders the object; "a+b" for an upstream object none of a, b renders
    key: Key
    field: str  # "object" when the object is on one side only
    ours: str
    upstream: str

    def row(self) -> tuple[str, str, str, str, str]:
        return (self.component, str(self.key), self.field, self.ours, self.upstream)


@dataclass(frozen=True)
class Side:
    """One render: key -> (owner, object), owner being a catalog component or the upstream application(s)."""

    objects: dict[Key, tuple[str, dict[str, Any]]]

    @classmethod
    def of(cls, renders: Iterable[tuple[str, list[dict[str, Any]]]]) -> Side:
        """Objects of several renders; one that two renders share keeps the first owner and both's labels (as
        applying both would leave it)."""
        renders = list(renders)
        cluster_scoped = frozenset(
            str(o["spec"]["names"]["kind"])
            for _, objs in renders
            for o in objs
            if o.get("kind") == "CustomResourceDefinition" and o["spec"].get("scope") == "Cluster"
        )
        objects: dict[Key, tuple[str, dict[str, Any]]] = {}
        for owner, objs in renders:
            for obj in objs:
                key = key_of(obj, cluster_scoped=cluster_scoped)
                if key not in objects:
                    objects[key] = (owner, obj)
                    continue
                first_owner, first = objects[key]
                merged = {**first, "metadata": {**first["metadata"]}}
                merged["metadata"]["labels"] = {
                    **(obj["metadata"].get("labels") or {}),
                    **(first["metadata"].get("labels") or {}),
                }
                objects[key] = (first_owner, merged)
        return cls(objects)

    def pods(self) -> list[tuple[dict[str, str], dict[str, int]]]:
        return _pod_ports(obj for _, obj in self.objects.values())


def differences(ours: Side, upstream: Side, *, owners: Mapping[str, tuple[str, ...]]) -> list[Difference]:
    """Every difference between our objects and upstream's. An upstream object we lack belongs to the catalog
    components that name its upstream application (``owners``: application -> components)."""
    out: list[Difference] = []
    our_pods, their_pods = ours.pods(), upstream.pods()
    for key in sorted(set(ours.objects) | set(upstream.objects)):
        if key not in ours.objects:
            owner = "+".join(owners[upstream.objects[key][0]])
            out.append(Difference(owner, key, "object", ABSENT, "present"))
            continue
        component, obj = ours.objects[key]
        if key not in upstream.objects:
            out.append(Difference(component, key, "object", "present", ABSENT))
            continue
        a = compared_fields(obj, pods=our_pods)
        b = compared_fields(upstream.objects[key][1], pods=their_pods)
        for field in sorted(set(a) | set(b)):
            if a.get(field, ABSENT) != b.get(field, ABSENT):
                out.append(Difference(component, key, field, a.get(field, ABSENT), b.get(field, ABSENT)))
    return out


# --- why a difference is kept ------------------------------------------------------------------------------


def _glob(pattern: str) -> re.Pattern[str]:
    """Only * is a wildcard: field names hold brackets (metadata.labels[app])."""
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")) + r"\Z")


@dataclass(frozen=True)
class Justification:
    component: str
    index: int
    objects: tuple[re.Pattern[str], ...]
    fields: tuple[re.Pattern[str], ...]
    why: str
    ours: str | None = None  # when given, only a difference where ours is exactly this ("-": absent)
    upstream: str | None = None  # the same for upstream's value

    def covers(self, d: Difference) -> bool:
        return (
            self.component in d.component.split("+")
            and any(p.match(str(d.key)) for p in self.objects)
            and any(p.match(d.field) for p in self.fields)
            and self.ours in (None, d.ours)
            and self.upstream in (None, d.upstream)
        )

    def __str__(self) -> str:
        return f"manifests/{self.component}/{UPSTREAM_FILE} differences[{self.index}]"


@dataclass(frozen=True)
class Counterpart:
    component: str
    paths: tuple[str, ...]
    justifications: tuple[Justification, ...]


def read_counterpart(component: str, path: Path) -> Counterpart:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    where = f"manifests/{component}/{UPSTREAM_FILE}"
    assert set(data) <= {"release", "paths", "versions", "differences"}, f"{where}: unknown keys {sorted(data)}"
    assert data.get("release") == RELEASE, f"{where}: release must be {RELEASE}"
    assert data.get("paths"), f"{where}: paths names the upstream application(s) to compare with"
    entries = []
    for i, entry in enumerate(data.get("differences") or []):
        keys = set(entry)
        assert {"objects", "fields", "why"} <= keys <= {"objects", "fields", "why", "ours", "upstream"}, (
            f"{where} differences[{i}]: needs objects, fields and why (ours, upstream optional), has {sorted(keys)}"
        )
        assert str(entry["why"]).strip(), f"{where} differences[{i}]: why is empty"
        entries.append(
            Justification(
                component,
                i,
                tuple(_glob(str(p)) for p in entry["objects"]),
                tuple(_glob(str(p)) for p in entry["fields"]),
                " ".join(str(entry["why"]).split()),
                ours=None if entry.get("ours") is None else str(entry["ours"]),
                upstream=None if entry.get("upstream") is None else str(entry["upstream"]),
            )
        )
    return Counterpart(component, tuple(data["paths"]), tuple(entries))


def judge(
    diffs: Iterable[Difference], justifications: Iterable[Justification]
) -> dict[Difference, Justification | None]:
    """Each difference -> the first justification that covers it (None: unjustified)."""
    entries = list(justifications)
    return {d: next((j for j in entries if j.covers(d)), None) for d in diffs}


def table(verdicts: Mapping[Difference, Justification | None]) -> str:
    """One row per difference, or per group of differences that differ in the object only; the objects come
    last, the justification as the entry that keeps it (its why is in that file)."""
    groups: dict[tuple[str, str, str, str, str], list[Difference]] = {}
    for d in sorted(verdicts):
        j = verdicts[d]
        kept = f"{j.component}#{j.index}" if j else "UNJUSTIFIED"
        groups.setdefault((d.component, d.field, d.ours, d.upstream, kept), []).append(d)
    header = ("component", "field", "ours", f"upstream {RELEASE}", "kept by", "object(s)")
    rows = [
        (
            *group,
            ", ".join(str(d.key) for d in ds) if len(ds) < 4 else f"{len(ds)}: {', '.join(str(d.key) for d in ds)}",
        )
        for group, ds in sorted(groups.items(), key=lambda g: (g[0][0], g[1][0].key, g[0][1]))
    ]
    widths = [min(44, max(len(h), *(len(r[i]) for r in rows))) if rows else len(h) for i, h in enumerate(header)]
    widths[-1] = len(header[-1])

    def fmt(r: tuple[str, ...]) -> str:
        return " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()

    legend = (
        f"Differences of the catalog (kind platform) from kubeflow/manifests {RELEASE}; kept by C#N is entry N of "
        f"manifests/C/{UPSTREAM_FILE} differences, which says why."
    )
    return "\n".join([legend, "", fmt(header), "-+-".join("-" * w for w in widths), *(fmt(r) for r in rows)])


# --- the catalog and the release ---------------------------------------------------------------------------

# Catalog components with no counterpart in kubeflow/manifests v1.11.0 (its applications/ and common/).
NOT_SHIPPED = {
    "cluster-autoscaler": "upstream ships no cluster-autoscaler",
    "nvidia-device-plugin": "upstream ships no device plugin",
    "scheduler-plugins": "upstream ships no scheduler-plugins (Trainer's runtimes only name its PodGroups)",
}


def counterparts(catalog: Catalog) -> dict[str, Counterpart]:
    return {
        name: read_counterpart(name, c.path / UPSTREAM_FILE)
        for name, c in sorted(catalog.components.items())
        if (c.path / UPSTREAM_FILE).is_file()
    }


@dataclass(frozen=True)
class Comparison:
    ours: Side
    verdicts: dict[Difference, Justification | None]
    justifications: tuple[Justification, ...]


@pytest.fixture(scope="module")
def comparison(tmp_path_factory: pytest.TempPathFactory, real_catalog: Catalog) -> Comparison:
    tmp = tmp_path_factory.mktemp("upstream")
    release = _offline_release(tmp)
    parts = counterparts(real_catalog)
    app = tmp / "app"
    init_app(real_catalog, app_dir=app, platform="kind", components=sorted(parts), namespace="kubeflow", force=True)
    generate(load_kfdef(app / "kfdef.yaml", real_catalog), real_catalog)
    ours = Side.of((name, _objects((app / "rendered" / f"{name}.yaml").read_text(encoding="utf-8"))) for name in parts)
    owners: dict[str, tuple[str, ...]] = {}
    for name, part in parts.items():
        for path in part.paths:
            owners[path] = (*owners.get(path, ()), name)
    upstream = Side.of((path, _build(release / path)) for path in owners)
    justifications = tuple(j for part in parts.values() for j in part.justifications)
    verdicts = judge(differences(ours, upstream, owners=owners), justifications)
    shutil.rmtree(tmp, ignore_errors=True)
    return Comparison(ours, verdicts, justifications)


def test_every_component_names_its_upstream_counterpart_or_why_there_is_none(real_catalog: Catalog) -> None:
    parts = counterparts(real_catalog)
    assert set(parts) | set(NOT_SHIPPED) == set(real_catalog.components)
    assert not set(parts) & set(NOT_SHIPPED)


def test_the_catalog_equals_upstream_or_says_why(comparison: Comparison) -> None:
    text = table(comparison.verdicts)
    unjustified = [d for d, j in comparison.verdicts.items() if j is None]
    assert not unjustified, (
        f"{len(unjustified)} difference(s) from upstream {RELEASE} not justified in manifests/<component>/"
        f"{UPSTREAM_FILE}:\n"
        + "\n".join(
            f"  {d.component}: {d.key}: {d.field}: ours {d.ours}, upstream {d.upstream}" for d in sorted(unjustified)
        )
        + f"\n\n{text}"
    )
    check_snapshot("catalog_upstream", text)


def test_every_justification_still_explains_a_difference(comparison: Comparison) -> None:
    used = {j for j in comparison.verdicts.values() if j is not None}
    stale = [f"{j}: {j.why}" for j in comparison.justifications if j not in used]
    assert not stale, "justification(s) that no difference needs any more (remove them):\n" + "\n".join(stale)


def test_every_service_of_the_catalog_selects_pods_it_renders(comparison: Comparison) -> None:
    """Selectors were moved to upstream's labels: a Service whose selector no pod template of its namespace
    carries would have no endpoints (a webhook Service without endpoints blocks every object it admits)."""
    templates = [
        (key.namespace, ((obj["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {})
        for key, (_, obj) in comparison.ours.objects.items()
        if key.kind in WORKLOADS
    ]
    lost = [
        str(key)
        for key, (_, obj) in sorted(comparison.ours.objects.items())
        if key.kind == "Service"
        and (selector := (obj.get("spec") or {}).get("selector"))
        and not any(
            ns == key.namespace and all(labels.get(k) == v for k, v in selector.items()) for ns, labels in templates
        )
    ]
    assert not lost, f"Service(s) whose selector matches no pod template: {lost}"


def _workload(name: str, labels: dict[str, str], *, port: int = 9443) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": "ns", "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "c", "ports": [{"name": "webhook", "containerPort": port}]}]},
            },
        },
    }


def _service(selector: dict[str, str], target: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "svc", "namespace": "ns"},
        "spec": {"selector": selector, "ports": [{"port": 443, "targetPort": target}]},
    }


OURS = Side.of(
    [("c", [_workload("w", {"app.kubernetes.io/name": "w"}), _service({"app.kubernetes.io/name": "w"}, "webhook")])]
)
THEIRS = Side.of(
    [
        (
            "path",
            [
                _workload("w", {"control-plane": "controller-manager"}),
                _service({"control-plane": "controller-manager"}, 9443),
            ],
        )
    ]
)


def test_differences_name_object_field_ours_and_upstreams_and_see_a_named_port_as_its_number() -> None:
    rows = [d.row()[1:] for d in differences(OURS, THEIRS, owners={"path": ("c",)})]
    assert rows == [
        ("Deployment ns/w", "metadata.labels[app.kubernetes.io/name]", "w", "-"),
        ("Deployment ns/w", "metadata.labels[control-plane]", "-", "controller-manager"),
        (
            "Deployment ns/w",
            "spec.selector",
            "{matchLabels: {app.kubernetes.io/name: w}}",
            "{matchLabels: {control-plane: controller-manager}}",
        ),
        ("Deployment ns/w", "spec.template.metadata.labels[app.kubernetes.io/name]", "w", "-"),
        ("Deployment ns/w", "spec.template.metadata.labels[control-plane]", "-", "controller-manager"),
        ("Service ns/svc", "spec.selector", "{app.kubernetes.io/name: w}", "{control-plane: controller-manager}"),
    ]  # no spec.ports row: targetPort webhook is 9443 on the pods it selects


def test_a_justification_covers_only_its_objects_fields_and_values() -> None:
    diffs = differences(OURS, THEIRS, owners={"path": ("c",)})
    extra_label = Justification(
        "c", 0, (_glob("Deployment *"),), (_glob("*labels[app.kubernetes.io/name]"),), "why", upstream="-"
    )
    verdicts = judge(diffs, [extra_label])
    kept = sorted(d.field for d, j in verdicts.items() if j is extra_label)
    assert kept == ["metadata.labels[app.kubernetes.io/name]", "spec.template.metadata.labels[app.kubernetes.io/name]"]
    other = Justification("d", 0, (_glob("*"),), (_glob("*"),), "another component's entry")
    assert not any(judge(diffs, [other]).values())


# kubectl's resource names in upstream's test scripts -> kinds
KUBECTL_KINDS = {
    "crd": "CustomResourceDefinition",
    "service": "Service",
    "deployment": "Deployment",
    "mutatingwebhookconfiguration": "MutatingWebhookConfiguration",
    "validatingwebhookconfiguration": "ValidatingWebhookConfiguration",
    "clustertrainingruntimes": "ClusterTrainingRuntime",
}


def test_upstreams_trainer_test_finds_every_object_and_pod_it_names_in_the_catalog(comparison: Comparison) -> None:
    """kubeflow/manifests' tests/trainer_test.sh, read from the release: each `kubectl get KIND NAME`, `kubectl
    wait deployment/NAME` and `-l SELECTOR` in kubeflow-system names something the catalog renders (its
    `kubectl wait --for=condition=Ready pod -l control-plane=controller-manager -n kubeflow-system` found no
    pod when JobSet's pods were labelled app.kubernetes.io/name: jobset). Lines on the user's profile
    namespace, endpoints and applies are about a running cluster, not the catalog."""
    with tarfile.open(shared_fixture(RELEASE_FIXTURE)) as tf:
        member = tf.extractfile(f"manifests-{RELEASE.lstrip('v')}/tests/trainer_test.sh")
        assert member is not None
        script = member.read().decode("utf-8")
    objects = comparison.ours.objects
    templates = [
        (key.namespace, ((obj["spec"].get("template") or {}).get("metadata") or {}).get("labels") or {})
        for key, (_, obj) in objects.items()
        if key.kind in WORKLOADS
    ]
    checked, missing = [], []
    for line in script.splitlines():
        words = shlex.split(line) if line.startswith("kubectl ") else []
        if not words or "$KF_PROFILE" in line or words[1] not in ("get", "wait") or "endpoints" in words:
            continue
        namespace = words[words.index("-n") + 1] if "-n" in words else ""
        names = [w for w in words[2:] if not w.startswith("-") and words[words.index(w) - 1] not in ("-n", "-l")]
        if "-l" in words:
            selector = dict(p.split("=", 1) for p in words[words.index("-l") + 1].split(","))
            found = any(ns == namespace and all(t.get(k) == v for k, v in selector.items()) for ns, t in templates)
            what = f"pods -l {words[words.index('-l') + 1]} in {namespace}"
        else:
            resource, _, name = names[0].partition("/") if "/" in names[0] else (names[0], "", names[1])
            key = Key(KUBECTL_KINDS[resource], namespace, name)
            found = any((k.kind, k.namespace, k.name) == (key.kind, key.namespace, key.name) for k in objects)
            what = str(key)
        checked.append(what)
        if not found:
            missing.append(what)
    assert len(checked) >= 8, checked
    assert not missing, f"tests/trainer_test.sh names what the catalog does not render: {missing}"
