"""Copy an archive from a local path or an http(s) URL into a file, hashing it on the way.

Only http and https are spoken (redirects to other schemes are refused by urllib), every read is
time-limited and the size is capped. This module writes only the one file it is given and never
extracts, trusts or interprets the bytes: the caller compares the digest first.
"""

from __future__ import annotations

import hashlib
import urllib.error
import urllib.request
from pathlib import Path

from kfctl import __version__
from kfctl.errors import ConfigError, FetchError

MAX_DOWNLOAD = 512 * 1024 * 1024
_CHUNK = 1 << 16


def fetch_archive(
    location: str, dest: Path, *, local: bool, what: str, timeout: float = 60.0, max_bytes: int = MAX_DOWNLOAD
) -> str:
    """Write the archive at ``location`` to ``dest``; return its sha256 (hex)."""
    digest = hashlib.sha256()
    size = 0
    try:
        if local:
            src_path = Path(location)
            if not src_path.is_file():
                raise FetchError(f"{what}: archive {src_path} does not exist", not_found=True)
            with src_path.open("rb") as src, dest.open("wb") as out:
                while chunk := src.read(_CHUNK):
                    size += len(chunk)
                    digest.update(chunk)
                    out.write(chunk)
            return digest.hexdigest()
        request = urllib.request.Request(location, headers={"User-Agent": f"kfctl/{__version__}"})  # noqa: S310
        # An opener per call reads the proxy environment now, not when the process first fetched something.
        opener = urllib.request.build_opener()
        with opener.open(request, timeout=timeout) as response, dest.open("wb") as out:
            while chunk := response.read(_CHUNK):
                size += len(chunk)
                if size > max_bytes:
                    raise ConfigError(
                        f"{what}: download is larger than {max_bytes // (1024 * 1024)} MiB",
                        hint="point the uri at an archive of the manifests only",
                    )
                digest.update(chunk)
                out.write(chunk)
    except urllib.error.HTTPError as e:
        raise FetchError(
            f"{what}: download failed: HTTP {e.code} {e.reason}",
            hint="check the uri in the KfDef; a private URL needs to be reachable without credentials",
            not_found=e.code in (404, 410),
        ) from e
    except urllib.error.URLError as e:
        raise FetchError(
            f"{what}: download failed: {e.reason}",
            hint="check the network and the uri, or generate with --offline from a filled cache",
        ) from e
    except TimeoutError as e:
        raise FetchError(
            f"{what}: download timed out after {timeout:.0f}s", hint="check the network and the uri"
        ) from e
    except OSError as e:
        raise FetchError(f"{what}: download failed: {e}") from e
    return digest.hexdigest()
