"""`kfctl export --format argocd --fleet SELECTOR`: the same platform on every cluster registered in Argo CD
whose cluster Secret carries the labels SELECTOR names, from one commit.

The design is an ApplicationSet of app-of-apps, the layout a platform team running Argo CD already knows: the
export directory holds the per-part Applications as for one cluster (sync waves, health checks, prune), and
``applicationset.yaml`` beside them holds one ApplicationSet whose cluster generator makes, for each selected
cluster, the parent Application ``<cluster>-<kfdef>`` of that directory. The parent builds the directory with
kustomize options Argo CD passes on (``spec.source.kustomize``): ``namePrefix: <cluster>-`` (the children live in
Argo CD's namespace, so each cluster's need names of their own) and a patch that points every child's
``spec.destination.server`` at the cluster's server. So each cluster is synced wave by wave by its own parent,
one cluster's failure holds no other, and a cluster labelled later (or unlabelled: its parent and, through the
resources finalizers, its platform are deleted) changes nothing elsewhere. Rejected: one generated Application
per cluster and part, ordered by the ApplicationSet's progressive sync, which orders steps across all clusters
at once (a failing cluster holds the fleet) and is off unless Argo CD's controller is started with it; and a
copy of the export per cluster, which is a loop of ours.

A per-cluster difference is a KfDef parameter of one application (``--fleet-parameter APP.NAME``, a component's
or a platform's parameter the KfDef sets: ``kfctl generate`` writes it into ``kustomize/<app>/params.yaml``, a
local-config ``Parameters`` object whose kustomize ``replacements`` put it in place). Each child Application of
that application gets, as the first of its ``spec.source.kustomize.patches``, a patch of that object setting the
KfDef's value (a no-op: the Application in git builds what it builds for one cluster); the parent replaces that
patch with one whose value is the cluster Secret's annotation ``kfctl.kubeflow.org/<app>.<name>``, or the KfDef's
value where the annotation is missing or empty. Argo CD's kustomize runs the patch before the replacements, so
the value lands wherever ``kfctl generate`` puts it. Only string values (an annotation is a string).

This module builds data only; it never talks to a cluster and never prints.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from kfctl.config.model import KfDef
from kfctl.errors import UsageError

FLEET_FILE = "applicationset.yaml"
ANNOTATION_PREFIX = "kfctl.kubeflow.org/"
PARAMS_GROUP = "kfctl.kubeflow.org"  # kfctl.render.layout's Parameters object
PARAMS_KIND = "Parameters"
SELECTOR_FORM = "key=value[,key=value]"
_NAME = r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?"
_LABEL_NAME = re.compile(rf"^{_NAME}$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_PARAMETER = re.compile(r"^(?P<app>[a-z0-9]([-a-z0-9]*[a-z0-9])?)\.(?P<name>[A-Za-z_][A-Za-z0-9_]*)$")
CLUSTER = "{{ .nameNormalized }}"  # the cluster generator's cluster name, made a valid object name


@dataclass(frozen=True)
class FleetParameter:
    application: str
    name: str
    default: str  # the KfDef's value: what a cluster without the annotation gets

    @property
    def annotation(self) -> str:
        return f"{ANNOTATION_PREFIX}{self.application}.{self.name}"


def parse_selector(text: str) -> dict[str, str]:
    """``key=value[,key=value]`` → matchLabels; a UsageError naming --fleet, the form and the fault."""

    def bad(why: str) -> UsageError:
        return UsageError(
            f"--fleet {text!r}: {why}; expected {SELECTOR_FORM}, labels of Argo CD's cluster Secrets",
            hint="e.g. --fleet kubeflow.org/fleet=prod or --fleet env=prod,region=eu",
        )

    labels: dict[str, str] = {}
    for item in text.split(","):
        key, sep, value = (part.strip() for part in item.partition("="))
        if not sep or not key:
            raise bad(f"{item.strip()!r} is not key=value")
        prefix, slash, name = key.rpartition("/")
        if (
            not _LABEL_NAME.match(name)
            or len(name) > 63
            or (slash and (not _DNS_SUBDOMAIN.match(prefix) or len(prefix) > 253))
        ):
            raise bad(f"{key!r} is not a label key ([prefix/]name, the name 63 characters at most)")
        if value and (not _LABEL_NAME.match(value) or len(value) > 63):
            raise bad(f"{value!r} is not a label value (63 characters at most: letters, digits, '-', '_', '.')")
        if key in labels:
            raise bad(f"{key!r} is given twice")
        labels[key] = value
    return labels


def parse_parameter(text: str) -> tuple[str, str]:
    match = _PARAMETER.match(text)
    if not match:
        raise UsageError(
            f"--fleet-parameter {text!r}: expected APPLICATION.PARAMETER, e.g. kserve.controllerCpuRequest",
            hint="`kfctl catalog COMPONENT` lists a component's parameters",
        )
    name = f"{match['app']}.{match['name']}"
    if len(name) > 63:
        raise UsageError(
            f"--fleet-parameter {text!r}: the annotation {ANNOTATION_PREFIX}{name} would be longer than "
            "Kubernetes allows (63 characters after the prefix)"
        )
    return match["app"], match["name"]


def check_options(fleet: str | None, parameters: Sequence[str], fmt: str) -> None:
    """The syntax of --fleet and --fleet-parameter, and that they go with --format argocd."""
    if parameters and fleet is None:
        raise UsageError("--fleet-parameter goes with --fleet SELECTOR (a parameter that differs across the fleet)")
    if fleet is None:
        return
    if fmt != "argocd":
        raise UsageError(
            f"--fleet goes with --format argocd (an Argo CD ApplicationSet of the app-of-apps), not --format {fmt}",
            hint="for Flux, export once per cluster into a directory of its own",
        )
    parse_selector(fleet)
    for text in parameters:
        parse_parameter(text)


def fleet_parameters(kfdef: KfDef, texts: Sequence[str]) -> tuple[FleetParameter, ...]:
    """Each --fleet-parameter with the KfDef's value, read from kustomize/<app>/params.yaml (what generate wrote:
    only a parameter written there has replacements that put it in place). Sorted, duplicates dropped."""
    installed = sorted(a.name for a in kfdef.installed_applications())
    out: dict[tuple[str, str], FleetParameter] = {}
    for text in texts:
        app, name = parse_parameter(text)
        if app not in installed:
            raise UsageError(
                f"--fleet-parameter {text}: no installed application {app!r} in {kfdef.path.name}",
                hint=f"installed: {', '.join(installed)}",
            )
        params = kfdef.app_dir / "kustomize" / app / "params.yaml"
        data = _parameters_data(params)
        if name not in data:
            raise UsageError(
                f"--fleet-parameter {text}: {params.relative_to(kfdef.app_dir)} sets no {name}",
                hint=f"set {name} in the KfDef's application {app} (kustomizeConfig.parameters) and run `kfctl "
                "generate`: its value is what a cluster without the annotation gets",
            )
        value = data[name]
        if not isinstance(value, str):
            raise UsageError(
                f"--fleet-parameter {text}: only a string parameter can come from a cluster's annotation; "
                f"{name} is {value!r} ({type(value).__name__})"
            )
        out[(app, name)] = FleetParameter(app, name, value)
    return tuple(out[k] for k in sorted(out))


def _parameters_data(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, yaml.YAMLError) as e:
        raise UsageError(f"{path}: cannot read: {e}") from e
    data = doc.get("data") if isinstance(doc, dict) else None
    return data if isinstance(data, dict) else {}


def source_path(app_dir: Path, path: str, output_dir: Path | None) -> str:
    """Where --output-dir sits in the repository (the parent's source path): the repository's root is APPDIR
    less --path."""
    if output_dir is None:
        raise UsageError(
            f"--fleet writes {FLEET_FILE} beside the Applications: give --output-dir, a directory inside the "
            "repository that holds the app directory"
        )
    app = app_dir.resolve()
    inner = PurePosixPath(path).parts if path != "." else ()
    if inner and tuple(app.parts[-len(inner) :]) != inner:
        raise UsageError(
            f"--path {path!r} is not where {app_dir} sits in its repository: the app directory must end in it",
            hint="with --fleet, run kfctl export in the repository's working copy",
        )
    root = app.parents[len(inner) - 1] if inner else app
    out = output_dir.resolve()
    if out == root or root not in out.parents:
        raise UsageError(
            f"--output-dir {output_dir} is not inside the repository {root} (the app directory less --path "
            f"{path!r}), where the ApplicationSet's parents read it"
        )
    return out.relative_to(root).as_posix()


def parameter_patch(params: Sequence[FleetParameter], values: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The kustomize patch of application ``params[0].application``'s Parameters object setting each parameter
    (the KfDef's values unless ``values`` names others): a JSON patch, written as Go's json.Marshal of sorted
    maps would write it, so that a parent's render for a cluster without annotations is byte for byte git's."""
    ops = [{"op": "replace", "path": f"/data/{p.name}", "value": (values or {}).get(p.name, p.default)} for p in params]
    return {
        "target": {"group": PARAMS_GROUP, "kind": PARAMS_KIND, "name": params[0].application},
        "patch": json.dumps(ops, separators=(",", ":"), sort_keys=True),
    }


def _go_string(value: str) -> str:
    """A Go template string literal (JSON's escapes are Go's)."""
    return json.dumps(value)


def _parent_patches(params: Sequence[FleetParameter]) -> list[dict[str, Any]]:
    """The parent's kustomize patches of its children: the destination, and each application's parameters."""
    server = '[{"op":"replace","path":"/spec/destination/server","value":{{ .server | toJson }}}]'
    patches: list[dict[str, Any]] = [{"target": {"group": "argoproj.io", "kind": "Application"}, "patch": server}]
    by_app: dict[str, list[FleetParameter]] = {}
    for p in params:
        by_app.setdefault(p.application, []).append(p)
    for app, ps in sorted(by_app.items()):
        ops = " ".join(
            f'(dict "op" "replace" "path" {_go_string("/data/" + p.name)} "value" '
            f"(index $a {_go_string(p.annotation)} | default {_go_string(p.default)}))"
            for p in ps
        )
        patch = (
            "{{- $a := .metadata.annotations | default (dict) -}}"
            '[{"op":"replace","path":"/spec/source/kustomize/patches/0/patch","value":'
            f"{{{{ list {ops} | toJson | toJson }}}}}}]"
        )
        target = {
            "group": "argoproj.io",
            "kind": "Application",
            "labelSelector": f"kfctl.kubeflow.org/application={app}",
        }
        patches.append({"target": target, "patch": patch})
    return patches


def applicationset(
    kfdef: KfDef,
    *,
    selector: Mapping[str, str],
    params: Sequence[FleetParameter],
    source: Mapping[str, Any],
    namespace: str,
    labels: Mapping[str, str],
    sync_policy: Mapping[str, Any],
) -> dict[str, Any]:
    """The ApplicationSet: per selected cluster, the parent Application of the export directory (``source``)."""
    parent_source = {**source, "kustomize": {"namePrefix": f"{CLUSTER}-", "patches": _parent_patches(params)}}
    template = {
        "metadata": {
            "name": f"{CLUSTER}-{kfdef.name}",
            "labels": dict(labels),
            # Deleting the parent (the cluster's label removed) deletes its children, the highest wave first.
            "finalizers": ["resources-finalizer.argocd.argoproj.io"],
        },
        "spec": {
            "project": "default",
            "source": parent_source,
            "destination": {"server": "https://kubernetes.default.svc", "namespace": namespace},
            "syncPolicy": dict(sync_policy),
        },
    }
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": kfdef.name, "namespace": namespace, "labels": dict(labels)},
        "spec": {
            "goTemplate": True,
            "generators": [{"clusters": {"selector": {"matchLabels": dict(selector)}}}],
            "template": template,
        },
    }
