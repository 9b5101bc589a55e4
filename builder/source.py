"""Find the rule files to build and the git facts about them (pygit2), from a folder.

Rule files are ruledex's own documents (``*.md`` with front matter naming layers and topics) and
other tools' rule files, by path (:func:`path_format`; docs/formats.md lists them). Files are read from the working tree in sorted path order. When the folder is inside a git
repository, the manifest records its repository, commit, ref, the commit time (the build time, so
builds are reproducible) and whether the rules have uncommitted changes (``dirty``).
"""

from __future__ import annotations

import codecs
import datetime as dt
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ruledex.reader.export import GENERATED_MARK
from ruledex.reader.records import blob_id

from .parse import normalise_newlines

RULE_SUFFIXES = (".md", ".mdc")
SKIP_NAMES = frozenset({"readme.md", "contributing.md", "changelog.md", "license.md"})
MAX_RULE_BYTES = 1_000_000
"""Rule files above this size are refused: a rule document is prose, not a data dump."""

MAX_FOREIGN_BYTES = 256_000
"""Foreign rule files (Cursor, AGENTS.md ...) above this size are skipped with a warning.

Every directive of a file shares its title and context, so a file this big (some 40,000 words,
hundreds of directives) is a pasted manual rather than rules; split it by topic instead.
"""

GENERATED_MARKER = f"<!-- {GENERATED_MARK}"
"""How every file ``ruledex export`` writes opens its header comment (within :data:`GENERATED_HEAD` bytes)."""
GENERATED_HEAD = 4096
"""The export's header comment comes right after its front matter (description, globs ...), well within this."""

RULEDEX = "ruledex"
"""The format name of ruledex's own rule documents (strict: their problems are errors)."""

FOREIGN_FORMATS: tuple[str, ...] = (
    "cursor",
    "cursorrules",
    "agents-md",
    "claude-md",
    "copilot",
    "cline",
    "windsurf",
    "markdown",
)
"""Formats of other tools' rule files that the builder reads by inference (docs/formats.md)."""

_RULE_DOT_DIRS = frozenset({".cursor", ".github", ".windsurf", ".clinerules"})
_PRUNE_DIRS = frozenset({"node_modules"})
_RULEDEX_KEY = re.compile(r"^(?:layers?|topics|authoritative_for|when_to_apply)\s*:")


@dataclass(frozen=True)
class SourceFile:
    """One rule file: path relative to the rules root (``/``-separated), text and format.

    ``problem`` is set when the file could not be read (not UTF-8, too big, empty): for a ruledex
    document it becomes an error at ``path:line``, for a foreign file a warning and a skip.
    ``generated`` marks a file ``ruledex export`` wrote (an index written back out, not a source):
    build, check and import skip it, so exporting beside the sources does not feed the next build.
    """

    path: str
    text: str
    format: str = RULEDEX
    problem: str = ""
    line: int = 1
    blob: str = ""
    generated: bool = False


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
    tree: str = ""

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


def path_format(rel: str) -> str | None:
    """The format a file's path says it has, or None when it is not a rule file.

    Dot and underscore folders are skipped, except the folders other tools keep rules in:
    ``.cursor/rules/``, ``.github/`` (Copilot), ``.windsurf/rules/`` and ``.clinerules/``.
    """
    parts = rel.split("/")
    name, dirs = parts[-1], parts[:-1]
    lower = name.lower()
    joined = "/" + "/".join(dirs) + "/"
    if any(d.startswith("_") or d in _PRUNE_DIRS for d in dirs):
        return None
    if ".clinerules" in dirs:
        return "cline" if Path(lower).suffix in ("", ".md", ".txt") and not lower.startswith(".") else None
    special = {".cursorrules": "cursorrules", ".windsurfrules": "windsurf", ".clinerules": "cline"}
    if name in special:
        return special[name]
    if lower.endswith(".mdc"):
        return "cursor" if not lower.startswith(("_", ".")) else None
    if not lower.endswith(".md") or lower.startswith(("_", ".")):
        return None
    if "/.cursor/rules/" in joined:
        return "cursor"
    if "/.windsurf/rules/" in joined:
        return "windsurf"
    if dirs and dirs[-1] == ".github" and lower == "copilot-instructions.md":
        return "copilot"
    if "/.github/instructions/" in joined and lower.endswith(".instructions.md"):
        return "copilot"
    if any(d.startswith(".") for d in dirs):
        return None
    if lower in ("agents.md", "claude.md", "claude.local.md"):
        return "agents-md" if lower == "agents.md" else "claude-md"
    return None if lower in SKIP_NAMES else "markdown"


def rule_files(root: Path) -> list[Path]:
    """Rule files under ``root`` in a stable (sorted path) order; see :func:`path_format`."""
    found = []
    for folder, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if d not in _PRUNE_DIRS and (not d.startswith((".", "_")) or d in _RULE_DOT_DIRS)
        )
        for name in filenames:
            path = Path(folder) / name
            # a broken link is kept, so that reading it reports it instead of dropping a rule unseen
            if path_format(path.relative_to(root).as_posix()) and (path.is_file() or not path.exists()):
                found.append(path)
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def looks_like_ruledex(text: str) -> bool:
    """Whether a file opens with front matter that has ruledex keys (layers, topics ...).

    Such a file is one of ruledex's own documents even when its YAML is broken, so its
    problems are errors for its author, never a silent fallback to inference.
    """
    lines = normalise_newlines(text).split("\n")  # as the parser reads it
    if not lines or lines[0].strip() != "---":
        return False
    for line in lines[1:400]:
        if line.strip() in ("---", "..."):
            return False
        if _RULEDEX_KEY.match(line):
            return True
    return False


def read_source(root: Path, path: Path) -> SourceFile:
    """Read one rule file; a problem is recorded on the result, never raised.

    A file that cannot be opened (no permission, a broken link) is a problem too (:func:`unread_source`).
    """
    rel = path.relative_to(root).as_posix()
    try:
        data = path.read_bytes()
    except OSError as exc:
        if path.is_symlink() and not path.exists():
            return unread_source(rel, f"is a broken link (to {os.readlink(path)}); fix the link or remove it")
        return unread_source(rel, f"cannot be read ({exc.strerror or exc}); check its permissions")
    return source_from_bytes(rel, data)


def unread_source(rel: str, problem: str) -> SourceFile:
    """A rule file that could not be opened: a ruledex document's error, a foreign file's skip.

    Unread, a ``*.md`` may be a ruledex document, so it counts as one.
    """
    kind = path_format(rel) or "markdown"
    return SourceFile(rel, "", RULEDEX if kind == "markdown" else kind, problem)


def source_from_bytes(rel: str, data: bytes) -> SourceFile:
    """A rule file from its bytes (working tree or git blob); problems recorded, never raised."""
    kind = path_format(rel) or "markdown"
    utf16 = data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE))  # Windows editors' "Unicode"
    head = data[:16384].decode("utf-16" if utf16 else "utf-8", errors="replace")
    if GENERATED_MARKER in head[:GENERATED_HEAD]:
        return SourceFile(rel, "", kind, generated=True)
    fmt = RULEDEX if rel.lower().endswith(RULE_SUFFIXES) and looks_like_ruledex(head) else kind
    limit = MAX_RULE_BYTES if fmt == RULEDEX else MAX_FOREIGN_BYTES
    if len(data) > limit:
        what = "rule document" if fmt == RULEDEX else f"{kind} rule file"
        return SourceFile(rel, "", fmt, f"{len(data)} bytes exceeds the {limit}-byte limit for a {what}; split it")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return SourceFile(rel, "", fmt, f"is {'UTF-16' if utf16 else 'not UTF-8'}; re-save it as UTF-8", line)
    if fmt != RULEDEX and not text.strip("\ufeff \t\r\n"):
        return SourceFile(rel, "", fmt, "is empty")
    return SourceFile(rel, text, fmt, blob=blob_id(text))


def split_generated(sources: list[SourceFile]) -> tuple[list[SourceFile], list[str]]:
    """The sources to read, and the paths of the files ``ruledex export`` generated (skipped)."""
    return [s for s in sources if not s.generated], [s.path for s in sources if s.generated]


def shown_path(folder: str, path: str) -> str:
    """A rules-relative ``path`` as the user would open it: after the rules folder as they gave it.

    ``shown_path("rules", "api.md")`` is ``rules/api.md``; the working folder itself (``.``) adds nothing.
    """
    folder = folder.rstrip("/")
    return f"{folder}/{path}" if folder not in ("", ".") else path


def rules_folder(rules_dir: Path | str | None) -> Path:
    """``rules_dir`` as a folder to read rules from; a :class:`ConfigError` when it is not one.

    The default is ``rules/``; a team with only Cursor rules or an ``AGENTS.md`` has none, so the
    message says that ``.`` reads those.
    """
    from ruledex.reader.errors import ConfigError

    if rules_dir is None or not Path(rules_dir).is_dir():
        raise ConfigError(
            f"{rules_dir}: not a folder of rule documents; pass the folder that holds your rules "
            "(`.` reads a repository's .cursor/rules, AGENTS.md, CLAUDE.md and Copilot instructions)"
        )
    return Path(rules_dir)


def read_sources(root: Path) -> list[SourceFile]:
    """Read every rule file under ``root`` as UTF-8 text, in sorted path order.

    A file that cannot be read comes back with ``problem`` set, never raised: the build makes it
    an error for a ruledex document (with every other error) and a warning for a foreign file,
    ``check`` a finding in the format asked for, and ``import`` a skip.
    """
    return [read_source(root, path) for path in rule_files(root)]


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
