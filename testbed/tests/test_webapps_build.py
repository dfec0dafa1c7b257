"""`e2e/build-binaries --webapps` (kfctl_testbed.gobuild.webapps) without building: the cache keys, the launchers the
runtime runs, what it reads of the fixture, and a machine without the fixture. The builds themselves are measured by
`make setup` and proven by e2e/test_web_uis.py."""

from __future__ import annotations

import io
import re
import subprocess
import tarfile
from pathlib import Path

import pytest
from kfctl_testbed.gobuild import cli, webapps
from kfctl_testbed.gobuild.versions import Versions

FIXTURE = "a" * 64


@pytest.mark.parametrize(
    ("fixture", "locks", "tool", "same"),
    [
        pytest.param(FIXTURE, [b"lock"], "node20", True, id="same-inputs-same-key"),
        pytest.param("b" * 64, [b"lock"], "node20", False, id="another-fixture"),
        pytest.param(FIXTURE, [b"lock2"], "node20", False, id="another-lockfile"),
        pytest.param(FIXTURE, [b"lock", b"lib"], "node20", False, id="one-more-lockfile"),
        pytest.param(FIXTURE, [b"lock"], "node22", False, id="another-node"),
    ],
)
def test_a_key_changes_with_the_fixture_the_lockfiles_and_the_toolchain(
    fixture: str, locks: list[bytes], tool: str, same: bool
) -> None:
    reference = webapps.key(FIXTURE, [b"lock"], "node20")
    assert reference.startswith("aaaaaaaaaaaa_") and reference.endswith("_node20")
    assert (webapps.key(fixture, locks, tool) == reference) is same


def test_each_app_is_keyed_by_the_lockfiles_its_build_reads() -> None:
    assert {a.name: a.lockfiles for a in webapps.APPS} == {
        "centraldashboard": ("centraldashboard/package-lock.json",),
        "jupyter-web-app": (
            "crud-web-apps/common/frontend/kubeflow-common-lib/package-lock.json",
            "crud-web-apps/jupyter/frontend/package-lock.json",
        ),
        # their backends only (no frontend, so no lockfile): keyed by the fixture alone
        "volumes-web-app": (),
        "tensorboards-web-app": (),
    }


def run_launcher(text: str, tmp_path: Path, *args: str) -> str:
    """The launcher with its exec replaced by echo: where it goes, what it runs, with which NODE_ENV."""
    script = tmp_path / "launcher"
    script.write_text(text.replace("exec ", 'echo "$PWD NODE_ENV=${NODE_ENV:-}" '))
    return subprocess.run(["sh", str(script), *args], capture_output=True, text=True, check=True).stdout.strip()


def test_the_dashboards_launcher_runs_its_server_as_the_image_does(tmp_path: Path) -> None:
    built = tmp_path / "centraldashboard-v1.10.0_key"
    built.mkdir()
    app = webapps.APPS[0]
    text = webapps.node_launcher(app, "v1.10.0", built, "/usr/bin/node")
    assert run_launcher(text, tmp_path, "--flag") == f"{built} NODE_ENV=production /usr/bin/node dist/server.js --flag"


def test_a_crud_apps_launcher_runs_gunicorn_in_its_backend_as_the_image_does(tmp_path: Path) -> None:
    built = tmp_path / "jupyter-web-app-v1.10.0_key"
    (built / "backend").mkdir(parents=True)
    venv = tmp_path / "venv"
    text = webapps.flask_launcher(webapps.APPS[1], "v1.10.0", built, venv)
    # the container's arguments are ignored, as the image's `bash -c '...'` ignores them
    assert run_launcher(text, tmp_path, "ignored") == (
        f"{built}/backend NODE_ENV= {venv}/bin/gunicorn -w 3 --bind 0.0.0.0:5000 --access-logfile - entrypoint:app"
    )


def test_a_launcher_is_rewritten_only_when_it_changes(tmp_path: Path) -> None:
    path = tmp_path / "centraldashboard-v1.10.0"
    assert webapps.write_if_changed(path, "#!/bin/sh\n")
    assert path.stat().st_mode & 0o111
    assert not webapps.write_if_changed(path, "#!/bin/sh\n")
    assert webapps.write_if_changed(path, "#!/bin/sh\nexit 0\n")


def fixture_tarball(path: Path, files: dict[str, bytes]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"kubeflow-1.10.0/components/{name}")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_the_lockfiles_are_read_from_the_fixture_without_unpacking_it(tmp_path: Path) -> None:
    tarball = fixture_tarball(tmp_path / "f.tar.gz", {"centraldashboard/package-lock.json": b"{}", "x/y": b"-"})
    assert webapps.read_members(tarball, ["centraldashboard/package-lock.json"]) == {
        "centraldashboard/package-lock.json": b"{}"
    }
    with pytest.raises(
        webapps.WebAppBuildFailed, match=re.escape("lacks crud-web-apps/jupyter/frontend/package-lock.json")
    ):
        webapps.read_members(tarball, ["crud-web-apps/jupyter/frontend/package-lock.json"])


def test_without_the_fixture_nothing_is_built_and_the_log_says_so(tmp_path: Path) -> None:
    logged: list[str] = []
    webapps.build(
        Versions({"KUBEFLOW_COMPONENTS_VERSION": "v1.10.0"}),
        root=tmp_path / "cache",
        operators=tmp_path / "ops",
        fixtures=tmp_path / "no-fixtures",
        environ={},
        log=logged.append,
    )
    assert logged == [
        f"web apps v1.10.0: NOT BUILT: no source tarball {tmp_path}/no-fixtures/kubeflow-components-v1.10.0.tar.gz"
    ]
    assert not (tmp_path / "cache" / "webapps").exists()


def test_build_binaries_takes_the_webapps_flag() -> None:
    assert cli.parse(["--operators", "--webapps"]).has("--webapps")
    assert "--webapps" in cli.HELP


def test_without_node_nothing_is_built_and_the_log_says_so(tmp_path: Path) -> None:
    fixtures = tmp_path / "fixtures"
    fixture_tarball(fixtures / "kubeflow-components-v1.10.0.tar.gz", {"centraldashboard/package-lock.json": b"{}"})
    logged: list[str] = []
    webapps.build(
        Versions({"KUBEFLOW_COMPONENTS_VERSION": "v1.10.0"}),
        root=tmp_path / "cache",
        operators=tmp_path / "ops",
        fixtures=fixtures,
        environ={"PATH": str(tmp_path / "empty")},
        log=logged.append,
    )
    assert logged == [
        "web apps v1.10.0: NOT BUILT: no node or npm on PATH (the system's Node.js builds them; Debian: apt-get "
        "install nodejs npm); the runtime leaves their pods to kwok"
    ]
