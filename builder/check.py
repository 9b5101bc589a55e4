"""Run ``ruledex check`` on a rules folder: parse every file, lint, optionally test example tasks.

The I/O edge around :mod:`.lint`: reads files, collects every parse error (all of a file's
schema errors; broken YAML stops that file at once), and, with ``examples``, builds a throwaway
index in a temp folder (or uses the given one) to check that each rule's example tasks retrieve
it in the top 3.
"""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

from .adapters import SkipFile, assign_ids, parse_foreign
from .build import build
from .embed import load_model
from .gitsource import tree_sources
from .lint import Finding, from_rule_error, lint
from .source import RULEDEX, read_sources, rules_folder, split_generated
from .workers import Workers, parse_ruledex_file, workers_for

EXAMPLE_DEPTH = 3


def example_findings(
    index_path: Path, texts: dict[str, str], strict: bool, written: dict[str, tuple[str, ...]] | None = None
) -> list[Finding]:
    """Each rule's example tasks must name that rule among the first three documents cited.

    The index matches a task against every rule's example tasks too, so each example is asked with
    itself left out: the rule's content and its other examples must find it. A rule that always
    applies is in every answer whatever the task, so its examples pass.

    ``written``: each file's example tasks as the files say them, when the index was given rather
    than built here; a rule whose index holds other ones is reported, since an index built before
    the examples changed checks the old ones and passes the new ones unseen.
    """
    from ruledex.reader.evaluate import ruledex_ranking
    from ruledex.reader.index import Index
    from ruledex.reader.query import query_directives

    from .lint import _key_line

    out = []
    with Index(index_path) as index:
        held = {rule.path: tuple(rule.examples) for rule in index.rules()}
        for path, examples in sorted((written or {}).items()):
            if examples != held.get(path, ()):
                out.append(
                    Finding(
                        path,
                        _key_line(texts.get(path, ""), path, "examples"),
                        1,
                        "warning",
                        f"{index_path} holds other example tasks for this rule than the file (built before they "
                        "changed?); rebuild it, or leave out --index to check these",
                        "stale-index",
                    )
                )
        for number, rule in enumerate(index.rules()):
            if rule.always_apply:
                continue
            line = _key_line(texts.get(rule.path, ""), rule.path, "examples")
            for k, task in enumerate(rule.examples):
                with index.leaving_out_example(index.example_row(number, k)):
                    top = ruledex_ranking(query_directives(index, task), index)[:EXAMPLE_DEPTH]
                if rule.path not in top:
                    got = ", ".join(top) or "nothing"
                    out.append(
                        Finding(
                            rule.path,
                            line,
                            1,
                            "error" if strict else "warning",
                            f"example task {task!r} does not retrieve this rule in the top {EXAMPLE_DEPTH} (got {got})",
                            "example-miss",
                        )
                    )
    return out


def check(
    rules_dir: Path | None,
    *,
    examples: bool = False,
    index_path: Path | None = None,
    strict: bool = False,
    today: dt.date | None = None,
    repo: Path | None = None,
    ref: str | None = None,
    subpath: str | None = None,
    jobs: int = 1,
) -> list[Finding]:
    """All findings for a rules folder, or for the rules of a git ref (``repo``/``ref``), by path and line.

    ``jobs``: at most this many processes parse the ruledex documents, as in :func:`build`.
    """
    today = today or dt.date.today()
    from_git = ref is not None or repo is not None
    if from_git:
        sources = tree_sources(Path(repo or "."), ref or "HEAD", subpath)[0]
    else:
        sources = read_sources(rules_folder(rules_dir or "rules"))
    sources = split_generated(sources)[0]  # ruledex export's output: not a source to lint
    findings: list[Finding] = []
    parsed = []
    seen: dict[str, str] = {}
    foreign = []
    todo = [s for s in sources if not s.problem and s.format == RULEDEX]
    with Workers(workers_for(sum(len(s.text) for s in todo), len(todo), jobs)) as workers:  # as build parses
        results = iter(workers.map(parse_ruledex_file, todo))
    for source in sources:
        if source.problem:
            level = "error" if source.format == RULEDEX else "warning"
            findings.append(Finding(source.path, source.line, 1, level, f"file: {source.problem}", "file"))
            continue
        if source.format != RULEDEX:
            foreign.append(source)
            continue
        doc, errors, warnings = next(results)
        findings.extend(map(from_rule_error, errors))
        findings.extend(_warning(w) for w in warnings)  # unknown fields too, beside the errors: one run shows all
        if doc is None:
            continue
        if doc.rule.id in seen:
            findings.append(
                Finding(
                    source.path,
                    1,
                    1,
                    "error",
                    f"rule id {doc.rule.id!r} is also used by {{related}}",
                    "duplicate-id",
                    related=seen[doc.rule.id],
                )
            )
        seen.setdefault(doc.rule.id, source.path)
        parsed.append((doc, source.text))
    # other tools' files (Cursor, AGENTS.md, Copilot ...) are read leniently, as the build does
    ids, renamed = assign_ids([s.path for s in foreign], set(seen))
    findings.extend(_warning(w) for w in renamed)
    for source in foreign:
        try:
            doc = parse_foreign(source, ids[source.path])
        except SkipFile as skip:
            findings.append(_warning(str(skip)))
            continue
        except Exception as exc:
            findings.append(
                Finding(
                    source.path, 1, 1, "warning", f"could not be read ({type(exc).__name__}: {exc}); skipped", "file"
                )
            )
            continue
        findings.extend(_warning(w) for w in doc.warnings)
        parsed.append((doc, source.text))
    findings.extend(lint(parsed, load_model().encoder() if parsed else None, today, strict=strict))
    if examples and parsed and not any(f.level == "error" and f.code in ("schema", "duplicate-id") for f in findings):
        texts = {doc.rule.path: text for doc, text in parsed}
        if index_path is not None:
            written = {doc.rule.path: tuple(doc.rule.examples) for doc, _ in parsed}
            findings.extend(example_findings(index_path, texts, strict, written))
        else:
            with tempfile.TemporaryDirectory(prefix="ruledex-check-") as tmp:
                out = Path(tmp) / "check.ruledex"
                if from_git:
                    built = build(None, out, repo=Path(repo or "."), ref=ref or "HEAD", subpath=subpath, jobs=jobs).path
                else:
                    built = build(Path(rules_dir or "rules"), out, jobs=jobs).path
                findings.extend(example_findings(built, texts, strict))
    return sorted(findings, key=lambda f: (f.path, f.line, f.col, f.code, f.message))


def _warning(text: str) -> Finding:
    """A builder warning (``path:line: message``) as a finding."""
    path, line, col = _split_warning(text)
    return Finding(path, line, col, "warning", _warning_text(text), "schema")


def _split_warning(warning: str) -> tuple[str, int, int]:
    """``path:line: ...`` -> (path, line, 1)."""
    path, line, _rest = [*warning.split(":", 2), "", ""][:3]
    return path, int(line) if line.strip().isdigit() else 1, 1


def _warning_text(warning: str) -> str:
    parts = warning.split(":", 2)
    return parts[2].strip() if len(parts) == 3 else warning
