"""A git repository holding only a KfDef (``kfdef.yaml`` and its ``kfdef.lock``), deployed by Argo CD through a
Config Management Plugin (CMP v2): Argo CD's repo-server hands the repository to a sidecar that runs
``kfctl generate . --stdout`` and syncs what it prints.

Why a plugin and not the export of rendered files: a repository of two files is what "a GitOps repo holding a
KfDef" means; the rendered output is then the plugin's business, reproducible because the lock pins every repo
and remote base (the sidecar needs network to the repos, or ``spec.mirrors``/the plugin's ``KFCTL_MIRRORS``
parameter pointing at a mirror; a pin that no longer matches fails the render, and Argo CD's condition shows
kfctl's message). What it prints are the objects ``kfctl apply`` would apply, each annotated with the sync wave of
its part (kfctl.app.gitops_parts: an application, or the objects its own webhooks admit after it), so one
Application's sync walks kfctl's dependency order, waiting for each wave to be healthy.

This module builds data only: the objects to print (after a generate), the plugin's files. It never prints,
never runs a command and never talks to a cluster.
"""

from __future__ import annotations

import copy
from typing import Any

import yaml

from kfctl.app import argocd_settings, gitops_parts
from kfctl.app.bundle import load_bundle
from kfctl.app.export import (
    SYNC_WAVE,
    ExportOptions,
    ExportResult,
    application_dependencies,
    argocd_application,
    argocd_revision,
    check_options,
    dump_documents,
    sync_waves,
)
from kfctl.catalog.model import Catalog
from kfctl.config.model import KfDef
from kfctl.errors import UsageError
from kfctl.objects import Obj

PLUGIN = "kfctl"
PLUGIN_CONFIGMAP = "kfctl-cmp-plugin"
SIDECAR = "kfctl"
# The repo-server's Deployment and where Argo CD's manifests mount what a sidecar needs: argocd-cmp-server (copied
# into the var-files volume by the repo-server's init container) and the plugins' socket directory.
REPO_SERVER = "argocd-repo-server"
CMP_SERVER = "/var/run/argocd/argocd-cmp-server"
PLUGIN_CONFIG_DIR = "/home/argocd/cmp-server/config"
PLUGIN_SOCKETS = "/home/argocd/cmp-server/plugins"
# Fetched repos and remote bases are content-addressed, so every render of the sidecar may share them: the init
# command points the checkout's .cache/ (git-ignored) at a volume that outlives one render.
CACHE = "/var/cache/kfctl"
CACHE_ENV = "KFCTL_PLUGIN_CACHE"  # the sidecar's environment may move it (the test bed's cmp-server does)
# The sidecar's ARGOCD_EXEC_TIMEOUT, which Argo CD's documentation names for plugin commands; v3.2.11's
# argocd-cmp-server does not apply it: the controller's controller.repo.server.timeout.seconds bounds a render
# (docs/gitops.md, "Timeouts").
EXEC_TIMEOUT = "5m"
# The Application's spec.source.plugin.env (Argo CD passes it as ARGOCD_ENV_<name>): space-separated
# URL_PREFIX=LOCATION mirrors, before the KfDef's spec.mirrors (a cluster whose mirror is not the repo's).
MIRRORS_PARAMETER = "KFCTL_MIRRORS"


def waved_objects(kfdef: KfDef, catalog: Catalog) -> tuple[Obj, ...]:
    """Every object of the installed applications (run generate first), in wave order, each a copy carrying the
    ``argocd.argoproj.io/sync-wave`` of its part. The Secrets kfctl generates in the cluster are left out: a
    render is not the place for random values (``kfctl secrets apply`` writes them)."""
    deps = application_dependencies(kfdef, catalog)
    sync_waves(deps)  # a cycle among the applications is named as such
    bundle = load_bundle(kfdef, catalog)
    parts = gitops_parts.parts_of(deps, bundle)
    waves = sync_waves({name: part.depends_on for name, part in parts.items()})
    out: list[Obj] = []
    for name in sorted(parts, key=lambda n: (waves[n], n)):
        for obj in parts[name].keep:
            waved = copy.deepcopy(dict(obj))
            metadata = waved.setdefault("metadata", {})
            metadata["annotations"] = {**(metadata.get("annotations") or {}), SYNC_WAVE: str(waves[name])}
            out.append(waved)
    return tuple(out)


def plugin_config() -> dict[str, Any]:
    """plugin.yaml: discovered by a kfdef.yaml at the Application's path; init shares the cache; generate renders."""
    mirrors = f'for m in ${{ARGOCD_ENV_{MIRRORS_PARAMETER}:-}}; do set -- "$@" --mirror "$m"; done; '
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ConfigManagementPlugin",
        "metadata": {"name": PLUGIN},
        "spec": {
            "init": {
                "command": [
                    "sh",
                    "-c",
                    f'c="${{{CACHE_ENV}:-{CACHE}}}"; mkdir -p "$c" && rm -rf .cache && ln -s "$c" .cache',
                ]
            },
            "generate": {"command": ["sh", "-c", f'set -- ; {mirrors}exec kfctl generate . --stdout "$@"']},
            "discover": {"fileName": "kfdef.yaml"},
        },
    }


def plugin_configmap(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": PLUGIN_CONFIGMAP,
            "namespace": namespace,
            "labels": {"app.kubernetes.io/part-of": "argocd"},
        },
        "data": {"plugin.yaml": yaml.safe_dump(plugin_config(), sort_keys=False)},
    }


def sidecar_patch(image: str, namespace: str) -> dict[str, Any]:
    """A strategic-merge patch of Argo CD's repo-server Deployment adding the plugin's sidecar (its image holds
    kfctl and kustomize; argocd-cmp-server comes from the repo-server's var-files volume)."""
    if not image.strip():
        raise UsageError(
            "--format argocd-plugin needs --plugin-image: the sidecar's image, holding kfctl and kustomize",
            hint="build one as docs/gitops.md shows (pip install kfctl, plus the kustomize release binary)",
        )
    mounts = [
        {"name": "var-files", "mountPath": "/var/run/argocd"},
        {"name": "plugins", "mountPath": PLUGIN_SOCKETS},
        {"name": PLUGIN_CONFIGMAP, "mountPath": f"{PLUGIN_CONFIG_DIR}/plugin.yaml", "subPath": "plugin.yaml"},
        {"name": "kfctl-tmp", "mountPath": "/tmp"},  # noqa: S108 (the sidecar's own emptyDir)
        {"name": "kfctl-cache", "mountPath": CACHE},
    ]
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": REPO_SERVER, "namespace": namespace},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": SIDECAR,
                            "image": image,
                            "command": [CMP_SERVER],
                            "env": [{"name": "ARGOCD_EXEC_TIMEOUT", "value": EXEC_TIMEOUT}],
                            "securityContext": {"runAsNonRoot": True, "runAsUser": 999},
                            "volumeMounts": mounts,
                        }
                    ],
                    "volumes": [
                        {"name": PLUGIN_CONFIGMAP, "configMap": {"name": PLUGIN_CONFIGMAP}},
                        {"name": "kfctl-tmp", "emptyDir": {}},
                        {"name": "kfctl-cache", "emptyDir": {}},
                    ],
                }
            }
        },
    }


def plugin_application(kfdef: KfDef, options: ExportOptions, namespace: str) -> dict[str, Any]:
    """One Application for the whole platform: its source is the directory holding kfdef.yaml, rendered by the
    plugin; the objects' sync waves order its sync."""
    metadata: dict[str, Any] = {
        "name": kfdef.name,
        "namespace": namespace,
        "labels": {"app.kubernetes.io/managed-by": "kfctl", "app.kubernetes.io/part-of": kfdef.name},
    }
    source = {
        "repoURL": options.repo_url,
        "targetRevision": argocd_revision(options.revision),
        "path": options.path,
        "plugin": {"name": PLUGIN},
    }
    return argocd_application(kfdef, metadata, source, options, argocd_settings.ignore_differences(None))


REPO_SERVER_PATCH = "argocd-repo-server-patch.yaml"


def export_plugin(kfdef: KfDef, options: ExportOptions, image: str) -> ExportResult:
    """``kfctl export --format argocd-plugin``: the plugin's ConfigMap and the platform's Application (objects to
    apply in Argo CD's namespace), and two files for Argo CD's own install: the health checks of Kubeflow's kinds
    (argocd-cm.yaml, as ``--format argocd`` writes it; a wave waits on them) and the repo-server's sidecar patch."""
    check_options(options)
    namespace = options.namespace or "argocd"
    patch = sidecar_patch(image, namespace)
    return ExportResult(
        objects=(plugin_configmap(namespace), plugin_application(kfdef, options, namespace)),
        waves={},
        missing=(),
        files=(
            ("argocd-cm.yaml", dump_documents([argocd_settings.argocd_cm(namespace, kfdef.wait_rules)])),
            (REPO_SERVER_PATCH, dump_documents([patch])),
        ),
    )
