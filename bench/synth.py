"""Seeded synthetic rule repositories in ruledex's own format, for benchmarking at 1k-100k directives.

A repository of ``n`` directives is a tree of rule documents ``team-NNN/<topic>-NNNNN.md`` with 15-25
directives each, front matter (layers, topics, authority, when_to_apply, examples), 3-6 sections
and directives of 10-40 words templated from the vocabulary in :mod:`bench.synth_vocab`, some with a
rationale, an anti-pattern, a code example or a per-directive layer. File ``i`` depends only on
``(seed, i)``, so the same seed always gives byte-identical files and a smaller repository is a
prefix of a larger one. Nothing is committed as data: :func:`generate` writes the files on demand.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from ruledex.reader.vocab import TASK_LAYERS

from .synth_vocab import CONNECTIVES, ENTITIES, QUANTIFIERS, RISKS, SYLLABLES, TOPIC_DATA, split

DEFAULT_SEED = 20260707
FILES_PER_TEAM = 40
MIN_PER_FILE, MAX_PER_FILE = 15, 25
SEVERITY_WEIGHTS = (("MUST", 40), ("SHOULD", 45), ("MAY", 15))
TOPIC_NAMES = tuple(TOPIC_DATA)
RELATED: dict[str, tuple[str, ...]] = {
    "security": ("api", "backend", "privacy"),
    "testing": ("quality", "reliability"),
    "performance": ("database", "frontend", "backend"),
    "api": ("backend", "security", "documentation"),
    "database": ("performance", "reliability", "backend"),
    "frontend": ("accessibility", "performance"),
    "backend": ("api", "reliability", "architecture"),
    "devops": ("reliability", "observability", "security"),
    "documentation": ("api", "quality"),
    "accessibility": ("frontend", "quality"),
    "architecture": ("quality", "backend"),
    "quality": ("testing", "architecture"),
    "observability": ("reliability", "devops"),
    "reliability": ("observability", "backend"),
    "privacy": ("security", "database"),
    "git": ("quality", "devops"),
}


@dataclass(frozen=True)
class SynthFile:
    """One generated rule document."""

    path: str
    text: str
    directives: int


@dataclass(frozen=True)
class SynthRepo:
    """What :func:`generate` wrote."""

    root: Path
    files: int
    directives: int
    bytes: int
    seed: int


class _Vocab:
    """Tuples of one topic's vocabulary (split once)."""

    def __init__(self, topic: str) -> None:
        data = TOPIC_DATA[topic]
        self.topic = topic
        self.layers = split(data["layers"])
        self.sections = split(data["sections"])
        self.nouns = split(data["nouns"])
        self.verbs = split(data["verbs"])
        self.places = split(data["places"])
        self.reasons = split(data["reasons"])
        self.techs = split(data["techs"])
        self.situations = split(data["situations"])
        self.tasks = split(data["tasks"])


VOCAB = {topic: _Vocab(topic) for topic in TOPIC_NAMES}


def _cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def service_name(rng: random.Random) -> str:
    """A project-specific service name such as ``ledgerpay`` (the corpus' long tail of rare words)."""
    return "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 3)))


def directive_text(rng: random.Random, v: _Vocab, service: str) -> str:
    """One directive sentence of roughly 10-40 words."""
    c = rng.choice
    noun, noun2, entity = c(v.nouns), c(v.nouns), c(ENTITIES)
    tech = f" with {c(v.techs)}" if rng.random() < 0.4 else ""
    templates = (
        lambda: f"{_cap(c(v.verbs))} {c(QUANTIFIERS)} {noun} {c(v.places)}{tech}, {c(CONNECTIVES)}.",
        lambda: (
            f"Never handle the {noun} of a {entity} {c(v.places)} with {c(RISKS)}; {c(v.verbs)} it through the {service} {noun2} instead."
        ),
        lambda: f"Keep the {noun} for each {entity} {c(v.places)}, because {c(v.reasons)}.",
        lambda: (
            f"When {c(v.situations)}, {c(v.verbs)} the {noun} {c(v.places)} and {c(v.verbs)} the {noun2} of the {entity}."
        ),
        lambda: (
            f"Use {c(v.techs)} to {c(v.verbs)} every {noun} of the {service} service {c(v.places)}, {c(CONNECTIVES)}."
        ),
        lambda: f"{_cap(c(v.verbs))} the {noun} of each {entity} {c(v.places)}{tech}; {c(v.reasons)}.",
    )
    return rng.choice(templates)()


def _directive(rng: random.Random, v: _Vocab, service: str, severity: str) -> list[str]:
    """The markdown lines of one directive list item."""
    lines = [f"- [{severity}] {directive_text(rng, v, service)}"]
    roll = rng.random()
    if roll < 0.4:
        lines.append(f"  Rationale: {_cap(rng.choice(v.reasons))}.")
    if rng.random() < 0.15:
        lines.append(f"  Avoid: {rng.choice(RISKS)} {rng.choice(v.places)}.")
    if rng.random() < 0.05:
        lines.append(f"  Layer: {rng.choice(TASK_LAYERS)}")
    if rng.random() < 0.05:
        lines.extend(
            [
                "  ```python",
                f"  {service}_{rng.choice(v.verbs).replace(' ', '_').replace('-', '_')}({rng.choice(ENTITIES).replace(' ', '_')}, timeout=5)",
                "  ```",
            ]
        )
    return lines


def rule_document(i: int, count: int, seed: int = DEFAULT_SEED) -> SynthFile:
    """Rule document ``i`` of a repository, with ``count`` directives (depends only on seed and i)."""
    rng = random.Random(f"ruledex-bench:{seed}:{i}")
    topic = TOPIC_NAMES[rng.randrange(len(TOPIC_NAMES))]
    v = VOCAB[topic]
    side = rng.sample(RELATED[topic], k=rng.randint(1, min(2, len(RELATED[topic]))))
    service = service_name(rng)
    layers = sorted(set(rng.sample(v.layers, k=rng.randint(1, min(2, len(v.layers))))))
    authority = ["*"] if i % 500 == 7 else ([topic] if rng.random() < 0.25 else [])
    title = f"{_cap(topic)} rules for the {service} service"
    front = [
        "---",
        f"title: {json.dumps(title)}",
        f"layers: {json.dumps(layers)}",
        f"topics: {json.dumps([topic, *side])}",
        f"authoritative_for: {json.dumps(authority)}",
        "when_to_apply:",
        *(f"  - {json.dumps(s)}" for s in rng.sample(v.situations, k=min(2, len(v.situations)))),
        "examples:",
        *(f"  - {json.dumps(t)}" for t in rng.sample(v.tasks, k=2)),
        f"version: 1.{rng.randint(0, 9)}.{rng.randint(0, 20)}",
        "---",
        "",
        f"# {title}",
        "",
        f"How the {service} team applies its {topic} rules to every {rng.choice(ENTITIES)} it owns.",
    ]
    sections = rng.sample(v.sections, k=min(len(v.sections), rng.randint(3, 6)))
    cuts = sorted(rng.sample(range(1, count), k=len(sections) - 1)) if count > len(sections) else []
    bounds = list(zip([0, *cuts], [*cuts, count], strict=True))
    body: list[str] = []
    severities, weights = zip(*SEVERITY_WEIGHTS, strict=True)
    for s, (lo, hi) in enumerate(bounds):
        if hi <= lo:
            continue
        body.extend(["", f"## {sections[s]}", ""])
        for k in range(hi - lo):
            vocab = VOCAB[rng.choice(side)] if rng.random() < 0.25 else v
            if k == (hi - lo) // 2 and hi - lo >= 6 and rng.random() < 0.15:
                body.extend(["", f"### {_cap(rng.choice(vocab.nouns))}", ""])
            body.extend(_directive(rng, vocab, service, rng.choices(severities, weights)[0]))
    path = f"team-{i // FILES_PER_TEAM:03d}/{topic}-{i:05d}.md"
    return SynthFile(path, "\n".join([*front, *body, ""]), count)


def plan(directives: int, seed: int = DEFAULT_SEED) -> list[int]:
    """Directive count of each file: 15-25 per file from a seeded sequence, the last file cut to fit."""
    rng = random.Random(f"ruledex-bench-plan:{seed}")
    counts: list[int] = []
    left = directives
    while left > 0:
        n = min(left, rng.randint(MIN_PER_FILE, MAX_PER_FILE))
        counts.append(n)
        left -= n
    return counts


def documents(directives: int, seed: int = DEFAULT_SEED) -> Iterator[SynthFile]:
    """Every rule document of a repository with exactly ``directives`` directives."""
    for i, count in enumerate(plan(directives, seed)):
        yield rule_document(i, count, seed)


def generate(root: Path, directives: int, seed: int = DEFAULT_SEED) -> SynthRepo:
    """Write the repository into ``root`` (created; must be empty or absent) and describe it."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    files = total = size = 0
    for doc in documents(directives, seed):
        path = root / doc.path
        path.parent.mkdir(parents=True, exist_ok=True)
        data = doc.text.encode("utf-8")
        path.write_bytes(data)
        files, total, size = files + 1, total + doc.directives, size + len(data)
    return SynthRepo(root, files, total, size, seed)


def touch_one(root: Path) -> Path:
    """Reword the first directive of one rule document in place (for the rebuild-after-one-change run)."""
    paths = sorted(Path(root).rglob("*.md"))
    path = paths[len(paths) // 2]
    lines = path.read_text(encoding="utf-8").split("\n")
    at = next(n for n, line in enumerate(lines) if line.startswith("- ["))
    lines[at] = lines[at].rstrip(".") + ", and say so in the pull request."
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
