"""Where the binaries go: ${KFCTL_E2E_CACHE:-~/.cache/kfctl-e2e}/<key>/bin, one key per set.

The keys are a contract with every warm cache (this machine's, CI's): they must stay byte-identical to what
e2e/build-binaries has always printed for the same versions.env, or everything rebuilds. A binary whose name carries
its release (spark-operator-<v>, knative-serving-<command>-<v>, kubeflow/kubeflow's components, any
<binary>-<other release>) needs no key; helm is checked by `helm version` instead, so bumping it rebuilds nothing.
Pure: reads versions, never the disk.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from kfctl_testbed.gobuild.versions import Versions

# The operators that enter the key, as named there; with their other releases: <v>[+<other>...].
KEYED_OPERATORS = (
    ("training-operator", "TRAINING_OPERATOR_VERSION"),
    ("katib", "KATIB_VERSION"),
    ("kserve", "KSERVE_VERSION"),
    ("jobset", "JOBSET_VERSION"),
    ("trainer", "TRAINER_VERSION"),
)


def cache_root(environ: Mapping[str, str] = os.environ) -> Path:
    return Path(environ.get("KFCTL_E2E_CACHE") or Path.home() / ".cache" / "kfctl-e2e")


def control_plane_key(versions: Versions) -> str:
    k8s, etcd, kwok = (versions.get(k) for k in ("KUBERNETES_VERSION", "ETCD_VERSION", "KWOK_VERSION"))
    return f"k8s-{k8s}_etcd-{etcd}_kwok-{kwok}"


def operators_key(versions: Versions) -> str:
    return "operators_" + "_".join(
        f"{name}-" + "+".join((versions.get(key), *versions.others(key))) for name, key in KEYED_OPERATORS
    )


def flux_key(versions: Versions) -> str:
    source, kustomize = (
        versions.get(k) for k in ("FLUX_SOURCE_CONTROLLER_VERSION", "FLUX_KUSTOMIZE_CONTROLLER_VERSION")
    )
    return f"flux_source-controller-{source}_kustomize-controller-{kustomize}"


def argocd_key(versions: Versions) -> str:
    """Argo CD's binary and the kustomize its repo-server runs (built into the same dir)."""
    argocd, kustomize = (versions.get(k) for k in ("ARGOCD_VERSION", "KUSTOMIZE_VERSION"))
    return f"argocd-{argocd}_kustomize-{kustomize}"


def bin_dir(root: Path, key: str) -> Path:
    return root / key / "bin"
