"""What the MCP tools compute, without the MCP SDK: the served index (hot-reloaded) and pure tool logic.

:class:`IndexHolder` owns the served index. Between requests it notices when the file was replaced
(atomic rename: a new inode, size or mtime, or a new sidecar), verifies the new file completely and
swaps it in; a file that fails verification is refused with a log line and the old index keeps
serving. An index is closed only when no request is using it.

The other functions take an opened :class:`~ruledex.reader.index.Index`, validate their arguments
(a :class:`ValueError` names the field and the allowed values) and return JSON-ready dicts in the
shapes the MCP tools publish. The knowledge graph is read-only: rules change by pull request.
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from . import format as fmt
from .catalog import closest_domains, render_rule, rule_summary
from .errors import ArtifactError
from .index import Index
from .options import DETECT_DEFAULTS, parse_files
from .paths import named_files, path_evidence
from .pin import verify_pinned
from .query import MAX_TASK_CHARS, SCOPE_BOOST, check_mode, index_names, query_directives, read_task
from .rank import ranking_for
from .records import RuleRecord
from .vocab import LAYER_HINTS, LAYERS, SCOPES, TOPICS, names_from_mask

log = logging.getLogger("ruledex.server")
T = TypeVar("T")

Signature = tuple[Any, ...]

FOLDER_SETTLE_NS = 2_000_000_000
"""A followed folder changed more recently than this is scanned again at the next check: a second
change within the file system's timestamp granularity might not move its mtime."""


def file_signature(path: Path) -> Signature:
    """What identifies one version of an index file: device, inode, size, mtime, and the sidecar's."""
    st = os.stat(path)
    try:
        side = os.stat(fmt.sidecar_path(path))
        side_sig: tuple[int, int, int] | None = (side.st_ino, side.st_size, side.st_mtime_ns)
    except OSError:
        side_sig = None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, side_sig)


@dataclass(eq=False)
class Loaded:
    """One opened index version, with its users and the data derived from it."""

    index: Index
    signature: Signature
    users: int = 0
    retired: bool = False
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    _cache: dict[str, Any] = field(default_factory=dict)
    _warm: bool = False

    def warm(self) -> None:
        """Build the lazy parts (query encoder, learnt tables) once, under a lock."""
        if self._warm:
            return
        with self.lock:
            if not self._warm:
                if self.index.n_directives:
                    _ = self.index.encoder, self.index.detect_terms
                self._warm = True

    def cached(self, key: str, build: Callable[[Index], T]) -> T:
        """``build(index)``, computed once per index version."""
        if key not in self._cache:
            with self.lock:
                if key not in self._cache:
                    self._cache[key] = build(self.index)
        return self._cache[key]


class IndexHolder:
    """The served index: opened once, swapped between requests when its file is replaced."""

    def __init__(
        self,
        path: Path,
        *,
        check_interval: float = 1.0,
        pinned_sha256: str | None = None,
        follow: Path | None = None,
    ) -> None:
        """Open and check ``path`` (raises :class:`~ruledex.reader.errors.ArtifactError`); look for a new file at most every ``check_interval`` s.

        With ``pinned_sha256`` (the project pins its index), a replacement is served only if it is
        the pinned file: a pin means one exact rule set, even under hot reload. With ``follow`` (the
        folder the index was chosen from, ``./dist`` without ``--index`` or a pin), a newer
        ``*.ruledex`` there is served instead once it verifies: a rebuild writes a new file name.
        """
        self.path = Path(path)
        self.check_interval = check_interval
        self.pinned_sha256 = pinned_sha256
        self.follow = Path(follow) if follow is not None else None
        self._folder_seen: int | None = None
        fmt.check_sections(self.path)  # every section's checksum, as a reload checks: never serve a damaged file
        index = Index(self.path)
        self._current = Loaded(index, file_signature(self.path))
        self._lock = threading.Lock()
        self._reload_lock = threading.Lock()
        self._refused: Signature | None = None
        self._missing = False
        self._next_check = time.monotonic() + check_interval
        self._closed = False

    @property
    def index(self) -> Index:
        """The index serving now (for a quick look; use :meth:`use` around a request)."""
        return self._current.index

    @contextmanager
    def use(self) -> Iterator[Loaded]:
        """The current index for one request; it stays open until the request is done."""
        self._check_in_place()
        self.maybe_reload()
        with self._lock:
            if self._closed:
                raise RuntimeError("the server is shutting down")
            loaded = self._current
            loaded.users += 1
        try:
            loaded.warm()
            yield loaded
        finally:
            with self._lock:
                loaded.users -= 1
                done = loaded.retired and loaded.users == 0
            if done:
                self._close(loaded)

    def _check_in_place(self) -> None:
        """Never read a mapping whose file was rewritten in place (``cp`` over it, truncated).

        Reading pages that are gone kills the process (SIGBUS), so every request looks (one
        ``stat``): same inode but another size or time means the bytes under the mapping changed. A
        new file that verifies is served at once; otherwise the request gets this error, and the
        server keeps answering until a good file is renamed over it. A replacement by rename keeps
        the old inode alive and needs none of this.
        """
        try:
            st = os.stat(self.path)
        except OSError:
            return
        current = self._current.signature
        if (st.st_dev, st.st_ino) != current[:2] or (st.st_size, st.st_mtime_ns) == current[2:4]:
            return
        self._next_check = 0.0
        if self.maybe_reload() or self._current.signature[2:4] == (st.st_size, st.st_mtime_ns):
            return
        raise ArtifactError(
            str(self.path),
            "",
            "was overwritten in place while being served, and the new content does not verify; replace an "
            "index by writing a new file and renaming it over the old one (ruledex build does), then retry",
        )

    def maybe_reload(self) -> bool:
        """Swap in a replaced index file if it is time to look and it verifies; True if swapped."""
        if time.monotonic() < self._next_check or not self._reload_lock.acquire(blocking=False):
            return False
        try:
            self._next_check = time.monotonic() + self.check_interval
            if self.follow is not None and self._follow_newest(self.follow):
                return True
            try:
                signature = file_signature(self.path)
            except OSError as exc:
                if not self._missing:
                    log.warning("cannot read %s (%s); still serving the index opened before", self.path, exc.strerror)
                self._missing = True
                return False
            self._missing = False
            if signature in (self._current.signature, self._refused):
                return False
            return self._load(signature)
        finally:
            self._reload_lock.release()

    def _follow_newest(self, folder: Path) -> bool:
        """Serve the newest index in ``folder`` if it is another file and verifies; True if swapped.

        One ``stat`` of the folder per check: its mtime moves when a file is renamed into it. A change
        too recent to be sure the mtime would move again (timestamps are coarse) is looked at again.
        """
        try:
            mtime = os.stat(folder).st_mtime_ns
        except OSError:
            return False
        if mtime == self._folder_seen:
            return False
        if time.time_ns() - mtime > FOLDER_SETTLE_NS:
            self._folder_seen = mtime
        newest = fmt.newest_index(folder)
        if newest is None or newest.resolve() == self.path.resolve():
            return False
        try:
            signature = file_signature(newest)
        except OSError:
            return False
        return signature != self._refused and self._load(signature, newest)

    def _load(self, signature: Signature, path: Path | None = None) -> bool:
        """Verify and serve ``path`` (default: the served file, replaced) if it still has ``signature``."""
        path = self.path if path is None else path
        replaced = path == self.path
        what = "the replaced index file" if replaced else f"the newest index in {path.parent}, {path.name}"
        new: Loaded | None = None
        try:
            # structure and every section's CRC-32; not the sidecar, which lands in a second rename
            # just after the index (checking it here refused good releases for a moment)
            fmt.verify(path, check_sidecar=False)
            if self.pinned_sha256 is not None:
                verify_pinned(path, self.pinned_sha256)
            new = Loaded(Index(path), signature)
            new.warm()
        except Exception as exc:  # whatever is wrong with a new file, the old index keeps serving
            if new is not None:
                self._close(new)
            self._refused = signature
            log.error(
                "refused %s: %s; still serving %s %s (it is retried when the file or its sidecar changes again)",
                what,
                exc,
                self.index.manifest.get("name"),
                self.index.manifest.get("version"),
            )
            return False
        with suppress(OSError):
            if file_signature(path) != signature:  # replaced again while we read it: look again next time
                self._close(new)
                self._next_check = 0.0
                return False
        with self._lock:
            if self._closed:
                old = new
            else:
                old, self._current, self.path = self._current, new, path
            old.retired = True
            done = old.users == 0
        self._refused = None
        if done:
            self._close(old)
        if old is new:
            return False
        m = new.index.manifest
        log.info(
            "switched to %s: %s %s (%d rules, %d directives)",
            f"{what} {path}" if replaced else what,
            m.get("name"),
            m.get("version"),
            new.index.n_rules,
            new.index.n_directives,
        )
        return True

    @staticmethod
    def _close(loaded: Loaded) -> None:
        if not loaded.closed:
            loaded.closed = True
            loaded.index.close()

    def close(self) -> None:
        """Close the index now, or when its last request ends."""
        with self._lock:
            self._closed = True
            loaded = self._current
            loaded.retired = True
            done = loaded.users == 0
        if done:
            self._close(loaded)


# ---------------------------------------------------------------------------------------------
# Validation helpers


def require_text(value: Any, field_name: str) -> str:
    """A non-empty string, or a ValueError naming the field."""
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"{field_name}: must be a non-empty string")
    return value


def _bool(raw: dict[str, Any], name: str, default: bool) -> bool:
    value = raw.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise ValueError(f"options.{name}: must be true or false, got {value!r}")
    return value


def _number(value: Any, name: str, low: float, high: float, *, integer: bool = False) -> float:
    kind = "an integer" if integer else "a number"
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or (integer and value != int(value))
    ):
        raise ValueError(f"{name}: must be {kind} from {low:g} to {high:g}, got {value!r}")
    if not low <= value <= high:
        raise ValueError(f"{name}: must be {kind} from {low:g} to {high:g}, got {value!r}")
    return value


def _choice(value: Any, name: str, allowed: tuple[str, ...]) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str) or value not in allowed:
        raise ValueError(f"{name}: unknown value {value!r}; allowed: {', '.join(allowed)}")
    return value


def _options(raw: Any, allowed: tuple[str, ...]) -> dict[str, Any]:
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise ValueError(f"options: must be an object with the fields {', '.join(allowed)}")
    unknown = sorted(set(raw) - set(allowed))
    if unknown:
        raise ValueError(f"options: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}")
    return raw


def clip_task(text: str) -> tuple[str, list[str]]:
    """Cut a text to MAX_TASK_CHARS, with the note that says so."""
    if len(text) <= MAX_TASK_CHARS:
        return text, []
    return text[:MAX_TASK_CHARS], [f"text truncated from {len(text)} to {MAX_TASK_CHARS} characters"]


# ---------------------------------------------------------------------------------------------
# Catalogue and query tools


def index_info(index: Index) -> dict[str, Any]:
    """Which index answers: name, version, commit, file, counts."""
    m = index.manifest
    return {
        "name": str(m.get("name", "")),
        "version": str(m.get("version", "")),
        "commit": index.commit,
        "buildTime": str(m.get("build_time") or ""),
        "path": str(index.path),
        "rules": index.n_rules,
        "directives": index.n_directives,
    }


def _as_list(indexes: Index | list[Index]) -> list[Index]:
    return indexes if isinstance(indexes, list) else [indexes]


def list_rules(indexes: Index | list[Index]) -> dict[str, Any]:
    """Every rule document with its summary, and the index it comes from.

    With layered indexes every summary names its index, and ``indexes`` describes them all.
    """
    indexes = _as_list(indexes)
    named = list(zip(indexes, index_names(indexes), strict=True))
    rules = [{**rule_summary(r), "index": name} if name else rule_summary(r) for ix, name in named for r in ix.rules()]
    return {"rules": rules, "total": len(rules), **served_info(indexes)}


def served_info(indexes: list[Index]) -> dict[str, Any]:
    """Which indexes answer: ``index`` (the first), and with layered indexes ``indexes``, each with its name."""
    out: dict[str, Any] = {"index": index_info(indexes[0])}
    if len(indexes) > 1:
        out["indexes"] = [
            {**index_info(ix), "layer": name} for ix, name in zip(indexes, index_names(indexes), strict=True)
        ]
    return out


def rule_hits(indexes: list[Index], domain: str) -> list[tuple[Index, int, str]]:
    """``(index, rule row, index name)`` of every served index that defines ``domain``, in the order given."""
    return [
        (ix, i, name)
        for ix, name in zip(indexes, index_names(indexes), strict=True)
        if (i := ix.find_rule(domain)) is not None
    ]


def _preferred(hits: list[tuple[Index, int, str]]) -> tuple[Index, int, str] | None:
    """The rule served for a domain several layered indexes define: the most specific scope, then the first given."""
    # min() keeps the first of equals, so ties go to the index given first
    return min(hits, key=lambda hit: _specificity(hit[0].rule(hit[1])), default=None)


def served_index_names(indexes: list[Index]) -> list[str]:
    """The names ``get_rules``' ``index`` takes: the layered names, or a single index's build name."""
    return index_names(indexes) if len(indexes) > 1 else [index_info(ix)["name"] for ix in indexes]


def _pick_index(indexes: list[Index], wanted: Any) -> list[Index]:
    """The index named ``wanted`` (``get_rules``' ``index``), as a one-item list; None: every index."""
    if wanted is None:
        return indexes
    wanted = require_text(wanted, "index")
    names = served_index_names(indexes)
    if wanted not in names:
        raise ValueError(
            f"index: no served index is called {wanted[:MAX_DOMAIN_CHARS]!r}; served: {', '.join(names)} (the "
            "'index' field of a citation or of list_rules' rules)"
        )
    return [indexes[names.index(wanted)]]


def _specificity(rule: RuleRecord) -> float:
    """Sort key among layered rules with one domain: the most specific scope (project) first."""
    return -SCOPE_BOOST.get(rule.scope, 0.0)


def served_rules(indexes: list[Index]) -> list[RuleRecord]:
    """One rule per domain across layered indexes: the one :func:`get_rule` serves for it."""
    best: dict[str, RuleRecord] = {}
    for ix in indexes:  # in the order given: a later index wins only with a more specific scope
        for rule in ix.rules():
            if rule.id not in best or _specificity(rule) < _specificity(best[rule.id]):
                best[rule.id] = rule
    return list(best.values())


MAX_DOMAIN_CHARS = 200
"""Rule ids are short; a longer ``domain`` is refused before it is compared with every id, or echoed."""


def get_rule(indexes: Index | list[Index], domain: Any, in_index: Any = None) -> dict[str, Any]:
    """One whole rule document; an unknown domain is a ValueError naming the closest ones.

    Among layered indexes, ``in_index`` (a name from citations or ``list_rules``) picks the one to
    read; without it a domain several indexes define is served from the most specific scope (then
    the first given), as the ranking prefers it, and ``definedIn`` names every index that has it.
    """
    indexes = _as_list(indexes)
    domain = require_text(domain, "domain")
    if len(domain) > MAX_DOMAIN_CHARS:
        raise ValueError(
            f"domain: {len(domain)} characters, at most {MAX_DOMAIN_CHARS}: pass a rule id or file stem from "
            "list_rules, e.g. 'security'"
        )
    wanted = _pick_index(indexes, in_index)
    hits = rule_hits(indexes, domain)
    found = _preferred(hits) if wanted is indexes else _hit_in(hits, wanted[0])
    if found is None:
        raise ValueError(_no_rule(domain, wanted, in_index, [name for _, _, name in hits]))
    index, i, name = found
    rule = index.rule(i)
    out = {
        **rule_summary(rule),
        "scope": rule.scope,
        "whenToApply": list(rule.when_to_apply),
        "commit": index.commit,
        "content": render_rule(index, i),
    }
    if not name:
        return out
    defined_in = [n for _, _, n in hits]
    return {**out, "index": name, **({"definedIn": defined_in} if len(defined_in) > 1 else {})}


def _hit_in(hits: list[tuple[Index, int, str]], chosen: Index) -> tuple[Index, int, str] | None:
    """The one of :func:`rule_hits` in the ``chosen`` index."""
    return next((hit for hit in hits if hit[0] is chosen), None)


def _no_rule(domain: str, searched: list[Index], in_index: str | None, elsewhere: list[str]) -> str:
    """The error for a domain not found: where it is instead, else the closest domains."""
    if in_index is not None and elsewhere:
        return f"domain: no rule {domain!r} in index {in_index!r}; it is in: {', '.join(elsewhere)}"
    close = list(dict.fromkeys(d for ix in searched for d in closest_domains(ix, domain)))[:3]
    where = "this index" if in_index is None else f"index {in_index!r}"
    return (
        f"domain: no rule {domain!r} in {where}; closest: {', '.join(close) or '(the index is empty)'}. "
        "Call list_rules to see every domain."
    )


DETECT_OPTIONS = ("returnKeywords", "confidenceThreshold", "modeSlug", "files")


def detect_context(indexes: Index | list[Index], text: Any, options: Any = None) -> dict[str, Any]:
    """Layer, topics, technologies, keywords and confidence of a text; no layer below the threshold.

    Read as ``query_directives`` reads a task (:func:`~ruledex.reader.query.read_task`): over every
    layered index, with the same retrieval feedback, so both report the same layer and topics.
    """
    raw = _options(options, DETECT_OPTIONS)
    text, notes = clip_task(require_text(text, "text"))
    keep_keywords = _bool(raw, "returnKeywords", DETECT_DEFAULTS["returnKeywords"])
    threshold = raw.get("confidenceThreshold")
    if threshold is None:
        threshold = DETECT_DEFAULTS["confidenceThreshold"]
    else:
        threshold = _number(threshold, "options.confidenceThreshold", 0, 1)
    mode = check_mode(raw.get("modeSlug"))
    given = parse_files(raw["files"]) if raw.get("files") is not None else ()
    named = named_files(text, given)
    if named:
        notes.append(f"files named in the text, read as edited files: {', '.join(named)}")
    files = given + named
    paths = path_evidence(files) if files else None
    found = dict(read_task(_as_list(indexes), text, mode, files, paths).to_dict())
    if found["detectedLayer"] is not None and found["confidence"] < threshold:
        notes.append(f"layer {found['detectedLayer']} left out: confidence {found['confidence']} < {threshold}")
        found["detectedLayer"] = None
    if not keep_keywords:
        found["keywords"] = []
    found["notes"] = notes
    return found


PRIORITY = {"MUST": "high", "SHOULD": "medium", "MAY": "low"}

LIMIT_RANGE = (1, 20)
"""``search_knowledge``'s ``limit``: the fewest and most results it returns."""


def directive_ids(index: Index) -> dict[str, int]:
    """Directive id -> row number."""
    return {index.directive(i).id: i for i in range(index.n_directives)}


def search_knowledge(
    index: Index,
    query: Any,
    *,
    ids: dict[str, int],
    context_tags: Any = None,
    scope: Any = None,
    category: Any = None,
    limit: Any = 5,
    min_confidence: Any = 0.0,
) -> dict[str, Any]:
    """Directives as knowledge entries, best first: the same retrieval as query_directives, layer not enforced."""
    query = require_text(query, "query")
    tags = [] if context_tags is None else context_tags
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ValueError(f"contextTags: must be a list of strings (topics such as {', '.join(TOPICS[:4])}, …)")
    scope = _choice(scope, "scope", SCOPES)
    category = _choice(category, "category", LAYERS)
    limit = int(_number(limit, "limit", *LIMIT_RANGE, integer=True))
    min_confidence = _number(min_confidence, "minConfidence", 0, 1)
    if index.n_directives == 0:
        return {"results": [], "totalMatches": 0}
    topics = [t.strip().lower() for t in tags if t.strip().lower() in TOPICS]
    words = [t for t in tags if t.strip().lower() not in TOPICS]
    options = {"strictLayer": category is not None, "layer": category, "topicsBias": topics}
    answer = query_directives(index, " ".join([query, *words]), None, {**options, "maxItems": 12, "tokenBudget": 8000})
    if answer["diagnostics"]["retrievalStats"]["considered"] == 0:
        return {"results": [], "totalMatches": 0}
    scored = {c["id"]: c["score"] for c in answer["citations"]}
    scored.update({o["id"]: o["score"] for o in answer["diagnostics"]["omitted"]})
    ceiling = ranking_for(index.declared_share).weights.ceiling()  # the weights the answer ranked with
    results = []
    for did, raw_score in sorted(scored.items(), key=lambda kv: (-kv[1], kv[0])):
        row = ids[did]
        d, rule = index.directive(row), index.rule(index.directive(row).rule)
        confidence = round(min(1.0, max(0.0, raw_score / ceiling)), 3)
        if (scope and rule.scope != scope) or confidence < min_confidence:
            continue
        layers = names_from_mask(int(index.dir_layers[row]), LAYERS)
        results.append(
            {
                "id": d.id,
                "title": " > ".join([rule.title, *d.section]),
                "content": d.text,
                "rationale": d.rationale,
                "tags": list(names_from_mask(int(index.dir_topics[row]), TOPICS)),
                "scope": rule.scope,
                "category": layers[0] if layers else "*",
                "layers": list(layers),
                "severity": d.severity,
                "priority": PRIORITY[d.severity],
                "score": confidence,
                "source": {"rule": rule.id, "path": rule.path, "line": d.line, "commit": index.commit},
            }
        )
    return {"results": results[:limit], "totalMatches": len(results)}


def search_layered(searches: list[tuple[str, dict[str, Any]]], limit: Any = 5) -> dict[str, Any]:
    """Merge the ``search_knowledge`` answers of layered indexes (``(name, answer)``), best first.

    Each answer must have been asked for the maximum limit; entries are tagged with their index.
    """
    limit = int(_number(limit, "limit", *LIMIT_RANGE, integer=True))
    ranked = sorted(
        ({**entry, "index": name} for name, answer in searches for entry in answer["results"]),
        key=lambda e: (-e["score"], e["index"], e["id"]),
    )
    merged = _first_copies(ranked)
    total = sum(answer["totalMatches"] for _, answer in searches) - (len(ranked) - len(merged))
    return {"results": merged[:limit], "totalMatches": total}


def _first_copies(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The best copy of each directive (same id and content) that overlapping layered indexes share."""
    seen: set[tuple[str, str]] = set()
    out = []
    for entry in entries:
        key = (entry["id"], entry["content"])
        if key not in seen:
            seen.add(key)
            out.append(entry)
    return out


# ---------------------------------------------------------------------------------------------
# The read-only knowledge graph (Memory-MCP shapes)


def _entity(name: str, kind: str, observations: list[str]) -> dict[str, Any]:
    return {"name": name, "entityType": kind, "observations": [o for o in observations if o]}


def _relation(src: str, dst: str, kind: str) -> dict[str, str]:
    return {"from": src, "to": dst, "relationType": kind}


def topic_node(topic: str) -> str:
    """The entity name of a topic."""
    return f"topic:{topic}"


def layer_node(layer: str) -> str:
    """The entity name of a layer."""
    return f"layer:{layer}"


def section_node(rule_id: str, section: tuple[str, ...]) -> str:
    """The entity name of a section: ``rule > Heading > Subheading``."""
    return " > ".join([rule_id, *section])


def build_graph(index: Index) -> dict[str, list[dict[str, Any]]]:
    """The index as entities (Rule, Section, Directive, Topic, Layer) and relations (pure, deterministic)."""
    entities: list[dict[str, Any]] = []
    relations: list[dict[str, str]] = []
    topic_count: dict[str, int] = {}
    layer_count: dict[str, int] = {}
    for r, rule in enumerate(index.rules()):
        entities.append(
            _entity(
                rule.id,
                "Rule",
                [
                    f"title: {rule.title}",
                    rule.description,
                    f"source: {rule.path}",
                    f"version: {rule.version}" if rule.version else "",
                    f"scope: {rule.scope}",
                    f"last updated: {rule.last_updated or rule.reviewed}" if rule.last_updated or rule.reviewed else "",
                    *(f"when to apply: {w}" for w in rule.when_to_apply),
                    *(f"example task: {e}" for e in rule.examples),
                ],
            )
        )
        for topic in rule.topics:
            relations.append(_relation(rule.id, topic_node(topic), "covers"))
            topic_count.setdefault(topic, 0)
        for topic in rule.authoritative_for:
            if topic != "*":
                relations.append(_relation(rule.id, topic_node(topic), "authoritative_for"))
                topic_count.setdefault(topic, 0)
        for layer in rule.layers:
            relations.append(_relation(rule.id, layer_node(layer), "applies_to"))
            layer_count.setdefault(layer, 0)
        directives = index.directives_of(r)
        sections = list(dict.fromkeys([*rule.sections, *(d.section for d in directives if d.section)]))
        for section in sections:
            count = sum(1 for d in directives if d.section == section)
            name = section_node(rule.id, section)
            entities.append(_entity(name, "Section", [f"heading: {section[-1]}", f"{count} directives"]))
            parent = section_node(rule.id, section[:-1]) if section[:-1] in sections else rule.id
            relations.append(_relation(parent, name, "contains"))
        for offset, d in enumerate(directives):
            row = rule.first_directive + offset
            entities.append(
                _entity(
                    d.id,
                    "Directive",
                    [
                        f"{d.severity}: {d.text}",
                        f"rationale: {d.rationale}" if d.rationale else "",
                        *(f"avoid: {a}" for a in d.avoid),
                        f"source: {rule.path}:{d.line}",
                    ],
                )
            )
            parent = section_node(rule.id, d.section) if d.section else rule.id
            relations.append(_relation(parent, d.id, "contains"))
            for topic in names_from_mask(int(index.dir_topics[row]), TOPICS):
                relations.append(_relation(d.id, topic_node(topic), "covers"))
                topic_count[topic] = topic_count.get(topic, 0) + 1
            for layer in names_from_mask(int(index.dir_layers[row]), LAYERS):
                relations.append(_relation(d.id, layer_node(layer), "applies_to"))
                layer_count[layer] = layer_count.get(layer, 0) + 1
    entities.extend(
        _entity(topic_node(topic), "Topic", [f"topic {topic}", f"{topic_count[topic]} directives"])
        for topic in sorted(topic_count, key=lambda t: (TOPICS.index(t) if t in TOPICS else len(TOPICS), t))
    )
    entities.extend(
        _entity(layer_node(layer), "Layer", [LAYER_HINTS.get(layer, ""), f"{layer_count[layer]} directives"])
        for layer in sorted(layer_count, key=lambda x: LAYERS.index(x) if x in LAYERS else len(LAYERS))
    )
    return {"entities": entities, "relations": relations}


def merge_graphs(graphs: list[dict[str, list[dict[str, Any]]]]) -> dict[str, list[dict[str, Any]]]:
    """One graph from several layered indexes; relations appear once.

    Entities with the same name and type share their observations: topics and layers are common to
    every index.
    """
    entities: dict[tuple[str, str], dict[str, Any]] = {}
    relations: dict[tuple[str, str, str], dict[str, Any]] = {}
    for graph in graphs:
        for e in graph["entities"]:
            key = (e["name"], e["entityType"])
            if key in entities:
                seen = entities[key]["observations"]
                seen.extend(o for o in e["observations"] if o not in seen)
            else:
                entities[key] = {**e, "observations": list(e["observations"])}
        for r in graph["relations"]:
            relations.setdefault((r["from"], r["to"], r["relationType"]), r)
    return {"entities": list(entities.values()), "relations": list(relations.values())}


def subgraph(graph: dict[str, list[dict[str, Any]]], names: set[str]) -> dict[str, list[dict[str, Any]]]:
    """The named entities and the relations between two of them (Memory MCP's semantics)."""
    return {
        "entities": [e for e in graph["entities"] if e["name"] in names],
        "relations": [r for r in graph["relations"] if r["from"] in names and r["to"] in names],
    }


def search_nodes(graph: dict[str, list[dict[str, Any]]], query: Any) -> dict[str, list[dict[str, Any]]]:
    """Entities whose name, type or an observation contains ``query`` (case-insensitive)."""
    needle = require_text(query, "query").strip().lower()
    names = {
        e["name"]
        for e in graph["entities"]
        if needle in e["name"].lower()
        or needle in e["entityType"].lower()
        or any(needle in o.lower() for o in e["observations"])
    }
    return subgraph(graph, names)


def open_nodes(graph: dict[str, list[dict[str, Any]]], names: Any) -> dict[str, Any]:
    """The entities with exactly these names; names that match nothing are listed in ``notFound``."""
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError('names: must be a list of entity names, e.g. ["security", "security#input-validation-1"]')
    known = {e["name"] for e in graph["entities"]}
    return {**subgraph(graph, set(names)), "notFound": [n for n in names if n not in known]}
