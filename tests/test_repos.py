"""Repos served over HTTP from 127.0.0.1: pinned tarballs render, unsafe or mismatched ones are refused before
anything is written outside the cache, the lock file makes the next generate offline, and --refresh
re-resolves.

Every request goes to a ThreadingHTTPServer on 127.0.0.1 started by the test; nothing leaves the machine.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import threading
import uuid
import zipfile
from collections.abc import Iterator
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from kfctl import yamlio
from kfctl.app.generate import generate
from kfctl.catalog.model import Catalog
from kfctl.config.loader import load_kfdef
from kfctl.errors import ConfigError, RenderError

CONFIGMAP = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  namespace: default
data:
  version: "{version}"
"""
KUSTOMIZATION = "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [configmap.yaml]\n"

KFDEF = """\
apiVersion: kfdef.apps.kubeflow.org/v1
kind: KfDef
metadata:
  name: demo
spec:
  platform: generic
  repos:
    - name: web
      uri: {uri}
{pin}  applications:
    - name: web
      kustomizeConfig:
        repoRef: {{name: web, path: apps/web}}
"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """(directory, base URL) of an HTTP server on 127.0.0.1 serving the directory."""
    root = tmp_path / "www"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)


def member(
    name: str, data: bytes = b"", *, kind: bytes = tarfile.REGTYPE, link: str = ""
) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    info.size = len(data) if kind == tarfile.REGTYPE else 0
    info.mode = 0o644
    return info, data


def good_members(version: str = "1.0", top: str = "manifests-1.0/") -> list[tuple[tarfile.TarInfo, bytes]]:
    return [
        member(f"{top}apps/web/kustomization.yaml", KUSTOMIZATION.encode()),
        member(f"{top}apps/web/configmap.yaml", CONFIGMAP.format(version=version).encode()),
    ]


def make_tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes]]) -> str:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.PAX_FORMAT) as tf:
        for info, data in members:
            tf.addfile(info, io.BytesIO(data) if info.type == tarfile.REGTYPE else None)
    path.write_bytes(buf.getvalue())
    return hashlib.sha256(buf.getvalue()).hexdigest()


def write_kfdef(app: Path, uri: str, sha256: str | None = None) -> Path:
    app.mkdir(parents=True, exist_ok=True)
    path = app / "kfdef.yaml"
    pin = f'      sha256: "{sha256}"\n' if sha256 else ""
    path.write_text(KFDEF.format(uri=uri, pin=pin))
    return path


def rendered_version(app: Path) -> str:
    docs = [d for d in yamlio.safe_load_all((app / "rendered" / "web.yaml").read_text()) if d]
    return str(docs[0]["data"]["version"])


def tree(root: Path) -> dict[str, bytes | str]:
    """Every file and symlink under root (symlinks by target), to prove what was or was not written."""
    out: dict[str, bytes | str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = "-> " + os.readlink(p)
            elif p.is_file():
                out[rel] = p.read_bytes()
    return out


def test_pinned_tarball_over_http_renders_then_generates_offline(
    tmp_path: Path, served: tuple[Path, str], catalog: Catalog
) -> None:
    www, base = served
    sha = make_tar(www / "web.tar.gz", good_members("1.0"))
    app = tmp_path / "demo"
    kfdef_path = write_kfdef(app, f"{base}/web.tar.gz", sha)
    kfdef_text = kfdef_path.read_text()
    result = generate(load_kfdef(kfdef_path, catalog), catalog)
    assert rendered_version(app) == "1.0"
    assert result.fetched == ("web",)
    assert result.warnings == ()  # plain http://, but pinned by the KfDef
    assert result.lock_written
    assert sorted(p.name for p in (app / ".cache" / "repos").iterdir()) == [f"web-{sha[:16]}"]
    # The single top directory of a GitHub-style archive is the repo root; the tree is vendored.
    assert (
        app / ".cache" / "repos" / f"web-{sha[:16]}" / "manifests-1.0" / "apps" / "web" / "configmap.yaml"
    ).is_file()
    assert (app / "vendor" / "repos" / "web" / "apps" / "web" / "configmap.yaml").is_file()
    assert (app / "kfdef.lock").read_text() == (
        "# Written by kfctl generate: what each repo of the KfDef, and each remote base their kustomizations\n"
        "# name, resolved to. Commit it with the KfDef; `kfctl generate --refresh` resolves them again and\n"
        "# rewrites it. Do not edit.\n"
        "apiVersion: kfctl.kubeflow.org/v1alpha1\n"
        "kind: KfDefLock\n"
        "repos:\n"
        "- name: web\n"
        f"  uri: {base}/web.tar.gz\n"
        "  kind: archive\n"
        f"  sha256: {sha}\n"
    )
    (www / "web.tar.gz").unlink()  # the server no longer has it: only the cache can help now
    again = generate(load_kfdef(kfdef_path, catalog), catalog, offline=True)
    assert again.fetched == ()
    assert again.changed == ()
    assert not again.lock_written
    assert kfdef_path.read_text() == kfdef_text  # the KfDef is never rewritten


def test_unpinned_tarball_is_locked_on_first_use_and_refresh_follows_a_change(
    tmp_path: Path, served: tuple[Path, str], catalog: Catalog
) -> None:
    www, base = served
    first = make_tar(www / "web.tgz", good_members("1.0"))
    app = tmp_path / "demo"
    path = write_kfdef(app, f"{base}/web.tgz")
    unpinned = generate(load_kfdef(path, catalog), catalog)
    assert unpinned.warnings == (
        f"repo web: {base}/web.tgz is fetched over plain http:// and the KfDef gives no sha256 for it; anyone on the "
        "way can change it: use https://, or add sha256: (kfdef.lock has the one this fetch got)",
    )
    assert f"sha256: {first}" in (app / "kfdef.lock").read_text()
    second = make_tar(www / "web.tgz", good_members("2.0"))
    shutil_rm_cache(app)
    with pytest.raises(ConfigError) as info:
        generate(load_kfdef(path, catalog), catalog)
    assert info.value.message == (
        f'repo "web" ({base}/web.tgz): sha256 mismatch: expected {first} (kfdef.lock), got {second}'
    )
    assert info.value.hint == (
        "nothing was extracted; if the archive changed on purpose, run `kfctl generate --refresh`"
    )
    assert rendered_version(app) == "1.0"
    result = generate(load_kfdef(path, catalog), catalog, refresh=True)
    assert result.lock_written
    assert rendered_version(app) == "2.0"
    assert f"sha256: {second}" in (app / "kfdef.lock").read_text()


def shutil_rm_cache(app: Path) -> None:
    import shutil

    shutil.rmtree(app / ".cache")


BAD_ARCHIVES = [
    pytest.param(
        [*good_members(), member("manifests-1.0/../../../../escaped.txt", b"pwned")],
        "unsafe archive member 'manifests-1.0/../../../../escaped.txt': '..' component",
        id="dotdot",
    ),
    pytest.param(
        [*good_members(), member("/tmp/kfctl-absolute-{token}.txt", b"pwned")],
        "unsafe archive member '/tmp/kfctl-absolute-{token}.txt': absolute path",
        id="absolute",
    ),
    pytest.param(
        [*good_members(), member("manifests-1.0/apps/web/evil", kind=tarfile.SYMTYPE, link="../../../../../etc")],
        "unsafe archive member 'manifests-1.0/apps/web/evil': symlink '../../../../../etc' points outside the archive",
        id="symlink-relative-escape",
    ),
    pytest.param(
        [*good_members(), member("manifests-1.0/passwd", kind=tarfile.SYMTYPE, link="/etc/passwd")],
        "unsafe archive member 'manifests-1.0/passwd': symlink to absolute path '/etc/passwd'",
        id="symlink-absolute",
    ),
    pytest.param(
        [*good_members(), member("manifests-1.0/link", kind=tarfile.LNKTYPE, link="../outside.txt")],
        "unsafe archive member 'manifests-1.0/link': hard link '../outside.txt' points outside the archive",
        id="hardlink-escape",
    ),
    pytest.param(
        [*good_members(), member("manifests-1.0/null", kind=tarfile.CHRTYPE)],
        "unsafe archive member 'manifests-1.0/null': device entries are not allowed",
        id="device",
    ),
    pytest.param(
        [*good_members(), member("manifests-1.0/pipe", kind=tarfile.FIFOTYPE)],
        "unsafe archive member 'manifests-1.0/pipe': FIFO entries are not allowed",
        id="fifo",
    ),
    pytest.param(
        [*good_members(), member("manifests-1.0/dup.yaml", b"a"), member("manifests-1.0/dup.yaml", b"b")],
        "unsafe archive member 'manifests-1.0/dup.yaml': appears twice",
        id="duplicate",
    ),
    pytest.param(
        # Each symlink stays inside on paper; together they climb out. Caught on disk after creation.
        [
            *good_members(),
            member("manifests-1.0/a/b", kind=tarfile.SYMTYPE, link="."),
            member("manifests-1.0/up", kind=tarfile.SYMTYPE, link="a/b/../.."),
        ],
        "unsafe archive member 'manifests-1.0/up': symlink 'a/b/../..' points outside the tree",
        id="symlink-chain",
    ),
]


@pytest.mark.parametrize(("members", "message"), BAD_ARCHIVES)
def test_unsafe_archives_are_refused_and_nothing_lands_outside_the_cache(
    tmp_path: Path, served: tuple[Path, str], catalog: Catalog, members: list[Any], message: str
) -> None:
    www, base = served
    token = uuid.uuid4().hex
    members = [(_rename(info, token), data) for info, data in members]
    sha = make_tar(www / "web.tar.gz", members)
    app = tmp_path / "demo"
    path = write_kfdef(app, f"{base}/web.tar.gz", sha)
    before = tree(tmp_path)
    with pytest.raises(ConfigError) as info:
        generate(load_kfdef(path, catalog), catalog)
    assert info.value.message == f'repo "web" ({base}/web.tar.gz): ' + message.format(token=token)
    assert info.value.hint == ("nothing was extracted; use an archive whose members all stay inside it, or fix the uri")
    after = tree(tmp_path)
    assert {k: v for k, v in after.items() if not k.startswith("demo/.cache/")} == before
    assert list((app / ".cache" / "repos").iterdir()) == []  # the temp dir went too
    assert not Path(f"/tmp/kfctl-absolute-{token}.txt").exists()
    assert not (tmp_path.parent / "escaped.txt").exists()
    assert not (app / "rendered").exists()


def _rename(info: tarfile.TarInfo, token: str) -> tarfile.TarInfo:
    info.name = info.name.replace("{token}", token)
    return info


def test_wrong_pin_names_expected_and_actual_digests_and_extracts_nothing(
    tmp_path: Path, served: tuple[Path, str], catalog: Catalog
) -> None:
    www, base = served
    actual = make_tar(www / "web.tar.gz", good_members())
    wrong = "0" * 64
    app = tmp_path / "demo"
    path = write_kfdef(app, f"{base}/web.tar.gz", wrong)
    before = tree(tmp_path)
    with pytest.raises(ConfigError) as info:
        generate(load_kfdef(path, catalog), catalog)
    assert info.value.message == (
        f'repo "web" ({base}/web.tar.gz): sha256 mismatch: expected {wrong} '
        f"(spec.repos[].sha256 in the KfDef), got {actual}"
    )
    assert info.value.hint == "nothing was extracted; if the archive changed on purpose, update spec.repos[].sha256"
    assert {k: v for k, v in tree(tmp_path).items() if not k.startswith("demo/.cache/")} == before
    assert list((app / ".cache" / "repos").iterdir()) == []


def test_zip_archives_render_and_unsafe_zips_are_refused(
    tmp_path: Path, served: tuple[Path, str], catalog: Catalog
) -> None:
    www, base = served
    with zipfile.ZipFile(www / "web.zip", "w") as zf:
        zf.writestr("apps/web/kustomization.yaml", KUSTOMIZATION)
        zf.writestr("apps/web/configmap.yaml", CONFIGMAP.format(version="zip"))
    app = tmp_path / "demo"
    generate(load_kfdef(write_kfdef(app, f"{base}/web.zip"), catalog), catalog)
    assert rendered_version(app) == "zip"
    with zipfile.ZipFile(www / "bad.zip", "w") as zf:
        zf.writestr("apps/web/kustomization.yaml", KUSTOMIZATION)
        zf.writestr("../bad.txt", "pwned")
    other = tmp_path / "other"
    with pytest.raises(ConfigError) as info:
        generate(load_kfdef(write_kfdef(other, f"{base}/bad.zip"), catalog), catalog)
    assert info.value.message == f"repo \"web\" ({base}/bad.zip): unsafe archive member '../bad.txt': '..' component"
    assert not (tmp_path / "bad.txt").exists()


def test_size_and_member_limits(tmp_path: Path) -> None:
    from kfctl.repos.archive import Limits, extract

    archive = tmp_path / "a.tar.gz"
    make_tar(archive, [member(f"f{i}", b"x" * 100) for i in range(5)])
    cases = [
        (Limits(max_bytes=450), "archive is too large (more than 450 bytes uncompressed)"),
        (Limits(max_members=4), "archive is too large (more than 4 members)"),
    ]
    for i, (limits, message) in enumerate(cases):
        with pytest.raises(ConfigError) as info:
            extract(archive, tmp_path / f"out{i}", what="t", limits=limits)
        assert info.value.message == f"t: {message}"
    extract(archive, tmp_path / "ok", what="t", limits=Limits(max_bytes=500, max_members=5))
    assert sorted(p.name for p in (tmp_path / "ok").iterdir()) == ["f0", "f1", "f2", "f3", "f4"]


def test_offline_without_a_cache_fails_with_a_hint_and_no_request(
    tmp_path: Path, served: tuple[Path, str], catalog: Catalog
) -> None:
    www, base = served
    sha = make_tar(www / "web.tar.gz", good_members())
    app = tmp_path / "demo"
    path = write_kfdef(app, f"{base}/web.tar.gz")
    with pytest.raises(ConfigError) as info:
        generate(load_kfdef(path, catalog), catalog, offline=True)
    assert info.value.message == (
        f'repo "web" ({base}/web.tar.gz) is not in the lock file, and --offline forbids fetching it'
    )
    assert info.value.hint == (
        "run `kfctl generate` once without --offline (with network) to fill the cache and write the lock file"
    )
    path = write_kfdef(app, f"{base}/web.tar.gz", sha)
    with pytest.raises(ConfigError) as info:
        generate(load_kfdef(path, catalog), catalog, offline=True)
    assert info.value.message == (
        f'repo "web" ({base}/web.tar.gz) is pinned but not in the cache, and --offline forbids fetching it'
    )
    assert not (app / "kfdef.lock").exists()


def test_http_errors_are_render_errors(tmp_path: Path, served: tuple[Path, str], catalog: Catalog) -> None:
    _, base = served
    app = tmp_path / "demo"
    with pytest.raises(RenderError) as info:
        generate(load_kfdef(write_kfdef(app, f"{base}/missing.tar.gz"), catalog), catalog)
    assert info.value.message == f'repo "web" ({base}/missing.tar.gz): download failed: HTTP 404 File not found'


def test_remote_bases_not_pinned_are_all_named_offline_with_file_and_line(tmp_path: Path, catalog: Catalog) -> None:
    repo = tmp_path / "demo" / "upstream"
    (repo / "apps" / "web").mkdir(parents=True)
    (repo / "apps" / "base").mkdir(parents=True)
    (repo / "apps" / "web" / "kustomization.yaml").write_text(
        "resources:\n- ../base\n- https://127.0.0.1:1/crd.yaml\ncomponents:\n- git@127.0.0.1:org/c.git\n"
    )
    (repo / "apps" / "base" / "kustomization.yaml").write_text(
        "resources:\n- github.com/kubeflow/manifests/common/x?ref=v1.10.0\n"
    )
    app = tmp_path / "demo"
    path = write_kfdef(app, "./upstream")
    with pytest.raises(ConfigError) as info:
        generate(load_kfdef(path, catalog), catalog, offline=True)
    assert info.value.message == "--offline, but 3 remote base(s) cannot be had without the network"
    assert info.value.details == [
        'application web: repo "web": apps/base/kustomization.yaml:2: remote base '
        "github.com/kubeflow/manifests/common/x?ref=v1.10.0 is not pinned in kfdef.lock",
        'application web: repo "web": apps/web/kustomization.yaml:3: remote base https://127.0.0.1:1/crd.yaml '
        "is not pinned in kfdef.lock",
        'application web: repo "web": apps/web/kustomization.yaml:5: remote base git@127.0.0.1:org/c.git '
        "is not pinned in kfdef.lock",
    ]
    assert info.value.hint == (
        "run `kfctl generate` once with network (or with a mirror: --mirror PREFIX=LOCATION) to fetch it into "
        ".cache/remote/ and pin it in the lock file"
    )
    assert not (app / "kfdef.lock").exists() and not (app / "rendered").exists()
