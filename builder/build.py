"""Compile a folder of rule documents into one index file: parse -> embed -> index -> write.

Everything that reaches bytes is sorted or ordered by path, and the build time comes from the
commit, so the same rules and model give a byte-identical file.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

import numpy as np

from ruledex.reader import format as fmt
from ruledex.reader.errors import ConfigError, RuleError, RuleErrors
from ruledex.reader.records import DirectiveRecord, RuleRecord
from ruledex.reader.text import KEYWORD_TOKENIZER, keywords
from ruledex.reader.vocab import LAYERS, SEVERITIES, TOPICS

from .adapters import assign_ids
from .embed import (
    IDF_FORMULA,
    PieceTokens,
    StoredModel,
    embed_texts,
    embed_token_ids,
    idf_from_ids,
    load_model,
    weighted,
)
from .fingerprint import code_fingerprint
from .gitsource import Change, tree_sources, working_tree_changes
from .keywords import (
    BM25_B,
    BM25_K1,
    DOCUMENT_SEPARATOR,
    RULE_BM25_K1,
    build_keyword_index,
    document_parts,
    rule_document,
    written_text,
)
from .lint import secrets_in
from .parse import ParsedDocument, normalise_newlines
from .source import (
    RULEDEX,
    SourceFile,
    SourceInfo,
    git_info,
    read_sources,
    rules_folder,
    shown_path,
    split_generated,
)
from .tables import detection_tables, directive_tables, pack_records, rule_tables
from .workers import Workers, parse_foreign_file, parse_ruledex_file, workers_for

Progress = Callable[[str], None]


FILE_WARNINGS = "file_warnings"
"""Manifest key: each rule file's parse warnings, so a build that reuses the file (``--previous``)
reports them as a full build does, and the two stay byte-identical."""


def tool_version() -> str:
    """The installed ruledex version (recorded in every manifest)."""
    try:
        return version("ruledex")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0+unknown"


@dataclass
class BuildResult:
    """What a build produced: the file, its hash, counts and warnings."""

    path: Path
    sha256: str
    rules: int
    sections: int
    directives: int
    seconds: float
    warnings: list[str] = field(default_factory=list)
    files: int = 0
    formats: dict[str, int] = field(default_factory=dict)
    inferred_severity: int = 0
    reused: int = 0
    generated: int = 0
    """Files skipped because ``ruledex export`` wrote them (see :func:`~ruledex.builder.source.split_generated`)."""

    def summary(self) -> dict[str, Any]:
        """JSON-friendly summary (``ruledex build --json``)."""
        return {
            "path": str(self.path),
            "sha256": self.sha256,
            "rules": self.rules,
            "sections": self.sections,
            "directives": self.directives,
            "seconds": round(self.seconds, 3),
            "files": self.files,
            "formats": dict(sorted(self.formats.items())),
            "inferred_severity": self.inferred_severity,
            "warnings": self.warnings,
            "reused": self.reused,
            "generated_skipped": self.generated,
        }


def parse_all(
    sources: list[SourceFile],
    cache: dict[tuple[str, str], ParsedDocument] | None = None,
    jobs: int = 1,
    progress: Progress | None = None,
) -> tuple[list[ParsedDocument], list[str], int]:
    """Parse every file, collecting every error before failing; duplicate ids are errors.

    ruledex documents go to the strict parser and their problems are errors. Foreign files
    (Cursor, AGENTS.md, Copilot ...) go to the adapters; one that cannot be read is skipped with
    a warning naming it, and the build goes on. Files are parsed on up to ``jobs`` worker
    processes when there is enough text (:mod:`~ruledex.builder.workers`); the result and the
    order of the warnings are the same either way.
    """
    cache = cache or {}
    parsed: list[ParsedDocument] = []
    errors: list[RuleError] = []
    warnings: list[str] = []
    foreign: list[SourceFile] = []
    reused = 0
    # in source order: a file to parse, a reused document, or an unreadable file's error or warning
    plan: list[SourceFile | ParsedDocument | RuleError | str] = []
    for source in sources:
        if source.problem:
            if source.format == RULEDEX:
                plan.append(RuleError(source.path, source.line, "file", source.problem))
            else:
                plan.append(f"{source.path}:{source.line}: file: {source.problem}; file skipped")
            continue
        hit = cache.get((source.path, source.blob))
        if hit is not None and hit.rule.format == source.format == RULEDEX:
            plan.append(hit)
        elif source.format != RULEDEX:
            foreign.append(source)
        else:
            plan.append(source)
    todo = [step for step in plan if isinstance(step, SourceFile)]
    # a cached foreign file is reused unless its id changed (rare): an incremental build's few changed
    # files stay in this process, as its ruledex documents do, rather than starting workers for them
    fresh = [*todo, *(s for s in foreign if (s.path, s.blob) not in cache)]
    count = workers_for(sum(len(s.text) for s in fresh), len(fresh), jobs)
    if count and progress:
        progress(f"parsing {len(fresh)} files on {count} processes")
    with Workers(count, progress) as workers:
        results = iter(workers.map(parse_ruledex_file, todo))
        for step in plan:
            if isinstance(step, SourceFile):
                doc, failed, said = next(results)
                errors.extend(failed)
                warnings.extend(said)
                if doc is not None:
                    parsed.append(doc)
            elif isinstance(step, ParsedDocument):
                parsed.append(step)
                warnings.extend(step.warnings)
                reused += 1
            elif isinstance(step, RuleError):
                errors.append(step)
            else:
                warnings.append(step)
        ids, renamed = assign_ids([s.path for s in foreign], {d.rule.id for d in parsed})
        warnings.extend(renamed)
        foreign_plan: list[ParsedDocument | SourceFile] = []
        for source in foreign:  # a foreign file's id depends on the other files: reused only if it is the same
            hit = cache.get((source.path, source.blob))
            foreign_plan.append(hit if hit is not None and hit.rule.id == ids[source.path] else source)
        foreign_todo = [step for step in foreign_plan if isinstance(step, SourceFile)]
        foreign_results = iter(workers.map(parse_foreign_file, [(s, ids[s.path]) for s in foreign_todo]))
        for step in foreign_plan:
            if isinstance(step, SourceFile):
                doc, said = next(foreign_results)
                warnings.extend(said)
                if doc is not None:
                    parsed.append(doc)
            else:
                parsed.append(step)
                warnings.extend(step.warnings)
                reused += 1
    seen: dict[str, str] = {}
    for doc in parsed:
        if doc.rule.id in seen:
            errors.append(
                RuleError(
                    doc.rule.path,
                    1,
                    "id",
                    f"duplicate rule id {doc.rule.id!r}, also used by {seen[doc.rule.id]}; give one of them another id",
                )
            )
        seen[doc.rule.id] = doc.rule.path
    if errors:
        raise RuleErrors(errors, warnings)  # a failed build says its warnings too, as check does
    return parsed, warnings, reused


def describe_sources(sources: list[SourceFile]) -> str:
    """``17 rule documents`` or ``80 rule files (73 cursor, 7 markdown)`` for the progress log."""
    formats = Counter(s.format for s in sources)
    if set(formats) <= {RULEDEX}:
        return f"{len(sources)} rule documents"
    parts = ", ".join(f"{n} {name}" for name, n in sorted(formats.items(), key=lambda kv: (-kv[1], kv[0])))
    return f"{len(sources)} rule files ({parts})"


def assemble(parsed: list[ParsedDocument]) -> tuple[list[RuleRecord], list[DirectiveRecord]]:
    """Number rules and directives in path order and link them."""
    rules, directives = [], []
    for index, doc in enumerate(sorted(parsed, key=lambda d: d.rule.path)):
        first = len(directives)
        # a reused file's directives usually keep their number: no copy (10k of them cost 0.1 s)
        directives.extend(d if d.rule == index else replace(d, rule=index) for d in doc.directives)
        rules.append(replace(doc.rule, first_directive=first, directive_count=len(doc.directives)))
    return rules, directives


EMBEDDING_SEPARATOR = " "


def embedding_parts(directive: DirectiveRecord) -> list[str]:
    """What a directive's vector encodes: its section and its instruction (joined by :data:`EMBEDDING_SEPARATOR`)."""
    return [*directive.section, directive.text]


def compile_index(
    rules: list[RuleRecord],
    directives: list[DirectiveRecord],
    model: StoredModel,
    source: SourceInfo,
    name: str,
    written: dict[str, str] | None = None,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """Compute every section and the manifest for the given records (pure: no I/O).

    ``written`` maps a rule's path to its source file's text, searched as part of the rule's
    whole document (:func:`~ruledex.builder.keywords.rule_document`).
    """
    text_parts = [embedding_parts(d) for d in directives]
    doc_parts = [document_parts(rules[d.rule], d) for d in directives]
    documents = [DOCUMENT_SEPARATOR.join(parts) for parts in doc_parts]
    pieces = PieceTokens(model.encoder(), (piece for parts in (*text_parts, *doc_parts) for piece in parts))
    idf = idf_from_ids(len(model.scales), pieces.token_ids(doc_parts, DOCUMENT_SEPARATOR))
    stored = weighted(model, idf) if documents else model
    encoder = stored.encoder()
    vectors = embed_token_ids(encoder, pieces.token_ids(text_parts, EMBEDDING_SEPARATOR))
    members: list[list[DirectiveRecord]] = [[] for _ in rules]
    for d in directives:
        members[d.rule].append(d)
    written = written or {}
    rule_docs = [
        rule_document(r, ds, written_text(written[r.path], r.path) if r.path in written else "")
        for r, ds in zip(rules, members, strict=True)
    ]
    document_terms = [keywords(doc) for doc in documents]
    kw = build_keyword_index(document_terms, rule_docs)
    wta_texts = [(i, phrase) for i, r in enumerate(rules) for phrase in r.when_to_apply]
    wta_vectors = embed_texts(encoder, [p for _, p in wta_texts])
    example_texts = [(i, task) for i, r in enumerate(rules) for task in r.examples]
    example_vectors = embed_texts(encoder, [t for _, t in example_texts])
    rule_bytes, rule_offsets = pack_records([r.to_row() for r in rules])
    dir_bytes, dir_offsets = pack_records([d.to_row() for d in directives])
    arrays: dict[str, np.ndarray] = {
        "directive_vectors": vectors.astype("<f4"),
        "token_vectors": model.vectors.astype("|i1", copy=False),
        "token_scales": stored.scales.astype("<f4", copy=False),
        "tokenizer": np.frombuffer(model.tokenizer_json.encode(), dtype="|u1"),
        "kw_terms": kw.terms,
        "kw_term_offsets": kw.term_offsets,
        "kw_indptr": kw.directives.indptr,
        "kw_postings": kw.directives.postings,
        "kw_tf": kw.directives.tf,
        "kw_doc_len": kw.directives.doc_len,
        "rule_kw_indptr": kw.rules.indptr,
        "rule_kw_postings": kw.rules.postings,
        "rule_kw_tf": kw.rules.tf,
        "rule_kw_doc_len": kw.rules.doc_len,
        **directive_tables(directives),
        **rule_tables(rules),
        "wta_vectors": wta_vectors.astype("<f4"),
        "wta_rule": np.array([i for i, _ in wta_texts], dtype="<u4"),
        "example_vectors": example_vectors.astype("<f4"),
        "example_rule": np.array([i for i, _ in example_texts], dtype="<u4"),
        **detection_tables(directives, document_terms, vectors),
        "rule_records": rule_bytes,
        "rule_offsets": rule_offsets,
        "directive_records": dir_bytes,
        "directive_offsets": dir_offsets,
    }
    manifest = {
        "name": name,
        "version": source.version,
        "tool": {"name": "ruledex", "version": tool_version(), "code": code_fingerprint()},
        "source": {
            "repository": source.repository,
            "commit": source.commit,
            "ref": source.ref,
            "path": source.path,
            "dirty": source.dirty,
            "tree": source.tree,
        },
        "build_time": source.time or None,
        "model": {
            "name": model.name,
            "hash": model.hash,
            "vocab_size": int(model.vectors.shape[0]),
            "token_weighting": {"method": "idf", "formula": IDF_FORMULA, "documents": "directives"}
            if documents
            else None,
            **model.manifest_params(),
        },
        "keywords": {
            "tokenizer": KEYWORD_TOKENIZER,
            "k1": BM25_K1,
            "rule_k1": RULE_BM25_K1,
            "b": BM25_B,
            "avgdl": kw.avgdl,
            "terms": int(len(kw.term_offsets) - 1),
        },
        "counts": {
            "rules": len(rules),
            "sections": sum(len(r.sections) for r in rules),
            "directives": len(directives),
            "when_to_apply": len(wta_texts),
            "examples": len(example_texts),
        },
        "vocab": {"layers": list(LAYERS), "topics": list(TOPICS), "severities": list(SEVERITIES)},
    }
    return manifest, arrays


NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""An index name: it becomes part of a file name (``dist/<name>-<version>.ruledex``), never a path."""


def check_name(name: str | None) -> None:
    """Refuse an index name that is not a plain file-name part (``../x``, ``a/b``, empty)."""
    if name is not None and not NAME_PATTERN.fullmatch(name):
        raise ConfigError(
            f"--name {name!r}: use letters, digits, '.', '_' and '-', starting with a letter or digit "
            "(it becomes the file name dist/<name>-<version>.ruledex)"
        )


def default_output(name: str, source: SourceInfo) -> Path:
    """``dist/<name>-<version>.ruledex`` in the current folder."""
    return Path("dist") / f"{name}-{source.version}{fmt.SUFFIX}"


def reusable(previous: Path, model: StoredModel) -> tuple[dict[tuple[str, str], ParsedDocument], str]:
    """Parsed documents of a previous index, keyed by (path, blob id), when they can be reused.

    Reuse is safe when the previous index was made by this ruledex version with the same model:
    the same bytes then parse to the same records. Returns the cache and, when it is empty, why.
    """
    from ruledex.reader.errors import ArtifactError
    from ruledex.reader.index import Index

    try:
        old = Index(Path(previous))
    except ArtifactError as exc:  # e.g. an index of an older format: build in full rather than fail
        return {}, f"it cannot be read ({exc})"
    with old:
        if old.manifest.get("tool", {}).get("version") != tool_version():
            return (
                {},
                f"{previous} was built by ruledex {old.manifest.get('tool', {}).get('version')}, this is {tool_version()}",
            )
        if old.manifest.get("tool", {}).get("code") != code_fingerprint():
            return {}, f"{previous} was built by other ruledex code (a development version with the same number)"
        if old.manifest.get("model", {}).get("hash") != model.hash:
            return {}, f"{previous} was built with another model"
        cache: dict[tuple[str, str], ParsedDocument] = {}
        noted = old.manifest.get(FILE_WARNINGS) or {}  # a reused file's warnings are said again
        for i in range(old.n_rules):
            rule = old.rule(i)
            if not rule.blob:
                continue
            directives = old.directives_of(i)  # numbered as before: assemble renumbers them if need be
            fresh = replace(rule, first_directive=0, directive_count=0, last_updated="", last_commit="", last_author="")
            cache[(rule.path, rule.blob)] = ParsedDocument(fresh, directives, list(noted.get(rule.path, [])))
    return cache, ""


def attach_sources(
    parsed: list[ParsedDocument], sources: list[SourceFile], changes: dict[str, Change]
) -> list[ParsedDocument]:
    """Give each rule its content's blob id and its last change from git history."""
    blobs = {s.path: s.blob for s in sources}
    out = []
    for doc in parsed:
        change = changes.get(doc.rule.path)
        rule = replace(
            doc.rule,
            blob=blobs.get(doc.rule.path, ""),
            last_updated=change.date if change else "",
            last_commit=change.commit if change else "",
            last_author=change.author if change else "",
        )
        out.append(ParsedDocument(rule, doc.directives, doc.warnings))
    return out


def build(
    rules_dir: Path | None,
    out: Path | None = None,
    *,
    model_name: str | None = None,
    name: str | None = None,
    progress: Progress | None = None,
    repo: Path | None = None,
    ref: str | None = None,
    subpath: str | None = None,
    previous: Path | None = None,
    jobs: int = 1,
) -> BuildResult:
    """Build an index and write it atomically with its ``.sha256`` sidecar.

    From a working-tree folder (``rules_dir``), or with ``repo`` and ``ref`` straight from a
    commit's tree (``subpath``: default ``rules/`` when the tree has one). ``previous`` reuses the
    parsed records of files whose content did not change; the result is byte-identical to a full
    build (vectors are recomputed: IDF weights are index-wide and cheap next to parsing).
    ``jobs``: at most this many processes parse the files (see :mod:`~ruledex.builder.workers`);
    the index is the same for any number. The CLI passes one per core; a script that passes more
    than 1 must guard its entry point (``if __name__ == "__main__":``), as worker processes are
    spawned and import the script again.
    """
    say = progress or (lambda _msg: None)
    started = time.perf_counter()
    check_name(name)
    if out is not None:
        fmt.check_index_output(Path(out))  # before the work, and before it could overwrite a rule file
    if ref is not None or repo is not None:
        sources, source, changes = tree_sources(Path(repo or "."), ref or "HEAD", subpath)
        where = f"{ref or 'HEAD'}:{source.path or '/'} ({source.commit[:12]})"
        folder = source.path  # errors and warnings name files by their path in the repository
    else:
        rules_dir = rules_folder(rules_dir)
        folder = rules_dir.as_posix()  # ... or as the user would open them, after the folder they gave
        sources = read_sources(rules_dir)
        source = git_info(rules_dir)
        changes = working_tree_changes(rules_dir, [s.path for s in sources])
        where = str(rules_dir)
    sources, generated = split_generated(sources)
    say(f"found {describe_sources(sources)} in {where}")
    if generated:
        say(f"skipped {len(generated)} file(s) generated by ruledex export: {', '.join(generated)}")
    say("loading embedding model" + (f" {model_name}" if model_name else " (bundled, offline)"))
    model = load_model(model_name)
    cache, why = reusable(previous, model) if previous else ({}, "")
    if why:
        say(f"not reusing {previous}: {why}")
    # a secret in a rule file would be served to every assistant: say so (never echoing it), as check does
    secrets = [f.text(folder) for s in sources if not s.problem for f in secrets_in(s.path, normalise_newlines(s.text))]
    try:
        parsed, warnings, reused = parse_all(sources, cache, jobs, say)
    except RuleErrors as exc:
        shown = [shown_path(folder, w) for w in exc.warnings] + secrets
        raise RuleErrors([replace(e, path=shown_path(folder, e.path)) for e in exc.errors], shown) from None
    warnings = [shown_path(folder, w) for w in warnings] + secrets  # each begins with its file's path
    if previous and not why:
        say(f"reused {reused} of {len(sources)} files from {previous}")
    rules, directives = assemble(attach_sources(parsed, sources, changes))
    inferred = sum("severity" in d.inferred for d in directives)
    say(
        f"parsed {len(rules)} rules, {len(directives)} directives"
        + (f" ({inferred} with severity inferred from wording)" if inferred else "")
    )
    if not directives:  # a valid index (queries answer "empty"), but rarely what was meant
        where_text = where if sources else f"{where} (no *.md, *.mdc or other rule files found)"
        warnings.append(f"{where_text}: no directives; the index will be empty")
    name = name or source.name
    out = Path(out) if out else default_output(name, source)
    say(f"embedding and indexing {len(directives)} directives")
    texts = {s.path: s.text for s in sources if not s.problem}
    manifest, arrays = compile_index(rules, directives, model, source, name, texts)
    noted = {doc.rule.path: doc.warnings for doc in parsed if doc.warnings}
    if noted:
        manifest[FILE_WARNINGS] = noted
    sha = fmt.write(out, manifest, arrays)
    say(f"wrote {out} ({out.stat().st_size:,} bytes)")
    return BuildResult(
        path=out,
        sha256=sha,
        rules=len(rules),
        sections=manifest["counts"]["sections"],
        directives=len(directives),
        seconds=time.perf_counter() - started,
        warnings=warnings,
        files=len(sources),
        formats=dict(Counter(r.format for r in rules)),
        inferred_severity=inferred,
        reused=reused,
        generated=len(generated),
    )
