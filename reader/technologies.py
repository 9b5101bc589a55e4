"""Which technologies a text names: languages, frameworks, libraries, stores, platforms and tools.

Detection reports them for a task, the builder for a rule (from its title and description), and
ranking compares the two through their stacks (:mod:`.stacks`). A name is a whole word ("react",
"tokio") or, when it holds a symbol, a dot or a space, a substring ("c#", "next.js", "react native").
Names that are everyday words count only where the text uses them as names. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .stacks import LIBRARIES, PARENTS, stack_of

TECHNOLOGIES: tuple[str, ...] = (
    "python",
    "typescript",
    "javascript",
    "java",
    "kotlin",
    "go",
    "golang",
    "rust",
    "ruby",
    "php",
    "c#",
    "c++",
    "swift",
    "react",
    "vue",
    "svelte",
    "angular",
    "nextjs",
    "next.js",
    "django",
    "flask",
    "fastapi",
    "express",
    "nestjs",
    "spring",
    "rails",
    "laravel",
    "node",
    "nodejs",
    "postgres",
    "postgresql",
    "mysql",
    "sqlite",
    "mongodb",
    "redis",
    "kafka",
    "rabbitmq",
    "graphql",
    "grpc",
    "docker",
    "kubernetes",
    "k8s",
    "helm",
    "terraform",
    "aws",
    "gcp",
    "azure",
    "github-actions",
    "pytest",
    "jest",
    "vitest",
    "cypress",
    "playwright",
    "tailwind",
    "prisma",
    "sqlalchemy",
    "alembic",
    "celery",
    "openapi",
    # beyond the mainstream web stack: more languages, UI kits, frameworks, stores, data and ML
    # tools, platforms and test tools that tasks name by name
    "scala",
    "elixir",
    "r",
    "dart",
    "solidity",
    "nuxt",
    "remix",
    "astro",
    "htmx",
    "redux",
    "zustand",
    "pinia",
    "tanstack",
    "apollo",
    "flutter",
    "swiftui",
    "jetpack",
    "react-native",
    "react native",
    "spring boot",
    "jetpack compose",
    "expo",
    "vite",
    "webpack",
    "storybook",
    "fastify",
    "gin",
    "actix",
    "axum",
    "ktor",
    "phoenix",
    "quarkus",
    "asp.net",
    "dotnet",
    "deno",
    "supabase",
    "firebase",
    "firestore",
    "dynamodb",
    "cassandra",
    "elasticsearch",
    "snowflake",
    "bigquery",
    "clickhouse",
    "duckdb",
    "typeorm",
    "sequelize",
    "mongoose",
    "drizzle",
    "hibernate",
    "jpa",
    "pytorch",
    "tensorflow",
    "keras",
    "scikit-learn",
    "pandas",
    "numpy",
    "spark",
    "pyspark",
    "airflow",
    "dbt",
    "langchain",
    "ansible",
    "pulumi",
    "vercel",
    "netlify",
    "heroku",
    "cloudflare",
    "nginx",
    "istio",
    "knative",
    "argocd",
    "jenkins",
    "gitlab",
    "selenium",
    "mocha",
    "rspec",
    "junit",
    "testcontainers",
    *LIBRARIES,  # the libraries and tools of each ecosystem, with their stacks (reader/stacks.py)
)
"""Every technology detection can name; the order is the order it reports them in."""

AMBIGUOUS_TECHNOLOGIES = frozenset(
    {"go", "node", "spring", "express", "expo", "spark", "rails", "gin", "apollo", "dart", "swift", "rust", "mocha"}
    | {"jest", "drizzle", "remix", "phoenix", "helm"}
    | {"electron", "rollup", "yarn", "stimulus", "hypothesis", "prefect", "poetry", "cats", "echo", "fiber", "chi"}
    | {"cobra", "diesel", "clap", "criterion", "rocket", "warp", "eloquent", "renovate", "bevy", "yew", "livewire"}
    | {"chai"}
)
"""Technology names that are also everyday words ("go out to Kafka", "the node ran out of memory"):
they name the technology only when written with a capital, as a file extension ("main.go"), or beside
another technology of their stack ("Elixir phoenix")."""


def _as_names(found: set[str], text: str) -> set[str]:
    """``found`` without the everyday words among them that ``text`` does not use as names."""
    kept = found - AMBIGUOUS_TECHNOLOGIES
    for tech in found & AMBIGUOUS_TECHNOLOGIES:
        word = re.escape(tech)
        capitalised = any(m.group(0) != tech for m in re.finditer(rf"(?<![\w-]){word}(?![\w-])", text, re.IGNORECASE))
        named = capitalised or re.search(rf"\.{word}\b", text, re.IGNORECASE) is not None  # main.go, .go files
        others = stack_of(found - {tech})
        if named or tech in others or not others.isdisjoint(PARENTS.get(tech, ())):
            kept.add(tech)
    return kept


_RANK = {name: i for i, name in enumerate(TECHNOLOGIES)}
_SYMBOLS = tuple(t for t in TECHNOLOGIES if not t.isalnum())
"""Technologies with a symbol, a dot or a space (c#, node.js, react native): found in the text as written."""


WRITTEN_NAMES: dict[str, tuple[str, re.Pattern[str]]] = {
    # technology: (the letters it is written with, a cheap test first; the pattern that decides)
    "r": ("R", re.compile(r"(?<![\w./&'-])R(?![\w/&'-])")),
    "typescript": ("TS", re.compile(r"(?<![\w./&'-])TS(?![\w/&'-])")),
    "javascript": ("JS", re.compile(r"(?<![\w./&'-])JS(?![\w/&'-])")),
    "dotnet": (".NET", re.compile(r"(?<![\w.])\.NET\b")),
    "nestjs": ("Nest", re.compile(r"(?<![.!?]\s)(?<=\s)Nest(?![\w/&'-])")),
}
"""Names found only as written, case and all: one letter, which the word tokenizer drops ("our R
scripts", not "R&D" or "r u sure"); short forms ("a TS type", "the JS bundle", "the .NET API", "our
Nest app", but not "ts" or "nest the routes" or a sentence that opens with "Nest")."""


def named_technologies(text: str, words: Iterable[str]) -> tuple[str, ...]:
    """The technologies ``text`` (whose lower-cased ``words`` are given) names, in :data:`TECHNOLOGIES` order."""
    lowered = text.lower()
    found = {w for w in words if w in _RANK} | {t for t in _SYMBOLS if t in lowered}
    found |= {name for name, (letters, pattern) in WRITTEN_NAMES.items() if letters in text and pattern.search(text)}
    if not found.isdisjoint(AMBIGUOUS_TECHNOLOGIES):
        found = _as_names(found, text)
    return tuple(sorted(found, key=_RANK.__getitem__))
