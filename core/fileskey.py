"""`files_key`: every file found, with its stat, as one 32-byte value.

A stored answer (`Index.listing`, `Index.stored_listing`) is valid only for exactly the files
it was made from: this key.  Its own module, light (no SQLite), because the CLI's forked
discovery child makes it right after its scan (`discovery.Pending.head`): a query whose
answer is stored then never decodes 100,000 files' stats to learn that nothing changed.
"""

from __future__ import annotations

from typing import Any

_FILE_KEY = "%s\0%d\0%d".__mod__  # NUL cannot be in a path: distinct file lists, distinct keys
_KEY_SLICE = 4096


def files_key(infos: list) -> bytes:
    """Every file's path and stat, in order, as one value: what a stored listing is valid for.
    A BLAKE2b-256 of them (`_key_digest`), made in slices: the list itself is 17 MB at
    100,000 files, and was held, bound (copied) and compared whole on every listing."""
    digest = _key_digest()
    for start in range(0, len(infos), _KEY_SLICE):
        # (a file name need not be UTF-8: surrogate-escaped, as the index stores paths)
        digest.update("\0".join(map(_FILE_KEY, infos[start : start + _KEY_SLICE])).encode("utf-8", "surrogateescape"))
        digest.update(b"\0")
    return digest.digest()


def _key_digest() -> Any:
    """A new BLAKE2b-256 (a listing's key): from `_blake2` when the interpreter has it, as
    CPython does, so the CLI does not load OpenSSL (`hashlib` imports `_hashlib`: 3 ms of a
    warm `ls`, more than hashing 10,000 files' stats takes)."""
    try:
        from _blake2 import blake2b
    except ImportError:  # an interpreter without it: hashlib's, wherever it comes from
        from hashlib import blake2b
    return blake2b(digest_size=32)
