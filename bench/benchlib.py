"""What the benchmarks share: fresh local clusters, timed subprocesses with their peak RSS, statistics.

Every measured side runs as its own subprocess (kfctl exactly as a user runs it, kubectl from the e2e bin
dir), timed from spawn to exit; the peak RSS comes from wait4() on that process, so it is the process's
own high-water mark and nothing else's. Clusters are started with `e2e/cluster up --local` in a temporary
state dir and always stopped in a `finally`; only their kubeconfigs are used.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
E2E = REPO / "e2e"
VENV_BIN = Path(sys.executable).parent
# kfctl as a user has it: `pip install .` of this checkout into a venv of its own (setup_path makes it). The dev venv's
# editable install is not what users run: it has the dev extras (with kubernetes-validate present, the kubernetes
# client imports it and jsonschema at every start, 0.1 s) and no bytecode when PYTHONDONTWRITEBYTECODE is set (each
# command compiles kfctl's modules again, 0.2-0.4 s). kapp and kubectl are measured as released; so is kfctl.
USER_VENV = REPO / ".work" / "bench-venv"


def bin_dir() -> Path:
    out = subprocess.run([str(E2E / "build-binaries"), "--print-bin-dir"], capture_output=True, text=True, check=True)
    return Path(out.stdout.strip().splitlines()[-1])


def setup_path() -> Path:
    """Put the e2e binaries (kubectl) first on PATH for this process and its children, install kfctl as a user
    has it (:data:`USER_VENV`); return the bin dir."""
    install_kfctl()
    d = bin_dir()
    os.environ["PATH"] = f"{d}{os.pathsep}{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ.pop("KUBECONFIG", None)  # only clusters we start are ever addressed
    return d


def kubectl() -> str:
    found = shutil.which("kubectl")
    if not found:
        raise SystemExit("kubectl not found: run e2e/build-binaries")
    return found


def kapp() -> str:
    """kapp, built from its Go module into the cache by bench/build-kapp (about a minute the first time)."""
    out = subprocess.run([str(REPO / "bench" / "build-kapp")], capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"bench/build-kapp failed:\n{out.stderr[-2000:]}")
    return out.stdout.strip().splitlines()[-1]


def install_kfctl() -> None:
    """`pip install .` of this checkout into :data:`USER_VENV` (made the first time, with kfctl's dependencies; later
    only kfctl is reinstalled, so the bench measures the tree as it is). Untimed: about 15 s."""
    pip = [str(USER_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    steps = [[*pip, "--no-deps", "--force-reinstall", str(REPO)]]
    if not (USER_VENV / "bin" / "python").exists():
        steps[:0] = [[sys.executable, "-m", "venv", str(USER_VENV)], [*pip, str(REPO)]]
    for argv in steps:
        out = subprocess.run(argv, capture_output=True, text=True, check=False)
        if out.returncode != 0:
            raise SystemExit(
                f"installing kfctl into {USER_VENV} failed ({' '.join(argv[:4])} …):\n{out.stderr[-2000:]}\n"
                f"remove {USER_VENV} and run the bench again"
            )


def kfctl_argv(*args: str) -> list[str]:
    return [str(USER_VENV / "bin" / "kfctl"), *args]


@dataclass
class Measured:
    argv: list[str]
    code: int
    seconds: float
    max_rss_mb: float
    stdout: str
    stderr: str

    def check(self) -> Measured:
        if self.code != 0:
            raise RuntimeError(
                f"{' '.join(self.argv[:4])} … exited {self.code}\n{self.stdout[-2000:]}\n{self.stderr[-3000:]}"
            )
        return self

    def json_lines(self) -> list[dict[str, Any]]:
        out = []
        for line in self.stdout.splitlines():
            if line.startswith("{"):
                with contextlib.suppress(ValueError):
                    out.append(json.loads(line))
        return out

    def summary(self) -> dict[str, Any]:
        for doc in reversed(self.json_lines()):
            if "summary" in doc:
                return dict(doc["summary"])
        return {}


def run_measured(argv: Sequence[str], *, timeout: float = 1800, cwd: Path | None = None) -> Measured:
    """Run a process to its end; wall seconds from spawn to exit and its own peak RSS (wait4)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdout=out, stderr=err, cwd=cwd)
        timer = threading.Timer(timeout, lambda: proc.send_signal(signal.SIGKILL))
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        seconds = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measured(
            list(argv),
            proc.returncode,
            seconds,
            usage.ru_maxrss / 1024,  # KiB on Linux
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
        )


@contextlib.contextmanager
def fresh_cluster(label: str, *, audit: AuditLog | None = None) -> Iterator[str]:
    """A new local control plane (etcd, apiserver, controllers, kwok, stand-in) for one measurement; with
    ``audit``, its API server writes every request's metadata to ``audit.path``."""
    state = Path(tempfile.mkdtemp(prefix=f"kfctl-bench-{label}-"))
    env = dict(os.environ)
    if audit is not None:
        audit.path = state / "audit.log"
        env["KFCTL_E2E_AUDIT_LOG"] = str(audit.path)
    try:
        up = subprocess.run(
            [sys.executable, str(E2E / "cluster"), "up", "--state-dir", str(state / "c"), "--local"],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
            env=env,
        )
        if up.returncode != 0:
            raise RuntimeError(f"e2e/cluster up failed: {up.stderr[-2000:]}")
        yield up.stdout.strip().splitlines()[-1]
    finally:
        subprocess.run(
            [sys.executable, str(E2E / "cluster"), "down", "--state-dir", str(state / "c")],
            capture_output=True,
            timeout=120,
            check=False,
        )
        shutil.rmtree(state, ignore_errors=True)


WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})
# Created to be answered, never stored: an access review, or a POST through a Service's proxy subresource (kfctl
# asks a webhook backend whether it answers that way): the audit log's verb is create, but nothing is written.
REVIEWS = frozenset(
    {
        "selfsubjectaccessreviews",
        "selfsubjectrulesreviews",
        "subjectaccessreviews",
        "localsubjectaccessreviews",
        "tokenreviews",
    }
)


@dataclass
class RequestCount:
    total: int = 0
    writes: int = 0  # persisted writes; server-side dry runs and access reviews are counted in total only
    by_verb: dict[str, int] = field(default_factory=dict)


@dataclass
class AuditLog:
    """The API server's audit log of a bench cluster: requests counted on the server, by user agent, the same
    way for kfctl and its peers (each client's own count would not be comparable)."""

    path: Path | None = None

    def mark(self) -> int:
        """The number of lines so far: count from here."""
        if self.path is None or not self.path.exists():
            return 0
        with self.path.open("rb") as f:
            return sum(1 for _ in f)

    def requests(self, agent: str, *, since: int = 0, until: int | None = None) -> RequestCount:
        """Requests whose User-Agent starts with ``agent`` (kfctl sends "kfctl"; kapp's client-go "kapp/…"),
        logged from line ``since`` to line ``until`` (a ``mark()``); one per audit ID (a watch logs two stages)."""
        assert self.path is not None
        seen: dict[str, tuple[str, bool]] = {}
        with self.path.open() as f:
            for i, line in enumerate(f):
                if i < since:
                    continue
                if until is not None and i >= until:
                    break
                e = json.loads(line)
                if str(e.get("userAgent", "")).startswith(agent):
                    ref = e.get("objectRef") or {}
                    answered = (
                        "dryRun=" in str(e.get("requestURI", ""))
                        or ref.get("resource") in REVIEWS
                        or ref.get("subresource") == "proxy"
                    )
                    seen.setdefault(e["auditID"], (e["verb"], answered))
        out = RequestCount(total=len(seen))
        for verb, dry in seen.values():
            out.by_verb[verb] = out.by_verb.get(verb, 0) + 1
            out.writes += verb in WRITE_VERBS and not dry
        return out


@dataclass
class Samples:
    values: list[float] = field(default_factory=list)

    def add(self, v: float) -> None:
        self.values.append(v)

    @property
    def median(self) -> float:
        return statistics.median(self.values) if self.values else float("nan")

    def describe(self, fmt: str = "{:.2f}") -> str:
        if not self.values:
            return "-"
        if len(self.values) == 1:
            return fmt.format(self.values[0])
        return f"{fmt.format(self.median)} [{fmt.format(min(self.values))}–{fmt.format(max(self.values))}]"


def log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# Placeholder values for every platform's required plugin parameters: benchmarks render, they do not deploy
# to a cloud.
PLATFORM_VALUES = {
    "clusterName": "bench",
    "region": "eu-west-1",
    "autoscalerRoleArn": "arn:aws:iam::123456789012:role/ca",
    "project": "bench-project",
    "zone": "europe-west4-a",
    "cluster": "c",
    "subscriptionId": "00000000-0000-0000-0000-000000000000",
    "resourceGroup": "rg",
}


def full_catalog_app(app: Path, *, platform: str) -> dict[str, Any]:
    """`kfctl init` APPDIR with every component the platform allows, its plugin parameters filled in; the
    KfDef as a document."""
    import yaml

    from kfctl.app.init import init_app
    from kfctl.catalog.load import load_catalog

    catalog = load_catalog()
    components = sorted(c.name for c in catalog.components.values() if not c.platforms or platform in c.platforms)
    init_app(catalog, app_dir=app, platform=platform, components=components, namespace="kubeflow", force=True)
    path = app / "kfdef.yaml"
    doc: dict[str, Any] = yaml.safe_load(path.read_text())
    doc["metadata"]["name"] = "bench"
    for plugin in doc["spec"].get("plugins", []):
        for key in plugin.get("spec", {}):
            plugin["spec"][key] = PLATFORM_VALUES.get(key, plugin["spec"][key])
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return doc
