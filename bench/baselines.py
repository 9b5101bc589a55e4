"""Baselines measured in the same run, on the same directives and tasks as ruledex.

- :class:`Fts5Baseline`: SQLite FTS5 over one row per directive, ranked with ``bm25()`` and the
  knowledge-memory design's column weights (title 10, content 5, tags 1); the query is the task's
  words OR-ed together. The database is a file, opened once, like a knowledge-memory server's.
- :class:`MemoryScanBaseline`: what the reference Memory MCP server does for ``search_nodes``: load
  the JSON-lines knowledge graph from disk on every call and keep the entities whose name, type or
  any observation contains the query (case-insensitive substring of the whole query).
- :class:`Bm25sBaseline`: plain BM25 via the bm25s library over each directive's whole text
  (optional dev dependency: skipped with a message when it is not installed).

All of them see the directives exactly as the built index stores them (:func:`docs_from_index`).
"""

from __future__ import annotations

import json
import re
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

FTS5_WEIGHTS = (10.0, 5.0, 1.0)
"""bm25() column weights of the knowledge-memory design: title, content, tags."""

_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class Doc:
    """One directive as the baselines index it."""

    id: str
    title: str
    content: str
    tags: str


class Baseline(Protocol):
    """A searcher over :class:`Doc` rows: ids of the best ``k`` matches for a task, best first."""

    name: str

    def search(self, task: str, k: int = 8) -> list[str]:
        """Ids of the best matches."""
        ...

    def close(self) -> None:
        """Release files and memory."""
        ...


class BaselineUnavailable(RuntimeError):
    """A baseline's optional dependency is missing (the run goes on without it)."""


def docs_from_index(index: Any) -> list[Doc]:
    """Every directive of an opened :class:`ruledex.reader.index.Index` as a baseline row."""
    out = []
    for i in range(index.n_directives):
        d = index.directive(i)
        rule = index.rule(d.rule)
        title = " > ".join([rule.title, *d.section])
        content = " ".join(part for part in (d.text, d.rationale, *d.avoid) if part)
        tags = " ".join([*(d.topics or rule.topics), *(d.layers or rule.layers)])
        out.append(Doc(d.id, title, content, tags))
    return out


def fts_query(task: str) -> str:
    """The task's words as an FTS5 OR query, each quoted (so no word is read as FTS syntax)."""
    terms = dict.fromkeys(w for w in _WORD.findall(task.lower()) if len(w) > 1)
    return " OR ".join(f'"{t}"' for t in terms)


class Fts5Baseline:
    """SQLite FTS5 with bm25 weights title 10, content 5, tags 1."""

    name = "sqlite_fts5"

    def __init__(self, docs: list[Doc], path: Path) -> None:
        """Write the FTS5 database to ``path`` and open it for queries."""
        path = Path(path)
        path.unlink(missing_ok=True)
        with sqlite3.connect(path) as build:
            build.execute("CREATE VIRTUAL TABLE directives USING fts5(title, content, tags, did UNINDEXED)")
            build.executemany(
                "INSERT INTO directives (title, content, tags, did) VALUES (?, ?, ?, ?)",
                [(d.title, d.content, d.tags, d.id) for d in docs],
            )
            build.execute("INSERT INTO directives(directives) VALUES ('optimize')")
        build.close()
        self.path = path
        self.db = sqlite3.connect(path, check_same_thread=False)
        w = FTS5_WEIGHTS
        self._sql = (
            f"SELECT did, title, content FROM directives WHERE directives MATCH ? "
            f"ORDER BY bm25(directives, {w[0]}, {w[1]}, {w[2]}, 0.0) LIMIT ?"
        )

    def search(self, task: str, k: int = 8) -> list[str]:
        """Ids of the best ``k`` rows by weighted bm25 (rows are fetched with their text, as a server would)."""
        query = fts_query(task)
        if not query:
            return []
        return [row[0] for row in self.db.execute(self._sql, (query, k)).fetchall()]

    def close(self) -> None:
        """Close the database."""
        self.db.close()


class MemoryScanBaseline:
    """Reference Memory-MCP-server ``search_nodes``: load the JSONL graph per call, substring scan."""

    name = "memory_scan"

    def __init__(self, docs: list[Doc], path: Path) -> None:
        """Write the graph as the reference server stores it: one JSON entity per line."""
        self.path = Path(path)
        with self.path.open("w", encoding="utf-8") as fh:
            for d in docs:
                entity = {
                    "type": "entity",
                    "name": d.id,
                    "entityType": "directive",
                    "observations": [d.title, d.content, d.tags],
                }
                fh.write(json.dumps(entity) + "\n")

    def load(self) -> list[dict[str, Any]]:
        """Read and parse the whole graph (the reference server does this on every tool call)."""
        with self.path.open(encoding="utf-8") as fh:
            return [json.loads(line) for line in fh if line.strip()]

    def search(self, task: str, k: int = 8) -> list[str]:
        """Names of the entities containing the task (case-insensitive), the first ``k`` in file order."""
        needle = task.lower()
        found = [
            e["name"]
            for e in self.load()
            if needle in e["name"].lower()
            or needle in e["entityType"].lower()
            or any(needle in o.lower() for o in e["observations"])
        ]
        return found[:k]

    def close(self) -> None:
        """Nothing to release."""


class Bm25sBaseline:
    """Plain BM25 (bm25s, English stop words) over each directive's title, content and tags."""

    name = "bm25s"

    def __init__(self, docs: list[Doc]) -> None:
        """Index the documents; raises :class:`BaselineUnavailable` when bm25s is not installed."""
        try:
            import bm25s
        except ImportError:
            raise BaselineUnavailable(
                "bm25s is not installed (pip install bm25s); skipping the bm25s baseline"
            ) from None
        self._bm25s = bm25s
        self.ids = [d.id for d in docs]
        corpus = [f"{d.title}\n{d.content}\n{d.tags}" for d in docs]
        self.retriever = bm25s.BM25()
        self.retriever.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)

    def search(self, task: str, k: int = 8) -> list[str]:
        """Ids of the best ``k`` documents with a positive score."""
        tokens = self._bm25s.tokenize([task], stopwords="en", show_progress=False, return_ids=False)
        if not tokens[0] or not self.ids:
            return []
        docs, scores = self.retriever.retrieve(tokens, k=min(k, len(self.ids)), show_progress=False, n_threads=0)
        return [self.ids[int(i)] for i, s in zip(docs[0], scores[0], strict=True) if s > 0]

    def close(self) -> None:
        """Drop the in-memory index."""
        self.retriever = None


def make_baselines(docs: list[Doc], folder: Path, names: tuple[str, ...] | None = None) -> tuple[list[Any], list[str]]:
    """Build the requested baselines (default: all) in ``folder``; return them and any skip messages."""
    builders = {
        "sqlite_fts5": lambda: Fts5Baseline(docs, folder / "fts5.sqlite"),
        "memory_scan": lambda: MemoryScanBaseline(docs, folder / "memory.jsonl"),
        "bm25s": lambda: Bm25sBaseline(docs),
    }
    made, skipped = [], []
    for name in names or tuple(builders):
        try:
            made.append(builders[name]())
        except BaselineUnavailable as exc:
            skipped.append(f"{name}: {exc}")
    return made, skipped
