"""The rules as a read-only knowledge graph, in the reference Memory MCP server's shapes.

Entities for rules, sections, topics and layers, relations between them, and the ``search_nodes`` /
``open_nodes`` reads over them. Read-only: rules change by pull request. Pure.
"""

from __future__ import annotations

from typing import Any

from .errors import clip
from .index import Index
from .tools import require_text
from .vocab import LAYER_HINTS, LAYERS, TOPICS, names_from_mask


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


NOT_FOUND_SHOWN = 20
"""Most unknown names ``open_nodes`` echoes in ``notFound``; ``notFoundMore`` counts the rest."""


def open_nodes(graph: dict[str, list[dict[str, Any]]], names: Any) -> dict[str, Any]:
    """The entities with exactly these names; names that match nothing are listed in ``notFound``.

    Each unknown name is listed once, cut to 80 characters (:func:`~.errors.clip`), and at most
    :data:`NOT_FOUND_SHOWN` of them; ``notFoundMore`` counts the others. The answer echoed every
    name whole, so a request of large made-up names came back as large.
    """
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ValueError('names: must be a list of entity names, e.g. ["security", "security#input-validation-1"]')
    known = {e["name"] for e in graph["entities"]}
    unknown = [n for n in dict.fromkeys(names) if n not in known]
    return {
        **subgraph(graph, set(names)),
        "notFound": [clip(n) for n in unknown[:NOT_FOUND_SHOWN]],
        "notFoundMore": max(0, len(unknown) - NOT_FOUND_SHOWN),
    }
