#!/usr/bin/env python3
"""A process runtime for the local control plane's fake (kwok) nodes. TEST CODE: kfctl never imports it.

kwok marks pods Running but runs no container. For each Running pod on a kwok node whose container image is
one of RUNNABLE_IMAGES, repository and tag, this controller runs the binary built for exactly that release the
way a kubelet would run the container:

- argv: the binary replaces the image's entrypoint (`command[0]`, e.g. `/manager`); the rest of `command`
  and all of `args` are kept, with `$(VAR)` references expanded as the kubelet does;
- env: the container's `env` (valueFrom configMapKeyRef, secretKeyRef, fieldRef, resourceFieldRef) and
  `envFrom`, plus HOSTNAME and KUBERNETES_SERVICE_HOST=127.0.0.1 / KUBERNETES_SERVICE_PORT=<API server port>,
  so client-go's in-cluster configuration reaches the API server on loopback; nothing of our own environment
  (no KUBECONFIG) leaks in;
- volumes: Secret, ConfigMap, projected (serviceAccountToken through a TokenRequest bound to the pod,
  configMap, secret, downwardAPI) and emptyDir volumes are materialised under <state>/pods/<ns>_<pod>/ and
  refreshed while the pod runs (a rotator that writes its Secret waits for the files, as with a kubelet);
  they are bind-mounted at the container's mountPaths inside a private mount namespace (`unshare --mount
  --propagation private`, root only), so two processes that hard-code the same path never meet; a volume whose
  mountPath covers the binary cache (an emptyDir at /tmp, when the cache is under /tmp) does not hide the binary;
  a mountPath the host lacks is made in an overlay (tmpfs upper layer) of the pod's namespace only, never on the
  host (container_script): nothing of a pod is left on the host but under the state dir;
- hostname: the pod's name, in a UTS namespace of its own (leader-election identities are built from it);
- network: a network namespace of its own with only `lo` (`unshare --net`), so whatever it binds is loopback
  and two pods never collide on a port; the runtime listens on 127.0.0.1:<API server port> inside it and
  pipes each connection to the API server on the host's loopback (Relay);
- Services (podnet.py): cluster DNS (resolv.conf and a DNS server of the runtime's on 127.0.0.10 in the namespace),
  cluster IPs and pod IPs (local routes on `lo`, an nftables redirect to the runtime's Service proxy, which dials the
  process behind the Service on loopback, as the egress proxy does), and the Service environment variables a
  kubelet injects. Nothing outside 127.0.0.0/8 is ever dialled, and an address outside the cluster has no route.

Each process logs to <state>/<ns>_<pod>_<container>.log, is restarted with a doubling backoff when it exits
and stopped (SIGTERM, SIGKILL after the pod's grace period) when its pod goes away or stops Running.

The pod's readiness is the processes' (podstatus.py, through pods/status): kwok leaves these pods Running but
not Ready (kfctl_testbed/kwok-pod-stages.yaml), and the runtime writes each container's state (running, or waiting
after an exit, with lastState, exit code and restartCount) and Ready once every process passes its
readinessProbe (httpGet and tcpSocket inside the process's network namespace; exec probes are not run and
count as passing; no probe: ready once it runs).

A container whose image is of a runnable repository but of a release with no binary built is still the runtime's
(kwok leaves its pod not Ready). When its tag names a release of the operator's Go module, the release is built on
first use (firstuse.py): the container waits in ContainerCreating meanwhile, as a kubelet's does while it pulls,
and reports `waiting: ErrImagePull` with the Go module proxy's answer when the release cannot be built. Any other
tag, or an unknown digest, runs nothing: `waiting: ErrImagePull` with a message naming the image and the releases
that are built. Never another release in its place: an upgrade test must see each
release's own operator (the one stand-in, named as such, is the untagged `kubeflow/training-operator`).

What it does not do: init containers, liveness and startup probes (a process is restarted only when it
exits), resource limits, runAsUser (processes run as root), readOnlyRootFilesystem, UDP to a Service, one
network namespace shared by a pod's containers (each gets its own). The way
in is the API server's egress proxy (egress.py, `--egress-port`), which this process serves since it knows the
pids: a webhook Service's cluster IP leads to 127.0.0.1:<targetPort> in the namespace of the pod's process.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import logging
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from kfctl_testbed import egress, firstuse, informer, kube_rest, podnet, podports
from kfctl_testbed.kube_rest import JSON, ApiError
from kfctl_testbed.netns import Relay
from kfctl_testbed.podstatus import PodStatusWriter, Termination

# Image repository (without tag or digest) → {tag → the binary e2e/build-binaries --operators builds for that
# release}; tag "" is an untagged image. The releases of e2e/versions.env's *_VERSION keep the plain binary
# names, its *_OTHER_VERSIONS are <binary>-<version>. A tag not here has no binary: ErrImagePull.
RUNNABLE_IMAGES: dict[str, dict[str, str]] = {
    "ghcr.io/kubeflow/training-v1/training-operator": {
        "v1-3f15cb8": "training-operator",  # v1.9.2 (the catalog's; Kubeflow manifests v1.11.0)
        "v1-5c0e763": "training-operator-v1.9.1",  # the image tag v1.9.1's own manifests pin
    },
    # STAND-IN: Kubeflow manifests v1.10.0 name the training operator `kubeflow/training-operator`, untagged (their
    # base deployment.yaml; the overlay's kustomize `images:` entry names ghcr.io/kubeflow/training-v1/
    # training-operator with newTag v1-5c0e763, so it never applies). A kubelet would pull :latest, whose release
    # nobody can know; we run v1.9.1, the release that overlay meant (the module github.com/kubeflow/
    # training-operator@v1.9.1, tag commit 17077e33, pins v1-5c0e763 in its own manifests/overlays).
    "kubeflow/training-operator": {"": "training-operator-v1.9.1"},
    # STAND-IN: v0.18.0 (Kubeflow manifests v1.10.0) cannot be built here: the Go module proxy refuses it
    # ("github.com/kubeflow/katib@v0.18.0: reading .../@v/v0.18.0.info: 403 Forbidden ... This module version is not
    # available", likewise every katib release before v0.19.0, rc tags and commits). We run v0.19.0 for it, the
    # next release (same v1beta1 CRDs and KatibConfig), so that the v1.10.0 → v1.11.0 upgrade test can start from a
    # healthy v1.10.0; that test names it. Katib's v0.18.0 behaviour itself is not what it checks.
    "ghcr.io/kubeflow/katib/katib-controller": {"v0.19.0": "katib-controller", "v0.18.0": "katib-controller"},
    "kserve/kserve-controller": {
        "v0.16.0": "kserve-manager",
        "v0.15.2": "kserve-manager-v0.15.2",  # manifests v1.11.0
        "v0.14.1": "kserve-manager-v0.14.1",  # manifests v1.10.0
    },
    "registry.k8s.io/jobset/jobset": {
        "v0.11.0": "jobset-controller",
        "v0.10.1": "jobset-controller-v0.10.1",  # manifests v1.11.0 (Trainer's third-party JobSet)
    },
    "ghcr.io/kubeflow/trainer/trainer-controller-manager": {
        "v2.2.0": "trainer-controller-manager",
        "v2.1.0": "trainer-controller-manager-v2.1.0",  # manifests v1.11.0
    },
    # kubeflow/kubeflow's components, built from ../shared/fixtures' source (manifests v1.10.0 and v1.11.0 pin v1.10.0).
    "ghcr.io/kubeflow/kubeflow/profile-controller": {"v1.10.0": "profile-controller-v1.10.0"},
    "ghcr.io/kubeflow/kubeflow/kfam": {"v1.10.0": "kfam-v1.10.0"},
    "ghcr.io/kubeflow/kubeflow/notebook-controller": {"v1.10.0": "notebook-controller-v1.10.0"},
    "ghcr.io/kubeflow/kubeflow/poddefaults-webhook": {"v1.10.0": "poddefaults-webhook-v1.10.0"},
    # kubeflow/kubeflow's web UIs from the same source, built by `e2e/build-binaries --webapps` (gobuild/webapps.py):
    # each name is a launcher that becomes the image's entrypoint (node dist/server.js; gunicorn ... entrypoint:app).
    "ghcr.io/kubeflow/kubeflow/central-dashboard": {"v1.10.0": "centraldashboard-v1.10.0"},
    "ghcr.io/kubeflow/kubeflow/jupyter-web-app": {"v1.10.0": "jupyter-web-app-v1.10.0"},
    "ghcr.io/kubeflow/kubeflow/volumes-web-app": {"v1.10.0": "volumes-web-app-v1.10.0"},
    "ghcr.io/kubeflow/kubeflow/tensorboards-web-app": {"v1.10.0": "tensorboards-web-app-v1.10.0"},
    # STAND-IN: oauth2-proxy v7.13.0 (Kubeflow manifests v1.11.0) and v7.14.3 (26.03) cannot be built here: the Go
    # module proxy refuses them ("v7.13.0.info: 403 Forbidden ... This module version is not available"); v7.7.1
    # (v1.10.0) is served but unknown to the checksum database and not built. We run v7.15.6 for each (v1.10.0 and
    # v1.11.0 pass the same flags and config file, all still v7.15.6's); the tests that reach it name it.
    "quay.io/oauth2-proxy/oauth2-proxy": {
        "v7.15.6": "oauth2-proxy-v7.15.6",
        "v7.14.3": "oauth2-proxy-v7.15.6",
        "v7.13.0": "oauth2-proxy-v7.15.6",
        "v7.7.1": "oauth2-proxy-v7.15.6",
    },
    # The Spark operator (controller and webhook are one binary's subcommands), Kubeflow manifests v1.11.0.
    "ghcr.io/kubeflow/spark-operator/controller": {"2.4.0": "spark-operator-v2.4.0"},
    # STAND-IN: 2.1.0 (Kubeflow manifests v1.10.0) cannot be built here: the Go module proxy refuses every
    # github.com/kubeflow/spark-operator/v2 release before v2.4.0 ("v2.1.0.info: 403 Forbidden ... This module version
    # is not available"). We run v2.4.0 for it (its flags are a superset of the ones v1.10.0's Deployments pass), so
    # that the v1.10.0 → v1.11.0 upgrade test starts from a healthy v1.10.0; that test names it.
    "docker.io/kubeflow/spark-operator": {"2.1.0": "spark-operator-v2.4.0"},
    # STAND-IN: Kubeflow manifests v1.10.0 and v1.11.0 pin Knative Serving 1.16.2 (their Deployments' label
    # app.kubernetes.io/version), by digest only, so the digests below name that release. Its module release
    # knative.dev/serving@v0.43.2 cannot be built here: the Go module proxy refuses it ("v0.43.2.info: 403 Forbidden
    # ... This module version is not available"). We run v0.43.1 (Knative 1.16.1, the patch release before it) for it;
    # the full platform's test names it. Manifests 26.03 pin Knative Serving 1.21.1 (the second digests), whose module
    # release v0.48.1 is served and built as itself. The activator too: it is Ready once its websocket to the
    # autoscaler's Service is up, through the cluster DNS and Service proxy the runtime gives its pods (podnet.py).
    **{
        f"gcr.io/knative-releases/knative.dev/serving/cmd/{command}": {
            digest_1_16_2: f"knative-serving-{command}-v0.43.1",
            digest_1_21_1: f"knative-serving-{command}-v0.48.1",
        }
        for command, digest_1_16_2, digest_1_21_1 in (
            (
                "activator",
                "sha256:cc39d40985f7b37ba384a857d194a24ac5eae7e204aac4ed9bf4ebfd8d62e721",
                "sha256:cf8d126fc08e596b742025f6e53c97abf921f7bd6394d29c200e79c1c323dc6e",
            ),
            (
                "autoscaler",
                "sha256:59c2e7ad52cea17bedfc2aca9b9e33060bb34f04d35fd71fe61147bcbdb881e4",
                "sha256:35045ef7c35c6151f0565094cc5ec240a886ba2e5a844366b22a074342af3edf",
            ),
            (
                "controller",
                "sha256:0e47362d044f8eac84595ed0a9fdf22e5dd5a07cc7a5df74e93eb5ad17ad4827",
                "sha256:622546def05a9b181123d35ede4e4a6e60d7751ae558ea2c5306978b30c24d5c",
            ),
            (
                "webhook",
                "sha256:d42e2f83c9018779465860fdc67ce6ada3eac8ba8c47c5c2127c0bb45f9b328a",
                "sha256:8754cefd1f1db905495de5ba707b37459cc212b830d40962162654986d264d74",
            ),
        )
    },
}

# STAND-INs for servers that cannot be built here: image repository → {tag → the test bed module the runtime runs in
# the binary's place, with the container's arguments, volumes and environment}. Each module's docstring says why its
# server cannot be built and what of it it does. Their releases are always "built" (kwok leaves their pods to us).
STANDIN_IMAGES: dict[str, dict[str, str]] = {
    # Dex: its module github.com/dexidp/dex has no /v2 path, so the Go module proxy serves no v2 release.
    "ghcr.io/dexidp/dex": {
        "v2.45.0": "kfctl_testbed.dex_standin",  # Kubeflow manifests 26.03
        "v2.44.0": "kfctl_testbed.dex_standin",  # Kubeflow manifests v1.11.0
        "v2.41.1": "kfctl_testbed.dex_standin",  # v1.10.0
    },
    # Istio's gateways (Envoy, C++): the ingress gateway and Knative's cluster-local gateway.
    "gcr.io/istio-release/proxyv2": {
        "1.28.0": "kfctl_testbed.istio_gateway",  # Kubeflow manifests v1.11.0
        "1.24.3": "kfctl_testbed.istio_gateway",  # v1.10.0
    },
}
# Stand-ins that also play a controller reading the whole cluster (istiod, for the gateway): they get the runtime's
# kubeconfig (`--kubeconfig <path> --` before the container's arguments), not the pod's ServiceAccount. Their
# configuration is what they read there, not their volumes: a volume whose source does not exist is mounted empty
# instead of holding the container back (the gateway's `istio-ca-root-cert`, which istiod publishes; istiod does
# not run here).
STANDINS_READING_THE_CLUSTER = frozenset({"kfctl_testbed.istio_gateway"})

KWOK_NODE_ANNOTATION = "kwok.x-k8s.io/node"
POLL_SECONDS = 1.0
# What each pass reads, kept in memory (informer.Cache): the pods and nodes, the Secrets and ConfigMaps of their
# volumes and environments, and the Services of their environments, DNS and proxy (podnet.py).
READ_COLLECTIONS = ("/api/v1/nodes", "/api/v1/pods", "/api/v1/secrets", "/api/v1/configmaps", "/api/v1/services")
BACKOFF_FIRST_SECONDS = 1.0
BACKOFF_MAX_SECONDS = 30.0
# A process that ran this long before exiting restarts after BACKOFF_FIRST_SECONDS again.
BACKOFF_RESET_SECONDS = 60.0
TOKEN_SECONDS_DEFAULT = 3600
STOP_ALL_SECONDS = 8.0
SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"

log = logging.getLogger("runtime")


# A volumeMount: the volume's directory on the host, the container's mountPath, readOnly, subPath ("" for none).
Mount = tuple[Path, str, bool, str]
# Existing directories a tmpfs stage may cover inside the pod's mount namespace (the host never sees it): the first
# that no mountPath or overlay covers, and that covers no source, holds the overlays' upper layers and what a
# mountPath would hide (a volume at /tmp over a state dir in /tmp, or over the binary cache).
STAGE_CANDIDATES = ("/srv", "/media", "/mnt", "/opt")


def _covers(target: str, path: str) -> bool:
    return path == target or path.startswith(target.rstrip("/") + "/")


@dataclass(frozen=True)
class HostView:
    """What container_script needs to know of the host's filesystem (a table test gives its own)."""

    exists: Callable[[str], bool] = os.path.exists
    realpath: Callable[[str], str] = os.path.realpath
    mount_points: Callable[[], list[str]] = lambda: host_mount_points()


def host_mount_points() -> list[str]:
    """The mount points of our mount namespace (/proc/self/mountinfo's fifth field, octal escapes undone)."""
    points = []
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        field = line.split()[4]
        points.append(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field))
    return points


def overlay_dirs(targets: list[str], host: HostView) -> list[str]:
    """The host directories that get a private overlay (a tmpfs upper layer) in the pod's mount namespace so that
    a mountPath which does not exist on the host can be made there without making it on the host: for each
    mountPath neither on the host nor under an earlier mountPath (whose volume is in the runtime's state dir), its
    deepest existing ancestor (symlinks resolved: /var/run is /run). Parents first; one under another with no mount
    point between them is left out, the parent's overlay already holds it."""
    wanted: list[str] = []
    for i, target in enumerate(targets):
        if host.exists(target) or any(_covers(t, target) for t in targets[:i]):
            continue
        ancestor = os.path.dirname(target.rstrip("/")) or "/"
        while not host.exists(ancestor):
            ancestor = os.path.dirname(ancestor) or "/"
        real = host.realpath(ancestor)
        if real not in wanted:
            wanted.append(real)
    wanted.sort(key=lambda d: len(Path(d).parts))
    points = host.mount_points()
    kept: list[str] = []
    for d in wanted:
        parent = next((k for k in kept if _covers(k, d)), None)
        if parent is not None and not any(_covers(m, d) and m != parent and _covers(parent, m) for m in points):
            continue
        kept.append(d)
    return kept


def container_script(mounts: list[Mount], binary: str, host: HostView | None = None) -> list[str]:
    """Shell lines that bind each volume at its mountPath inside the process's private mount namespace, then
    become the binary (`exec`, with the container's arguments as "$@").

    As a kubelet does: a subPath that does not exist yet is created as a directory, and mountPaths go parents
    first (as container runtimes sort them), so /tmp never covers a volume mounted below it. Nothing is made on
    the host outside the runtime's state dir: a mountPath missing on the host (/var/run/secrets/kubernetes.io/
    serviceaccount) is made inside an overlay of its deepest existing ancestor whose upper layer is on a tmpfs of
    the pod's own (overlay_dirs), so the host never sees it, before, during or after the pod. When that ancestor is
    / (katib's /katib-config.yaml), the overlay of / is mounted in the stage, the host's mount points bound back
    into it, and the binary runs chrooted there. A mountPath or overlay can also cover paths on the host the
    runtime still needs: volumes' sources when the runtime's state dir is in /tmp, or the binary itself when the
    binary cache is (the Spark operator's controller mounts an emptyDir at /tmp). Then each of them is first bound
    into the tmpfs stage (an existing directory no mountPath covers, hidden in the pod's namespace only), and used
    from there; the binary keeps its file name, which some programs print as their own."""
    host = host or HostView()
    lines: list[str] = []
    ordered = sorted(mounts, key=lambda m: len(Path(m[1]).parts))
    sources = [str(src / sub) if sub else str(src) for src, _, _, sub in ordered]
    for (src, _, _, sub), path in zip(ordered, sources, strict=True):
        if sub:
            q = shlex.quote(path)
            lines.append(f"if [ -d {shlex.quote(str(src))} ] && [ ! -e {q} ]; then mkdir -p {q}; fi")
    targets = [target for _, target, _, _ in ordered]
    overlays = overlay_dirs(targets, host)
    chroot = "/" in overlays
    # Without a new root, the mounts happen on our own paths: what they cover is staged first. With one, they
    # happen below it, and our paths stay as they are (only the binary may be covered inside the new root).
    covering = [] if chroot else targets + overlays
    hidden_sources = any(_covers(t, path) for t in covering for path in sources)
    hidden_binary = any(_covers(t, binary) for t in targets + overlays if t != "/")
    exe = binary
    root = ""  # where the pod's / is: the stage's overlay of / when there is one
    if hidden_sources or hidden_binary or overlays:
        stage = next(
            c
            for c in STAGE_CANDIDATES
            if host.exists(c)
            and not any(_covers(t, c) for t in targets + overlays if t != "/")
            and not any(_covers(c, p) for p in [*sources, binary])
        )
        lines.append(f"mount -t tmpfs kfctl-e2e-stage {shlex.quote(stage)}")
        if hidden_sources:
            staged = []
            for i, path in enumerate(sources):
                q_src, q_tmp = shlex.quote(path), shlex.quote(f"{stage}/{i}")
                lines.append(f"if [ -d {q_src} ]; then mkdir {q_tmp}; else touch {q_tmp}; fi")
                lines.append(f"mount --bind {q_src} {q_tmp}")
                staged.append(f"{stage}/{i}")
            sources = staged
        if hidden_binary and not chroot:
            exe = f"{stage}/bin/{Path(binary).name}"
            q_exe = shlex.quote(exe)
            lines += [f"mkdir {shlex.quote(stage + '/bin')}", f"touch {q_exe}"]
            lines.append(f"mount --bind {shlex.quote(binary)} {q_exe}")
        points = [m for m in host.mount_points() if not _covers(stage, m)]
        for i, directory in enumerate(overlays):
            layer = f"{stage}/overlay{i}"
            at = f"{stage}/root" if directory == "/" else root + directory
            q_at = shlex.quote(at)
            # The submounts of an overlaid directory (an overlay shows its own filesystem only) are bound back.
            below = [m for m in points if m != directory and _covers(directory, m)]
            tops = [m for m in below if not any(o != m and _covers(o, m) for o in below)]
            made = [layer, f"{layer}/upper", f"{layer}/work"] + ([at] if directory == "/" else [])
            lines.append("mkdir " + " ".join(shlex.quote(d) for d in made))
            if tops and directory != "/":
                lines.append(f"mkdir {shlex.quote(layer + '/lower')}")
                lines.append(f"mount --rbind {q_at} {shlex.quote(layer + '/lower')}")
            options = f"lowerdir={root + directory},upperdir={layer}/upper,workdir={layer}/work"
            lines.append(f"mount -t overlay kfctl-e2e-pod -o {shlex.quote(options)} {q_at}")
            for m in tops:
                origin = m if directory == "/" else f"{layer}/lower/{os.path.relpath(m, directory)}"
                into = at.rstrip("/") + m[len(directory.rstrip("/")) :]
                lines.append(f"mount --rbind {shlex.quote(origin)} {shlex.quote(into)}")
            if directory == "/":
                root = at
        if hidden_binary and chroot:
            exe = f"/.kfctl-e2e/bin/{Path(binary).name}"
            q_exe = shlex.quote(root + exe)
            lines += [f"mkdir -p {shlex.quote(root + '/.kfctl-e2e/bin')}", f"touch {q_exe}"]
            lines.append(f"mount --bind {shlex.quote(binary)} {q_exe}")
    for (_, target, read_only, _), path in zip(ordered, sources, strict=True):
        # Below a new root, a link on the way (/var/run → /run) is followed here, where it would lead out of it.
        q_src, q_dst = shlex.quote(path), shlex.quote(root + resolved(target, host) if root else target)
        lines.append(
            f"if [ -d {q_src} ]; then mkdir -p {q_dst}; "
            f"else mkdir -p $(dirname {q_dst}); [ -e {q_dst} ] || touch {q_dst}; fi"
        )
        lines.append(f"mount --bind {q_src} {q_dst}")
        if read_only:
            lines.append(f"mount -o remount,bind,ro {q_dst}")
    if root:
        # In the new root, the same working directory (the same path: / is its lower layer).
        enter = shlex.quote('cd "$0" 2>/dev/null || cd /; exec "$@"')
        lines.append(f'exec chroot {shlex.quote(root)} /bin/sh -c {enter} "$(pwd)" {shlex.quote(exe)} "$@"')
    else:
        lines.append(f'exec {shlex.quote(exe)} "$@"')
    return lines


def resolved(path: str, host: HostView) -> str:
    """`path` with its deepest existing ancestor's links resolved on the host (the rest does not exist yet)."""
    ancestor, rest = path.rstrip("/") or "/", ""
    while not host.exists(ancestor):
        ancestor, name = os.path.split(ancestor)
        rest = f"/{name}{rest}"
    return host.realpath(ancestor).rstrip("/") + rest


def split_image(image: str) -> tuple[str, str, str]:
    """`repo[:tag][@digest]` → (repo, tag, digest), "" for what is absent (a registry port's colon stays in repo)."""
    repo, _, digest = image.partition("@")
    tag = ""
    if ":" in repo.rsplit("/", 1)[-1]:
        repo, tag = repo.rsplit(":", 1)
    return repo, tag, digest


def image_repository(image: str) -> str:
    """`repo[:tag][@digest]` → repo."""
    return split_image(image)[0]


def binary_name(image: str) -> str | None:
    """The binary built for exactly the release `image` names, None when none is. The tag names the release
    (`repo:tag@digest` too: the digest is not checked, we cannot know a release's digest without its registry);
    an image without a tag is looked up by its digest (no entry has one), one with neither as "" (untagged)."""
    repo, tag, digest = split_image(image)
    return RUNNABLE_IMAGES.get(repo, {}).get(tag or digest)


def standin_module(image: str) -> str | None:
    """The test bed module the runtime runs for a container of `image` (STANDIN_IMAGES), or None."""
    repo, tag, digest = split_image(image)
    return STANDIN_IMAGES.get(repo, {}).get(tag or digest)


def binary_for(image: str, bin_dir: Path) -> Path | None:
    """The built binary the runtime runs for a container of `image`, or None."""
    name = binary_name(image)
    if name is None:
        return None
    path = bin_dir / name
    return path if path.is_file() else None


def built_releases(repository: str, bin_dir: Path) -> list[str]:
    """The tags of `repository` whose binary is in `bin_dir` ("" for untagged)."""
    built = [tag for tag, name in RUNNABLE_IMAGES.get(repository, {}).items() if (bin_dir / name).is_file()]
    return sorted(built + list(STANDIN_IMAGES.get(repository, {})))


def is_runtime_image(image: str, bin_dir: Path) -> bool:
    """Whether a container of `image` is the runtime's: its repository has some built release, whether or not its
    own release is one (kwokstages.py's rule; the runtime reports ErrImagePull for an unbuilt one)."""
    return bool(built_releases(image_repository(image), bin_dir))


def pull_error(image: str, bin_dir: Path) -> str | None:
    """What the runtime reports (ErrImagePull) for a container of a runtime image whose release has no binary;
    None for an image it runs or one that is not the runtime's."""
    if not is_runtime_image(image, bin_dir) or binary_for(image, bin_dir) is not None or standin_module(image):
        return None
    built = ", ".join(tag or "untagged" for tag in built_releases(image_repository(image), bin_dir))
    return f"e2e runtime: no binary built for {image} (built: {built}); add it to e2e/build-binaries"


_VAR_REF = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


def expand(value: str, env: dict[str, str]) -> str:
    """The kubelet's $(VAR) expansion: known names are replaced, unknown ones kept, $$ escapes a $."""

    def sub(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        return env.get(m.group(1), m.group(0))

    return _VAR_REF.sub(sub, value)


def field_value(pod: JSON, path: str) -> str:
    meta, spec, status = pod["metadata"], pod["spec"], pod.get("status") or {}
    m = re.fullmatch(r"metadata\.(labels|annotations)\['(.+)'\]", path)
    if m:
        return str((meta.get(m.group(1)) or {}).get(m.group(2), ""))
    simple = {
        "metadata.name": meta.get("name"),
        "metadata.namespace": meta.get("namespace"),
        "metadata.uid": meta.get("uid"),
        "spec.nodeName": spec.get("nodeName"),
        "spec.serviceAccountName": spec.get("serviceAccountName"),
        "status.podIP": status.get("podIP"),
        "status.hostIP": status.get("hostIP"),
        "status.podIPs": ",".join(ip["ip"] for ip in status.get("podIPs") or []),
        "status.hostIPs": ",".join(ip["ip"] for ip in status.get("hostIPs") or []),
    }
    if path in simple:
        return simple[path] or ""
    if path in ("metadata.labels", "metadata.annotations"):
        items = meta.get(path.split(".")[1]) or {}
        return "\n".join(f'{k}="{v}"' for k, v in sorted(items.items()))
    raise ValueError(f"fieldRef {path!r} is not supported")


_QUANTITY = re.compile(r"^([0-9.]+)([a-zA-Z]*)$")
_SUFFIX = {
    "": 1,
    "m": 1e-3,
    "k": 1e3,
    "M": 1e6,
    "G": 1e9,
    "T": 1e12,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
}


def resource_value(pod: JSON, container: JSON, ref: JSON) -> str:
    """resourceFieldRef: limits/requests in units of `divisor`, rounded up (the kubelet's rule)."""
    name = ref.get("containerName") or container["name"]
    target = next(c for c in pod["spec"]["containers"] if c["name"] == name)
    kind, _, resource = ref["resource"].partition(".")
    value = ((target.get("resources") or {}).get(kind) or {}).get(resource)
    if value is None:
        # Unset limits default to the node's allocatable; any large number serves a test.
        return "32" if resource == "cpu" else str(256 * 2**30)
    number = _quantity(str(value))
    divisor = _quantity(str(ref.get("divisor") or "1")) or 1.0  # the API server defaults it to "0": the kubelet's 1
    return str(int(-(-number // divisor)))


def _quantity(text: str) -> float:
    m = _QUANTITY.match(text)
    if not m:
        raise ValueError(f"quantity {text!r}")
    return float(m.group(1)) * _SUFFIX[m.group(2)]


@dataclass
class Process:
    key: str  # <ns>_<pod>_<container>
    pod_uid: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    log_path: Path
    grace: float
    handshake: Path  # <pod dir>/<container>.netns: the prelude's "namespace made"; .relay: the runtime's answer
    proc: subprocess.Popen[bytes] | None = None
    relay: Relay | None = None
    network: podnet.PodNetwork | None = None
    started: float = 0.0
    started_at: float = 0.0  # wall clock, for the pod's status
    restart_at: float = 0.0
    backoff: float = BACKOFF_FIRST_SECONDS
    restarts: int = 0
    last_exit: Termination | None = None


@dataclass
class PodState:
    uid: str
    root: Path
    processes: dict[str, Process] = field(default_factory=dict)
    tokens: dict[str, float] = field(default_factory=dict)  # volume file → when to renew its token
    pull_errors: set[str] = field(default_factory=set)  # containers whose ErrImagePull was logged


class Runtime:
    def __init__(
        self,
        api: kube_rest.Client,
        *,
        bin_dir: Path,
        state_dir: Path,
        read: informer.Reader | None = None,
        kubeconfig: str | None = None,
    ) -> None:
        self.api = api  # writes: pod status, token requests
        self.read = read or api  # main() gives it a Cache of READ_COLLECTIONS, as the kubelet watches them
        self.bin_dir = bin_dir
        self.state_dir = state_dir
        self.kubeconfig = kubeconfig  # for the stand-ins of STANDINS_READING_THE_CLUSTER
        # kubectl port-forward to what the pods' processes listen on (kwok's PortForward objects, podports.py)
        self.ports = podports.PodPorts(api, skip={api.port})
        self.pods: dict[str, PodState] = {}  # "<ns>/<name>" → state
        self.status = PodStatusWriter(api)  # the pods' readiness and container states (podstatus.py)
        # Where a pod's connection to a cluster IP or pod IP leads (podnet.py): egress.route over the cache.
        self.route = podnet.router(self.read, egress.runtime_pids(self))
        # Releases no one built in advance, built when a pod first names them (firstuse.py).
        self.builds = firstuse.FirstUseBuilds(bin_dir, bin_dir.parent.parent / "firstuse")

    # --- the loop ------------------------------------------------------------------------------------

    def reconcile(self) -> None:
        kwok_nodes = {
            n["metadata"]["name"]
            for n in self.read.list("/api/v1/nodes")
            if (n["metadata"].get("annotations") or {}).get(KWOK_NODE_ANNOTATION)
        }
        wanted: dict[str, JSON] = {}
        for pod in self.read.list("/api/v1/pods"):
            meta = pod["metadata"]
            if (
                pod["spec"].get("nodeName") in kwok_nodes
                and (pod.get("status") or {}).get("phase") == "Running"
                and not meta.get("deletionTimestamp")
                and any(is_runtime_image(c["image"], self.bin_dir) for c in pod["spec"]["containers"])
            ):
                wanted[f"{meta['namespace']}/{meta['name']}"] = pod
        for ref, state in list(self.pods.items()):
            old = wanted.get(ref)
            if old is None or old["metadata"]["uid"] != state.uid:
                self.stop_pod(ref)
        for ref, pod in wanted.items():
            try:
                self.sync_pod(ref, pod)
            except (ApiError, OSError, ValueError, StopIteration) as e:
                log.warning("pod %s: %s", ref, e)
            except Exception:  # one pod's surprise must not stop the others (nor the runtime)
                log.exception("pod %s: unexpected error", ref)

    def sync_pod(self, ref: str, pod: JSON) -> None:
        ns, name = ref.split("/")
        state = self.pods.get(ref)
        if state is None:
            state = PodState(uid=pod["metadata"]["uid"], root=self.state_dir / "pods" / f"{ns}_{name}")
            state.root.mkdir(parents=True, exist_ok=True)
            self.pods[ref] = state
        lenient = any(standin_module(c["image"]) in STANDINS_READING_THE_CLUSTER for c in pod["spec"]["containers"])
        mounts_ready = self.write_volumes(pod, state, lenient=lenient)
        if not mounts_ready:
            return  # a required Secret/ConfigMap is missing: the kubelet waits too
        processes: dict[str, Process] = {}  # container → its process; the others are simulated ...
        pull_errors: dict[str, str] = {}  # ... or, of a runtime image without a binary for its release, not pulled
        pulling: dict[str, str] = {}  # ... or waiting for its release's first-use build
        for container in pod["spec"]["containers"]:
            binary = binary_for(container["image"], self.bin_dir)
            module = standin_module(container["image"]) if binary is None else None
            if module is not None:
                binary = Path(sys.executable)  # `python -m <module>`: the stand-in in the binary's place
            if binary is None and is_runtime_image(container["image"], self.bin_dir):
                built = self.first_use(container["image"])
                if isinstance(built, firstuse.Pending):
                    pulling[container["name"]] = built.message
                    continue
                binary = built if isinstance(built, Path) else None
                if isinstance(built, firstuse.Failed):
                    pull_errors[container["name"]] = built.message
            if binary is None:
                message = pull_errors.get(container["name"]) or pull_error(container["image"], self.bin_dir)
                if message is not None:
                    pull_errors[container["name"]] = message
                    if container["name"] not in state.pull_errors:
                        log.warning("pod %s container %s: %s", ref, container["name"], message)
                        state.pull_errors.add(container["name"])
                continue
            key = f"{ns}_{name}_{container['name']}"
            process = state.processes.get(key)
            if process is None:
                process = self.prepare(pod, container, binary, state, prefix=self.standin_arguments(module))
                if process is None:
                    continue
                state.processes[key] = process
            self.supervise(process)
            processes[container["name"]] = process
        self.status.sync(pod, processes, pull_errors=pull_errors, pulling=pulling)
        self.ports.sync(pod, {name: _live_pid(p) for name, p in processes.items()})

    def first_use(self, image: str) -> Path | firstuse.Pending | firstuse.Failed | None:
        """The binary of a release built on first use, or where its build stands; None when the image names no
        release a recipe can build, or names one RUNNABLE_IMAGES maps to another binary (a stand-in)."""
        repo, tag, _ = split_image(image)
        want = firstuse.wanted(repo, tag)
        if want is None or binary_name(image) not in (None, want.name):
            return None
        return self.builds.binary(want)

    def supervise(self, p: Process) -> None:
        now = time.monotonic()
        if p.proc is not None and p.proc.poll() is not None:
            ran = now - p.started
            if ran > BACKOFF_RESET_SECONDS:
                p.backoff = BACKOFF_FIRST_SECONDS
            p.restart_at = now + p.backoff
            log.warning(
                "%s exited with %s after %.1f s; restarting in %.0f s", p.key, p.proc.returncode, ran, p.backoff
            )
            p.backoff = min(p.backoff * 2, BACKOFF_MAX_SECONDS)
            p.restarts += 1
            p.last_exit = Termination.of(p.proc.returncode, started_at=p.started_at, finished_at=time.time())
            p.proc = None
        if p.proc is None and now >= p.restart_at:
            close_network(p)
            for path in (p.handshake, p.handshake.with_suffix(".relay")):
                path.unlink(missing_ok=True)
            with open(p.log_path, "ab") as out:
                p.proc = subprocess.Popen(
                    p.argv, env=p.env, cwd=p.cwd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
                )
            # Written after the start (the pid), so the line may follow the process's first output.
            with open(p.log_path, "ab") as out:
                out.write(f"--- runtime: start #{p.restarts} (pid {p.proc.pid}): {shlex.join(p.argv)}\n".encode())
            p.started, p.started_at = now, time.time()
            try:
                p.relay = self.open_relay(p)
            except OSError as e:
                log.warning("%s: no API server relay in its network namespace: %s; stopping it", p.key, e)
                stop_process(p)
                return
            log.info("%s: started pid %d (log %s)", p.key, p.proc.pid, p.log_path)

    def open_relay(self, p: Process) -> Relay:
        """Once the prelude made the namespace, listen on the API server's address inside it."""
        assert p.proc is not None
        deadline = time.monotonic() + 10
        while not p.handshake.exists():
            if p.proc.poll() is not None or time.monotonic() > deadline:
                raise OSError(f"the prelude did not make its network namespace (exit {p.proc.poll()})")
            time.sleep(0.01)
        relay = Relay(p.proc.pid, (self.api.host, self.api.port), name=p.key)
        try:
            p.network = podnet.PodNetwork(p.proc.pid, self.read, self.route, name=p.key)
        except Exception as e:  # pyroute2's NetlinkError is no OSError
            relay.close()
            raise OSError(f"pod network: {type(e).__name__}: {e}") from e
        p.handshake.with_suffix(".relay").touch()
        return relay

    def stop_pod(self, ref: str) -> None:
        self.ports.forget(ref)
        state = self.pods.pop(ref)
        self.status.forget(state.uid)
        for p in state.processes.values():
            stop_process(p)
        log.info("pod %s: gone, its processes stopped", ref)

    def stop_all(self) -> None:
        """All at once, within STOP_ALL_SECONDS: `e2e/cluster down` kills the runtime 15 s after asking."""
        self.builds.stop()
        processes = [p for state in self.pods.values() for p in state.processes.values()]
        for p in processes:
            if p.proc is not None and p.proc.poll() is None:
                p.proc.terminate()
        deadline = time.monotonic() + STOP_ALL_SECONDS
        for p in processes:
            if p.proc is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    p.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            stop_process(p, grace=0.0)  # kills what is left, closes the relay
        self.pods.clear()
        self.ports.close()
        self.status.close()

    # --- one container -------------------------------------------------------------------------------

    def standin_arguments(self, module: str | None) -> list[str]:
        """What goes before the container's arguments when a stand-in module runs in the binary's place."""
        if module is None:
            return []
        if module in STANDINS_READING_THE_CLUSTER and self.kubeconfig:
            return ["-m", module, "--kubeconfig", self.kubeconfig, "--"]
        return ["-m", module]

    def prepare(
        self, pod: JSON, container: JSON, binary: Path, state: PodState, *, prefix: list[str] | None = None
    ) -> Process | None:
        meta = pod["metadata"]
        ns, name = meta["namespace"], meta["name"]
        env = self.container_env(pod, container)
        command = [expand(a, env) for a in container.get("command") or []]
        args = [expand(a, env) for a in container.get("args") or []]
        # The binary is the image's entrypoint: it replaces command[0] (or the image's own ENTRYPOINT).
        arguments = [*(prefix or []), *command[1:], *args]

        mounts: list[Mount] = []
        volumes = {v["name"]: v for v in pod["spec"].get("volumes") or []}
        for m in container.get("volumeMounts") or []:
            source = state.root / "volumes" / m["name"]
            if m["name"] not in volumes:
                raise ValueError(f"volumeMount {m['name']!r}: no such volume")
            mounts.append((source, m["mountPath"], bool(m.get("readOnly")), m.get("subPath", "")))
        # A kubelet gives each pod its resolv.conf: the cluster's DNS, here the runtime's in the pod's namespace.
        resolv = state.root / "resolv.conf"
        if not resolv.is_file():
            resolv.write_text(podnet.resolv_conf(ns))
        mounts.append((resolv, "/etc/resolv.conf", True, ""))
        # The prelude runs inside the new namespaces: bind each volume, then become the binary (setpriv, unshare
        # and sh all exec, so the pid we hold is the binary's). A mountPath the host lacks is made in a private
        # overlay (container_script): the host keeps no /var/run/secrets/kubernetes.io/serviceaccount of ours.
        # A pod's hostname is its name (controller-runtime's leader identity is built from it).
        handshake = state.root / f"{container['name']}.netns"
        q_netns, q_relay = shlex.quote(str(handshake)), shlex.quote(str(handshake.with_suffix(".relay")))
        lines = [
            "set -e",
            f"echo {shlex.quote(name)} > /proc/sys/kernel/hostname",
            # The pod's own network namespace: only `lo`, so whatever it binds (":8080") is loopback, and pods
            # never collide on ports. The runtime then opens the API server's port in it (a relay, see Relay).
            *podnet.prelude_lines(),
            f"touch {q_netns}",
            f"while [ ! -e {q_relay} ]; do sleep 0.02; done",
        ]
        lines += container_script(mounts, str(binary))
        full = [
            # Should the runtime die without stopping it (SIGKILL), the process dies too: no orphan keeps running.
            "setpriv",
            "--pdeathsig",
            "KILL",
            "unshare",
            "--mount",
            "--uts",
            "--net",
            "--propagation",
            "private",
            "/bin/sh",
            "-c",
            "\n".join(lines),
            "runtime",
            *arguments,
        ]
        cwd = Path(container.get("workingDir") or state.root)
        return Process(
            handshake=handshake,
            key=f"{ns}_{name}_{container['name']}",
            pod_uid=meta["uid"],
            argv=full,
            env=env,
            cwd=cwd,
            log_path=self.state_dir / f"{ns}_{name}_{container['name']}.log",
            grace=float(pod["spec"].get("terminationGracePeriodSeconds") or 30),
        )

    def container_env(self, pod: JSON, container: JSON) -> dict[str, str]:
        ns = pod["metadata"]["namespace"]
        env: dict[str, str] = {
            "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": "/root",
            "HOSTNAME": pod["metadata"]["name"],
        }
        # The Services of its namespace known now, as the kubelet's (`kubernetes`: the API server on loopback).
        links = pod["spec"].get("enableServiceLinks", True) is not False
        services = self.read.list("/api/v1/services") if links else []
        env.update(podnet.service_env(services, ns, links=links, api_host=self.api.host, api_port=self.api.port))
        for source in container.get("envFrom") or []:
            prefix = source.get("prefix", "")
            if "configMapRef" in source:
                ref = source["configMapRef"]
                obj = self.read.get(f"/api/v1/namespaces/{ns}/configmaps/{ref['name']}")
                data = (obj or {}).get("data") or {}
            else:
                ref = source["secretRef"]
                obj = self.read.get(f"/api/v1/namespaces/{ns}/secrets/{ref['name']}")
                data = {k: base64.b64decode(v).decode() for k, v in ((obj or {}).get("data") or {}).items()}
            if obj is None and not ref.get("optional"):
                raise ValueError(f"envFrom {ref['name']!r} does not exist")
            env.update({prefix + k: v for k, v in data.items()})
        for var in container.get("env") or []:
            if "valueFrom" not in var:
                env[var["name"]] = expand(var.get("value", ""), env)
                continue
            source = var["valueFrom"]
            if "fieldRef" in source:
                env[var["name"]] = field_value(pod, source["fieldRef"]["fieldPath"])
            elif "resourceFieldRef" in source:
                env[var["name"]] = resource_value(pod, container, source["resourceFieldRef"])
            else:
                value = self.key_ref(ns, source)
                if value is not None:
                    env[var["name"]] = value
        return env

    def key_ref(self, ns: str, source: JSON) -> str | None:
        if "configMapKeyRef" in source:
            ref, kind = source["configMapKeyRef"], "configmaps"
        else:
            ref, kind = source["secretKeyRef"], "secrets"
        obj = self.read.get(f"/api/v1/namespaces/{ns}/{kind}/{ref['name']}")
        if kind == "configmaps":
            value = ((obj or {}).get("data") or {}).get(ref["key"])
        else:
            raw = ((obj or {}).get("data") or {}).get(ref["key"])
            value = base64.b64decode(raw).decode() if raw is not None else None
        if value is None and not ref.get("optional"):
            raise ValueError(f"{kind} {ns}/{ref['name']} key {ref['key']!r} does not exist")
        return value

    # --- volumes -------------------------------------------------------------------------------------

    def write_volumes(self, pod: JSON, state: PodState, *, lenient: bool = False) -> bool:
        """Materialise (and refresh) the pod's volumes; False when a required source is missing (`lenient`: it is
        left empty instead)."""
        ns = pod["metadata"]["namespace"]
        for volume in pod["spec"].get("volumes") or []:
            directory = state.root / "volumes" / volume["name"]
            directory.mkdir(parents=True, exist_ok=True)
            files: dict[str, bytes] | None
            if "emptyDir" in volume:
                continue
            if "secret" in volume:
                src = volume["secret"]
                files = self.object_files(ns, "secrets", src["secretName"], src)
            elif "configMap" in volume:
                src = volume["configMap"]
                files = self.object_files(ns, "configmaps", src["name"], src)
            elif "projected" in volume:
                files = self.projected_files(pod, volume, state)
            elif "downwardAPI" in volume:
                files = self.downward_files(pod, volume["downwardAPI"].get("items") or [])
            else:
                log.warning("pod %s/%s: volume %s: type not supported", ns, pod["metadata"]["name"], volume["name"])
                continue
            if files is None and lenient:
                files = {}  # a stand-in that does not read it (STANDINS_READING_THE_CLUSTER)
            if files is None:
                log.info("pod %s/%s: volume %s: waiting for its source", ns, pod["metadata"]["name"], volume["name"])
                return False
            sync_dir(directory, files)
        return True

    def object_files(self, ns: str, kind: str, name: str, src: JSON) -> dict[str, bytes] | None:
        obj = self.read.get(f"/api/v1/namespaces/{ns}/{kind}/{name}")
        if obj is None:
            return {} if src.get("optional") else None
        if kind == "secrets":
            data = {k: base64.b64decode(v) for k, v in (obj.get("data") or {}).items()}
        else:
            data = {k: v.encode() for k, v in (obj.get("data") or {}).items()}
            data.update({k: base64.b64decode(v) for k, v in (obj.get("binaryData") or {}).items()})
        items = src.get("items")
        if not items:
            return data
        files = {}
        for item in items:
            if item["key"] in data:
                files[item["path"]] = data[item["key"]]
            elif not src.get("optional"):
                return None
        return files

    def downward_files(self, pod: JSON, items: list[JSON]) -> dict[str, bytes]:
        files = {}
        for item in items:
            if "fieldRef" in item:
                files[item["path"]] = field_value(pod, item["fieldRef"]["fieldPath"]).encode()
            elif "resourceFieldRef" in item:
                container = pod["spec"]["containers"][0]
                files[item["path"]] = resource_value(pod, container, item["resourceFieldRef"]).encode()
        return files

    def projected_files(self, pod: JSON, volume: JSON, state: PodState) -> dict[str, bytes] | None:
        ns = pod["metadata"]["namespace"]
        directory = state.root / "volumes" / volume["name"]
        files: dict[str, bytes] = {}
        for source in volume["projected"].get("sources") or []:
            part: dict[str, bytes] | None
            if "serviceAccountToken" in source:
                part = self.token_file(pod, source["serviceAccountToken"], directory, state)
            elif "configMap" in source:
                src = source["configMap"]
                part = self.object_files(ns, "configmaps", src["name"], src)
            elif "secret" in source:
                src = source["secret"]
                part = self.object_files(ns, "secrets", src["name"], src)
            elif "downwardAPI" in source:
                part = self.downward_files(pod, source["downwardAPI"].get("items") or [])
            else:
                continue
            if part is None:
                return None
            files.update(part)
        return files

    def token_file(self, pod: JSON, src: JSON, directory: Path, state: PodState) -> dict[str, bytes]:
        path = src["path"]
        key = str(directory / path)
        current = directory / path
        if current.is_file() and time.monotonic() < state.tokens.get(key, 0):
            return {path: current.read_bytes()}
        meta = pod["metadata"]
        seconds = int(src.get("expirationSeconds") or TOKEN_SECONDS_DEFAULT)
        spec: JSON = {
            "expirationSeconds": seconds,
            "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]},
        }
        if src.get("audience"):
            spec["audiences"] = [src["audience"]]
        sa = pod["spec"].get("serviceAccountName") or "default"
        answer = self.api.create(
            f"/api/v1/namespaces/{meta['namespace']}/serviceaccounts/{sa}/token",
            {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec},
        )
        # The kubelet renews at 80 % of the lifetime.
        state.tokens[key] = time.monotonic() + 0.8 * seconds
        log.info("pod %s/%s: token for ServiceAccount %s", meta["namespace"], meta["name"], sa)
        return {path: answer["status"]["token"].encode()}


def sync_dir(directory: Path, files: dict[str, bytes]) -> None:
    """Make `directory` hold exactly `files`; each changed file is replaced atomically (rename), and the
    directory itself is kept, since it is bind-mounted into the running process."""
    for rel, content in files.items():
        target = directory / rel
        if target.is_file() and target.read_bytes() == content:
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{hashlib.sha256(content).hexdigest()[:8]}")
        tmp.write_bytes(content)
        os.replace(tmp, target)
    for existing in directory.rglob("*"):
        if existing.is_file() and str(existing.relative_to(directory)) not in files:
            existing.unlink()


def _live_pid(p: Process) -> Callable[[], int | None]:
    """A getter of the pid of `p`'s live process once it is in its own network namespace, else None."""

    def pid() -> int | None:
        proc = p.proc
        if proc is None or proc.returncode is not None or not egress.in_own_netns(proc.pid):
            return None
        return proc.pid

    return pid


def close_network(p: Process) -> None:
    """The API server's relay, the Service proxy and the DNS server of a process that stopped."""
    if p.relay:
        p.relay.close()
        p.relay = None
    if p.network:
        p.network.close()
        p.network = None


def stop_process(p: Process, grace: float | None = None) -> None:
    close_network(p)
    if p.proc is None or p.proc.poll() is not None:
        return
    p.proc.terminate()
    try:
        p.proc.wait(timeout=grace if grace is not None else p.grace)
    except subprocess.TimeoutExpired:
        p.proc.kill()
        p.proc.wait(timeout=10)
    log.info("%s: stopped", p.key)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kubeconfig", required=True)
    parser.add_argument("--bin-dir", required=True, type=Path, help="where the operators' binaries are")
    parser.add_argument("--state-dir", required=True, type=Path, help="volumes and logs go here")
    parser.add_argument("--egress-port", type=int, help="serve kube-apiserver's egress proxy here (egress.py)")
    parser.add_argument("--egress-pki", type=Path, help="the cluster's pki dir: the proxy's TLS (with --egress-port)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    if os.geteuid() != 0:
        log.error("runtime: needs root for `unshare --mount` (private mount namespaces)")
        return 2
    args.state_dir.mkdir(parents=True, exist_ok=True)
    api = kube_rest.Client(args.kubeconfig)
    runtime = Runtime(
        api,
        bin_dir=args.bin_dir,
        state_dir=args.state_dir,
        # a client of its own: the LISTs of Secrets and ConfigMaps do not hold up the pods' status writes
        read=informer.Cache(kube_rest.Client(args.kubeconfig), READ_COLLECTIONS).start(),
        kubeconfig=str(Path(args.kubeconfig).resolve()),
    )
    stopping = False

    def stop(signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    proxy = (
        egress.start(args.egress_port, pki_dir=args.egress_pki, kubeconfig=args.kubeconfig, runtime=runtime)
        if args.egress_port
        else None
    )
    log.info("runtime: running binaries from %s for pods on kwok nodes", args.bin_dir)
    try:
        while not stopping:
            try:
                runtime.reconcile()
            except (ApiError, OSError) as e:
                log.warning("reconcile: %s", e)
            except Exception:  # the runtime, its operators and the egress proxy live on; the next tick retries
                log.exception("reconcile: unexpected error")
            time.sleep(POLL_SECONDS)
    finally:
        if proxy is not None:
            proxy.close()
        runtime.stop_all()
        with contextlib.suppress(Exception):
            api.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
