"""The Kubeflow web UIs the process runtime runs for the full platform's pods, built from kubeflow/kubeflow's source in
../shared/fixtures (kubeflow-components-<KUBEFLOW_COMPONENTS_VERSION>.tar.gz, the images kubeflow/manifests v1.10.0,
v1.11.0 and 26.03 deploy) by `e2e/build-binaries --webapps` (make setup passes it; make demo does not):

- the central dashboard (components/centraldashboard): its lockfile through `npm ci`, its webpack bundle and its
  TypeScript server, run as the image runs it (`NODE_ENV=production node dist/server.js`);
- the CRUD web apps (components/crud-web-apps: Jupyter, volumes, TensorBoards): each Flask backend, run as the image
  runs it (`gunicorn -w 3 --bind 0.0.0.0:5000 … entrypoint:app`) in one venv that holds the shared `kubeflow` backend
  package and the pins of crud-backend-requirements.txt (upstream's setup.py pins nothing but `kubernetes`); the
  Jupyter web app's Angular frontend beside it (the common Angular library, then the app, through `npm ci` and
  `ng build`). The volumes and TensorBoards frontends are the same recipe (WebApp.frontend) but not built: each would
  add an `npm ci` and an `ng build` (the Jupyter one's) to the cold setup, and no test opens their pages; their
  backends serve the API.

Lean, for the cold setup's budget: `npm ci --no-audit --no-fund --ignore-scripts` (no install script runs, so no
package downloads a browser; the puppeteer variables say so too), the production bundles only, no source maps, no
tests, no lint. Each app goes to ${KFCTL_E2E_CACHE:-~/.cache/kfctl-e2e}/webapps/<app>-<version>_<key>/, its key the
sha256 of the fixture and of the lockfiles (and pins) its build reads, the Node or Python it was built with and
RECIPE (raise it when a build step changes); a dir already there is reused as it is. The runtime finds each app
through a launcher, <app>-<version> in the operators' bin dir (runtime.py's image table names it): a shell script that
becomes the image's entrypoint. Standard library only, as the rest of the build.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from kfctl_testbed.gobuild.errors import BuildError
from kfctl_testbed.gobuild.versions import Versions

Log = Callable[[str], None]

RECIPE = 1  # part of every key: raise it when a step below changes what is built
PINS = Path(__file__).with_name("crud-backend-requirements.txt")
COMPONENTS = "components"
COMMON_LIB = "crud-web-apps/common/frontend/kubeflow-common-lib"
COMMON_BACKEND = "crud-web-apps/common/backend"
# npm never fetches a browser: no install script runs (--ignore-scripts), and these say so to any that would.
NPM_ENV = {
    "PUPPETEER_SKIP_DOWNLOAD": "true",
    "PUPPETEER_SKIP_CHROMIUM_DOWNLOAD": "true",
    "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
    "CYPRESS_INSTALL_BINARY": "0",  # the volumes and TensorBoards frontends' test runner
    "NG_CLI_ANALYTICS": "false",
    "npm_config_update_notifier": "false",
    "npm_config_fund": "false",
    "npm_config_audit": "false",
}
NPM_CI = ["npm", "ci", "--no-audit", "--no-fund", "--ignore-scripts"]


class WebAppBuildFailed(BuildError):
    """A step (npm, node, pip) failed; the message names it and quotes the end of its log."""


@dataclass(frozen=True)
class WebApp:
    name: str  # the launcher's name, <name>-<version>
    image: str  # what the runtime's table maps to it (documentation of the launcher)
    directory: str  # under components/
    kind: str  # "node" (the dashboard) or "flask" (a CRUD web app)
    base_href: str = ""  # a CRUD app's frontend: the path the platform serves it under
    backend_app: str = ""  # a CRUD app's backend package dir (apps/ or app/), its frontend goes to <it>/static
    frontend: bool = True  # a CRUD app: build its Angular frontend (else its backend serves the API, no pages)

    @property
    def lockfiles(self) -> tuple[str, ...]:
        """The lockfiles (under components/) its build reads."""
        if self.kind == "node":
            return (f"{self.directory}/package-lock.json",)
        if not self.frontend:
            return ()
        return (f"{COMMON_LIB}/package-lock.json", f"{self.directory}/frontend/package-lock.json")


APPS: tuple[WebApp, ...] = (
    WebApp("centraldashboard", "ghcr.io/kubeflow/kubeflow/central-dashboard", "centraldashboard", "node"),
    WebApp(
        "jupyter-web-app",
        "ghcr.io/kubeflow/kubeflow/jupyter-web-app",
        "crud-web-apps/jupyter",
        "flask",
        base_href="/jupyter/",
        backend_app="apps/default",
    ),
    WebApp(
        "volumes-web-app",
        "ghcr.io/kubeflow/kubeflow/volumes-web-app",
        "crud-web-apps/volumes",
        "flask",
        base_href="/volumes/",
        backend_app="apps/default",
        frontend=False,
    ),
    WebApp(
        "tensorboards-web-app",
        "ghcr.io/kubeflow/kubeflow/tensorboards-web-app",
        "crud-web-apps/tensorboards",
        "flask",
        base_href="/tensorboards/",
        backend_app="app",
        frontend=False,
    ),
)


def launcher_names(version: str) -> set[str]:
    """What `--webapps` puts in the operators' bin dir (runtime.py's image table names them)."""
    return {f"{app.name}-{version}" for app in APPS}


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_members(tarball: Path, wanted: Sequence[str]) -> dict[str, bytes]:
    """The files `wanted` (paths under components/) of the fixture, read without unpacking it."""
    found: dict[str, bytes] = {}
    with tarfile.open(tarball) as tar:
        for member in tar:
            rel = member.name.split("/", 1)[-1]  # drop the top directory kubeflow-<v>/
            if rel.startswith(f"{COMPONENTS}/") and rel.removeprefix(f"{COMPONENTS}/") in wanted and member.isfile():
                f = tar.extractfile(member)
                assert f is not None
                found[rel.removeprefix(f"{COMPONENTS}/")] = f.read()
    missing = sorted(set(wanted) - set(found))
    if missing:
        raise WebAppBuildFailed(f"{tarball} lacks {', '.join(missing)}")
    return found


def toolchain(kind: str, environ: Mapping[str, str]) -> tuple[str, str]:
    """(the interpreter's path, its version as the key names it: node20, py3.11); BuildError without it."""
    if kind == "node":
        node = shutil.which("node", path=environ.get("PATH"))
        if node is None or shutil.which("npm", path=environ.get("PATH")) is None:
            raise WebAppBuildFailed(
                "no node/npm on PATH: the web UIs are built with the system's Node.js (Debian: apt-get install nodejs "
                "npm)"
            )
        out = subprocess.run([node, "--version"], capture_output=True, text=True, check=False).stdout.strip()
        return node, "node" + out.lstrip("v").split(".")[0]
    return sys.executable, f"py{sys.version_info.major}.{sys.version_info.minor}"


def key(fixture_sha: str, locks: Sequence[bytes], tool: str) -> str:
    digest = hashlib.sha256(f"recipe {RECIPE}\n".encode())
    for lock in locks:
        digest.update(hashlib.sha256(lock).hexdigest().encode())
    return f"{fixture_sha[:12]}_{digest.hexdigest()[:12]}_{tool}"


def node_launcher(app: WebApp, version: str, built: Path, node: str) -> str:
    return (
        "#!/bin/sh\n"
        f"# {app.image}:{version} as its image runs it (npm start: node dist/server.js, NODE_ENV=production), built\n"
        f"# by e2e/build-binaries --webapps from kubeflow-components-{version}.tar.gz into {built}\n"
        f"cd {shlex.quote(str(built))} || exit 127\n"
        "NODE_ENV=production; export NODE_ENV\n"
        f'exec {shlex.quote(node)} dist/server.js "$@"\n'
    )


def flask_launcher(app: WebApp, version: str, built: Path, venv: Path) -> str:
    return (
        "#!/bin/sh\n"
        f"# {app.image}:{version} as its image runs it (bash -c 'gunicorn ... entrypoint:app' in /src; the\n"
        f"# container's arguments go to bash -c, which ignores them), built by e2e/build-binaries --webapps from\n"
        f"# kubeflow-components-{version}.tar.gz into {built}\n"
        f"cd {shlex.quote(str(built / 'backend'))} || exit 127\n"
        f"exec {shlex.quote(str(venv / 'bin' / 'gunicorn'))} "
        "-w 3 --bind 0.0.0.0:5000 --access-logfile - entrypoint:app\n"
    )


def write_if_changed(path: Path, text: str) -> bool:
    if path.is_file() and path.read_text() == text:
        return False
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.chmod(0o755)
    os.replace(tmp, path)
    return True


@dataclass
class WebAppsBuild:
    """One `--webapps` run: every app of APPS, each built unless its keyed dir is there, and its launcher written."""

    tarball: Path
    version: str
    root: Path  # ${cache}/webapps
    launchers: Path  # the operators' bin dir
    log: Log
    environ: Mapping[str, str]
    fixture_sha: str = ""  # set by run()
    members: Mapping[str, bytes] = field(default_factory=dict)  # the lockfiles and setup.py, set by run()
    node_tool: str = ""  # set by run()

    def _env(self, extra: Mapping[str, str] = {}) -> dict[str, str]:
        return {**self.environ, **NPM_ENV, **extra}

    def step(self, what: str, args: Sequence[str], *, cwd: Path, log_file: Path, env: Mapping[str, str] = {}) -> None:
        """Runs one command, its output appended to log_file; WebAppBuildFailed quoting the log's end."""
        t0 = time.monotonic()
        with open(log_file, "a") as out:
            out.write(f"$ {shlex.join(args)}  (in {cwd})\n")
            out.flush()
            done = subprocess.run(
                list(args), cwd=cwd, env=self._env(env), stdout=out, stderr=subprocess.STDOUT, check=False
            )
        if done.returncode != 0:
            tail = "\n".join(log_file.read_text(errors="replace").splitlines()[-25:])
            raise WebAppBuildFailed(
                f"{what}: `{shlex.join(args)}` failed (exit {done.returncode}) in {cwd}; the end of {log_file}:\n{tail}"
            )
        self.log(f"  {what}: {round(time.monotonic() - t0)} s")

    def unpack(self, scratch: Path, directories: Sequence[str]) -> Path:
        """components/<directory> for each of `directories`, from the fixture, into scratch; returns components/."""
        prefixes = tuple(f"{COMPONENTS}/{d}/" for d in directories)
        with tarfile.open(self.tarball) as tar:
            members = []
            for member in tar.getmembers():
                rel = member.name.partition("/")[2]
                if rel.startswith(prefixes):
                    member.name = rel
                    members.append(member)
            tar.extractall(scratch, members=members, filter="data")
        return scratch / COMPONENTS

    def run(self) -> None:
        t_all = time.monotonic()
        self.root.mkdir(parents=True, exist_ok=True)
        self.fixture_sha = fixture_sha = sha256_file(self.tarball)
        self.members = members = read_members(
            self.tarball, sorted({lock for app in APPS for lock in app.lockfiles} | {f"{COMMON_BACKEND}/setup.py"})
        )
        node, self.node_tool = toolchain("node", self.environ)
        python, py_tool = toolchain("flask", self.environ)
        venv_locks = [members[f"{COMMON_BACKEND}/setup.py"], PINS.read_bytes()]
        venv = self.root / f"venv-{self.version}_{key(fixture_sha, venv_locks, py_tool)}"
        for app in APPS:
            locks = [members[lock] for lock in app.lockfiles]
            built = self.root / f"{app.name}-{self.version}_{key(fixture_sha, locks, self.node_tool)}"
            if (built / ".built").is_file():
                self.log(f"{app.name} {self.version}: cached ({built})")
            else:
                self.build(app, built, fixture_sha)
            if app.kind == "node":
                text = node_launcher(app, self.version, built, node)
            else:
                if not (venv / ".built").is_file():
                    self.build_venv(venv, python)
                text = flask_launcher(app, self.version, built, venv)
            if write_if_changed(self.launchers / f"{app.name}-{self.version}", text):
                self.log(f"{app.name}-{self.version}: launcher written to {self.launchers}")
        self.log(f"web apps: done in {round(time.monotonic() - t_all)} s")

    def build(self, app: WebApp, built: Path, fixture_sha: str) -> None:
        how = "npm; cold: minutes on 2 cores" if app.kind == "node" or app.frontend else "its backend only: a copy"
        self.log(f"{app.name} {self.version}: building from {self.tarball.name} ({how})")
        t0 = time.monotonic()
        scratch = Path(self.root / f".build.{app.name}")
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        log_file = self.root / f"{app.name}-{self.version}.log"
        log_file.write_text("")
        try:
            if app.kind == "node":
                out = self.build_dashboard(app, scratch, log_file)
            else:
                out = self.build_crud(app, scratch, log_file)
            (out / ".built").write_text(f"fixture sha256 {fixture_sha}\n")
            shutil.rmtree(built, ignore_errors=True)
            os.replace(out, built)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        self.log(f"{app.name}: built in {round(time.monotonic() - t0)} s ({built})")

    def build_dashboard(self, app: WebApp, scratch: Path, log_file: Path) -> Path:
        src = self.unpack(scratch, [app.directory]) / app.directory
        bin_ = src / "node_modules" / ".bin"
        self.step("npm ci", [*NPM_CI, "--omit=optional"], cwd=src, log_file=log_file)
        # webpack 4 hashes with md4, which Node 17+'s OpenSSL 3 refuses without its legacy provider. No source map;
        # no lint (upstream's `npm run build` runs tslint too).
        webpack_env = {"NODE_ENV": "production", "NODE_OPTIONS": "--openssl-legacy-provider"}
        self.step("webpack", [str(bin_ / "webpack"), "--no-devtool"], cwd=src, log_file=log_file, env=webpack_env)
        self.step("tsc", [str(bin_ / "tsc"), "--sourceMap", "false"], cwd=src, log_file=log_file)
        # What `node dist/server.js` needs: the production dependencies (as the image's `npm prune --production`).
        self.step("npm prune", ["npm", "prune", "--omit=dev", "--ignore-scripts"], cwd=src, log_file=log_file)
        return src

    def common_lib(self, log_file: Path) -> Path:
        """The common Angular library, built once for the three apps (dist/kubeflow with its styles and assets, as its
        `npm run build` makes it), into a keyed dir of its own."""
        lib_key = key(self.fixture_sha, [self.members[f"{COMMON_LIB}/package-lock.json"]], self.node_tool)
        built = self.root / f"kubeflow-common-lib-{self.version}_{lib_key}"
        if (built / ".built").is_file():
            return built
        t0 = time.monotonic()
        scratch = self.root / ".build.kubeflow-common-lib"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        try:
            lib = self.unpack(scratch, [COMMON_LIB]) / COMMON_LIB
            # Optional dependencies stay: Angular's esbuild is one (its wasm fallback stops under Node 20).
            self.step("npm ci (common library)", NPM_CI, cwd=lib, log_file=log_file)
            ng = str(lib / "node_modules" / ".bin" / "ng")
            self.step(
                "ng build (common library)", [ng, "build", "--configuration", "production"], cwd=lib, log_file=log_file
            )
            dist = lib / "dist" / "kubeflow"
            for part in ("styles", "assets"):
                shutil.copytree(lib / "projects" / "kubeflow" / "src" / part, dist / part)
            (dist / ".built").write_text(f"fixture sha256 {self.fixture_sha}\n")
            shutil.rmtree(built, ignore_errors=True)
            os.replace(dist, built)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        self.log(f"  common Angular library: built in {round(time.monotonic() - t0)} s ({built})")
        return built

    def build_crud(self, app: WebApp, scratch: Path, log_file: Path) -> Path:
        components = self.unpack(scratch, [app.directory])
        out = scratch / "app"
        backend = components / app.directory / "backend"
        shutil.copytree(backend, out / "backend", ignore=shutil.ignore_patterns("Makefile", "requirements.txt"))
        if not app.frontend:
            return out
        lib = self.common_lib(log_file)
        front = components / app.directory / "frontend"
        self.step("npm ci (frontend)", NPM_CI, cwd=front, log_file=log_file)
        shutil.copytree(lib, front / "node_modules" / "kubeflow", ignore=shutil.ignore_patterns(".built"))
        # The frontend's `npm run build`: copyLibAssets, then ng build (production, no source maps).
        shutil.copytree(lib / "assets", front / "src" / "assets", dirs_exist_ok=True)
        ng = str(front / "node_modules" / ".bin" / "ng")
        args = [ng, "build", "--configuration=production", "--source-map=false", "--output-path=./dist/default"]
        args += [f"--base-href={app.base_href}", "--deploy-url=static/"]
        self.step("ng build (frontend)", args, cwd=front, log_file=log_file)
        # The image's /src: the backend, the frontend's bundle as <backend app>/static.
        shutil.copytree(front / "dist" / "default", out / "backend" / app.backend_app / "static", dirs_exist_ok=True)
        return out

    def build_venv(self, venv: Path, python: str) -> None:
        """One venv for the three Flask backends: the pins, then the `kubeflow` package from the fixture."""
        self.log(f"crud backends' venv {venv.name}: building (pip; cold: about a minute)")
        t0 = time.monotonic()
        scratch = self.root / ".build.venv"
        shutil.rmtree(scratch, ignore_errors=True)
        scratch.mkdir()
        log_file = self.root / f"venv-{self.version}.log"
        log_file.write_text("")
        try:
            # A venv's scripts name its own path: it is made where it stays, and removed again when a step fails.
            self.step("venv", [python, "-m", "venv", str(venv)], cwd=self.root, log_file=log_file)
            pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "--no-input"]
            self.step(
                "pip install (pins)",
                [*pip, "install", "--only-binary=:all:", "-r", str(PINS)],
                cwd=self.root,
                log_file=log_file,
            )
            backend = self.unpack(scratch, [COMMON_BACKEND]) / COMMON_BACKEND
            self.step(
                "pip install (kubeflow backend package)",
                [*pip, "install", "--no-deps", "--no-build-isolation", str(backend)],
                cwd=self.root,
                log_file=log_file,
            )
            (venv / ".built").write_text(f"{PINS.name}\n")
        except BuildError:
            shutil.rmtree(venv, ignore_errors=True)
            raise
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        self.log(f"crud backends' venv: built in {round(time.monotonic() - t0)} s")


def build(
    versions: Versions, *, root: Path, operators: Path | None, fixtures: Path, environ: Mapping[str, str], log: Log
) -> None:
    """`--webapps`: every app at KUBEFLOW_COMPONENTS_VERSION, one run at a time (a flock on webapps/.lock); a machine
    without the fixture builds none and says so, as the Go components from the same tarball."""
    assert operators is not None
    version = versions.get("KUBEFLOW_COMPONENTS_VERSION")
    tarball = Path(environ.get("KFCTL_FIXTURES") or fixtures) / f"kubeflow-components-{version}.tar.gz"
    if not tarball.is_file():
        log(f"web apps {version}: NOT BUILT: no source tarball {tarball}")
        return
    missing = [tool for tool in ("node", "npm") if shutil.which(tool, path=environ.get("PATH")) is None]
    if missing:
        log(
            f"web apps {version}: NOT BUILT: no {' or '.join(missing)} on PATH (the system's Node.js builds them; "
            "Debian: apt-get install nodejs npm); the runtime leaves their pods to kwok"
        )
        return
    cache = root / "webapps"
    cache.mkdir(parents=True, exist_ok=True)
    operators.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"another build holds {cache / '.lock'}; waiting")
            fcntl.flock(lock, fcntl.LOCK_EX)
        WebAppsBuild(tarball, version, cache, operators, log, environ).run()
