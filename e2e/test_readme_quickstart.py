"""A newcomer's path, run from the README's own shell blocks: **Install** (a fresh venv, `pip install .` in a
clone), **Quick start on your own cluster** (init, generate, check --pre, apply, status, check) against the test
bed's cluster as the kubeconfig's cluster, then **Uninstall**.

The blocks are read from README.md, not copied here, so the README cannot drift from what works. The clone is a
copy of the checkout's files; pip takes kfctl's dependencies and build backend from the wheels `make setup` keeps
in .work/wheelhouse (PIP_NO_INDEX: no traffic leaves 127.0.0.1). Every command must exit 0, except `kfctl check`,
whose 13 means warnings only (the README says so). The platform's health is then read from the API server.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from apply_support import REPO, kfctl
from kfctl_testbed import kube_rest

pytestmark = pytest.mark.e2e

README = REPO / "README.md"
WHEELHOUSE = REPO / ".work" / "wheelhouse"
SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.M | re.S)
APP = "ml"  # the app directory (and the install's name) the quick start's commands name
OURS = f"kfctl.kubeflow.org/app={APP}"


def commands(section: str) -> list[str]:
    """The commands of a README section's ```sh blocks: one per line (a trailing backslash continues it)."""
    text = README.read_text(encoding="utf-8").split(f"\n## {section}\n", 1)[1].split("\n## ", 1)[0]
    out: list[str] = []
    for block in SHELL_BLOCK.findall(text):
        for line in block.replace("\\\n", " ").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                out.append(line.strip())
    assert out, f"README.md's section {section!r} has no ```sh block"
    return out


def allowed_codes(command: str) -> set[int]:
    return {0, 13} if command.startswith("kfctl check") else {0}


def clone(dest: Path) -> Path:
    """The checkout's files as a fresh clone has them (tracked and new, not ignored), with no build output."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for name in filter(None, (n.decode() for n in listed)):
        src = REPO / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    return dest


def run_blocks(cmds: list[str], *, cwd: Path, env: dict[str, str], log: Path) -> tuple[list[tuple[str, int]], str]:
    """Run the commands in one bash, as a person types them one after another: each one's exit code, and
    which kfctl the shell found at the end."""
    codes = log.with_suffix(".codes")
    script = "".join(f'{c}\necho "$?" >> {codes}\n' for c in cmds) + f"command -v kfctl >> {codes}\n"
    with open(log, "ab") as out:
        subprocess.run(
            ["bash", "-c", script],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,  # as in CI: delete never asks (on a terminal it would)
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=1500,
        )
    got = codes.read_text().split("\n")
    codes.unlink()
    return [(c, int(code)) for c, code in zip(cmds, got[: len(cmds)], strict=True)], got[len(cmds)]


def newcomer_env(home: Path, kubeconfig: str) -> dict[str, str]:
    """A person's shell: their own HOME and kubeconfig, no venv active, kustomize on PATH; pip offline."""
    dev_bin = str(Path(sys.prefix) / "bin")
    path = os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep) if p and p != dev_bin)
    keep = {k: v for k, v in os.environ.items() if k in ("LANG", "LC_ALL", "TERM", "TMPDIR", "GOTOOLCHAIN")}
    return keep | {
        "HOME": str(home),
        "PATH": path,
        "KUBECONFIG": kubeconfig,
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(WHEELHOUSE),
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        "NO_COLOR": "1",
    }


def test_the_readmes_quick_start_installs_a_healthy_platform_and_its_uninstall_removes_it(
    kubeconfig: str, pod_runtime: Path, tmp_path: Path
) -> None:
    built = WHEELHOUSE / ".built"
    if not built.is_file() or built.stat().st_mtime < (REPO / "pyproject.toml").stat().st_mtime:
        pytest.fail(f"no wheels for this pyproject.toml in {WHEELHOUSE}: run `make wheelhouse` (make setup does)")
    home = tmp_path / "home"
    home.mkdir()
    checkout = clone(tmp_path / "kfctl")
    env = newcomer_env(home, kubeconfig)
    log = tmp_path / "session.log"
    install, quick, uninstall = (
        commands("Install"),
        commands("Quick start on your own cluster"),
        commands("Uninstall"),
    )
    assert any(c.startswith("pip install") for c in install)
    assert [c.split()[1] for c in quick if c.startswith("kfctl ")][:4] == ["init", "generate", "check", "apply"]
    api = kube_rest.Client(kubeconfig)
    try:
        ran, which = run_blocks([*install, *quick], cwd=checkout, env=env, log=log)
        failed = [(c, code) for c, code in ran if code not in allowed_codes(c)]
        assert failed == [], f"README commands failed {failed}; the session:\n{log.read_text()[-6000:]}"
        assert len(ran) == len(install) + len(quick), log.read_text()[-6000:]
        # The kfctl that ran is the one the README's Install put in the newcomer's HOME, not the dev venv's.
        assert which.startswith(str(home)), which
        # Healthy, as the API server sees it: every Deployment the install made is Available.
        deployments = api.list("/apis/apps/v1/deployments", query={"labelSelector": OURS})
        assert len(deployments) >= 7, [d["metadata"]["name"] for d in deployments]
        unavailable = [
            d["metadata"]["name"]
            for d in deployments
            if not any(
                c.get("type") == "Available" and c.get("status") == "True"
                for c in (d.get("status") or {}).get("conditions") or []
            )
        ]
        assert unavailable == []
        # The same person's shell, later: the venv Install activated is still first on PATH.
        still_active = env | {"PATH": os.pathsep.join((str(Path(which).parent), env["PATH"]))}
        ran, _ = run_blocks(uninstall, cwd=checkout, env=still_active, log=log)
        assert [code for _, code in ran] == [0] * len(uninstall), log.read_text()[-6000:]
        assert api.list("/apis/apps/v1/deployments", query={"labelSelector": OURS}) == []
    finally:
        api.close()
        # What the README's delete keeps on purpose (volumes, the Secrets that open them) goes too, for the next test.
        if (checkout / APP / "kfdef.yaml").is_file():
            run = kfctl(
                "delete", str(checkout / APP), "--delete-storage", "--wait-timeout", "5m", kubeconfig=kubeconfig
            )
            assert run.code == 0, run.explain()
