"""A rule's example tasks teach retrieval, without making ``check --examples`` pass by construction."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from ruledex.builder.build import build
from ruledex.builder.check import check
from ruledex.reader import format as fmt
from ruledex.reader import query
from ruledex.reader.errors import ArtifactError
from ruledex.reader.features import EXAMPLE_SHARE
from ruledex.reader.index import Index
from ruledex.reader.query import query_directives
from ruledex.reader.rank import DECLARED_WEIGHTS

from .conftest import relayout, write_rules

PRICING = """\
---
id: pricing
title: Prices and money
layers: ["3-Domain"]
topics: [architecture]
authoritative_for: [architecture]
when_to_apply: [computing prices or totals]
examples: [Give members a loyalty reward after two years, Show totals in the customer's currency]
---

# Prices and money

## Amounts

- [MUST] Store amounts as integer minor units with their currency code; never as floats.
- [SHOULD] Round once, at the end of a calculation, with banker's rounding.
- [MAY] Grant a member reward as a discount line, never by editing the price.
"""

STYLE = """\
---
id: style
title: Code style
layers: ["*"]
topics: [quality]
authoritative_for: [quality]
when_to_apply: [writing or reviewing code]
examples: [Tidy up the helpers module]
---

# Code style

## Naming

- [MUST] Name functions after what they return or do; avoid abbreviations.
- [SHOULD] Keep functions under forty lines.
"""

TASK = "Give members a loyalty reward after two years"


@pytest.fixture(scope="module")
def example_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rules = write_rules(tmp_path_factory.mktemp("rules"), {"pricing.md": PRICING, "style.md": STYLE})
    out = tmp_path_factory.mktemp("index") / "examples.ruledex"
    build(rules, out)
    return out


def _when_to_apply(answer: dict, rule_id: str) -> float:
    rows = [r for r in answer["diagnostics"]["scores"] if r["id"].startswith(f"{rule_id}#")]
    assert rows, f"no {rule_id} directive ranked"
    return rows[0]["whenToApply"]


def test_a_task_worded_like_an_example_matches_its_rule(example_index: Path) -> None:
    with Index(example_index) as index:
        assert index.manifest["counts"]["examples"] == 3 and len(index.example_rule) == 3
        answer = query_directives(index, TASK, options={"includeDiagnostics": True})
        # the pricing rule's directives share no word with the task; its example is the task
        assert answer["citations"][0]["id"].startswith("pricing#")
        full = DECLARED_WEIGHTS.when_to_apply  # these rules declare their topics
        assert _when_to_apply(answer, "pricing") == pytest.approx(full, abs=1e-3)  # the task is the example
        with index.leaving_out_example(index.example_row(0, 0)):
            left_out = query_directives(index, TASK, options={"includeDiagnostics": True})
        assert _when_to_apply(left_out, "pricing") < EXAMPLE_SHARE * full - 1
        # and the index is as it was afterwards
        again = query_directives(index, TASK, options={"includeDiagnostics": True})
        assert (again["context_block"], again["diagnostics"]["scores"]) == (
            answer["context_block"],
            answer["diagnostics"]["scores"],
        )


def test_example_rows_are_found_per_rule(example_index: Path) -> None:
    with Index(example_index) as index:
        assert [index.example_row(0, k) for k in range(3)] == [0, 1, None]
        assert [index.example_row(1, k) for k in range(2)] == [2, None]


def test_check_examples_asks_each_example_without_itself(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The index matches examples, so ``check --examples`` would pass by construction if an example counted
    for itself: each one is asked with its own row left out (and the test above shows that removes it)."""
    rules = write_rules(tmp_path / "rules", {"pricing.md": PRICING, "style.md": STYLE})
    asked: list[tuple[str, str | None]] = []
    real = query.query_directives

    def spy(index: Index, task: str, *args: object, **kwargs: object) -> dict:
        row = index.left_out_example
        left_out = None
        if row is not None:
            rule = int(index.example_rule[row])
            left_out = index.rule(rule).examples[row - index.example_row(rule, 0)]
        asked.append((task, left_out))
        return real(index, task, *args, **kwargs)

    monkeypatch.setattr(query, "query_directives", spy)
    findings = check(rules, examples=True)
    examples = ["Give members a loyalty reward after two years", "Show totals in the customer's currency"]
    assert asked == [(task, task) for task in [*examples, "Tidy up the helpers module"]]
    assert not [f for f in findings if f.code == "example-miss" and f.path == "pricing.md"]


def _as_format_1_2(src: Path, dst: Path, drop: tuple[str, ...] = ("example_vectors", "example_rule")) -> None:
    """The file as a 1.2 writer would have made it: no example sections, minor version 2."""
    data = bytearray(src.read_bytes())
    (length,) = struct.unpack_from("<Q", data, 16)
    manifest = json.loads(data[24 : 24 + length])
    for name in drop:
        del manifest["sections"][name]
    manifest["format_version"] = [1, 2]
    raw = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    data = relayout(data, length, raw)
    struct.pack_into("<H", data, 10, 2)  # minor version 2
    dst.write_bytes(bytes(data))


def test_an_index_built_before_examples_were_stored_still_answers(example_index: Path, tmp_path: Path) -> None:
    """A pinned 1.2 index keeps working after an upgrade: it simply has no example tasks to match."""
    old = tmp_path / "old.ruledex"
    _as_format_1_2(example_index, old)
    with Index(old) as index:
        assert index.manifest["format_version"] == [1, 2]
        assert len(index.example_rule) == 0 and index.example_row(0, 0) is None
        answer = query_directives(index, TASK, options={"includeDiagnostics": True})
        assert _when_to_apply(answer, "pricing") < EXAMPLE_SHARE * DECLARED_WEIGHTS.when_to_apply - 1
    assert fmt.check_sections(old) == [1, 2]


def test_a_current_index_without_its_example_sections_is_refused(example_index: Path, tmp_path: Path) -> None:
    bad = tmp_path / "bad.ruledex"
    _as_format_1_2(example_index, bad, drop=("example_rule",))
    data = bytearray(bad.read_bytes())
    (length,) = struct.unpack_from("<Q", data, 16)
    manifest = json.loads(data[24 : 24 + length])
    manifest["format_version"] = list(fmt.FORMAT_VERSION)
    # keep the length: the same number of characters in the version field
    raw = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    assert len(raw) == length
    data[24 : 24 + length] = raw
    struct.pack_into("<H", data, 10, fmt.FORMAT_VERSION[1])
    bad.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match=r"\[example_rule\]: required section missing"):
        Index(bad)
