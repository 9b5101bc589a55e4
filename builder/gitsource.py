"""Read rule files straight from a git commit (pygit2), and when each last changed.

``ruledex build --repo PATH --ref REF`` reads the commit's tree, never the working tree, so what is
built is exactly what was reviewed and merged. History gives every rule its last-changed commit,
date and author (the newest commit whose diff to its first parent touches the file, renames
detected, so a moved file keeps its history).
"""

from __future__ import annotations

import datetime as dt
import posixpath
from dataclasses import dataclass
from pathlib import Path

import pygit2

from ruledex.reader.errors import ConfigError

from .source import SourceFile, SourceInfo, _clean_url, path_format, source_from_bytes, unread_source

DEFAULT_SUBDIR = "rules"
HISTORY_LIMIT = 10_000
"""Commits walked at most when looking for last changes (older files report the oldest one seen)."""


@dataclass(frozen=True)
class Change:
    """The last commit that changed a file."""

    commit: str
    date: str
    author: str


def _iso(commit: pygit2.Commit) -> str:
    return dt.datetime.fromtimestamp(commit.commit_time, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def open_repository(path: Path) -> pygit2.Repository:
    """The repository at or above ``path``; a clear error when there is none."""
    found = pygit2.discover_repository(str(Path(path).resolve()))
    if not found:
        raise ConfigError(f"{path}: not inside a git repository; pass --repo with the repository's folder")
    return pygit2.Repository(found)


def resolve_commit(repo: pygit2.Repository, ref: str) -> pygit2.Commit:
    """A branch, tag or commit id as a commit; a clear error naming the ref otherwise."""
    try:
        return repo.revparse_single(ref).peel(pygit2.Commit)
    except (KeyError, ValueError, pygit2.GitError):
        raise ConfigError(
            f"{ref!r} is not a branch, tag or commit in {repo.workdir or repo.path}; see `git log` or `git tag`"
        ) from None


def _subtree(commit: pygit2.Commit, subdir: str | None) -> tuple[pygit2.Tree, str]:
    tree = commit.tree
    if subdir is None:
        try:
            is_tree = tree[DEFAULT_SUBDIR].type_str == "tree"
        except KeyError:
            is_tree = False
        subdir = DEFAULT_SUBDIR if is_tree else ""
    if not subdir.strip("/"):
        return tree, ""
    try:
        sub = tree[subdir.strip("/")]
    except KeyError:
        raise ConfigError(
            f"{subdir!r} does not exist in commit {str(commit.id)[:12]}; pass --path with the rules folder"
        ) from None
    if sub.type_str != "tree":
        raise ConfigError(
            f"{subdir!r} in commit {str(commit.id)[:12]} is a file, not a folder; pass --path with the rules folder"
        )
    return sub, subdir.strip("/")


def tree_subdir(rules_dir: str | None, path: str | None, repo: Path | None = None) -> str | None:
    """The rules folder inside a commit's tree, from ``build``/``check``'s positional folder and ``--path``.

    With ``--ref`` the positional folder names the rules folder inside the commit (it was silently
    ignored: ``ruledex build docs/rules --ref v2`` built ``rules/``); given both ways, they must agree.
    An absolute folder is taken relative to ``repo`` (default: the working directory). ``None``: neither
    was given (:func:`tree_sources` then picks ``rules/`` when the tree has one).

    Raises:
        ValueError: the two disagree, or an absolute folder is outside the repository (a usage error).
    """
    if rules_dir is None:
        return path
    folder = Path(rules_dir)
    if folder.is_absolute():
        root = (repo or Path.cwd()).resolve()
        try:
            folder = folder.resolve().relative_to(root)
        except ValueError:
            raise ValueError(
                f"{rules_dir} is outside the repository {root}; with --ref give the rules folder inside the commit"
            ) from None
    inside = folder.as_posix().strip("/")
    inside = "" if inside == "." else inside
    if path is not None and path.strip("/") != inside:
        raise ValueError(
            f"the rules folder is given twice, as {rules_dir!r} and --path {path!r}; with --ref give it once"
        )
    return inside


def rules_subdir(repo_path: Path, ref: str, subdir: str | None = None) -> str:
    """The rules folder of ``ref``'s tree, as :func:`tree_sources` reads it (``""``: the root)."""
    repo = open_repository(repo_path)
    return _subtree(resolve_commit(repo, ref), subdir)[1]


def _walk(repo: pygit2.Repository, tree: pygit2.Tree, prefix: str = "") -> list[tuple[str, pygit2.Object]]:
    out = []
    for entry in tree:
        rel = f"{prefix}{entry.name}"
        if entry.type_str == "tree":
            if entry.name in ("node_modules",) or (
                entry.name.startswith((".", "_"))
                and entry.name not in (".cursor", ".github", ".clinerules", ".windsurf")
            ):
                continue
            out.extend(_walk(repo, repo[entry.id], f"{rel}/"))
        elif entry.type_str == "blob" and path_format(rel):
            out.append((rel, entry))
    return out


_MAX_LINKS = 8


def _tree_source(repo: pygit2.Repository, root: pygit2.Tree, rel: str, path: str, entry: pygit2.Object) -> SourceFile:
    """The rule file at ``path`` of a commit, following a symbolic link inside the commit as the working tree would.

    A link's blob holds its target's path; read as the rule, it gave a file with no directives, so
    the build of a tag quietly lacked a rule that the working-tree build had.
    """
    for _ in range(_MAX_LINKS):
        blob = repo[entry.id]
        if entry.filemode != pygit2.enums.FileMode.LINK:
            return source_from_bytes(rel, blob.data)
        target = blob.data.decode("utf-8", errors="replace")
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if target.startswith("/") or resolved == ".." or resolved.startswith("../"):
            return unread_source(
                rel, f"is a link to {target}, outside the repository; a build from a ref reads only the commit's files"
            )
        try:
            entry = root[resolved]
        except KeyError:
            return unread_source(rel, f"is a broken link (to {target}) in this commit; fix the link or remove it")
        if entry.type_str != "blob":
            return unread_source(rel, f"is a link to the folder {target}; link a file, or remove the link")
        path = resolved
    return unread_source(rel, f"is a link in a chain of more than {_MAX_LINKS} links; link the file itself")


def _tag_for(repo: pygit2.Repository, commit: pygit2.Commit) -> str:
    for name in sorted(repo.references):
        if name.startswith("refs/tags/") and repo.references[name].peel(pygit2.Commit).id == commit.id:
            return name.removeprefix("refs/tags/")
    return ""


def tree_sources(
    repo_path: Path, ref: str, subdir: str | None = None
) -> tuple[list[SourceFile], SourceInfo, dict[str, Change]]:
    """Rule files of ``ref``'s tree (below ``subdir``: default ``rules/`` when present, else the root).

    Returns the files in path order, the facts for the manifest, and each file's last change.
    """
    repo = open_repository(repo_path)
    commit = resolve_commit(repo, ref)
    tree, sub = _subtree(commit, subdir)
    blobs = sorted(_walk(repo, tree), key=lambda pair: pair[0])
    sources = [_tree_source(repo, commit.tree, rel, f"{sub}/{rel}" if sub else rel, entry) for rel, entry in blobs]
    remote = next((r.url for r in repo.remotes if r.name == "origin"), None)
    info = SourceInfo(
        repository=_clean_url(remote) if remote else "",
        commit=str(commit.id),
        ref=ref,
        path=sub,
        dirty=False,
        time=_iso(commit),
        tag=_tag_for(repo, commit),
        tree=str(tree.id),
    )
    prefix = f"{sub}/" if sub else ""
    changes = last_changes(repo, commit, {f"{prefix}{rel}": rel for rel, _ in blobs})
    return sources, info, changes


def last_changes(repo: pygit2.Repository, head: pygit2.Commit, wanted: dict[str, str]) -> dict[str, Change]:
    """For each repository path in ``wanted`` (mapped to its rules-relative path), its last change.

    A path not in ``head``'s tree (a file never committed, or deleted and made again in the working
    tree) gets none: no commit of this history made it what it is.
    """
    pending = {path: rel for path, rel in wanted.items() if path in head.tree}
    found: dict[str, Change] = {}
    for count, commit in enumerate(repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL | pygit2.enums.SortMode.TIME)):
        if not pending or count >= HISTORY_LIMIT:
            break
        if commit.parents:
            diff = repo.diff(commit.parents[0], commit)
            diff.find_similar()
            touched = {d.new_file.path: d.old_file.path for d in diff.deltas}
        else:  # a root commit added what it holds (a history can have several roots)
            touched = {path: path for path in pending if path in commit.tree}
        for new_path, old_path in touched.items():
            rel = pending.pop(new_path, None)
            if rel is None:
                continue
            found[rel] = Change(str(commit.id), _iso(commit), commit.author.name)
            del old_path  # a rename is itself the last change; earlier history is not needed
    return found


def working_tree_changes(rules_dir: Path, rels: list[str]) -> dict[str, Change]:
    """Last changes (from HEAD's history) of files in a working-tree rules folder; empty outside git."""
    try:
        repo = open_repository(rules_dir)
    except (ConfigError, pygit2.GitError):
        return {}
    if repo.head_is_unborn or repo.workdir is None:
        return {}
    sub = Path(rules_dir).resolve().relative_to(Path(repo.workdir).resolve()).as_posix()
    prefix = "" if sub == "." else f"{sub}/"
    return last_changes(repo, repo.head.peel(pygit2.Commit), {f"{prefix}{rel}": rel for rel in rels})
