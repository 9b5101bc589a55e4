"""Detect a task's layer, topics, technologies and keywords, offline.

Signals are added per layer and per topic: the built-in dictionaries below (with synonyms:
auth/authentication/login, DB/database/SQL, k8s/Kubernetes ...), the terms the builder learnt
from the index's own rules, cosine similarity to the index's prototype vectors, retrieval
feedback from the query, the trained task model (:mod:`.task_model`) and the training tasks
nearest to this one (which only choose between layers and topics something else points to;
weights in :class:`DetectionWeights`). The mode shifts the balance: ``debug`` leans to tests,
``architect`` to domain, architecture and docs.
Confidence is the winner's share of the evidence; below :data:`MIN_LAYER_SCORE` no layer is
claimed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from .paths import PathEvidence
from .task_model import NeighbourEvidence, TaskModel, shipped_model
from .technologies import api_technologies, named_technologies
from .text import keywords_of, stem, words
from .vocab import LAYER_POSITION, LAYERS, TOPIC_POSITION, TOPICS

MODES = ("architect", "code", "debug")

_LAYER_WORDS: dict[str, str] = {
    "1-Presentation": """ui ux button header footer navbar navigation nav page screen component widget react vue svelte
        angular jsx tsx css scss tailwind style styling layout modal dialog form label dropdown menu sidebar theme
        responsive html template view frontend click render toast icon tooltip animation aria a11y keyboard focus
        contrast accessibility dark-mode storybook
        usestate useeffect usememo usecallback redux zustand pinia vuex mobx signal signals swiftui uikit
        jetpack compose flutter widget widgets livewire blade erb jinja htmx alpine nuxt remix astro viewmodel
        gesture tap scroll swipe onclick onappear input checkbox textbox chart charts font color colour
        spinner skeleton toast snackbar placeholder tab tabs popup popover carousel css-in-js""",
    "2-Application": """endpoint api route router handler controller service usecase request response rest graphql
        grpc middleware webhook job queue worker command orchestration registration signup login logout session
        rate-limit pagination upload backend server http cors payload
        fastapi flask django express nestjs spring springboot ktor gin fiber actix axum laravel rails phoenix
        dto dtos serializer validator pydantic websocket websockets rpc cli celery sidekiq cron scheduler
        consumer producer publisher subscriber listener lifespan blueprint interceptor guard injection""",
    "3-Domain": """domain entity entities aggregate invariant business value-object pricing price discount order invoice
        policy calculation ddd rule workflow state-machine money currency
        refund refunds coupon coupons billing subscription trial tax rounding cent cents total totals ledger
        balance inventory stock booking reservation eligibility entitlement quota""",
    "4-Persistence": """database db sql query queries migration migrate schema table column index indexes postgres
        postgresql mysql sqlite mongodb mongo redis cache orm repository transaction sqlalchemy prisma alembic
        persistence storage seed backfill n+1 nosql
        typeorm eloquent activerecord hibernate jpa dao drizzle sequelize mongoose knex dynamodb cassandra
        elasticsearch supabase firestore row rows connection pool replica retention purge
        archive backup""",
    "5-Tests": """test tests testing unit integration e2e end-to-end fixture mock stub pytest jest vitest cypress
        playwright coverage flaky assert assertion regression tdd snapshot spec
        spy fake selenium rspec minitest junit testcontainers hypothesis property-based fuzz fuzzing
        testing-library msw""",
    "6-Docs": """docs documentation readme changelog adr docstring openapi swagger guide tutorial runbook
        document documenting
        jsdoc javadoc typedoc sphinx mkdocs docusaurus wiki onboarding release-notes diagram diagrams
        explain explanation how-to""",
    "7-Deployment": """deploy deployment ci cd pipeline docker dockerfile container kubernetes k8s helm terraform
        infrastructure iac release github-actions workflow rollout rollback staging production prod canary
        environment env devops image registry
        ansible pulumi cloudformation vercel netlify heroku kamal fly.io nginx ingress autoscaling autoscaler
        replicas pod pods cluster node-pool compose-file gitlab-ci jenkins argo argocd blue-green
        branch-protection on-call paging prometheus grafana uptime sre vps""",
}

_TOPIC_WORDS: dict[str, str] = {
    "security": """security secure auth authentication authorization authorisation login logout password secret
        secrets apikey token jwt oauth oidc csrf xss injection sanitize sanitise encrypt encryption permission role rbac
        vulnerability cve registration signup register credential credentials session cookie hash""",
    "testing": "test tests testing unit integration e2e mock fixture coverage flaky pytest jest vitest tdd assert",
    "performance": """performance slow fast latency cache caching optimize optimise memory cpu n+1 profile
        profiling throughput pagination load speed bottleneck""",
    "api": """api endpoint rest graphql grpc route http request response status webhook openapi versioning
        payload json client""",
    "database": """database db sql query queries migration schema table index postgres postgresql mysql sqlite
        mongodb orm transaction persistence redis""",
    "frontend": """ui frontend component react vue svelte angular css tailwind button page form layout header
        navbar modal html browser spinner skeleton dashboard loading""",
    "backend": "backend server service endpoint handler worker queue job controller middleware",
    "devops": """deploy deployment ci cd pipeline docker dockerfile kubernetes k8s helm terraform container
        release infrastructure github-actions""",
    "documentation": "docs documentation readme changelog adr docstring comment comments document",
    "accessibility": "accessibility a11y aria screen-reader keyboard contrast wcag alt focus",
    "architecture": """architecture layer layers module modules dependency dependencies boundary design pattern
        coupling interface refactor decouple monolith microservice""",
    "quality": "lint linter refactor clean readability naming duplication review style format complexity typing",
    "observability": "log logs logging metric metrics tracing trace monitor monitoring alert dashboard telemetry",
    "reliability": """retry retries timeout idempotent idempotency resilience error errors failure fallback
        circuit backup outage crash exception""",
    "privacy": "pii gdpr personal privacy consent retention anonymize anonymise email",
    "git": "git commit commits branch merge rebase pull-request pr",
}

_ACTIVITY_WORDS: dict[str, tuple[float, str]] = {
    "5-Tests": (
        3.0,
        "test tests testing spec specs e2e fixture fixtures mock mocks coverage flaky pytest jest vitest cypress playwright tdd",
    ),
    "6-Docs": (
        3.0,
        "document documenting documentation docs readme changelog adr docstring docstrings runbook tutorial",
    ),
    "7-Deployment": (
        3.0,
        "dockerfile docker deploy deployment pipeline ci cd helm terraform kubernetes k8s rollout release github-actions",
    ),
    "4-Persistence": (
        2.0,
        "migration migrations migrate schema sql query queries index table column columns database db orm transaction",
    ),
    "1-Presentation": (
        2.0,
        "form button page screen component modal css style layout spinner dashboard header navbar ui widget tooltip",
    ),
    "3-Domain": (1.5, "invariant invariants entity aggregate pricing discount refund cancel cancelled cancellation"),
    "2-Application": (1.5, "endpoint endpoints handler controller route routes middleware webhook"),
}
"""Words that name the *kind of work* (a test, a doc, a Dockerfile, a migration, a form) weigh more
than words that name its subject (an API, a user), so "write tests for the signup endpoint" is a
5-Tests task. Each entry: (weight, words); other dictionary words weigh 1."""

SYNONYMS: dict[str, tuple[str, ...]] = {
    "auth": ("authentication", "authorization"),
    "login": ("authentication", "session"),
    "signup": ("registration",),
    "register": ("registration",),
    "db": ("database",),
    "sql": ("database", "query"),
    "k8s": ("kubernetes",),
    "pr": ("pull", "request"),
    "e2e": ("end", "test"),
    "a11y": ("accessibility",),
    "perf": ("performance",),
    "ci": ("pipeline",),
    "docs": ("documentation",),
    "repo": ("repository",),
    "env": ("environment",),
}
"""Query expansions for short or colloquial words (applied to retrieval and detection)."""

PHRASES: tuple[tuple[str, str], ...] = (
    ("api key", "apikey"),
    ("access key", "apikey"),
    ("sign up", "signup"),
    ("sign-up", "signup"),
    ("log in", "login"),
    ("end to end", "e2e"),
    ("end-to-end", "e2e"),
    ("pull request", "pr"),
    ("screen reader", "screen-reader"),
    ("github actions", "github-actions"),
)
"""Multi-word expressions folded into one dictionary term before matching."""
_PHRASE_FOLDS = tuple((phrase, f"{phrase} {term}") for phrase, term in PHRASES)
"""Each phrase and what :func:`task_terms` replaces it with (the phrase, then its term), formatted once."""

NEAR_TIE = 0.8
"""Layers scoring at least this share of the best layer also pass a strict layer filter."""

MODE_BIAS: dict[str, dict[str, float]] = {
    "debug": {"5-Tests": 0.8, "reliability": 0.6, "observability": 0.6, "testing": 0.6},
    "architect": {"3-Domain": 0.6, "6-Docs": 0.4, "architecture": 0.8, "documentation": 0.4},
    "code": {},
}

MIN_LAYER_SCORE = 1.0
MIN_TOPIC_SCORE = 1.0
EVIDENT_TOPICS = 4
"""Evidence a topic needs to count at all: ranking weighs every such topic (at most EVIDENT_TOPICS)
by its strength relative to the best one."""
TOPIC_SHARE = 0.4
REPORTED_TOPICS = 3
"""A task's reported topics (the block's header, ``detect_context``) are those with at least
TOPIC_SHARE of the best topic's evidence, at most REPORTED_TOPICS. Before, every topic with any
evidence was reported, and one dictionary word made a topic. Measured on the held-out training
batches (topic F1 of the whole detector, shares 0.3-0.6, three or four topics): 0.476 -> 0.586
with the bundled index and 0.424 -> 0.533 with the Cursor index; on the labeled sets 0.482 ->
0.539 and 0.428 -> 0.542. A share of 0.6 scores 0.03 higher but drops real second topics, such as
security for "Add user registration API endpoint" (api 10.2, backend 5.4, security 4.8). Ranking
keeps using every topic with evidence: with only the reported ones the Cursor corpus lost 0.003
nDCG@10."""
_LEARNT_WEIGHT = 0.5
_VECTOR_WEIGHT = 4.0


@dataclass(frozen=True)
class DetectionWeights:
    """How much each learnt source of evidence counts, on the dictionaries' scale (one word = 1).

    One definition, so ``python -m ruledex.builder.task_training --held-out`` measures other
    settings exactly as queries would run them.
    """

    layer_model: float = 16.0
    """Weight of the trained layer model's evidence (how far a layer's probability rises above the
    model's prior, reader/task_model.py), on the dictionaries' scale. Chosen on tasks of kinds the
    model never saw (``python -m ruledex.builder.task_training --held-out``: six batches, 2,101 tasks,
    each held out in turn): the largest weight at which neither labeled set loses layer accuracy, nor
    more than 0.005 nDCG@10, against the model it replaced (weight 8, 1,942 tasks). Layer accuracy on
    the held-out batches 0.764 -> 0.793 (bundled index) and 0.740 -> 0.779 (Cursor corpus index);
    weight 24 gives 0.803 and 0.792 there but costs the bundled set 0.022 layer accuracy."""
    topic_model: float = 16.0
    """Weight of the trained topic model's evidence (probability above the topic's base rate). Chosen
    on the held-out training batches (``task_training --held-out`` prints topic F1): reported-topic F1
    rises with the weight, 0.586 / 0.533 at 8 (bundled / Cursor index), 0.634 / 0.589 at 16, 0.652 /
    0.619 at 24, 0.666 / 0.649 at 48, while nDCG@10 on the labeled sets stays within 0.004 (0.827 /
    0.849 at 8, 0.830 / 0.848 at 16). 16 is the largest weight at which a task with no telling word
    still gets no topic: at 24, "fix it" becomes a quality task on 0.046 of evidence. On the labeled
    sets topic F1 0.539 -> 0.601 and 0.542 -> 0.558."""
    layer_neighbours: float = 12.0
    """Weight of the training tasks' neighbours' evidence (how far a layer's share of the ten nearest
    tasks' votes rises above its share of all tasks, reader/task_model.py). Chosen on the held-out
    training batches, with both labeled sets as a check that neither loses layer accuracy (the rule the
    model weight followed): 8, 12 and 16 place 0.846, 0.849 and 0.848 of the held-out tasks with the
    bundled index and 0.839, 0.846 and 0.843 with the Cursor index (0.800 and 0.783 without
    neighbours). On the labeled sets, layer accuracy 0.748 -> 0.755 and 0.775 -> 0.783. Re-checked
    with 5,304 training tasks on all ten batches: 8, 12 and 16 place 0.826, 0.831 and 0.834 (bundled
    index) and 0.827, 0.831 and 0.831 (Cursor index); 16 costs the Cursor labeled set layer accuracy
    (0.790 -> 0.775), so 12 stays. Neighbours only choose between layers the task's own evidence
    (its words and meaning, before retrieval feedback) already points to: they never place a task on
    their own, so a task with no telling word answers as it did without them."""
    topic_neighbours: float = 16.0
    """Weight of the neighbours' evidence on topics (how far a topic's share of the ten nearest tasks'
    votes rises above its share of all tasks). Chosen on the held-out training batches' topic F1: 0, 4,
    8, 12, 16 and 24 give 0.637, 0.681, 0.703, 0.707, 0.707 and 0.704 (bundled index) and 0.597, 0.654,
    0.680, 0.691, 0.694 and 0.692 (Cursor index). On the labeled sets topic F1 0.601 -> 0.673 and
    0.558 -> 0.670. Re-checked with 5,304 tasks on ten batches: 8, 12, 16 and 24 give 0.714, 0.724,
    0.726 and 0.724 (bundled index) and 0.691, 0.708, 0.712 and 0.716 (Cursor index). The same rule
    as for layers: they add to topics only when some topic already has evidence."""


DETECTION_WEIGHTS = DetectionWeights()


def _stems(text: str) -> frozenset[str]:
    return frozenset(stem(w.replace("-", "")) for w in text.split()) | frozenset(stem(w) for w in text.split())


LAYER_TERMS = {name: _stems(text) for name, text in _LAYER_WORDS.items()}
LAYER_WEIGHTS: dict[str, dict[str, float]] = {
    name: dict.fromkeys(_stems(words_), weight) for name, (weight, words_) in _ACTIVITY_WORDS.items()
}
TOPIC_TERMS = {name: _stems(text) for name, text in _TOPIC_WORDS.items()}


@dataclass(frozen=True)
class Detection:
    """What the detector found in a task."""

    layer: str | None
    topics: tuple[str, ...]
    technologies: tuple[str, ...]
    keywords: tuple[str, ...]
    confidence: float
    layer_scores: dict[str, float] = field(default_factory=dict)
    topic_scores: dict[str, float] = field(default_factory=dict)
    evident_topics: tuple[str, ...] = ()
    """Every topic with evidence, best first (at most EVIDENT_TOPICS), of which ``topics`` are the clear ones;
    ranking weighs all of them by strength."""

    def ranking_topics(self) -> tuple[str, ...]:
        """The topics ranking weighs: the reported ones (a local model's first), then the other evident ones."""
        return tuple(dict.fromkeys([*self.topics, *self.evident_topics]))[:EVIDENT_TOPICS]

    def layers(self) -> tuple[str, ...]:
        """The detected layer and any near-tie layers (a strict filter lets all of them through)."""
        if self.layer is None:
            return ()
        best = self.layer_scores.get(self.layer, 0.0)
        ties = [
            k for k, v in self.layer_scores.items() if k != self.layer and v >= max(MIN_LAYER_SCORE, NEAR_TIE * best)
        ]
        return (self.layer, *sorted(ties, key=LAYER_POSITION.__getitem__))

    def alternatives(self, n: int = 2) -> list[dict[str, float | str]]:
        """The next-best layers, each with the confidence it would have had against the detected one.

        The same formula as ``confidence`` (a layer's evidence over itself, its strongest rival and
        1), so an alternative never reads as surer than the layer that won.
        """
        best = self.layer_scores.get(self.layer, 0.0) if self.layer else 0.0
        ranked = sorted(((v, k) for k, v in self.layer_scores.items() if k != self.layer and v > 0), reverse=True)
        return [{"layer": k, "confidence": round(v / (v + best + 1.0), 3)} for v, k in ranked[:n]]

    def to_dict(self) -> dict[str, object]:
        """The ``detect_context`` output shape."""
        return {
            "detectedLayer": self.layer,
            "topics": list(self.topics),
            "technologies": list(self.technologies),
            "keywords": list(self.keywords),
            "confidence": round(self.confidence, 3),
            "alternativeContexts": self.alternatives(),
        }


def expand(terms: list[str]) -> list[str]:
    """Add synonym stems for short or colloquial terms, keeping order and uniqueness."""
    out = list(dict.fromkeys(terms))
    for term in terms:
        for extra in SYNONYMS.get(term, ()):
            s = stem(extra)
            if s not in out:
                out.append(s)
    return out


def task_terms(text: str) -> tuple[list[str], set[str]]:
    """A task's raw words and the terms detection matches: stems, synonyms, folded phrases.

    One definition for the dictionaries, the learnt tables and the trained layer model, so the
    model is trained on exactly the terms it is later given.
    """
    folded = text.lower()
    for phrase, replacement in _PHRASE_FOLDS:
        folded = folded.replace(phrase, replacement)
    raw = words(folded)
    return raw, set(expand(keywords_of(raw))) | {w for w in raw if w in TOPIC_TERMS or "-" in w}


def _inverted(
    table: dict[str, frozenset[str]], weights: dict[str, dict[str, float]] | None = None
) -> dict[str, tuple[tuple[str, float], ...]]:
    """Term -> (class, weight) pairs of a dictionary: 1 per word, or the word's activity weight."""
    weights = weights or {}
    out: dict[str, list[tuple[str, float]]] = {}
    for name, vocab in table.items():
        strong = weights.get(name, {})
        for term in sorted(vocab | strong.keys()):
            out.setdefault(term, []).append((name, strong.get(term, 1.0)))
    return {term: tuple(pairs) for term, pairs in out.items()}


def _score(
    terms: set[str], inverted: dict[str, tuple[tuple[str, float], ...]], names: tuple[str, ...]
) -> dict[str, float]:
    """Dictionary evidence per class, one lookup per task term (the task is short, the tables are not)."""
    out = dict.fromkeys(names, 0.0)
    for term in terms:
        for name, weight in inverted.get(term, ()):
            out[name] += weight
    return out


_LAYER_INDEX = _inverted(LAYER_TERMS, LAYER_WEIGHTS)
_TOPIC_INDEX = _inverted(TOPIC_TERMS)
_LAYER_NAMES = tuple(LAYER_TERMS)
_TOPIC_NAMES = tuple(TOPIC_TERMS)


def _add_learnt(
    layer_scores: dict[str, float],
    topic_scores: dict[str, float],
    terms: set[str],
    learnt: Mapping[str, tuple[tuple[str, str], ...]],
) -> None:
    """Add :data:`_LEARNT_WEIGHT` per task term in each learnt table, once per table (the tables by term)."""
    counts: dict[tuple[str, str], int] = {}
    for term in terms:
        for key in learnt.get(term, ()):
            counts[key] = counts.get(key, 0) + 1
    for (kind, name), n in counts.items():
        scores = layer_scores if kind == "layers" else topic_scores
        if name in scores:
            scores[name] += _LEARNT_WEIGHT * n


def _add_vectors(
    scores: dict[str, float],
    names: tuple[str, ...],
    protos: np.ndarray | None,
    query: np.ndarray,
    cosine_scale: float = 1.0,
) -> None:
    """Add each class's cosine above the mean of the index's classes (the query is not zero).

    The mean is numpy's float32 sum, as ``ndarray.mean`` takes it; the gains are plain floats, as
    the float64 arrays they were computed in before, for a few classes without numpy's overhead.
    """
    if protos is None or not len(protos):
        return
    used = np.logical_or.reduce(protos, axis=1)  # classes the index has no directives for have a zero prototype
    rows = used.nonzero()[0].tolist()
    if not rows:
        return
    sims = protos @ query
    chosen = sims if len(rows) == len(sims) else sims[used]
    mean = float(np.float32(np.add.reduce(chosen) / len(chosen)))  # as ndarray.mean, without its wrapper
    weight = float(_VECTOR_WEIGHT * cosine_scale)
    values = sims.tolist()
    for row in rows:
        if row < len(names) and names[row] in scores:
            scores[names[row]] += weight * max(values[row] - mean, 0.0)


def _own_claims(layer_scores: dict[str, float], topic_scores: dict[str, float]) -> tuple[bool, bool]:
    """Whether the task's own words and meaning claim a layer, and a topic.

    Measured before retrieval feedback, which always names some layer when the index has rules.
    """
    return (
        max(layer_scores.values(), default=0.0) >= MIN_LAYER_SCORE,
        max(topic_scores.values(), default=0.0) >= MIN_TOPIC_SCORE,
    )


def _add_neighbours(
    layer_scores: dict[str, float],
    topic_scores: dict[str, float],
    found: NeighbourEvidence,
    weights: DetectionWeights,
    own: tuple[bool, bool],
) -> None:
    """Add the neighbours' evidence where the task's own evidence already claims a layer (a topic).

    Neighbours choose between layers and between topics; they never place a task on their own, so a
    task with no telling word ("fix it", "hello world") gets nothing from them, index or not.
    """
    for scores, gains, weight, claimed in (
        (layer_scores, found.layers, weights.layer_neighbours, own[0]),
        (topic_scores, found.topics, weights.topic_neighbours, own[1]),
    ):
        if claimed:
            for name, gain in gains.items():
                if gain:  # most are 0.0, which changes no score
                    scores[name] += weight * gain


def detect(
    text: str,
    mode: str | None = None,
    *,
    query_vector: np.ndarray | None = None,
    layer_vectors: np.ndarray | None = None,
    topic_vectors: np.ndarray | None = None,
    learnt: Mapping[str, tuple[tuple[str, str], ...]] | None = None,
    feedback: tuple[dict[str, float], dict[str, float]] | None = None,
    paths: PathEvidence | None = None,
    task_model: TaskModel | bool = True,
    weights: DetectionWeights = DETECTION_WEIGHTS,
    cosine_scale: float = 1.0,
) -> Detection:
    """Detect context from task text, optionally helped by an index's tables (pure function).

    ``learnt`` holds the terms the builder learnt from the index's rules, by term
    (:attr:`~ruledex.reader.index.Index.learnt_by_term`).
    ``feedback`` holds (layer votes, topic votes) from the directives that best match the task
    (pseudo-relevance feedback), so a paraphrased task is placed where its matching rules live. It
    counts only where the task's own words or meaning claim a layer or a topic: some directive
    always matches best, so for "hello world" it would otherwise name a layer out of nothing.
    ``paths`` (what the edited files' paths say, :mod:`.paths`) always counts: the file says where
    the work is; the files' technologies join the text's.
    The names of the technologies the task's API identifiers stand for (``technologies.API_NAMES``)
    count as its words: "useEffect runs twice" is scored as if it said "react". Only here, not in
    :func:`task_terms`: the training tasks teach what the names mean; retrained with the names
    added, the layer model moved the bundled labeled set 0.869 -> 0.865 on its even lines.
    ``task_model`` adds the trained layer and topic models, which learnt from tasks: the shipped
    ones (``True``) or others (a :class:`TaskModel`, to measure a retrained one); the builder turns
    it off to place rule text, which the models never saw. ``weights`` replace the shipped
    :data:`DETECTION_WEIGHTS` (for the same measurements). ``cosine_scale`` is the index model's cosine
    calibration (``EncoderParams``): prototype evidence is measured from the mean similarity, so
    the calibration's shift cancels and only its scale applies.
    """
    raw, term_set = task_terms(text)
    apis = api_technologies(text, raw)
    term_set |= {stem(tech) for tech in apis}  # "useEffect" says "react"
    layer_scores = _score(term_set, _LAYER_INDEX, _LAYER_NAMES)
    topic_scores = _score(term_set, _TOPIC_INDEX, _TOPIC_NAMES)
    model = (shipped_model() if task_model is True else task_model) if task_model else None
    if model is not None:
        layer_gains, topic_gains = model.evidence(term_set)
        for name, gain in zip(model.layers.classes, layer_gains, strict=True):
            if gain:  # a class below its prior has 0.0, which changes no score
                layer_scores[name] += weights.layer_model * gain
        for name, gain in zip(model.topics.classes, topic_gains, strict=True):
            if gain:
                topic_scores[name] += weights.topic_model * gain
    if learnt:
        _add_learnt(layer_scores, topic_scores, term_set, learnt)
    if query_vector is not None and np.count_nonzero(query_vector):
        _add_vectors(layer_scores, LAYERS, layer_vectors, query_vector, cosine_scale)
        _add_vectors(topic_scores, TOPICS, topic_vectors, query_vector, cosine_scale)
    own = _own_claims(layer_scores, topic_scores)
    path_votes = (paths.layers, paths.topics) if paths is not None else None
    for extra in (feedback if any(own) else None, path_votes):
        if not extra:
            continue
        for table, votes in zip((layer_scores, topic_scores), extra, strict=True):
            for name, vote in votes.items():
                if name in table:
                    table[name] += vote
    for name, bias in MODE_BIAS.get(mode or "code", {}).items():
        table = layer_scores if name in layer_scores else topic_scores
        table[name] = table.get(name, 0.0) + bias
    layer_scores.pop("*", None)
    if model is not None and model.neighbours is not None and any(own):
        _add_neighbours(layer_scores, topic_scores, model.neighbours.evidence(term_set), weights, own)
    ranked = sorted(layer_scores.items(), key=lambda kv: (-kv[1], LAYER_POSITION[kv[0]]))
    best, best_score = ranked[0]
    runner_up = ranked[1][1] if len(ranked) > 1 else 0.0
    layer = best if best_score >= MIN_LAYER_SCORE else None
    confidence = best_score / (best_score + runner_up + 1.0) if layer else 0.0
    evident = tuple(
        sorted(
            (name for name, score in topic_scores.items() if score >= MIN_TOPIC_SCORE),  # a few of the 16
            key=lambda name: (-topic_scores[name], TOPIC_POSITION[name]),
        )
    )[:EVIDENT_TOPICS]
    top_topic = topic_scores[evident[0]] if evident else 0.0
    topics = tuple(name for name in evident if topic_scores[name] >= TOPIC_SHARE * top_topic)[:REPORTED_TOPICS]
    return Detection(
        layer=layer,
        topics=topics,
        evident_topics=evident,
        technologies=with_files(named_technologies(text, raw, apis), paths),
        keywords=tuple(dict.fromkeys(w for w in raw if w not in _STOP)),
        confidence=min(1.0, confidence),
        layer_scores=_rounded(layer_scores),
        topic_scores=_rounded(topic_scores),
    )


def _rounded(scores: dict[str, float]) -> dict[str, float]:
    """Scores to three decimals, as diagnostics show them; 0.0 (half the classes of a small index) as it is.

    ``round`` formats and parses a decimal string (~0.4 us); it is the same 0.0 either way.
    """
    return {k: round(v, 3) if v else v for k, v in scores.items()}


def with_files(named: tuple[str, ...], paths: PathEvidence | None) -> tuple[str, ...]:
    """The text's technologies, then those of the edited files it does not name."""
    if paths is None or not paths.technologies:
        return named
    return (*named, *(t for t in paths.technologies if t not in named))


from .text import STOPWORDS as _STOP  # noqa: E402 - kept next to its single use
