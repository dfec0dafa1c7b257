"""The one caller of the ``git`` binary: fetch one commit of a repository into a plain directory tree.

Arguments are always a list (never a shell), user values (URLs, refs) follow ``--`` where git accepts it
and may not start with ``-`` elsewhere, prompts are off (``GIT_TERMINAL_PROMPT=0``), the transport that can
run commands (``ext::``) is disabled whatever the user's config says, and every call is time-limited.
Failures raise RenderError with the tail of git's stderr. This module knows nothing about KfDefs, lock
files or the cache layout; it must not touch anything outside the directory it is given.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path

from kfctl.errors import RenderError

INSTALL_HINT = "install git (any version since 2.20) and make sure it is on PATH"
_FULL_SHA = re.compile(r"^[0-9a-f]{40}$")
_SHORT_SHA = re.compile(r"^[0-9a-f]{7,39}$")


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "true",
            "SSH_ASKPASS": "true",
            "GIT_CONFIG_NOSYSTEM": "1",
            "LC_ALL": "C",
        }
    )
    return env


def find_git() -> str:
    exe = shutil.which("git")
    if not exe:
        raise RenderError("git is not on PATH; it is needed to fetch git repos", hint=INSTALL_HINT)
    return exe


def run_git(args: Sequence[str], *, cwd: Path | None = None, timeout: float = 300.0, what: str = "git") -> str:
    """Run ``git ARGS`` and return its stdout; RenderError naming ``what`` on any failure."""
    # ext:: runs arbitrary commands; never allow it, whatever the user's git config says.
    argv = [find_git(), "-c", "protocol.ext.allow=never", *args]
    try:
        # A session of its own, so a timeout ends git's helpers too (git-remote-http holds the pipes open).
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=_env(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
    except OSError as e:
        raise RenderError(f"{what}: cannot run git: {e}", hint=INSTALL_HINT) from e
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired as e:
        _kill_group(proc)
        raise RenderError(
            f"{what}: git {args[0]} did not finish within {timeout:.0f}s",
            hint="check the network and the repo URL, or use a cached copy with --offline",
        ) from e
    except BaseException:
        _kill_group(proc)  # Ctrl-C: no git left running behind us
        raise
    if proc.returncode != 0:
        tail = [line for line in stderr.strip().splitlines() if line.strip()][-6:]
        raise RenderError(
            f"{what}: git {args[0]} failed (exit code {proc.returncode})",
            details=tail,
            hint="check the repo URL and ref in the KfDef, and that git can reach it without a prompt",
        )
    return stdout


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(OSError):  # already gone
        os.killpg(proc.pid, signal.SIGKILL)
    proc.communicate()


def fetch_tree(url: str, ref: str, dest: Path, *, what: str, timeout: float = 300.0) -> str:
    """Check out ``ref`` (tag, branch, full or short commit) of ``url`` as a plain tree at ``dest``.

    ``dest`` must not exist; afterwards it holds the files of the commit and no ``.git``. Returns the
    full commit hash. A shallow fetch of the ref is tried first; a short commit hash (which a server cannot
    be asked for) falls back to fetching every branch and tag.
    """
    if ref.startswith("-"):
        raise RenderError(f"{what}: ref {ref!r} may not start with '-'")
    dest.mkdir(parents=True)
    run_git(["init", "--quiet", "--", str(dest)], timeout=timeout, what=what)
    try:
        run_git(["fetch", "--quiet", "--depth", "1", "--no-tags", "--", url, ref], cwd=dest, timeout=timeout, what=what)
        target = "FETCH_HEAD"
    except RenderError:
        if not _SHORT_SHA.match(ref) and not _FULL_SHA.match(ref):
            raise
        run_git(
            [
                "fetch",
                "--quiet",
                "--no-tags",
                "--",
                url,
                "+refs/heads/*:refs/remotes/origin/*",
                "+refs/tags/*:refs/tags/*",
            ],
            cwd=dest,
            timeout=timeout,
            what=what,
        )
        target = ref
    commit = run_git(["rev-parse", "--verify", "--end-of-options", f"{target}^{{commit}}"], cwd=dest, what=what).strip()
    if not _FULL_SHA.match(commit):
        raise RenderError(f"{what}: ref {ref!r} did not resolve to a commit (got {commit!r})")
    if _SHORT_SHA.match(ref) and not commit.startswith(ref):
        raise RenderError(f"{what}: commit {ref} was not found (the fetched ref is {commit})")
    run_git(["-c", "advice.detachedHead=false", "checkout", "--quiet", "--detach", commit], cwd=dest, what=what)
    shutil.rmtree(dest / ".git")
    return commit


def is_full_commit(ref: str) -> bool:
    return bool(_FULL_SHA.match(ref))
