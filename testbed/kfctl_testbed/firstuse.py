"""Operator releases built on first use: the process runtime's answer to an image no one built in advance.

`e2e/build-binaries --operators` builds the releases `e2e/versions.env` names. An upstream release that pins
another one (kubeflow/manifests v1.10.2 pins KServe v0.15.0) would otherwise leave its pod in ErrImagePull for a
reason no user meets. For the repositories in RECIPES, whose image tag is the Go module's release, the runtime
asks a `FirstUseBuilds` for the binary; the first ask starts a build in the background (one at a time: the
machine has two cores), and the container waits in ContainerCreating, as a kubelet's does while it pulls:

1. `go mod download -json <module>@<version>`: the Go module proxy's answer. A release it refuses (`403 Forbidden
   ... This module version is not available`) cannot be built; that answer becomes the container's ErrImagePull
   message, and the build is not tried again in this runtime's life.
2. A wrapper module in `<cache>/firstuse/<binary>-<version>/`: `require <module> <version>`, upstream's own
   replace and exclude directives copied from its go.mod (a dependency's are ignored, so the build links what
   upstream's release links), and a `tools.go` importing the main package, as e2e/gobuild's wrappers do.
3. `go mod tidy` (upstream's go.sum first, so its hashes are trusted as upstream trusted them), then `go build`
   into the operators' bin dir as `<binary>-<version>`, the name e2e/build-binaries gives other releases. The
   binary is cached like theirs: a later cluster finds it and builds nothing.

Progress goes to the runtime's log (a line per step, and the time it took); go's own output goes to
`<cache>/firstuse/<binary>-<version>/build.log`. TEST CODE: kfctl never imports it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import queue
import re
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kfctl_testbed.gobuild.run import GO_ENV, build_flags

log = logging.getLogger("runtime")

# A release tag as upstream tags its images: v1.2.3 (or 1.2.3), with an optional pre-release suffix.
_RELEASE_TAG = re.compile(r"v?\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?")
GO_TIMEOUT_SECONDS = 1800


@dataclass(frozen=True)
class Recipe:
    """How to build one operator's release from its Go module (facts from its repository's Dockerfile)."""

    binary: str  # the name e2e/build-binaries gives it; a release is <binary>-<version>
    module: str
    package: str  # the main package the image's entrypoint is built from
    ldflags: str = "-s -w"  # "{version}" stands for the release

    def version(self, tag: str) -> str | None:
        """The module release an image tag names, None for a tag that names none (a commit, `latest`)."""
        if not _RELEASE_TAG.fullmatch(tag):
            return None
        return tag if tag.startswith("v") else f"v{tag}"


# Image repository → recipe, for operators whose image tags are their module's releases. The training operator's
# tags are commits (v1-3f15cb8) and kubeflow/kubeflow's modules are not on the proxy: they have none.
RECIPES: dict[str, Recipe] = {
    "kserve/kserve-controller": Recipe(
        "kserve-manager", "github.com/kserve/kserve", "github.com/kserve/kserve/cmd/manager"
    ),
    "ghcr.io/kubeflow/katib/katib-controller": Recipe(
        "katib-controller", "github.com/kubeflow/katib", "github.com/kubeflow/katib/cmd/katib-controller/v1beta1"
    ),
    "registry.k8s.io/jobset/jobset": Recipe(
        "jobset-controller",
        "sigs.k8s.io/jobset",
        "sigs.k8s.io/jobset",
        "-s -w -X sigs.k8s.io/jobset/pkg/version.GitVersion={version}",
    ),
    "ghcr.io/kubeflow/trainer/trainer-controller-manager": Recipe(
        "trainer-controller-manager",
        "github.com/kubeflow/trainer/v2",
        "github.com/kubeflow/trainer/v2/cmd/trainer-controller-manager",
    ),
    "ghcr.io/kubeflow/spark-operator/controller": Recipe(
        "spark-operator",
        "github.com/kubeflow/spark-operator/v2",
        "github.com/kubeflow/spark-operator/v2/cmd/operator",
        "-s -w -X github.com/kubeflow/spark-operator/v2.version={version}",
    ),
}


@dataclass(frozen=True)
class Wanted:
    """A release to build: what the image names, and where its binary goes."""

    recipe: Recipe
    version: str

    @property
    def name(self) -> str:
        return f"{self.recipe.binary}-{self.version}"


@dataclass(frozen=True)
class Pending:
    """Not built yet: the container waits (ContainerCreating) with this message."""

    message: str


@dataclass(frozen=True)
class Failed:
    """Cannot be built: the container's ErrImagePull message (the proxy's or go's own answer)."""

    message: str


def wanted(repository: str, tag: str) -> Wanted | None:
    """The release an image names, when its repository has a recipe and its tag is a release."""
    recipe = RECIPES.get(repository)
    version = recipe.version(tag) if recipe else None
    return Wanted(recipe, version) if recipe and version else None


class BuildError(Exception):
    """A step of a first-use build failed; the message is what the container reports."""


class Go:
    """Runs go for one build, stdout returned and stderr appended to the build's log, and can stop it: the runtime is
    stopped by its pid alone, so a build must not outlive it."""

    def __init__(self, env: dict[str, str], output: Path) -> None:
        self.env = env
        self.output = output
        self._proc: subprocess.Popen[str] | None = None
        self._stopped = False

    def run(self, args: list[str], *, cwd: Path, check: bool = True) -> tuple[int, str]:
        if self._stopped:
            raise BuildError("the runtime is stopping")
        with self.output.open("a") as err:
            err.write(f"$ go {' '.join(args)}\n")
            err.flush()
            # A session of its own: stopping it stops go's compilers and linker with it (their process group).
            self._proc = subprocess.Popen(
                ["go", *args],
                cwd=cwd,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                start_new_session=True,
            )
            try:
                stdout, _ = self._proc.communicate(timeout=GO_TIMEOUT_SECONDS)
            except subprocess.TimeoutExpired:
                self._kill()
                stdout, _ = self._proc.communicate()
            code = self._proc.returncode
        if check and code != 0:
            tail = [line for line in self.output.read_text(errors="replace").splitlines() if line.strip()][-3:]
            raise BuildError(f"go {' '.join(args[:2])} failed: {' | '.join(tail)}")
        return code, stdout

    def stop(self) -> None:
        self._stopped = True
        self._kill()

    def _kill(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._proc.pid, signal.SIGKILL)


class FirstUseBuilds:
    """The builds the runtime started, one at a time on a background thread, and how each ended."""

    def __init__(self, bin_dir: Path, work_root: Path) -> None:
        self.bin_dir = bin_dir
        self.work_root = work_root
        self._queue: queue.Queue[Wanted] = queue.Queue()
        self._lock = threading.Lock()
        self._started: dict[str, float] = {}  # name → when it was asked for
        self._failed: dict[str, str] = {}
        self._go: Go | None = None
        self._stopping = False
        self._thread = threading.Thread(target=self._work, name="first-use-builds", daemon=True)
        self._thread.start()

    def binary(self, want: Wanted) -> Path | Pending | Failed:
        """The built binary, or where its build stands (starting it on the first ask)."""
        path = self.bin_dir / want.name
        if path.is_file():
            return path
        with self._lock:
            if want.name in self._failed:
                return Failed(self._failed[want.name])
            if want.name not in self._started:
                self._started[want.name] = time.monotonic()
                log.info("first use: %s has no binary; building it from %s", want.name, want.recipe.module)
                self._queue.put(want)
            waited = time.monotonic() - self._started[want.name]
        return Pending(
            f"e2e runtime: building {want.recipe.module}@{want.version} on first use ({waited:.0f} s so far; "
            "progress in the runtime's log)"
        )

    def stop(self) -> None:
        """Stop the build in progress (its go process with it); queued ones never start."""
        with self._lock:
            self._stopping = True
            go = self._go
        if go is not None:
            go.stop()

    def _work(self) -> None:
        while True:
            want = self._queue.get()
            t0 = time.monotonic()
            work = self.work_root / want.name
            work.mkdir(parents=True, exist_ok=True)
            go = Go(go_env(), work / "build.log")
            with self._lock:
                if self._stopping:
                    return
                self._go = go
            try:
                build(want, self.bin_dir, work, go)
            except BuildError as e:
                log.warning("first use: %s cannot be built: %s", want.name, e)
                self._fail(want, f"e2e runtime: cannot build {want.recipe.module}@{want.version}: {e}")
                continue
            except Exception as e:  # a surprise must end as a failed build, not a pod waiting forever
                log.exception("first use: %s: unexpected error", want.name)
                self._fail(want, f"e2e runtime: building {want.name} failed: {e}")
                continue
            log.info("first use: %s built in %.0f s", want.name, time.monotonic() - t0)

    def _fail(self, want: Wanted, message: str) -> None:
        with self._lock:
            self._failed[want.name] = message


def go_env() -> dict[str, str]:
    """The build recipes' environment (kfctl_testbed.gobuild.run.GO_ENV), with -mod=mod: the module is made here."""
    return {**os.environ, **GO_ENV, "GOFLAGS": f"-mod=mod {GO_ENV['GOFLAGS']}"}


def download(want: Wanted, work: Path, go: Go) -> dict[str, str]:
    """The proxy's record of the release (Dir, GoMod, or Error: its answer), as `go mod download -json` gives it."""
    code, stdout = go.run(["mod", "download", "-json", f"{want.recipe.module}@{want.version}"], cwd=work, check=False)
    try:
        record: dict[str, str] = json.loads(stdout)
    except json.JSONDecodeError as e:
        raise BuildError(f"go mod download gave no record (exit {code})") from e
    if record.get("Error"):
        # The proxy's answer, without its address (GOPROXY says where it is).
        raise BuildError(re.sub(r"https?://[^/\s]+", "$GOPROXY", " ".join(record["Error"].split())))
    return record


def wrapper_go_mod(want: Wanted, upstream: dict[str, Any]) -> str:
    """The wrapper's go.mod: the release required, upstream's replace and exclude directives (from `go mod edit
    -json` of upstream's go.mod) repeated, its go version kept."""
    lines = [f"module kfctl.local/firstuse/{want.name}", ""]
    if upstream.get("Go"):
        lines += [f"go {upstream['Go']}", ""]
    lines += [f"require {want.recipe.module} {want.version}", ""]
    for rep in upstream.get("Replace") or []:
        old, new = rep["Old"], rep["New"]
        if not new.get("Version"):
            raise BuildError(f"upstream's go.mod replaces {old['Path']} with the local path {new['Path']}")
        lhs = f"{old['Path']} {old['Version']}" if old.get("Version") else old["Path"]
        lines.append(f"replace {lhs} => {new['Path']} {new['Version']}")
    for exc in upstream.get("Exclude") or []:
        lines.append(f"exclude {exc['Path']} {exc['Version']}")
    return "\n".join(lines) + "\n"


def build(want: Wanted, bin_dir: Path, work: Path, go: Go) -> None:
    """Build `want` into bin_dir/<binary>-<version> (see the module's docstring); a BuildError says why not."""
    # Two runtimes (two clusters side by side) may ask for the same release: one builds, the other waits for it.
    with (work / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (bin_dir / want.name).is_file():
            return
        go.output.write_text("")
        log.info("first use: %s: asking the Go module proxy for %s@%s", want.name, want.recipe.module, want.version)
        # The checksum database does not know some releases the proxy serves (its lookup is 404): the proxy's
        # answer is trusted for the module itself, as e2e/build-binaries trusts it for such releases.
        go.env["GONOSUMDB"] = want.recipe.module
        record = download(want, work, go)
        upstream = json.loads(go.run(["mod", "edit", "-json", record["GoMod"]], cwd=work)[1])
        (work / "go.mod").write_text(wrapper_go_mod(want, upstream))
        (work / "tools.go").write_text(f'//go:build tools\n\npackage tools\n\nimport _ "{want.recipe.package}"\n')
        upstream_sum = Path(record["Dir"]) / "go.sum"
        (work / "go.sum").write_text(upstream_sum.read_text() if upstream_sum.is_file() else "")
        log.info("first use: %s: go mod tidy", want.name)
        go.run(["mod", "tidy"], cwd=work)
        log.info("first use: %s: go build %s", want.name, want.recipe.package)
        tmp = bin_dir / f".{want.name}.building"
        ldflags = want.recipe.ldflags.replace("{version}", want.version)
        go.run(["build", *build_flags(ldflags, inline=False), "-o", str(tmp), want.recipe.package], cwd=work)
        os.replace(tmp, bin_dir / want.name)
