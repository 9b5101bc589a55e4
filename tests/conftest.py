"""Shared fixtures: the bundled rules built once per session, and helpers to write tiny rule sets."""

from __future__ import annotations

import struct
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RULES = REPO / "rules"
SHARED = REPO.parent / "shared"


def write_rules(folder: Path, files: dict[str, str]) -> Path:
    """Write rule documents (dedented) into ``folder`` and return it."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return folder


def rule_doc(
    body: str,
    *,
    id: str = "sample",
    layers: str = '["2-Application"]',
    topics: str = "[api]",
    extra: str = "",
) -> str:
    """A minimal valid rule document around ``body``."""
    return (
        f"---\nid: {id}\ntitle: Sample {id}\nlayers: {layers}\ntopics: {topics}\n"
        f"authoritative_for: [api]\nwhen_to_apply: [adding an endpoint]\nexamples: [Add an endpoint, Change an endpoint]\n"
        f"{extra}---\n\n# Sample\n\n{textwrap.dedent(body).strip()}\n"
    )


def relayout(data: bytearray, old_length: int, manifest: bytes) -> bytearray:
    """Swap in a new manifest and move the data region to its aligned start, as the writer would."""
    from ruledex.reader import format as fmt

    align = lambda n: (n + fmt.ALIGN - 1) // fmt.ALIGN * fmt.ALIGN  # noqa: E731
    region = data[align(24 + old_length) :]
    head = bytearray(data[:24] + manifest)
    struct.pack_into("<Q", head, 16, len(manifest))
    return head + b"\0" * (align(len(head)) - len(head)) + region


@pytest.fixture(scope="session")
def bundled_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled rules built into a temporary index file (built once per test session)."""
    from ruledex.builder.build import build

    out = tmp_path_factory.mktemp("bundled") / "bundled.ruledex"
    build(RULES, out)
    return out


@pytest.fixture(scope="session")
def index(bundled_index: Path):
    """The bundled index, opened."""
    from ruledex.reader.index import Index

    with Index(bundled_index) as opened:
        yield opened
