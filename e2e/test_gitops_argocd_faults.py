"""Faults of a git repository holding only a KfDef and its lock, deployed by Argo CD's real controller through
kfctl's Config Management Plugin (docs/gitops.md, "A repository holding only a KfDef"; issue 49's faults).

The KfDef is part of upstream's v1.11.0 release (`kfctl init --upstream v1.11.0`, keeping the applications of
APPS), whose archive kfctl fetches and pins in kfdef.lock. The release is served on 127.0.0.1 by the session's
mirror (full_platform_support.served_files); the plugin reaches it through the Application's
`spec.source.plugin.env` entry KFCTL_MIRRORS, as docs/gitops.md says, not through the KfDef. Argo CD's
application controller, repo-server, argocd-cmp-server (at debug level: it logs each plugin command's duration)
and Redis run as processes (kfctl_testbed.argocd), on a cluster of the module's own.

1. kfdef.yaml and kfdef.lock alone sync Synced and Healthy: exactly the objects a local `kfctl generate --stdout`
   renders; the plugin's generate fetched the release archive once (the file server's log, kfctl's own
   "Fetched:"). A second render of the commit (Argo CD's hard refresh) fetches nothing: the plugin's cache holds
   the archive under the digest kfdef.lock pins, and the application's build (the cmp-server's log gives both
   durations).
2. Redis stopped (by its recorded pid) right after a commit that adds an application, for longer than the
   controller's resync period and until Argo CD has said it cannot reach it, then started again: the
   Application still reaches Synced and Healthy at the commit, with the added application's objects.
3. A render past the application controller's deadline (`--repo-server-timeout-seconds` at DEADLINE while the
   mirror holds the release archive unanswered, the plugin's cache emptied) is stopped by argocd-cmp-server,
   SIGKILL to kfctl: the ComparisonError says so (STOPPED), and the killed fetch's partial download is left in the
   cache volume. With the deadline back at Argo CD's default and the mirror answering, a hard refresh renders
   the same commit again, fetching into the cache, and the Application is Synced and Healthy again; that fetch
   removed the partial downloads (kfctl.fsutil.sweep_abandoned).
4. A commit whose kfdef.lock pins another sha256 fails the render: the ComparisonError carries kfctl's message
   (the repo, the expected and actual digests, the lock file), no sync follows, every object stays.
"""

from __future__ import annotations

import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from full_platform_support import served_files
from gitops_support import Key, key_of, run_kfctl
from harness import Cluster
from kfctl_testbed import argocd as argocd_support
from kfctl_testbed import fileserver, kube_rest, upstream_mirror
from kfctl_testbed import flux as flux_support
from kfctl_testbed.argocd import APPLICATIONS, ArgoCD
from kfctl_testbed.flux import Repo
from test_gitops_argocd import managed_keys
from test_gitops_argocd_plugin import live_objects

from kfctl import yamlio
from kfctl.fsutil import LOCK_GRACE

pytestmark = pytest.mark.e2e

NAME = "faults"  # the KfDef's name (kfctl init names it after its directory), so the Application's
APP_PATH = f"clusters/{NAME}"
# Lines of upstream's example/kustomization.yaml: the first commit's application, and the one a later commit adds.
APPS = ("common/kubeflow-namespace/base", "common/kubeflow-roles/base")
ARCHIVE = f"/{upstream_mirror.RELEASE_ARCHIVES}v1.11.0.tar.gz"  # what the file server serves kfctl
RESYNC = 20  # seconds between two comparisons of the Application with git (run_argocd's --app-resync)


@dataclass
class Platform:
    repo: Repo
    files: fileserver.FileServer  # the mirror's, serving the release archive
    flags: list[str]  # --mirror flags for a local kfctl
    init: str  # the KfDef `kfctl init --upstream` wrote
    cluster: Cluster
    api: kube_rest.Client
    argocd: ArgoCD
    commit: str  # the last commit Argo CD synced
    fetches: int  # the archive's requests while Argo CD made the first render (the plugin's)
    sync_seconds: float  # apply of the Application to Synced and Healthy

    @property
    def kfdef(self) -> Path:
        return self.repo.work / APP_PATH / "kfdef.yaml"

    def application(self) -> dict[str, Any]:
        return self.api.get(f"{APPLICATIONS}/{NAME}") or {}

    def archive_requests(self) -> int:
        return self.files.requests.count(ARCHIVE)


def keep_applications(kfdef_path: Path, paths: tuple[str, ...], init: str) -> None:
    """The KfDef `kfctl init` wrote (``init``) keeping the applications of these example lines, without
    spec.mirrors (the plugin's env gives the mirror)."""
    kfdef = yaml.safe_load(init)
    apps = kfdef["spec"]["applications"]
    kfdef["spec"]["applications"] = [a for a in apps if a["kustomizeConfig"]["repoRef"]["path"] in paths]
    assert len(kfdef["spec"]["applications"]) == len(paths), [a["name"] for a in apps]
    kfdef["spec"].pop("mirrors", None)
    kfdef_path.write_text(yaml.safe_dump(kfdef, sort_keys=False))


def local_render(platform_kfdef: Path, root: Path, flags: list[str]) -> dict[Key, dict[str, Any]]:
    """The oracle: `kfctl generate --stdout` of a copy of the KfDef and lock, outside the working copy."""
    local = root / f"local-{time.monotonic_ns()}"
    local.mkdir()
    for name in ("kfdef.yaml", "kfdef.lock"):
        (local / name).write_text((platform_kfdef.parent / name).read_text())
    out = run_kfctl("generate", str(local), "--stdout", *flags).stdout
    return {key_of(o): o for o in yamlio.safe_load_all(out) if o}


@pytest.fixture(scope="module")
def platform(
    module_cluster: Cluster, tmp_path_factory: pytest.TempPathFactory, release_mirror: upstream_mirror.Mirror
) -> Iterator[Platform]:
    argocd_support.require_argocd()
    root = tmp_path_factory.mktemp("argocd-faults")
    kubeconfig = module_cluster.kubeconfig
    with served_files(release_mirror) as (flags, files), flux_support.served_repo(root) as repo:
        app_dir = repo.work / APP_PATH
        app_dir.parent.mkdir(parents=True)
        run_kfctl("init", str(app_dir), "--upstream", "v1.11.0", *flags)
        init = (app_dir / "kfdef.yaml").read_text()
        keep_applications(app_dir / "kfdef.yaml", APPS[:1], init)
        run_kfctl("generate", str(app_dir), *flags)  # writes kfdef.lock
        commit = repo.commit_and_push("the KfDef and its lock", f"{APP_PATH}/kfdef.yaml", f"{APP_PATH}/kfdef.lock")
        export = root / "export"
        run_kfctl(
            "export", str(app_dir), "--format", "argocd-plugin", "--repo-url", repo.url, "--path", APP_PATH,
            "--plugin-image", "unused.invalid/kfctl:e2e", "--output-dir", str(export),
        )  # fmt: skip
        application = yaml.safe_load((export / f"application-{NAME}.yaml").read_text())
        mirrors = " ".join(flags[1::2])  # PREFIX=LOCATION of each --mirror
        application["spec"]["source"]["plugin"]["env"] = [{"name": "KFCTL_MIRRORS", "value": mirrors}]
        plugin = argocd_support.plugin_config_dir(export, root / "plugin-config")
        argocd_support.install(kubeconfig)
        flux_support.kubectl(
            kubeconfig, "apply", "--server-side", "--field-manager=kfctl", "-f", str(export / "argocd-cm.yaml")
        )
        api = kube_rest.Client(kubeconfig)
        before = files.requests.count(ARCHIVE)
        with argocd_support.run_argocd(
            kubeconfig, root / "argocd", resync=RESYNC, plugin_config=plugin, plugin_loglevel="debug"
        ) as argocd:
            start = time.monotonic()
            flux_support.kubectl(kubeconfig, "apply", "-f", "-", stdin=yaml.safe_dump(application))
            argocd_support.wait_all(api, [NAME], timeout=600, argocd=argocd, revision=commit)
            seconds = time.monotonic() - start
            fetches = files.requests.count(ARCHIVE) - before
            yield Platform(repo, files, flags, init, module_cluster, api, argocd, commit, fetches, seconds)
            sockets = argocd.non_loopback_sockets()
            assert set(sockets) <= {argocd_support.ALL_INTERFACES_LISTENER}, sockets
        api.close()


def generates(argocd: ArgoCD) -> list[argocd_support.PluginCommand]:
    return [
        c for c in argocd_support.plugin_commands(argocd.logs["argocd-cmp-server"]) if "kfctl generate" in c.command
    ]


def test_kfdef_and_lock_sync_and_a_second_render_comes_from_the_plugins_cache(
    platform: Platform, tmp_path: Path
) -> None:
    rendered = local_render(platform.kfdef, tmp_path, platform.flags)
    assert managed_keys(platform.application()) == set(rendered)
    before = generates(platform.argocd)  # one, unless the sync's own comparison rendered the commit again
    cold = before[0]
    assert platform.fetches == 1 and "Fetched: manifests" in cold.stderr, (platform.fetches, cold)
    print(f"\nSynced and Healthy {platform.sync_seconds:.1f} s after apply; generate, cold cache: {cold.seconds} s")
    requests = platform.archive_requests()
    hard_refresh(platform)  # the same commit rendered again by the plugin, not read from Argo CD's cache
    argocd_support.wait_for(
        lambda: generates(platform.argocd)[len(before) :] != [] and generates(platform.argocd)[-1].seconds is not None,
        api=platform.api,
        argocd=platform.argocd,
        timeout=240,
        what="the plugin to render the commit again",
    )
    warm = generates(platform.argocd)[len(before)]
    print(f"generate again, warm cache: {warm.seconds} s; kfctl said: {warm.stderr!r}")
    assert platform.archive_requests() == requests and "Fetched" not in warm.stderr, warm  # nothing fetched
    lock = yaml.safe_load((platform.kfdef.parent / "kfdef.lock").read_text())
    [repo] = [r for r in lock["repos"] if r["kind"] == "archive"]
    cache = Path(platform.argocd.state.state_dir) / "kfctl-cache"
    print(f"plugin cache {cache}: {sorted(str(p.relative_to(cache)) for p in cache.glob('*/*'))}")
    assert (cache / "repos" / f"{repo['name']}-{repo['sha256'][:16]}").is_dir(), list(cache.rglob("*"))[:20]
    assert list((cache / "render").iterdir()), "no render cache entry"


def redis_unreachable(argocd: ArgoCD) -> str:
    """The first line of the controller's or repo-server's log that says Redis's port refused a connection."""
    port = argocd.state.ports["redis"]
    for name in ("argocd-application-controller", "argocd-repo-server"):
        for line in argocd.logs[name].read_text().splitlines():
            if f"127.0.0.1:{port}" in line and "refused" in line:
                return line
    return ""


def test_redis_restarted_after_a_commit_argocd_still_syncs_it(platform: Platform, tmp_path: Path) -> None:
    assert not redis_unreachable(platform.argocd)
    keep_applications(platform.kfdef, APPS, platform.init)
    platform.commit = platform.repo.commit_and_push(
        "add kubeflow-roles", f"{APP_PATH}/kfdef.yaml", f"{APP_PATH}/kfdef.lock"
    )
    pid = platform.argocd.stop("redis-server")
    down = time.monotonic()
    seen = [""]

    def missed() -> bool:
        """Down for a whole resync period (the controller compares the Application with the new commit in it)
        and Argo CD has said it cannot reach Redis."""
        seen[0] = redis_unreachable(platform.argocd)
        return bool(seen[0]) and time.monotonic() - down > RESYNC + 5

    argocd_support.wait_for(missed, api=platform.api, argocd=platform.argocd, timeout=120, what="Argo CD to miss Redis")
    meanwhile = argocd_support.summary(platform.application())
    new_pid = platform.argocd.start("redis-server")
    print(
        f"\nredis-server pid {pid} down {time.monotonic() - down:.1f} s, now pid {new_pid}; Argo CD said:\n"
        f"  {seen[0][:300]}\n  the Application meanwhile: {meanwhile[:600]}"
    )
    start = time.monotonic()
    found = argocd_support.wait_all(platform.api, [NAME], timeout=300, argocd=platform.argocd, revision=platform.commit)
    print(f"Synced and Healthy at {platform.commit[:8]} {time.monotonic() - start:.1f} s after Redis came back")
    rendered = local_render(platform.kfdef, tmp_path, platform.flags)
    assert managed_keys(found[NAME]) == set(rendered)
    assert live_objects(platform.cluster.kubeconfig, list(rendered.values())).keys() == rendered.keys()


CONTROLLER = "argocd-application-controller"
DEADLINE = 10  # seconds: the controller's --repo-server-timeout-seconds while the mirror holds the archive
# What a render stopped at the deadline reads as (docs/gitops.md, "Timeouts"): the plugin's command killed, or ended
# by kfctl itself on SIGTERM (exit 143), or the call canceled while the repo-server waited for it; later attempts
# answer with the cached failure.
STOPPED = (
    r"failed signal: (killed|terminated)|failed exit status 143|desc = context canceled"
    r"|generate manifest metadata to cmp-server: EOF"
)


def leftovers(cache: Path) -> list[str]:
    """The temporary directories of fetches in the plugin's cache volume (kfctl.fsutil.filling)."""
    return sorted(p.name for p in (cache / "repos").glob(".tmp-*")) if (cache / "repos").is_dir() else []


def test_a_render_past_the_controllers_deadline_is_stopped_and_the_next_in_time_syncs(
    platform: Platform, tmp_path: Path
) -> None:
    cache = Path(platform.argocd.state.state_dir) / "kfctl-cache"
    platform.argocd.stop(CONTROLLER)
    platform.argocd.start(CONTROLLER, "--repo-server-timeout-seconds", str(DEADLINE))
    try:
        cache.rename(tmp_path / "kfctl-cache-before")  # the plugin's cache volume emptied: a cold render
        cache.mkdir()
        requests = platform.archive_requests()
        with platform.files.stalling(ARCHIVE):  # a render that cannot end before the deadline, on any machine
            hard_refresh(platform)
            message = comparison_error(platform, STOPPED)
        # At the deadline argocd-cmp-server sends SIGTERM to kfctl's process group and Go's exec.CommandContext
        # sends SIGKILL to kfctl, from two goroutines: when SIGKILL lands first nothing of kfctl's runs and a
        # partial fetch stays; when SIGTERM lands first kfctl unwinds (kfctl.cli.signals) and removes its own.
        killed = leftovers(cache)
        stalled = platform.archive_requests()
        print(
            f"\nwith the controller's deadline at {DEADLINE} s (archive requests held: {stalled - requests}; "
            f"left by renders SIGKILL stopped: {killed or 'none, SIGTERM came first and kfctl removed its own'}):"
            f"\n  {message}"
        )
        # What a killed render placed whole would spare the next one its fetch: removed, so that it fetches again.
        for placed in (cache / "repos").iterdir() if (cache / "repos").is_dir() else []:
            if not placed.name.startswith(".tmp-"):
                shutil.rmtree(placed)
    finally:  # the later tests need Argo CD's default deadline
        platform.argocd.stop(CONTROLLER)
        platform.argocd.start(CONTROLLER)
    # A temporary directory younger than LOCK_GRACE is left alone, locked or not (its kfctl may not have locked it).
    youngest = max(((cache / "repos" / name).stat().st_mtime for name in leftovers(cache)), default=0.0)
    time.sleep(max(0.0, youngest + LOCK_GRACE - time.time()))
    hard_refresh(platform)  # past the repo-server's cached failure of this commit

    def synced_again() -> bool:
        status = platform.application().get("status") or {}
        conditions = [c for c in status.get("conditions") or [] if c.get("type") == "ComparisonError"]
        sync = status.get("sync") or {}
        healthy = (status.get("health") or {}).get("status") == "Healthy"
        return not conditions and sync.get("status") == "Synced" and sync.get("revision") == platform.commit and healthy

    start = time.monotonic()
    argocd_support.wait_for(
        synced_again, api=platform.api, argocd=platform.argocd, timeout=300, what="Synced again at the same commit"
    )
    print(f"Synced and Healthy again {time.monotonic() - start:.1f} s after the deadline was put back")
    lock = yaml.safe_load((platform.kfdef.parent / "kfdef.lock").read_text())
    [repo] = [r for r in lock["repos"] if r["kind"] == "archive"]
    assert (cache / "repos" / f"{repo['name']}-{repo['sha256'][:16]}").is_dir(), sorted(cache.rglob("*"))[:20]
    assert platform.archive_requests() > stalled  # the render in time fetched into the emptied cache
    assert leftovers(cache) == []  # and its fetch removed what the killed ones left


def comparison_error(platform: Platform, pattern: str) -> str:
    """Poll until the Application's ComparisonError condition matches ``pattern``; its message."""
    message: list[str] = []

    def matches() -> bool:
        conditions = (platform.application().get("status") or {}).get("conditions") or []
        message[:] = [c.get("message", "") for c in conditions if c.get("type") == "ComparisonError"]
        return bool(message) and re.search(pattern, message[0]) is not None

    argocd_support.wait_for(
        matches, api=platform.api, argocd=platform.argocd, timeout=240, what=f"a ComparisonError matching {pattern!r}"
    )
    return message[0]


def hard_refresh(platform: Platform) -> None:
    argocd_support.hard_refresh(platform.cluster.kubeconfig, NAME)


def test_a_lock_pin_that_no_longer_matches_fails_the_render_with_kfctls_message(
    platform: Platform, tmp_path: Path
) -> None:
    rendered = local_render(platform.kfdef, tmp_path, platform.flags)
    lock_path = platform.kfdef.parent / "kfdef.lock"
    lock = yamlio.safe_load(lock_path.read_text())
    [repo] = [r for r in lock["repos"] if r["kind"] == "archive"]
    actual = repo["sha256"]
    repo["sha256"] = "0" * 64
    lock_path.write_text(yaml.safe_dump(lock, sort_keys=False))
    kubeconfig = platform.cluster.kubeconfig
    objects = live_objects(kubeconfig, list(rendered.values()))
    assert objects.keys() == rendered.keys()
    commit = platform.repo.commit_and_push("a lock that no longer matches", f"{APP_PATH}/kfdef.lock")
    hard_refresh(platform)  # the repo-server's cache of what main resolves to lasts 3 min: a webhook's work
    message = comparison_error(platform, "sha256 mismatch")
    print(f"\nArgo CD's condition for commit {commit[:8]}:\n  {message}")
    assert f"sha256 mismatch: expected {'0' * 64} (kfdef.lock), got {actual}" in message, message
    assert "Error (config error)" in message and repo["name"] in message, message
    app = platform.application()
    assert app["status"]["history"][-1]["revision"] == platform.commit  # no sync since the last good commit
    after = live_objects(kubeconfig, list(rendered.values()))
    assert {k: o["metadata"]["uid"] for k, o in after.items()} == {k: o["metadata"]["uid"] for k, o in objects.items()}
