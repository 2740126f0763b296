"""oh-my-pi's content-addressed blob store, read lazily.

omp externalises large base64 images to `~/.omp/agent/blobs/<sha256>` and leaves the
string `blob:sha256:<hex>` in the session line.  Listing and context building never
need the bytes, so seance resolves a reference only when something asks for the image.
The blobs of a session are beside its sessions root (omp's `getBlobsDir`: the same agent
data dir): `~/.omp/profiles/<name>/agent/blobs` for a profile's, `$XDG_DATA_HOME/omp/blobs`
under XDG (`BlobStore.for_session`).
"""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path
from typing import Any

from .safeopen import read_regular

BLOB_PREFIX = "blob:sha256:"
BLOB_LIMIT = 256 << 20  # an image the model APIs take is a few MB; read whole, so bounded
_HEX = re.compile(r"^[a-f0-9]{64}$")  # also the path-traversal guard


def default_blob_dir() -> Path:
    agent = os.environ.get("PI_CODING_AGENT_DIR")
    return Path(agent).expanduser() / "blobs" if agent else Path.home() / ".omp" / "agent" / "blobs"


def is_blob_ref(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(BLOB_PREFIX)


class BlobStore:
    """Reads blobs by reference; a missing or invalid reference resolves to None."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or default_blob_dir()

    @classmethod
    def for_session(cls, path: str | os.PathLike[str]) -> BlobStore:
        """The store a session's references are in: `blobs` beside the nearest `sessions`
        folder above the file (a bucket's, or a subagent's deeper in a session's folder)
        when there is one, else the default store."""
        for folder in Path(os.path.abspath(path)).parents:
            if folder.name == "sessions" and (folder.parent / "blobs").is_dir():
                return cls(folder.parent / "blobs")
        return cls()

    def path_of(self, ref: str) -> Path | None:
        digest = ref[len(BLOB_PREFIX) :] if is_blob_ref(ref) else ""
        return self.root / digest if _HEX.match(digest) else None

    def read(self, ref: str) -> bytes | None:
        path = self.path_of(ref)
        if path is None:
            return None
        try:
            return read_regular(path, BLOB_LIMIT)  # (a FIFO there never blocks a preview)
        except OSError:
            return None

    def image_base64(self, block: dict[str, Any]) -> str | None:
        """The base64 data of an image content block, resolving a blob reference if needed."""
        data = block.get("data")
        if not isinstance(data, str) or not is_blob_ref(data):
            return data if isinstance(data, str) else None
        raw = self.read(data)
        return base64.b64encode(raw).decode("ascii") if raw is not None else None
