"""Find the rule documents to build and the git facts about them (pygit2), from a folder.

Files are read from the working tree in sorted path order. When the folder is inside a git
repository, the manifest records its repository, commit, ref, the commit time (the build time, so
builds are reproducible) and whether the rules have uncommitted changes (``dirty``).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from pathlib import Path

RULE_SUFFIXES = (".md",)
SKIP_NAMES = frozenset({"readme.md", "contributing.md", "changelog.md", "license.md"})
MAX_RULE_BYTES = 1_000_000
"""Rule files above this size are refused: a rule document is prose, not a data dump."""


@dataclass(frozen=True)
class SourceFile:
    """One rule document: its path relative to the rules root (``/``-separated) and its text."""

    path: str
    text: str


@dataclass(frozen=True)
class SourceInfo:
    """Where the rules came from, as recorded in the manifest; no absolute paths."""

    repository: str = ""
    commit: str = ""
    ref: str = ""
    path: str = ""
    dirty: bool = False
    time: str = ""
    tag: str = ""

    @property
    def name(self) -> str:
        """Index name: the origin remote's repository name, else 'rules' (folder names are not reproducible)."""
        stem = self.repository.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1].removesuffix(".git")
        return stem or "rules"

    @property
    def version(self) -> str:
        """A version label for artifact names: the tag, else the short commit, else 'dev'."""
        label = self.tag or self.commit[:12] or "dev"
        return f"{label}-dirty" if self.dirty and self.commit else label


def rule_files(root: Path) -> list[Path]:
    """Rule documents under ``root`` in a stable order, skipping README/CONTRIBUTING and dot/underscore paths."""
    found = []
    for path in root.rglob("*"):
        rel = path.relative_to(root)
        if any(part.startswith((".", "_")) for part in rel.parts):
            continue
        if path.is_file() and path.suffix.lower() in RULE_SUFFIXES and path.name.lower() not in SKIP_NAMES:
            found.append(path)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def read_sources(root: Path) -> list[SourceFile]:
    """Read the rule documents as UTF-8 text (errors name the file and say what to do)."""
    from ruledex.reader.errors import RuleError

    out = []
    for path in rule_files(root):
        rel = path.relative_to(root).as_posix()
        data = path.read_bytes()
        if len(data) > MAX_RULE_BYTES:
            raise RuleError(
                rel,
                1,
                "file",
                f"{len(data)} bytes exceeds the {MAX_RULE_BYTES}-byte limit for a rule document; split it",
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].count(b"\n") + 1
            raise RuleError(rel, line, "file", "is not UTF-8; re-save it as UTF-8") from None
        out.append(SourceFile(rel, text))
    return out


def _clean_url(url: str) -> str:
    """A remote URL fit for an index: no credentials, and no local paths (they are not reproducible)."""
    if "://" in url and not url.startswith("file://"):
        return re.sub(r"//[^/@]+@", "//", url)
    if re.match(r"^[\w.-]+@[\w.-]+:", url):  # scp-like: git@github.com:org/rules.git
        return url
    return ""


def git_info(root: Path) -> SourceInfo:
    """Git facts about ``root`` (empty when it is not in a repository or pygit2 is missing)."""
    try:
        import pygit2
    except ImportError:  # pragma: no cover - pygit2 comes with the [build] extra
        return SourceInfo()
    try:
        found = pygit2.discover_repository(str(root.resolve()))
    except pygit2.GitError:
        found = None
    if not found:
        return SourceInfo()
    repo = pygit2.Repository(found)
    if repo.is_bare or repo.workdir is None:
        return SourceInfo()
    workdir = Path(repo.workdir).resolve()
    rel = root.resolve().relative_to(workdir).as_posix()
    rel = "" if rel == "." else rel
    if repo.head_is_unborn:
        return SourceInfo(path=rel, dirty=True)
    commit = repo.head.peel(pygit2.Commit)
    prefix = f"{rel}/" if rel else ""
    dirty = any(
        p.startswith(prefix) and not flags & pygit2.enums.FileStatus.IGNORED for p, flags in repo.status().items()
    )
    remote = next((r.url for r in repo.remotes if r.name == "origin"), None)
    tag = ""
    for name in sorted(repo.references):
        if name.startswith("refs/tags/"):
            target = repo.references[name].peel(pygit2.Commit)
            if target.id == commit.id:
                tag = name.removeprefix("refs/tags/")
    when = dt.datetime.fromtimestamp(commit.commit_time, tz=dt.UTC)
    return SourceInfo(
        repository=_clean_url(remote) if remote else "",
        commit=str(commit.id),
        ref=repo.head.shorthand,
        path=rel,
        dirty=dirty,
        time=when.strftime("%Y-%m-%dT%H:%M:%SZ"),
        tag=tag,
    )
