"""How the process runtime (kfctl_testbed.runtime) binds a pod's volumes at their mountPaths: as a kubelet and a
container
runtime do. Unit tests, no cluster: the exact shell lines for a table of volumeMounts, then the lines run for real in
a private mount namespace (root only, as the runtime itself), the kernel's view of the result being the oracle.
"""

from __future__ import annotations

import os
import shlex
import subprocess
from pathlib import Path

import pytest
from kfctl_testbed import runtime

V = Path("/state/pods/ns_p/volumes")
BINARY = "/cache/bin/manager-v1.0.0"
EXEC = f'exec {BINARY} "$@"'


def bind(src: str, dst: str) -> list[str]:
    return [
        f"if [ -d {src} ]; then mkdir -p {dst}; else mkdir -p $(dirname {dst}); touch {dst}; fi",
        f"mount --bind {src} {dst}",
    ]


@pytest.mark.parametrize(
    ("mounts", "expected"),
    [
        pytest.param(
            [(V / "token", "/var/run/secrets/kubernetes.io/serviceaccount", True, "")],
            [
                *bind(f"{V}/token", "/var/run/secrets/kubernetes.io/serviceaccount"),
                "mount -o remount,bind,ro /var/run/secrets/kubernetes.io/serviceaccount",
                EXEC,
            ],
            id="one-read-only",
        ),
        pytest.param(
            [(V / "certs", "/etc/certs/inner", False, ""), (V / "etc", "/etc/certs", False, "")],
            [*bind(f"{V}/etc", "/etc/certs"), *bind(f"{V}/certs", "/etc/certs/inner"), EXEC],
            id="parents-first",
        ),
        pytest.param(
            [(V / "certs", "/etc/k8s-webhook-server/serving-certs", False, "serving-certs")],
            [
                f"if [ -d {V}/certs ] && [ ! -e {V}/certs/serving-certs ]; then mkdir -p {V}/certs/serving-certs; fi",
                *bind(f"{V}/certs/serving-certs", "/etc/k8s-webhook-server/serving-certs"),
                EXEC,
            ],
            id="missing-subpath-made-a-directory",
        ),
        pytest.param(
            [
                (V / "token", "/var/run/secrets/kubernetes.io/serviceaccount", True, ""),
                (V / "tmp", "/state", False, ""),
            ],
            [
                "mkdir -p /run/kfctl-e2e-stage",
                "mount -t tmpfs kfctl-e2e-stage /run/kfctl-e2e-stage",
                f"if [ -d {V}/tmp ]; then mkdir /run/kfctl-e2e-stage/0; else touch /run/kfctl-e2e-stage/0; fi",
                f"mount --bind {V}/tmp /run/kfctl-e2e-stage/0",
                f"if [ -d {V}/token ]; then mkdir /run/kfctl-e2e-stage/1; else touch /run/kfctl-e2e-stage/1; fi",
                f"mount --bind {V}/token /run/kfctl-e2e-stage/1",
                *bind("/run/kfctl-e2e-stage/0", "/state"),
                *bind("/run/kfctl-e2e-stage/1", "/var/run/secrets/kubernetes.io/serviceaccount"),
                "mount -o remount,bind,ro /var/run/secrets/kubernetes.io/serviceaccount",
                EXEC,
            ],
            id="a-mountpath-over-the-sources-stages-them",
        ),
        pytest.param(
            [(Path("/var/volumes/tmp"), "/cache", False, "")],
            [
                "mkdir -p /run/kfctl-e2e-stage",
                "mount -t tmpfs kfctl-e2e-stage /run/kfctl-e2e-stage",
                "mkdir /run/kfctl-e2e-stage/bin",
                "touch /run/kfctl-e2e-stage/bin/manager-v1.0.0",
                f"mount --bind {BINARY} /run/kfctl-e2e-stage/bin/manager-v1.0.0",
                *bind("/var/volumes/tmp", "/cache"),
                'exec /run/kfctl-e2e-stage/bin/manager-v1.0.0 "$@"',
            ],
            id="a-mountpath-over-the-binary-stages-it",
        ),
    ],
)
def test_container_script(mounts: list[runtime.Mount], expected: list[str]) -> None:
    assert runtime.container_script(mounts, BINARY) == expected


@pytest.mark.skipif(os.geteuid() != 0, reason="mount namespaces need root, as the runtime itself does")
def test_a_volume_over_the_runtimes_own_directory_hides_no_other_volume(tmp_path: Path) -> None:
    """The Spark operator's controller mounts an emptyDir at /tmp; the runtime's state dir is in /tmp too. Its
    service-account token, mounted after, must still be the token (not a path /tmp now hides)."""
    volumes = tmp_path / "volumes"
    (volumes / "tmp").mkdir(parents=True)
    (volumes / "tmp" / "marker").write_text("emptyDir\n")
    (volumes / "token").mkdir()
    (volumes / "token" / "token").write_text("a token\n")
    (volumes / "certs").mkdir()
    target = tmp_path / "root"
    mounts: list[runtime.Mount] = [
        (volumes / "token", str(target / "secrets"), True, ""),
        (volumes / "tmp", str(tmp_path), False, ""),  # covers every source above
        (volumes / "certs", str(target / "certs"), False, "serving-certs"),
    ]
    script = "\n".join(["set -e", *runtime.container_script(mounts, "/bin/sh")])
    probe = f"cat {shlex.quote(str(target / 'secrets' / 'token'))} {shlex.quote(str(tmp_path / 'marker'))}; " + (
        f"touch {shlex.quote(str(target / 'certs' / 'written'))}"
    )
    run = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "probe", "-c", probe],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == "a token\nemptyDir\n"
    assert (volumes / "certs" / "serving-certs" / "written").is_file()  # the subPath the kubelet would have made


@pytest.mark.skipif(os.geteuid() != 0, reason="mount namespaces need root, as the runtime itself does")
def test_a_volume_over_the_binary_cache_does_not_hide_the_binary(tmp_path: Path) -> None:
    """A binary cache under /tmp (HOME there) and the Spark operator's emptyDir at /tmp: before the stage, the
    container's exec said `not found` and the pod crash-looped. The binary must run, under its own file name, with
    the volume mounted over its directory."""
    cache = tmp_path / "cache" / "bin"
    cache.mkdir(parents=True)
    binary = cache / "spark-operator-v2.4.0"
    binary.write_text('#!/bin/sh\necho "$(basename "$0") $*"; ls "$1"\n')
    binary.chmod(0o755)
    empty_dir = tmp_path / "volumes" / "tmp"
    empty_dir.mkdir(parents=True)
    (empty_dir / "marker").write_text("emptyDir\n")
    script = "\n".join(["set -e", *runtime.container_script([(empty_dir, str(tmp_path), False, "")], str(binary))])
    run = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "runtime", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == f"spark-operator-v2.4.0 {tmp_path}\nmarker\n"  # the emptyDir, not the cache, at its path
