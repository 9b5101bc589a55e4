"""Which code made an index: a fingerprint of the reader's and builder's Python sources.

A release's version number says it, but every development commit shares one: ``build --previous``
reuses a file's records only when the code that parsed them is the same, so that an incremental
build stays byte-identical to a full one, and the benchmark checks that its code did not change
mid-run. Light on purpose (no builder dependencies).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[1]
"""The folder holding ``reader/`` and ``builder/``: the repository in a development install, the
installed ``ruledex`` package otherwise."""


def code_fingerprint(root: Path = PACKAGE_ROOT) -> str:
    """sha256 (16 hex digits) over ``reader/`` and ``builder/`` sources under ``root``, paths included."""
    digest = hashlib.sha256()
    for folder in ("reader", "builder"):
        for path in sorted((root / folder).rglob("*.py")):
            digest.update(path.relative_to(root).as_posix().encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
