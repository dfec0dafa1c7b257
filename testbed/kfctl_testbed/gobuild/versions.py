"""The version pins: e2e/versions.env, read as data (KEY=VALUE lines; never sourced, never expanded).

The file and the wrapper modules stay beside the e2e tests (e2e/versions.env, e2e/gobuild/<wrapper>): the
wrappers' go.mod files name those paths in their comments and must stay byte-identical, and manifests/gen-crds
and e2e/gen-gitops-crds read them there too. This module only reads; it never writes the file.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from kfctl_testbed.gobuild.errors import PinError

REPO = Path(__file__).resolve().parents[3]
E2E = REPO / "e2e"
VERSIONS_FILE = E2E / "versions.env"
GOBUILD = E2E / "gobuild"

_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def parse_versions(text: str) -> dict[str, str]:
    """KEY=VALUE lines, the last one of a key winning (as `sed | tail -n1` did); comments and other lines ignored."""
    versions: dict[str, str] = {}
    for line in text.splitlines():
        m = _LINE.match(line.strip())
        if m:
            versions[m.group(1)] = m.group(2).strip()
    return versions


def read_versions(path: Path = VERSIONS_FILE) -> dict[str, str]:
    return parse_versions(path.read_text())


@dataclass(frozen=True)
class Versions:
    """The pins of one versions.env; `get` fails naming the file and the key, as the build must not guess."""

    values: Mapping[str, str]
    path: Path = VERSIONS_FILE

    @classmethod
    def load(cls, path: Path = VERSIONS_FILE) -> Versions:
        return cls(read_versions(path) if path.is_file() else {}, path)

    def get(self, key: str) -> str:
        value = self.values.get(key, "")
        if not value:
            raise PinError(f"{self.path} has no {key}")
        return value

    def others(self, version_key: str) -> tuple[str, ...]:
        """Other releases to build beside `<X>_VERSION`: `<X>_OTHER_VERSIONS`, comma-separated, may be absent."""
        text = self.values.get(version_key.removesuffix("_VERSION") + "_OTHER_VERSIONS", "")
        return tuple(v for v in re.split(r"[\s,]+", text) if v)
