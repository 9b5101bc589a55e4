"""``query_directives``: detect -> retrieve -> rank -> format, with validated options.

This is the reader's main entry point, shared by the CLI and the MCP server. Options are checked
here and a :class:`ValueError` names the field and the allowed values, so a bad request becomes a
clear error, never a crash. No match and an empty index are answers with a diagnostic.
"""

from __future__ import annotations

import datetime as dt
import operator
import time
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import numpy as np

from .detect import DETECTION_WEIGHTS, MODES, Detection, DetectionWeights, detect, expand
from .errors import shown
from .features import features, in_rules, relative, topic_strengths
from .globs import matching_rules
from .index import Index
from .llm import LLMAnswer, LLMConfig, llm_detect, llm_note, merge
from .options import QueryOptions, clamp_notes
from .paths import PathEvidence, edited_files
from .rank import RankWeights, diverse_head, near_duplicates, order, ranking_for, score
from .render import Item, Rendered, render
from .retrieve import Retrieval, retrieve
from .task_model import TaskModel
from .text import keywords
from .vocab import ANY_LAYER, LAYERS, SEVERITIES, TOPICS, names_from_mask, topic_mask

MAX_TASK_CHARS = 8000
"""Longer task descriptions are cut here (and the diagnostics say so)."""

T = TypeVar("T")

SEMANTIC_MIN = 0.45
"""A candidate with no keyword in common with the task needs at least this cosine to count as a match."""


def check_mode(mode: str | None) -> str | None:
    """Validate ``modeSlug``: one of :data:`MODES`, or None (an empty string is refused, as the schema's enum says)."""
    if mode is None:
        return None
    if mode not in MODES:
        raise ValueError(f"modeSlug: unknown mode {shown(mode)}; allowed: {', '.join(MODES)}, or leave modeSlug out")
    return mode


FEEDBACK_DEPTH = 20
"""How many of the best-matching directives vote on the task's layer and topics."""

FEEDBACK_WEIGHT = 2.5
"""Votes of the strongest layer/topic from feedback, on the dictionaries' scale (one word = 1)."""


def feedback_votes(index: Index, got: Retrieval) -> tuple[dict[str, float], dict[str, float]]:
    """Layer and topic votes from the best candidates (lexical and semantic evidence combined).

    Each name's votes are its voters' weights added voter by voter, best voter first: one numpy
    reduction down the rows of the voters' 0/1 name columns (:attr:`Index.name_bits`) times their
    weights, which adds row after row (a reduction over the rows of a matrix with more than one column
    is not pairwise), so the floats are those of a plain loop over the voters; adding a zero changes
    no sum.
    """
    if not len(got.ids):
        return {}, {}
    evidence = relative(got.bm25) + np.maximum(got.cosine - 0.3, 0.0) * 2.0
    top = np.lexsort((got.ids, -evidence))[:FEEDBACK_DEPTH]
    voters, weights = got.ids[top], evidence[top, None]
    votes = []
    for table, vocab in zip(index.name_bits, (LAYERS, TOPICS), strict=True):
        bits = table[voters]  # voters x names, 0/1 (Index.name_bits)
        sums = np.add.reduce(np.multiply(bits, weights, dtype=np.float64), axis=0).tolist()
        present = np.logical_or.reduce(bits, axis=0).tolist()
        tally = {name: sums[b] for b, name in enumerate(vocab) if present[b] and name != ANY_LAYER}
        peak = max(tally.values(), default=0.0)
        votes.append({k: FEEDBACK_WEIGHT * v / peak for k, v in tally.items()} if peak > 0 else {})
    return votes[0], votes[1]


def detect_in_index(
    index: Index,
    text: str,
    mode: str | None,
    query_vector: np.ndarray | None = None,
    feedback: tuple[dict[str, float], dict[str, float]] | None = None,
    llm_answer: LLMAnswer | None = None,
    *,
    paths: PathEvidence | None = None,
    task_model: TaskModel | bool = True,
    weights: DetectionWeights = DETECTION_WEIGHTS,
) -> Detection:
    """Run detection with the index's learnt tables, retrieval feedback and a local model's answer.

    ``paths`` is what the edited files' paths say (:func:`~ruledex.reader.paths.path_evidence`).
    ``task_model`` and ``weights`` are :func:`detect`'s, for measuring a retrained task model or other weights.
    """
    if query_vector is None and index.n_directives:
        query_vector = index.encoder.encode_one(text)
    if feedback is None and index.n_directives:
        terms = expand(keywords(text))
        feedback = feedback_votes(index, retrieve(index, terms, [1.0] * len(terms), query_vector))
    found = detect(
        text,
        mode,
        query_vector=query_vector,
        layer_vectors=index.layer_vectors,
        topic_vectors=index.topic_vectors,
        learnt=index.learnt_by_term if index.n_directives else None,
        feedback=feedback,
        paths=paths,
        task_model=task_model,
        weights=weights,
        cosine_scale=index.encoder.params.cosine_scale if index.n_directives else 1.0,
    )
    return merge(found, llm_answer)


def _header(det: Detection, layer: str | None, topics: tuple[str, ...], note: str = "") -> str:
    context = f"layer {layer or 'any'}" + (f"; topics {', '.join(topics)}" if topics else "")
    return f"## Project rules for this task\n_{context}{'; ' + note if note else ''}_\n\n"


def _footer(index: Index) -> str:
    """Where the rules came from: index name, version and commit when known."""
    m = index.manifest
    parts = [str(m.get("name") or "rules")]
    if m.get("version") and m.get("version") != "dev":
        parts.append(str(m["version"]))
    if index.commit and index.commit[:12] not in parts[-1]:
        parts.append(f"@ {index.commit[:12]}")
    return f"\n_Source: {' '.join(parts)} (ruledex index)_\n"


@dataclass
class Ranked:
    """One index's ranked candidates for a task, before rendering."""

    index: Index
    det: Detection
    layer: str | None
    topics: tuple[str, ...]
    items: list[Item]
    breakdowns: dict[tuple[str, str], dict[str, float]]
    notes: list[str]
    considered: int
    timings: dict[str, float]
    file_rules: list[str] = field(default_factory=list)
    min_score: float = 0.0
    """Directives scoring below this are left out of the block (the ranking's relative cut)."""
    index_name: str = ""
    always: list[Item] = field(default_factory=list)
    """Every directive of the rules that always apply, rule by rule, MUST first (render shows those
    the ranking did not)."""


SCOPE_BOOST: dict[str, float] = {"global": 0.0, "team": 1.0, "project": 2.0}
"""Added to a directive's score by its rule's scope: a project's own rule outranks an organisation's
rule on the same topic when several indexes are layered."""


def rank_task(
    index: Index,
    task: str,
    mode: str | None,
    opts: QueryOptions,
    weights: RankWeights | None = None,
    index_name: str = "",
    llm_answer: LLMAnswer | None = None,
    paths: PathEvidence | None = None,
) -> Ranked:
    """Detect, retrieve, filter and rank one index's directives for a task (no rendering).

    ``weights`` default to the index's own (:func:`~ruledex.reader.rank.ranking_for`): rules that
    declare their topics rank by what they declare first. ``paths`` is what ``opts.files`` say (read
    once per query, whatever the number of layered indexes).
    """
    timings: dict[str, float] = {}
    notes: list[str] = []
    t0 = time.perf_counter()
    first = first_pass(index, task, opts.files, paths)
    qvec, terms, got, scoped, always = first.vector, first.terms, first.got, first.scoped, index.always_apply_rules
    timings["retrieve"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    det = detect_task(index, task, mode, first, llm_answer, paths)
    layer = opts.layer or det.layer
    topics = tuple(dict.fromkeys([*det.topics, *opts.topicsBias]))
    timings["detect"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    candidate_rules = index.dir_rule[got.ids]
    in_pinned = in_rules(candidate_rules, scoped)  # rules that always apply have their own part of the block
    rule_matched = got.rule_bm25[candidate_rules] > 0 if got.rule_bm25 is not None else False
    # a rule scoped by globs to other files than those edited stays a candidate: setting it aside, as
    # Cursor does, cost 0.024 nDCG@10 with the files a developer would have open (docs/relevance.md);
    # the tied rules' fileMatch and the files' technologies (stackMatch) rank it instead
    lexical = (got.bm25 > 0) | rule_matched
    topical = in_rules(candidate_rules, first.topical)
    keep = lexical | (got.cosine >= SEMANTIC_MIN) | in_pinned | topical
    # the closest by meaning alone is noise, not a match
    if nothing_specific(det, bool(np.count_nonzero(lexical)), opts):
        keep &= in_pinned | topical
    ranking = ranking_for(index.declared_share)
    sure = det.confidence >= ranking.strict_min_confidence
    strict = opts.strictLayer and layer is not None and (bool(opts.layer) or sure)
    if opts.strictLayer and layer is not None and not strict:
        notes.append(
            f"strictLayer relaxed: layer {layer} detected with confidence {det.confidence:.2f}, below this index's "
            f"{ranking.strict_min_confidence:.2f}; used as a boost"
        )
    if strict:
        allowed_layers = (layer,) if opts.layer else det.layers()
        bits = sum(1 << LAYERS.index(name) for name in {*allowed_layers, ANY_LAYER})
        keep &= ((index.dir_layers[got.ids] & bits) > 0) | in_pinned  # the edited file decides, not the layer
    if opts.severityFilter:
        allowed = [SEVERITIES.index(s) for s in opts.severityFilter]
        keep &= np.isin(index.dir_severity[got.ids], allowed)
    got = got.only(keep)
    candidate_rules = candidate_rules[keep]
    items: list[Item] = []
    breakdowns: dict[tuple[str, str], dict[str, float]] = {}
    if len(got.ids):
        weighed = tuple(dict.fromkeys([*det.ranking_topics(), *opts.topicsBias]))
        strengths = topic_strengths(det, weighed, opts.topicsBias)
        trust = 1.0 if opts.layer else det.confidence
        feats = features(
            index,
            got,
            strengths,
            layer,
            qvec,
            set(terms),
            trust=trust,
            scoped=scoped,
            always=always,
            technologies=det.technologies,
            elsewhere=set(index.glob_rules) - scoped if opts.files else None,
        )
        scored = score(feats, weights or ranking.weights)
        positions = order(scored.total, got.ids)
        head = diverse_head(positions, candidate_rules, max(3, opts.maxItems // 2), max(4 * opts.maxItems, 24))
        dupes = set(near_duplicates(index.directive_vectors[got.ids[head]]))
        rows = zip(head.tolist(), got.ids[head].tolist(), scored.total[head].tolist(), strict=True)
        directive_at, rule_at, commit = index.directive, index.rule, index.commit  # bound once: 32 rows a query
        for rank, (pos, directive_id, base) in enumerate(rows):
            directive = directive_at(directive_id)
            if rank in dupes:
                notes.append(f"{directive.id} left out as a near duplicate of a higher-ranked directive")
                continue
            rule = rule_at(directive.rule)
            boost = SCOPE_BOOST.get(rule.scope, 0.0)
            items.append(Item(directive, rule, base + boost, index_name, commit))
            if opts.includeDiagnostics:  # dict rows cost ~7% of a query; only diagnostics show them
                row = scored.row(pos)
                # the scope boost is a part of the citation's score: show it, so the parts add up to it
                total = row.pop("total")
                row["scopeBoost"], row["total"] = boost, round(total + boost, 3)
                breakdowns[(index_name, directive.id)] = row
    timings["rank"] = time.perf_counter() - t0
    if opts.files and not index.glob_rules:
        notes.append(
            "files were given or named in the task, but no rule in this index is tied to file globs: only what "
            "their paths say (layer, topics, technologies) was used"
        )
    matched = sorted(index.rule(i).id for i in scoped)
    best = max((item.score for item in items), default=0.0)
    cut = ranking.relative_cut * best if best > 0 else 0.0
    # as in Cursor, a rule that always applies does so whatever files are being edited, globs or not
    extra = always_items(index, opts, index_name, {it.directive.id: it.score for it in items}) if always else []
    return Ranked(
        index, det, layer, topics, items, breakdowns, notes, len(got.ids), timings, matched, cut, index_name, extra
    )


def nothing_specific(det: Detection, lexical: bool, opts: QueryOptions) -> bool:
    """Whether a task names nothing the index knows: no word in common (``lexical``), no layer or topic, no files.

    Its directives closest by meaning are then noise ("zzzz qqqq" is 0.5 from some directive), so the
    answer is the no-match one: the core rules, or none, with a note saying so.
    """
    return not (lexical or det.layer or det.topics or opts.files or opts.layer)


def always_items(index: Index, opts: QueryOptions, index_name: str, scores: dict[str, float]) -> list[Item]:
    """The directives of the rules that always apply, rule by rule, MUST first, then in document order.

    Each keeps its ranked score when the ranking reached it, else 0; ``severityFilter`` applies.
    """
    allowed = opts.severityFilter
    return [
        Item(d, index.rule(r), scores.get(d.id, 0.0), index_name, index.commit)
        for r, ordered in index.always_apply_order
        for d in ordered
        if not allowed or d.severity in allowed
    ]


@dataclass(frozen=True)
class FirstPass:
    """A task's vector, search terms and candidates: what detection and ranking both start from."""

    vector: np.ndarray
    terms: list[str]
    got: Retrieval
    scoped: set[int]
    """Rules tied by globs to the edited files."""
    topical: set[int] = field(default_factory=set)
    """Rules authoritative for a topic the edited files' paths name."""

    def votes(self, index: Index) -> tuple[dict[str, float], dict[str, float]]:
        """Layer and topic votes of the best candidates (retrieval feedback)."""
        return feedback_votes(index, self.got)


def first_pass(index: Index, task: str, files: tuple[str, ...] = (), paths: PathEvidence | None = None) -> FirstPass:
    """Encode the task and retrieve its candidates (the task's own words count double their synonyms).

    The rules tied by globs to the edited ``files``, and the rules authoritative for the topics their
    ``paths`` name (the testing rule for ``tests/test_orders.py``), bring every directive as candidates:
    "tidy this up" in a test file shares no word with the testing rules.
    """
    qvec = index.encoder.encode_one(task)
    own = keywords(task)
    terms = expand(own)
    n_own = len(dict.fromkeys(own))
    term_weights = [1.0 if i < n_own else 0.5 for i in range(len(terms))]
    got = retrieve(index, terms, term_weights, qvec)
    scoped = matching_rules(index.glob_rules, list(files)) if files else set()
    topical = authoritative_rules(index, tuple(paths.topics)) if paths is not None else set()
    return FirstPass(qvec, terms, _with_rules(index, got, scoped | topical, qvec), scoped, topical)


def authoritative_rules(index: Index, topics: tuple[str, ...]) -> set[int]:
    """The rules authoritative for any of ``topics``."""
    mask = topic_mask(topics)
    return set(np.flatnonzero(index.rule_authority & mask).tolist()) if mask else set()


def detect_task(
    index: Index,
    task: str,
    mode: str | None,
    first: FirstPass,
    llm_answer: LLMAnswer | None = None,
    paths: PathEvidence | None = None,
) -> Detection:
    """How ``query_directives`` reads a task on one index: detection fed by the task's first pass."""
    return detect_in_index(
        index, task, mode, first.vector, feedback=first.votes(index), llm_answer=llm_answer, paths=paths
    )


def lead_detection(detections: list[Detection]) -> Detection:
    """The detection an answer over layered indexes reports: the most confident (the first of equals)."""
    return max(detections, key=lambda det: det.confidence)


def read_task(
    indexes: list[Index],
    task: str,
    mode: str | None = None,
    files: tuple[str, ...] = (),
    paths: PathEvidence | None = None,
    llm_answer: LLMAnswer | None = None,
) -> Detection:
    """What ``query_directives``' diagnostics say a task is about, over every (layered) index.

    ``files`` are the edited files (given and named in the task), ``paths`` what they say. Without a
    directive in any index, the built-in detector alone, as the answer of an empty index says.
    """
    found = [
        detect_task(ix, task, mode, first_pass(ix, task, files, paths), llm_answer, paths)
        for ix in indexes
        if ix.n_directives
    ]
    return lead_detection(found) if found else merge(detect(task, mode, paths=paths), llm_answer)


def _with_rules(index: Index, got: Retrieval, rules: set[int], qvec: np.ndarray) -> Retrieval:
    """Add every directive of ``rules`` (tied to the edited files) to the candidates, ids ascending."""
    if not rules:
        return got
    wanted = np.concatenate([np.asarray(index.rule_directive_ids(r)) for r in sorted(rules)])
    extra = np.setdiff1d(wanted, got.ids).astype(got.ids.dtype)
    if not len(extra):
        return got
    ids = np.concatenate([got.ids, extra])
    bm25 = np.concatenate([got.bm25, np.zeros(len(extra), np.float32)])
    cosine = np.concatenate([got.cosine, index.cosines(index.directive_vectors[extra], qvec)])
    order_ = np.argsort(ids, kind="stable")
    return replace(got, ids=ids[order_], bm25=bm25[order_], cosine=cosine[order_])


def _prepare(
    task: object, mode: str | None, options: QueryOptions | dict[str, Any] | None
) -> tuple[str, str | None, QueryOptions, list[str]]:
    """Validate the request; truncate an oversized task (and say so)."""
    opts = options if isinstance(options, QueryOptions) else QueryOptions.from_dict(options)
    mode = check_mode(mode)
    if not isinstance(task, str) or not task.strip():
        raise ValueError("taskDescription: must be a non-empty string describing the task")
    notes = [] if isinstance(options, QueryOptions) else clamp_notes(options)
    if len(task) > MAX_TASK_CHARS:
        notes.append(f"taskDescription truncated from {len(task)} to {MAX_TASK_CHARS} characters")
        task = task[:MAX_TASK_CHARS]
    return task, mode, opts, notes


def query_directives(
    index: Index,
    task: str,
    mode: str | None = None,
    options: QueryOptions | dict[str, Any] | None = None,
    *,
    weights: RankWeights | None = None,
    llm: LLMConfig | None = None,
) -> dict[str, Any]:
    """Answer a task with the directives that matter: ``{context_block, citations, diagnostics}``."""
    return query_indexes([index], task, mode, options, weights=weights, llm=llm)


def index_names(indexes: list[Index]) -> list[str]:
    """What citations, ``list_rules`` and ``get_rules`` call each layered index; '' for a single index.

    Each index's build name; where several share one (every build is called ``rules`` unless named),
    those take their file stems, and names still equal get ``-2``, ``-3`` in the order given.
    """
    if len(indexes) < 2:
        return [""] * len(indexes)
    built = [str(ix.manifest.get("name") or ix.path.stem) for ix in indexes]
    clashing = {name for name in built if built.count(name) > 1}
    return _numbered([ix.path.stem if name in clashing else name for ix, name in zip(indexes, built, strict=True)])


def _numbered(names: list[str]) -> list[str]:
    """``names`` made distinct: a repeated name gets ``-2``, ``-3`` … (never one already taken)."""
    taken: set[str] = set()
    out = []
    for name in names:
        unique, n = name, 1
        while unique in taken:
            n += 1
            unique = f"{name}-{n}"
        taken.add(unique)
        out.append(unique)
    return out


def query_indexes(
    indexes: list[Index],
    task: str,
    mode: str | None = None,
    options: QueryOptions | dict[str, Any] | None = None,
    *,
    weights: RankWeights | None = None,
    llm: LLMConfig | None = None,
) -> dict[str, Any]:
    """Answer from several layered indexes at once (organisation, team, project), or from one.

    Each index is ranked on its own; the candidates are merged by score (with the scope boost), and
    with more than one index every citation names the index it came from.
    """
    started = time.perf_counter()
    task, mode, opts, notes = _prepare(task, mode, options)
    answer = llm_detect(task, llm) if llm is not None else None
    if llm is not None:
        notes.append(llm_note(llm, answer))
    names = index_names(indexes)
    edited = edited_files(task, opts.files)  # a file the task names is one the user is about to edit
    named, paths = edited.named, edited.evidence
    if edited.files != opts.files:
        opts = replace(opts, files=edited.files)
    results = [
        rank_task(ix, task, mode, opts, weights, name, answer, paths)
        for ix, name in zip(indexes, names, strict=True)
        if ix.n_directives
    ]
    searched = sum(ix.n_directives for ix in indexes)
    if not results:
        det = merge(detect(task, mode, paths=paths), answer)
        empty = Rendered(
            _header(det, det.layer, det.topics)
            + "_The rule index is empty: it holds no directives. Add rule documents and rebuild it._\n",
            [],
            0,
        )
        stats = {"searched": 0, "considered": 0, "selected": 0}
        return _answer(
            det,
            det.layer,
            det.topics,
            empty,
            ["index is empty: no rules to apply", *notes],
            stats,
            started,
            {},
            opts,
            [],
        )
    lead_det = lead_detection([r.det for r in results])
    lead = next(r for r in results if r.det is lead_det)
    timings: dict[str, float] = {}
    for r in results:
        notes.extend(r.notes)
        for stage, seconds in r.timings.items():
            timings[stage] = timings.get(stage, 0.0) + seconds
    t0 = time.perf_counter()
    position = {name: i for i, name in enumerate(names)}
    merged = unique_directives(
        sorted(
            (it for r in results for it in r.items),
            key=lambda it: (-it.score, position[it.index_name], it.directive.id),
        )
    )
    ranked = spread_rules(merged, max(3, opts.maxItems // 2))
    header_note = ""
    if not ranked:
        name_of = {id(ix): name for ix, name in zip(indexes, names, strict=True)}
        ranked = unique_directives([it for r in results for it in _core_items(r.index, opts, name_of[id(r.index)])])
        header_note = "no specific match; core rules" if ranked else "no rule of this index matches the task"
        notes.append(
            "no specific match for this task: showing the index's core rules"
            if ranked
            else "no specific match and the index has no core rules"
        )
    always = unique_directives([it for r in results for it in r.always])
    # only a rule with a review date can be stale: reading the local date costs more than this test
    dated = any(it.rule.expires for it in ranked) or any(it.rule.expires for it in always)
    rendered = render(
        ranked,
        header=_header(lead.det, lead.layer, lead.topics, header_note),
        footer="".join(dict.fromkeys(_footer(r.index) for r in results)),  # overlapping indexes: once
        token_budget=opts.tokenBudget,
        max_items=opts.maxItems,
        breadcrumbs=opts.includeBreadcrumbs,
        rationale=opts.includeRationale,
        today=dt.date.today().isoformat() if dated else "",
        min_scores={r.index_name: r.min_score for r in results},
        always=always,
    )
    stale = [c["id"] for c in rendered.citations if c["stale"]]
    if stale:
        notes.append(f"{len(stale)} cited directive(s) come from rules past their review date: {', '.join(stale)}")
    timings["format"] = time.perf_counter() - t0
    stats = {
        "searched": searched,
        "considered": sum(r.considered for r in results),
        "selected": len(rendered.citations),
    }
    if opts.files:
        tied = ", ".join(x for r in results for x in r.file_rules) or "none"
        given = len(opts.files) - len(named)
        source = f"{given} given" + (f", {len(named)} named in the task ({', '.join(named)})" if named else "")
        notes.append(f"files: {source}; rules tied to them: {tied}")
    breakdowns = {key: row for r in results for key, row in r.breakdowns.items()}
    scores = [
        dict(id=c["id"], **({"index": c["index"]} if "index" in c else {}), **breakdowns[(c.get("index", ""), c["id"])])
        for c in rendered.citations
        if (c.get("index", ""), c["id"]) in breakdowns
    ]
    return _answer(lead.det, lead.layer, lead.topics, rendered, notes, stats, started, timings, opts, scores)


def first_copies(entries: Iterable[T], key: Callable[[T], Hashable]) -> list[T]:
    """The first entry of each ``key`` (a directive's id and text), in order.

    Indexes built from overlapping rules (an organisation's and a team's, both with ``core.md``)
    hold the same directive twice; an answer shows it once, in rank order the higher-scoring copy.
    """
    seen: set[Hashable] = set()
    out = []
    for entry in entries:
        k = key(entry)
        if k not in seen:
            seen.add(k)
            out.append(entry)
    return out


_DIRECTIVE_KEY = operator.attrgetter("directive.id", "directive.text")
"""A directive's identity across layered indexes: (id, text) of an :class:`Item`."""


def unique_directives(items: list[Item]) -> list[Item]:
    """The first copy of each directive (same id and text) that overlapping layered indexes share."""
    return first_copies(items, _DIRECTIVE_KEY)


def spread_rules(ranked: list[Item], per_rule: int) -> list[Item]:
    """Move each rule's directives beyond the first ``per_rule`` behind everything else, in rank order.

    One strongly matching rule should not fill the whole block: the next rules' best directives come
    first. Nothing is dropped; the moved items still fill any room left.
    """
    seen: dict[tuple[str, str], int] = {}
    head, tail = [], []
    for item in ranked:
        key = (item.index_name, item.rule.id)
        seen[key] = seen.get(key, 0) + 1
        (head if seen[key] <= per_rule else tail).append(item)
    return head + tail


def _core_items(index: Index, opts: QueryOptions, index_name: str = "") -> list[Item]:
    """Directives of core rules, MUST first, in document order (the no-match answer)."""
    items = [
        Item(d, index.rule(int(r)), 0.0, index_name=index_name, commit=index.commit)
        for r in np.flatnonzero(index.rule_core)
        for d in index.directives_of(int(r))
        if not opts.severityFilter or d.severity in opts.severityFilter
    ]
    return sorted(items, key=lambda it: (SEVERITIES.index(it.directive.severity), it.directive.rule, it.directive.id))


def _answer(
    det: Detection,
    layer: str | None,
    topics: tuple[str, ...],
    rendered: Rendered,
    notes: list[str],
    stats: dict[str, int],
    started: float,
    timings: dict[str, float],
    opts: QueryOptions,
    scores: list[dict[str, Any]],
) -> dict[str, Any]:
    diagnostics: dict[str, Any] = {
        "detectedLayer": layer,
        "topics": list(topics),
        "technologies": list(det.technologies),
        "keywords": list(det.keywords),
        "confidence": round(det.confidence, 3),
        "retrievalStats": stats,
        "tokens": rendered.tokens,
        "tokenBudget": opts.tokenBudget,
        "omitted": rendered.omitted,
        "notes": notes,
        "executionTimeMs": round((time.perf_counter() - started) * 1000, 3),
        "stageMs": {k: round(v * 1000, 3) for k, v in timings.items()},
    }
    if opts.includeDiagnostics:
        diagnostics["scores"] = scores
        diagnostics["layerScores"] = det.layer_scores
        diagnostics["topicScores"] = det.topic_scores
    return {"context_block": rendered.block, "citations": rendered.citations, "diagnostics": diagnostics}


def directive_layers(index: Index, i: int) -> tuple[str, ...]:
    """Layer names of directive ``i`` (from the mask table, without decoding the record)."""
    return names_from_mask(int(index.dir_layers[i]), LAYERS)
