"""Technology stacks: which named technologies build on which, and how well a rule's stack fits a task's.

A task that names Gin is Go work, one that names Nuxt is Vue work, one that names Hibernate is Java
work; a guide written for Next.js and Supabase is not about any of them. Detection names the
technologies a task and a rule mention (:data:`~ruledex.reader.technologies.TECHNOLOGIES`); this module
relates them, so ranking can prefer the guides of the task's own stack. Pure.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable

LIBRARIES: dict[str, tuple[str, ...]] = {
    **dict.fromkeys(
        ["jquery", "preact", "solidjs", "electron", "esbuild", "rollup", "turborepo", "puppeteer", "chai"],
        ("javascript",),
    ),
    **dict.fromkeys(["koa", "hapi", "hono", "knex", "npm", "pnpm", "yarn"], ("node",)),
    **dict.fromkeys(["zod", "trpc"], ("typescript",)),
    "sveltekit": ("svelte",),
    "gatsby": ("react",),
    "mobx": ("react",),
    "hotwire": ("rails", "javascript"),
    "stimulus": ("hotwire",),
    **dict.fromkeys(
        [
            "pydantic",
            "httpx",
            "aiohttp",
            "starlette",
            "hypothesis",
            "respx",
            "mypy",
            "polars",
            "jax",
            "llamaindex",
            "dagster",
            "prefect",
            "poetry",
        ],
        ("python",),
    ),
    **dict.fromkeys(["micronaut", "mockito", "lombok", "gradle", "maven"], ("java",)),
    **dict.fromkeys(["akka", "zio", "cats"], ("scala",)),
    **dict.fromkeys(["echo", "fiber", "chi", "gorm", "sqlc", "cobra"], ("go",)),
    **dict.fromkeys(
        [
            "tokio",
            "serde",
            "sqlx",
            "diesel",
            "leptos",
            "yew",
            "tauri",
            "bevy",
            "clap",
            "ratatui",
            "proptest",
            "criterion",
            "rocket",
            "warp",
        ],
        ("rust",),
    ),
    **dict.fromkeys(["sinatra", "sidekiq"], ("ruby",)),
    **dict.fromkeys(["symfony", "phpunit"], ("php",)),
    **dict.fromkeys(["livewire", "eloquent"], ("laravel",)),
    **dict.fromkeys(["blazor", "xunit", "nunit"], ("c#",)),
    "entity framework": ("c#",),
    **dict.fromkeys(["uikit", "xctest"], ("swift",)),
    "riverpod": ("flutter",),
    **dict.fromkeys(["ecto", "liveview"], ("elixir",)),
    **dict.fromkeys(["qt", "cmake", "gtest"], ("c++",)),
    **dict.fromkeys(["tidyverse", "ggplot2", "dplyr", "shiny", "rmarkdown"], ("r",)),
    **dict.fromkeys(["timescaledb", "pgvector"], ("postgres",)),
    "mongo": ("mongodb",),
    # tools of no one stack
    "dependabot": (),
    "renovate": (),
}
"""The libraries and tools each ecosystem's tasks name, and the language or framework each builds on:
a task naming Ratatui, ZIO or Stimulus is Rust, Scala or Rails work though it names no language.
Detection knows them as technologies (:data:`~ruledex.reader.technologies.TECHNOLOGIES`) from here."""

PARENTS: dict[str, tuple[str, ...]] = {
    # other spellings of one technology
    "golang": ("go",),
    "nodejs": ("node",),
    "next.js": ("nextjs",),
    "postgresql": ("postgres",),
    "k8s": ("kubernetes",),
    "react native": ("react-native",),
    "spring boot": ("spring",),
    "jetpack compose": ("jetpack",),
    "dotnet": ("c#",),
    "asp.net": ("c#",),
    # JavaScript and TypeScript
    "typescript": ("javascript",),
    "node": ("javascript",),
    "deno": ("typescript",),
    "react": ("javascript",),
    "vue": ("javascript",),
    "svelte": ("javascript",),
    "angular": ("typescript",),
    "astro": ("javascript",),
    "htmx": ("javascript",),
    "nextjs": ("react",),
    "remix": ("react",),
    "redux": ("react",),
    "zustand": ("react",),
    "tanstack": ("react",),
    "react-native": ("react",),
    "expo": ("react-native",),
    "nuxt": ("vue",),
    "pinia": ("vue",),
    "express": ("node",),
    "fastify": ("node",),
    "nestjs": ("node", "typescript"),
    "typeorm": ("node",),
    "sequelize": ("node",),
    "mongoose": ("node", "mongodb"),
    "drizzle": ("node",),
    "prisma": ("node",),
    "jest": ("javascript",),
    "vitest": ("javascript",),
    "mocha": ("javascript",),
    "cypress": ("javascript",),
    "vite": ("javascript",),
    "webpack": ("javascript",),
    "storybook": ("javascript",),
    # Python
    "django": ("python",),
    "flask": ("python",),
    "fastapi": ("python",),
    "pytest": ("python",),
    "sqlalchemy": ("python",),
    "alembic": ("python", "sqlalchemy"),
    "celery": ("python",),
    "pandas": ("python",),
    "numpy": ("python",),
    "pytorch": ("python",),
    "tensorflow": ("python",),
    "keras": ("python", "tensorflow"),
    "scikit-learn": ("python",),
    "pyspark": ("python", "spark"),
    "airflow": ("python",),
    "langchain": ("python",),
    # the JVM
    "kotlin": ("java",),
    "scala": ("java",),
    "spring": ("java",),
    "quarkus": ("java",),
    "hibernate": ("java", "jpa"),
    "jpa": ("java",),
    "junit": ("java",),
    "testcontainers": ("java",),
    "ktor": ("kotlin",),
    "jetpack": ("kotlin",),
    # other languages' frameworks
    "rails": ("ruby",),
    "rspec": ("ruby",),
    "laravel": ("php",),
    "phoenix": ("elixir",),
    "flutter": ("dart",),
    "swiftui": ("swift",),
    "gin": ("go",),
    "actix": ("rust",),
    "axum": ("rust",),
    # platforms and clients
    "apollo": ("graphql",),
    "supabase": ("postgres",),
    "firestore": ("firebase",),
    "helm": ("kubernetes",),
    "argocd": ("kubernetes",),
    "istio": ("kubernetes",),
    "knative": ("kubernetes",),
    **LIBRARIES,
}
"""Technology -> the technologies it builds on (or is another name for): the stack a mention implies."""


def stack_of(technologies: Iterable[str]) -> frozenset[str]:
    """The technologies named and everything they build on."""
    out: set[str] = set()
    todo = list(technologies)
    while todo:
        tech = todo.pop()
        if tech not in out:
            out.add(tech)
            todo.extend(PARENTS.get(tech, ()))
    return frozenset(out)


NO_EVIDENCE_FIT = 0.5
"""Fit when nothing tells: the task or the rule names no technology, or the rule builds on what the
task names. The same for every such candidate, so it moves no ranking among them."""

SAME_LANGUAGE_FIT = 0.25
"""Fit of a rule written for a sibling of the task's stack (a React guide for a Vue task: both
JavaScript): closer than a different stack, far from the task's own."""


def stack_fits(task_technologies: Iterable[str], rules: Iterable[tuple[str, ...]]) -> list[float]:
    """How well rules written for each of ``rules`` (their technologies) fit a task naming ``task_technologies``.

    Each fit is in [0, 1]. 1: the rule is about a technology of the task's stack (a Go guide for a
    Gin task). :data:`NO_EVIDENCE_FIT`: no evidence either way: the task or the rule names none, or
    the rule builds on what the task names (a Django guide for a Python task).
    :data:`SAME_LANGUAGE_FIT`: the two stacks share only what both build on (a React guide for a
    Vue task). 0: a different stack.
    """
    named = frozenset(task_technologies)
    if not named:
        return [NO_EVIDENCE_FIT for _ in rules]
    stack = stack_of(named)
    return [_fit(named, stack, rule) for rule in rules]


def _fit(named: frozenset[str], stack: frozenset[str], rule: tuple[str, ...]) -> float:
    if not rule:
        return NO_EVIDENCE_FIT
    if not stack.isdisjoint(rule):
        return 1.0
    rule_stack = _stack_of_rule(rule)
    if not named.isdisjoint(rule_stack):
        return NO_EVIDENCE_FIT
    return 0.0 if stack.isdisjoint(rule_stack) else SAME_LANGUAGE_FIT


@functools.lru_cache(maxsize=4096)
def _stack_of_rule(technologies: tuple[str, ...]) -> frozenset[str]:
    """A rule's stack, made once per distinct set of technologies (rules repeat them)."""
    return stack_of(technologies)
