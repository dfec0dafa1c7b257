"""The one caller of the kustomize binary.

Finds ``kustomize`` (v5 or newer) or falls back to ``kubectl kustomize``; checks the version; passes
arguments as a list (never a shell); bounds the run time; on failure raises RenderError naming the
application, the directory and the tail of kustomize's stderr.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from kfctl.errors import RenderError

MIN_MAJOR = 5
# kubectl prefixes its log lines ("E1122 04:55:53.918378   16164 run.go:72] "); the message is what matters.
_KLOG_PREFIX = re.compile(r"^[EWIF]\d{4} [\d:.]+\s+\d+ \S+\] ")
# What a user who installed kfctl with pip can follow (no checkout, no Makefile): one binary on PATH.
GET_KUSTOMIZE = (
    "its release binary: kustomize_v5.5.0_<os>_<arch>.tar.gz of https://github.com/kubernetes-sigs/kustomize/releases "
    "holds the one file"
)
INSTALL_HINT = f"put kustomize v5 on PATH ({GET_KUSTOMIZE}), or kubectl 1.27 or newer, which embeds it"


@dataclass(frozen=True)
class Kustomize:
    argv: tuple[str, ...]  # the command prefix that takes a directory: ("kustomize", "build")
    version: str  # "v5.5.0"

    def describe(self) -> str:
        return f"{' '.join(self.argv[:-1] if self.argv[-1] == 'build' else self.argv)} {self.version}"


def _run(argv: list[str], *, timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def _major(version: str) -> int:
    m = re.search(r"v?(\d+)\.(\d+)", version)
    return int(m.group(1)) if m else 0


def find_kustomize(*, timeout: float = 20.0) -> Kustomize:
    """Locate a usable kustomize; RenderError with an install hint when there is none."""
    seen: list[str] = []
    exe = shutil.which("kustomize")
    if exe:
        try:
            out = _run([exe, "version"], timeout=timeout)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise RenderError(f"{exe} version: {e}", hint=INSTALL_HINT) from e
        version = _version_in(out.stdout + out.stderr)
        if _major(version) >= MIN_MAJOR:
            return Kustomize((exe, "build"), version)
        seen.append(f"{exe} is {version or 'of unknown version'}")
    kubectl = shutil.which("kubectl")
    if kubectl:
        try:
            out = _run([kubectl, "version", "--client", "-o", "json"], timeout=timeout)
            data = json.loads(out.stdout or "{}")
        except (OSError, subprocess.TimeoutExpired, ValueError) as e:
            raise RenderError(f"{kubectl} version: {e}", hint=INSTALL_HINT) from e
        version = str(data.get("kustomizeVersion", ""))
        if _major(version) >= MIN_MAJOR:
            return Kustomize((kubectl, "kustomize"), version)
        seen.append(f"{kubectl} embeds kustomize {version or 'of unknown version'}")
    found = "; ".join(seen) if seen else "neither kustomize nor kubectl is on PATH"
    raise RenderError(f"no kustomize v{MIN_MAJOR}+ found ({found})", hint=INSTALL_HINT)


def _version_in(text: str) -> str:
    m = re.search(r"v?\d+\.\d+\.\d+", text)
    if not m:
        return ""
    v = m.group(0)
    return v if v.startswith("v") else f"v{v}"


# kustomize's default restrictor refuses a file outside the kustomization's own directory; kfctl v1 built with
# none, and v1-era trees (kubeflow/manifests v1.2 `application/v3` reads `../application/base/…`) rely on it.
UNRESTRICTED = ("--load-restrictor", "LoadRestrictionsNone")


def build(
    k: Kustomize, directory: Path, *, app: str, display: str, timeout: float = 120.0, unrestricted: bool = False
) -> str:
    """``kustomize build directory``; the YAML stream on success. ``display`` names it in errors. With
    ``unrestricted`` files outside a kustomization's own directory may be read: only for a repo's vendored
    copy, whose every reference kfctl.repos.closure has checked stays inside the repo."""
    argv = [*k.argv, *(UNRESTRICTED if unrestricted else ()), str(directory)]
    try:
        out = _run(argv, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        raise RenderError(
            f"application {app}: kustomize build {display} did not finish within {timeout:.0f}s",
            hint="a remote base may be unreachable; check the kustomization's resources",
        ) from e
    except OSError as e:
        raise RenderError(f"application {app}: cannot run {argv[0]}: {e}", hint=INSTALL_HINT) from e
    if out.returncode != 0:
        lines = [_KLOG_PREFIX.sub("", line) for line in out.stderr.strip().splitlines()]
        raise KustomizeFailed(
            f"application {app}: kustomize build {display} failed",
            details=error_first(lines) or [f"exit code {out.returncode}"],
            hint="fix the kustomization named above (or the files it refers to) and re-run",
            app=app,
            argv=[*k.argv, *(UNRESTRICTED if unrestricted else ())],
        )
    return out.stdout


class KustomizeFailed(RenderError):
    """kustomize refused a build: ``app`` and the command (without the directory), so the caller can keep the
    failing tree and say how to reproduce the error."""

    def __init__(self, message: str, *, details: list[str], hint: str, app: str, argv: list[str]) -> None:
        super().__init__(message, details=details, hint=hint)
        self.app = app
        self.argv = argv


def error_first(lines: list[str], *, context: int = 8) -> list[str]:
    """kustomize's own error line first, then the last ``context`` lines around it. kustomize prints
    ``Error: <what>``; kubectl's embedded one logs ``"command failed" err=<`` and the error on the next line,
    then whatever node it was looking at (a patch, a container), which is context, not the cause."""
    cause: str | None = None
    for i, line in enumerate(lines):
        if line.startswith("Error: ") or line.startswith("error: "):
            cause = line
            break
        if line.rstrip().endswith("err=<") and i + 1 < len(lines):
            cause = lines[i + 1].strip()
            break
        if '"command failed" err="' in line:
            cause = line.split('err="', 1)[1].rstrip().removesuffix('"')
            break
    rest = [line for line in lines if line.strip() and not line.startswith("# Warning:")]
    if cause is None:
        return rest[-context:]
    rest = [line for line in rest if cause.strip() not in line and not line.rstrip().endswith("err=<")]
    return [cause, *rest[-context:]]
