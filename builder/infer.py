"""Infer what free-form rule text does not say: sentence bounds, directives, severity, context.

Rules written for other assistants (Cursor, AGENTS.md, Copilot ...) carry no ``[MUST]`` markers,
layers or topics. These pure functions recover them from the wording:

- **directives**: list items, and prose sentences that are instructions (they start with a verb
  in the imperative, possibly after a short lead-in clause, or use an obligation word);
- **severity**: RFC 2119 keywords and plain-English equivalents, strongest first -- ``MUST``,
  ``SHALL``, ``REQUIRED``, *always*, *never*, *do not* give ``MUST``; ``SHOULD``,
  ``RECOMMENDED``, *prefer*, *avoid* give ``SHOULD``; ``MAY``, ``OPTIONAL``, *consider*, *you
  can*, *optionally* give ``MAY``; anything else is ``SHOULD`` (an instruction someone wrote down
  but did not make absolute). Words inside inline code are ignored;
- **size**: long prose is cut into directive-sized pieces (1-2 sentences, at most
  :data:`MAX_WORDS` words), so one embedding stands for one instruction;
- **context**: layers, topics and technologies come from the reader's own detector
  (:func:`ruledex.reader.detect.detect`), so the builder and the query side agree on vocabulary.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ruledex.reader.detect import detect
from ruledex.reader.vocab import ANY_LAYER, LAYERS, TOPICS

MAX_WORDS = 60
"""A directive longer than this is split at sentence (then clause) boundaries."""

MAX_SENTENCES = 2
"""At most this many sentences are grouped into one directive."""

FALLBACK_TOPIC = "quality"
"""The topic of a rule whose text names none: general coding guidance."""

_CODE_SPAN = re.compile(r"`+[^`]*`+")
_MUST = re.compile(r"\b(?:must|shall|always|never|do\s+not|don['’]t|mustn['’]t)\b", re.IGNORECASE)
_MUST_CASED = re.compile(r"\bREQUIRED\b")
_SHOULD = re.compile(r"\b(?:should|shouldn['’]t|prefer|preferably|avoid|recommended)\b", re.IGNORECASE)
_MAY_LEAD = re.compile(
    r"^(?:you\s+(?:may|can|could)|may|consider|optionally|optional|feel\s+free)\b",
    re.IGNORECASE,
)
_OBLIGATION = re.compile(
    r"\b(?:must|shall|should|shouldn['’]t|never|always|do\s+not|don['’]t|avoid|prefer|ensure|make\s+sure|"
    r"need\s+to|have\s+to|required|recommended|mandatory|forbidden)\b",
    re.IGNORECASE,
)
_ENUMERATOR = re.compile(
    r"^(?:\*\*\s*\d+[.)]?\s*\*\*|\d+[.)](?=\s)|[ivx]+[.)](?=\s)|(?:rule|step|tip)\s*#?\d+\s*[:.)-]|[-*+•](?=\s)|#+(?=\s))\s*",
    re.IGNORECASE,
)
_LEAD_LABEL = re.compile(r"^(?:\*\*|__)?([^:*_]{1,40}?)(?:\*\*|__)?\s*:\s+(?=\S)")
_PERSONA = re.compile(r"^(?:you\s+are|you['’]re|act\s+as|i\s+am|i['’]m|as\s+an?\s|your\s+role)\b", re.IGNORECASE)
_LEAD_CLAUSE = re.compile(
    r"^(?:before|after|when|whenever|if|for|in|while|unless|once|to|with|on|where|during|within|outside|inside)\b[^,;:]{0,80},\s+",
    re.IGNORECASE,
)
_NOT_VERB_AFTER = frozenset(
    ("is", "are", "was", "were", "has", "have", "had", "can", "could", "will", "would", "does", "did", "may", "might", "must", "should", "s")
)  # fmt: skip
"""Words after a verb-looking first word that make it a noun: "Cache invalidation is hard"."""
_SOFT_LEADS = frozenset(
    ("only", "always", "never", "please", "just", "also", "then", "and", "so", "first", "finally", "instead", "now")
)  # fmt: skip

_VERB_LIST = """
    accept access act adapt add adhere adopt aim align allow analyse analyze annotate apply ask assert assign
    attach audit automate avoid await back base be begin bind block break build bump bundle cache calculate
    call cap capture cast catch centralise centralize check choose clean clear close collect combine comment
    commit compare compose compute configure confirm consider consolidate constrain contain convert copy cover
    create debounce declare decouple default defer define delegate delete deploy deprecate derive describe
    design detect determine disable discuss dispatch display dispose distinguish do document drop embed
    embrace emit employ emphasize enable encapsulate encode encourage encrypt enforce ensure escape establish
    evaluate expect explain export expose extend extract fail favor favour fetch filter fix flag flatten focus
    follow force format free gate generate get give group guard handle hash hide highlight hoist honor honour
    identify ignore implement import include incorporate index inject inline inspect install instrument
    integrate introduce invalidate isolate keep label launch lazy-load lean leave leverage limit lint list
    load localize localise lock log look maintain make manage map mark match measure memoize merge migrate
    minimise minimize mirror mock model monitor move name normalise normalize note notify observe offload omit
    opt optimise optimize order organise organize output override paginate parameterize parameterise parse
    pass persist pick pin place plan point populate prefer prefix prepare preserve prevent print prioritise
    prioritize produce profile promote prompt propagate protect prototype provide publish pull push put query
    raise rate-limit read rebase recommend record reduce refactor refer reference register reject release rely
    remember remove rename render replace report represent request require reserve reset resolve respect
    respond restrict retry return reuse review revoke rotate route run sanitise sanitize save scan schedule
    scope secure seed select send separate serialize serialise serve set share ship show sign simplify skip
    sort specify split stage standardise standardize start stay stick store stream strip structure stub submit
    subscribe suggest supply support surface swap sync tag take target test think throttle throw track
    transform treat trigger trim try type understand unit-test unsubscribe update upgrade use utilise utilize
    validate verify version wait warn watch wrap write
"""
IMPERATIVE_VERBS = frozenset(_VERB_LIST.split())
"""Verbs that open an instruction ("Use ...", "Never ...", "Prefer ..."); lower-case base forms."""

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[*_`]?[A-Z0-9])")
_ABBREVIATIONS = re.compile(r"\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|resp|Mr|Dr|St|No|Fig)\.$", re.IGNORECASE)


def _mask_code(text: str) -> tuple[str, list[str]]:
    """Replace inline code spans by placeholders, so their dots and keywords are not read as prose."""
    spans: list[str] = []

    def keep(match: re.Match[str]) -> str:
        spans.append(match.group(0))
        return f"\x00{len(spans) - 1}\x00"

    return _CODE_SPAN.sub(keep, text), spans


def _unmask(text: str, spans: list[str]) -> str:
    return re.sub(r"\x00(\d+)\x00", lambda m: spans[int(m.group(1))], text)


def word_count(text: str) -> int:
    """Whitespace-separated words (what :data:`MAX_WORDS` counts)."""
    return len(text.split())


def split_lines(raw: str) -> list[str]:
    r"""Join a paragraph's soft-wrapped lines; keep a line break where a new statement begins.

    Many rule files put one instruction per line without punctuation ("Use X\\nPrefer Y"). A line
    break is kept when the line ends a sentence or the next line starts like a new statement (a
    capital letter, a digit, emphasis or code); otherwise the lines are one wrapped sentence.
    """
    lines = [line.strip() for line in raw.split("\n") if line.strip()]
    out: list[str] = []
    for line in lines:
        if out:
            prev = out[-1]
            new_statement = re.match(r"^(?:\*\*|__|[\"'(\[*_`~>])?[A-Z0-9]", line) is not None
            if new_statement or prev.endswith((".", "!", "?", ":")):
                out.append(line)
                continue
            out[-1] = f"{prev} {line}"
        else:
            out.append(line)
    return out


def split_sentences(text: str) -> list[str]:
    """Sentences of one line of prose; abbreviations (e.g., i.e., etc.) and code do not end one."""
    masked, spans = _mask_code(" ".join(text.split()))
    pieces: list[str] = []
    start = 0
    for match in _SENTENCE_END.finditer(masked):
        candidate = masked[start : match.start()].rstrip()
        if _ABBREVIATIONS.search(candidate):
            continue
        pieces.append(candidate)
        start = match.end()
    pieces.append(masked[start:].strip())
    return [_unmask(p, spans).strip() for p in pieces if p.strip()]


def _split_long_sentence(sentence: str) -> list[str]:
    """Cut a sentence over :data:`MAX_WORDS` at semicolons, then at commas, then between words."""
    if word_count(sentence) <= MAX_WORDS:
        return [sentence]
    for separator in ("; ", ", "):
        parts = sentence.split(separator)
        if len(parts) > 1:
            out, current = [], ""
            for part in parts:
                joined = f"{current}{separator}{part}" if current else part
                if current and word_count(joined) > MAX_WORDS:
                    out.append(current)
                    current = part
                else:
                    current = joined
            out.append(current)
            return [piece for chunk in out for piece in _split_long_sentence(chunk)]
    words = sentence.split()
    return [" ".join(words[i : i + MAX_WORDS]) for i in range(0, len(words), MAX_WORDS)]


def chunk(sentences: list[str]) -> list[str]:
    """Group sentences into directive-sized pieces: at most 2 sentences and :data:`MAX_WORDS` words each."""
    out: list[str] = []
    count = 0
    for sentence in (piece for s in sentences for piece in _split_long_sentence(s)):
        if out and count < MAX_SENTENCES and word_count(out[-1]) + word_count(sentence) <= MAX_WORDS:
            out[-1] = f"{out[-1]} {sentence}"
            count += 1
        else:
            out.append(sentence)
            count = 1
    return out


def strip_enumerator(text: str) -> str:
    """Drop a leading list number or rule number ("1.", "**2**", "RULE 3:"), keeping the instruction."""
    previous = None
    while previous != text:
        previous = text
        text = _ENUMERATOR.sub("", text, count=1).strip()
    return text


def _core(sentence: str) -> str:
    """The instruction part of a sentence: no enumerator, emphasis, lead-in label or clause."""
    text = strip_enumerator(sentence)
    text = re.sub(r"^(?:\*\*|__|\*|_)+|(?:\*\*|__)+", "", text).strip()
    label = _LEAD_LABEL.match(text)
    if label and len(label.group(1).split()) <= 5:
        text = text[label.end() :]
    clause = _LEAD_CLAUSE.match(text)
    if clause:
        text = text[clause.end() :]
    return text.strip()


def is_prose(sentence: str) -> bool:
    """Whether a sentence reads as words (at least 3, mostly alphabetic), not a path list or code."""
    tokens = _mask_code(sentence)[0].split()
    wordy = sum(bool(re.fullmatch(r"[(\"']?[A-Za-z][A-Za-z'’-]*[)\"',.;:!?]*", t)) for t in tokens)
    return len(tokens) >= 3 and wordy * 2 >= len(tokens)


_CODE_START = re.compile(
    r"^(?:(?:def|class|from|import|async|await|return|const|let|var|function|func|fn|impl|package|public|private|"
    r"protected|static|export|yield|raise|try|except|elif|else|lambda)\b(?!\s+(?:a|an|the|to|of|for)\b)"
    r"|(?:SELECT|CREATE|ALTER|INSERT|UPDATE|DELETE|WITH|BEGIN|END|LET|RETURN|DROP|GRANT)\b(?=\s+[A-Z_*(]|;|$)"
    r"|[@{}\[\]<$]|#include|\w[\w.]*\s*\([^)]*\)\s*[;:{]?$|[\w.\[\]\"']+\s*(?:[+\-*/|&]?=|:=|=>)\s)"
)


def looks_like_code(line: str) -> bool:
    """Whether a line of a paragraph is source code (unfenced code is common in prompt files)."""
    text = line.strip()
    if not text:
        return False
    if _CODE_START.match(text):
        return True
    symbols = sum(text.count(ch) for ch in "(){}[]=;<>")
    return symbols >= 3 and symbols * 2 >= len(text.split())


def is_persona(sentence: str) -> bool:
    """A role statement ("You are an expert in ...") addressed to the assistant, not a rule."""
    return bool(_PERSONA.match(_core(sentence))) and not _OBLIGATION.search(_mask_code(sentence)[0])


def is_instruction(sentence: str) -> bool:
    """Whether a prose sentence is an instruction: an imperative verb first, or an obligation word."""
    masked = _mask_code(sentence)[0]
    if is_persona(sentence):
        return False
    if _OBLIGATION.search(masked):
        return True
    words = re.findall(r"[a-z][a-z'-]*", _core(masked).lower())
    while words and words[0] in _SOFT_LEADS:
        words = words[1:]
    if len(words) < 2:
        return False
    # "Cache invalidation is hard": a verb-looking noun followed by a copula is a statement
    return words[0] in IMPERATIVE_VERBS and not set(words[1:3]) & _NOT_VERB_AFTER


def infer_severity(text: str) -> str:
    """MUST, SHOULD or MAY from the wording (strongest signal wins); SHOULD when nothing says."""
    masked = _mask_code(text)[0]
    if _MUST.search(masked) or _MUST_CASED.search(masked):
        return "MUST"
    if _SHOULD.search(masked):
        return "SHOULD"
    core = _core(masked)
    if _MAY_LEAD.match(core) or re.search(r"\b(?:MAY|OPTIONAL)\b", masked):
        return "MAY"
    return "SHOULD"


@dataclass(frozen=True)
class Context:
    """Layers, topics and technologies inferred for a piece of text."""

    layers: tuple[str, ...]
    topics: tuple[str, ...]
    technologies: tuple[str, ...]


def _top(scores: dict[str, float], order: tuple[str, ...], share: float, limit: int) -> tuple[str, ...]:
    """Names scoring at least 1 and at least ``share`` of the best, best first, at most ``limit``."""
    best = max((v for v in scores.values()), default=0.0)
    if best < 1.0:
        return ()
    chosen = [name for name, value in scores.items() if value >= 1.0 and value >= share * best]
    chosen.sort(key=lambda name: (-scores[name], order.index(name)))
    return tuple(chosen[:limit])


def directive_layers(own: tuple[str, ...], rule_layers: tuple[str, ...]) -> tuple[str, ...]:
    """A directive's layers: those its own words name plus its rule's, or ``*`` when its words name none.

    One line of a SwiftUI rule ("prefer .task over .onAppear") may read as another layer on its
    own, but the file it sits in scopes it: with its own layer alone, the strict layer filter
    dropped it from the very tasks its rule is for. A directive that names no layer stays ``*``
    (restricting those to the rule's layers lost 0.058 nDCG@10 on the Cursor corpus).
    """
    if not own:
        return (ANY_LAYER,)
    return tuple(sorted({*own, *rule_layers} - {ANY_LAYER}, key=LAYERS.index))


def infer_context(text: str, *, rule_level: bool = False) -> Context:
    """Context of ``text`` by the reader's detector; empty layers/topics when nothing is named.

    A directive gets its best layer(s) -- several only on a tie -- so the reader's ``strictLayer``
    filter keeps it for tasks of that layer; a whole rule gets the layers and topics that carry at
    least half the evidence of the best one, so a React file is *1-Presentation* even though it
    mentions a test or two.
    """
    found = detect(_RULE_WORDS.sub(" ", text), task_model=False)
    layer_scores = {k: v for k, v in found.layer_scores.items() if k != ANY_LAYER}
    if rule_level:
        layers = _top(layer_scores, LAYERS, 0.5, 3)
        topics = _top(found.topic_scores, TOPICS, 0.5, 3)
    else:
        layers = _top(layer_scores, LAYERS, 1.0, 2)
        topics = _top(found.topic_scores, TOPICS, 1.0, 3)
    layers = tuple(sorted(layers, key=LAYERS.index))
    return Context(layers, tuple(sorted(topics, key=TOPICS.index)), found.technologies)


_RULE_WORDS = re.compile(r"\b(?:rules?|guidelines?)\b", re.IGNORECASE)
"""In a rule file "rule" means the file's own rules, not a business rule: kept out of detection."""

_TOPIC_STEMS: dict[str, str] = {
    **{topic: topic for topic in TOPICS},
    "test": "testing",
    "tests": "testing",
    "db": "database",
    "databases": "database",
    "docs": "documentation",
    "a11y": "accessibility",
    "logging": "observability",
    "perf": "performance",
    "ci": "devops",
}


def authority_from_name(stem: str) -> tuple[str, ...]:
    """Topics a file is named after (``database.md`` -> database): one-file-per-domain rules claim them."""
    words = re.split(r"[^a-z0-9]+", stem.lower())
    found = {_TOPIC_STEMS[w] for w in words if w in _TOPIC_STEMS}
    return tuple(sorted(found, key=TOPICS.index))


def humanise(stem: str) -> str:
    """A title from a file name: ``react-router-v7`` -> "React router v7"; prompt-file noise dropped."""
    stem = re.sub(r"[-_.]*(?:cursorrules|cursor-rules|prompt-file|prompt-fil|prompt-fi|promp|prom)\b.*$", "", stem)
    words = [w for w in re.split(r"[-_.\s]+", stem) if w]
    text = " ".join(words) or stem
    return text[:1].upper() + text[1:]
