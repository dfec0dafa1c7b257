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
        f"if [ -d {src} ]; then mkdir -p {dst}; else mkdir -p $(dirname {dst}); [ -e {dst} ] || touch {dst}; fi",
        f"mount --bind {src} {dst}",
    ]


SA = "/var/run/secrets/kubernetes.io/serviceaccount"
# The host of the table: these paths exist (/var/run is a link to /run), /run/user and /etc/hosts are mount points.
HOST = runtime.HostView(
    exists=lambda p: (
        p in {"/", "/var", "/var/run", "/run", "/run/user", "/var/run/user", "/etc", "/etc/hosts", "/mnt", "/cache"}
    ),
    realpath=lambda p: "/run" + p.removeprefix("/var/run") if p.startswith("/var/run") else p,
    mount_points=lambda: ["/", "/run/user", "/etc/hosts"],
)
STAGE = "mount -t tmpfs kfctl-e2e-stage /mnt"


def overlay(i: int, directory: str) -> list[str]:
    layer = f"/mnt/overlay{i}"
    return [
        f"mkdir {layer} {layer}/upper {layer}/work",
        f"mount -t overlay kfctl-e2e-pod -o lowerdir={directory},upperdir={layer}/upper,workdir={layer}/work "
        + directory,
    ]


# The stage, then /run overlaid (/var/run is a link to it), its mount point /run/user bound back over the overlay.
RUN_OVERLAID = [
    STAGE,
    "mkdir /mnt/overlay0 /mnt/overlay0/upper /mnt/overlay0/work",
    "mkdir /mnt/overlay0/lower",
    "mount --rbind /run /mnt/overlay0/lower",
    overlay(0, "/run")[1],
    "mount --rbind /mnt/overlay0/lower/user /run/user",
]


@pytest.mark.parametrize(
    ("mounts", "expected"),
    [
        pytest.param(
            [(V / "token", SA, True, "")],
            [
                *RUN_OVERLAID,
                *bind(f"{V}/token", SA),
                f"mount -o remount,bind,ro {SA}",
                EXEC,
            ],
            id="a-mountpath-missing-on-the-host-is-made-in-an-overlay-of-its-deepest-existing-ancestor",
        ),
        pytest.param(
            [(V / "token", "/etc", True, "")],
            [*bind(f"{V}/token", "/etc"), "mount -o remount,bind,ro /etc", EXEC],
            id="an-existing-mountpath-needs-no-overlay",
        ),
        pytest.param(
            [(V / "certs", "/etc/certs/inner", False, ""), (V / "etc", "/etc/certs", False, "")],
            [
                STAGE,
                "mkdir /mnt/overlay0 /mnt/overlay0/upper /mnt/overlay0/work",
                "mkdir /mnt/overlay0/lower",
                "mount --rbind /etc /mnt/overlay0/lower",
                overlay(0, "/etc")[1],
                "mount --rbind /mnt/overlay0/lower/hosts /etc/hosts",
                *bind(f"{V}/etc", "/etc/certs"),
                *bind(f"{V}/certs", "/etc/certs/inner"),
                EXEC,
            ],
            id="parents-first-the-overlaid-directorys-mount-points-bound-back",
        ),
        pytest.param(
            [
                (V / "a", "/run/a/x", False, ""),
                (V / "b", "/var/run/user/1/b", False, ""),
                (V / "c", "/run/c", False, ""),
            ],
            [
                *RUN_OVERLAID,
                *overlay(1, "/run/user"),
                *bind(f"{V}/c", "/run/c"),
                *bind(f"{V}/a", "/run/a/x"),
                *bind(f"{V}/b", "/var/run/user/1/b"),
                EXEC,
            ],
            id="one-overlay-per-directory-and-one-below-a-mount-point",
        ),
        pytest.param(
            [(V / "certs", "/cache/k8s-webhook-server/serving-certs", False, "serving-certs")],
            [
                f"if [ -d {V}/certs ] && [ ! -e {V}/certs/serving-certs ]; then mkdir -p {V}/certs/serving-certs; fi",
                STAGE,
                "mkdir /mnt/bin",
                "touch /mnt/bin/manager-v1.0.0",
                f"mount --bind {BINARY} /mnt/bin/manager-v1.0.0",
                *overlay(0, "/cache"),
                *bind(f"{V}/certs/serving-certs", "/cache/k8s-webhook-server/serving-certs"),
                'exec /mnt/bin/manager-v1.0.0 "$@"',
            ],
            id="missing-subpath-made-a-directory",
        ),
        pytest.param(
            [(V / "token", SA, True, ""), (V / "tmp", "/state", False, "")],
            [
                STAGE,
                "mkdir /mnt/overlay0 /mnt/overlay0/upper /mnt/overlay0/work /mnt/root",
                "mount -t overlay kfctl-e2e-pod -o lowerdir=/,upperdir=/mnt/overlay0/upper,workdir=/mnt/overlay0/work"
                " /mnt/root",
                "mount --rbind /run/user /mnt/root/run/user",
                "mount --rbind /etc/hosts /mnt/root/etc/hosts",
                *bind(f"{V}/tmp", "/mnt/root/state"),
                *bind(f"{V}/token", "/mnt/root/run/secrets/kubernetes.io/serviceaccount"),
                "mount -o remount,bind,ro /mnt/root/run/secrets/kubernetes.io/serviceaccount",
                f'exec chroot /mnt/root /bin/sh -c \'cd "$0" 2>/dev/null || cd /; exec "$@"\' "$(pwd)" {BINARY} "$@"',
            ],
            id="a-mountpath-missing-below-slash-gets-a-new-root-of-an-overlay-of-slash-links-followed-inside",
        ),
        pytest.param(
            [(Path("/var/volumes/tmp"), "/cache", False, "")],
            [
                STAGE,
                "mkdir /mnt/bin",
                "touch /mnt/bin/manager-v1.0.0",
                f"mount --bind {BINARY} /mnt/bin/manager-v1.0.0",
                *bind("/var/volumes/tmp", "/cache"),
                'exec /mnt/bin/manager-v1.0.0 "$@"',
            ],
            id="a-mountpath-over-the-binary-stages-it",
        ),
    ],
)
def test_container_script(mounts: list[runtime.Mount], expected: list[str]) -> None:
    assert runtime.container_script(mounts, BINARY, HOST) == expected


def run_in_namespace(mounts: list[runtime.Mount], probe: str) -> subprocess.CompletedProcess[str]:
    """The runtime's mount script for `mounts` in a private mount namespace, then `sh -c probe` as the binary."""
    script = "\n".join(["set -e", *runtime.container_script(mounts, "/bin/sh")])
    return subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", script, "probe", "-c", probe],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


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
    probe = f"cat {shlex.quote(str(target / 'secrets' / 'token'))} {shlex.quote(str(tmp_path / 'marker'))}; " + (
        f"touch {shlex.quote(str(target / 'certs' / 'written'))}"
    )
    run = run_in_namespace(mounts, probe)
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


@pytest.mark.skipif(os.geteuid() != 0, reason="mount namespaces need root, as the runtime itself does")
def test_mountpaths_missing_on_the_host_exist_in_the_pods_namespace_only(tmp_path: Path) -> None:
    """Issue 51 row 21: the runtime made /var/run/secrets/kubernetes.io/serviceaccount on the host (an empty
    mount point left behind), and the Kubeflow SDK took the host for a pod. Three mountPaths the host lacks: below
    /run (reached through the /var/run link), below a directory of the state's, and at the top of / (katib's
    /katib-config.yaml): the process reads each volume at its path, the host has none of the paths, before, while the
    process runs and after."""
    token = tmp_path / "volumes" / "token"
    token.mkdir(parents=True)
    (token / "token").write_text("a token\n")
    config = tmp_path / "volumes" / "config"
    config.mkdir()
    (config / "katib-config.yaml").write_text("katib\n")
    tag = tmp_path.name
    paths = [f"/var/run/secrets/kfctl-e2e-{tag}", str(tmp_path / "absent" / "dir"), f"/kfctl-e2e-{tag}.yaml"]
    mounts: list[runtime.Mount] = [
        (token, f"{paths[0]}/serviceaccount", True, ""),
        (token, paths[1], False, ""),
        (config, paths[2], True, "katib-config.yaml"),
    ]
    seen = [p for p in ["/run/secrets", *paths] if os.path.lexists(p)]
    run = run_in_namespace(
        mounts, f"cat {paths[0]}/serviceaccount/token {paths[1]}/token {paths[2]}; touch {paths[1]}/written"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == "a token\na token\nkatib\n"
    assert (token / "written").is_file()  # the volume itself is the state's, written through
    assert [p for p in ["/run/secrets", *paths] if os.path.lexists(p)] == seen
    assert not (tmp_path / "absent").exists()
