"""The rule document parser: what contributors write, and the file:line errors they get."""

from __future__ import annotations

import pytest

from ruledex.builder import frontmatter
from ruledex.builder.parse import parse_document
from ruledex.builder.validate import validate
from ruledex.reader.errors import RuleError, RuleErrors

from .conftest import rule_doc

FULL = rule_doc(
    """
    Intro text becomes the description.

    ## Input validation

    - [MUST] Validate every request body against an explicit schema;
      reject unknown fields with 400.
      Rationale: Unvalidated input is the root of injection bugs.
      Avoid: `User(**request.json)`
      ```python
      class SignupIn(BaseModel): ...
      ```
    - [should] Normalise Unicode before comparing user names.
      Layer: 3-Domain
      Topics: security, api

    ### Files

    - [MAY] Scan uploaded files for malware.
    """
)


def test_full_document() -> None:
    doc = parse_document(FULL, "api/sample.md")
    assert doc.rule.id == "sample"
    assert doc.rule.description == "Intro text becomes the description."
    assert doc.rule.sections == (("Input validation",), ("Input validation", "Files"))
    first, second, third = doc.directives
    assert first.id == "api/sample#input-validation-1"
    assert first.severity == "MUST"
    assert first.text == "Validate every request body against an explicit schema; reject unknown fields with 400."
    assert first.rationale == "Unvalidated input is the root of injection bugs."
    assert first.avoid == ("`User(**request.json)`",)
    assert first.examples == (("python", "class SignupIn(BaseModel): ..."),)
    assert first.layers == ("2-Application",)
    assert first.line == 17
    assert second.severity == "SHOULD"
    assert second.layers == ("3-Domain",)
    assert second.topics == ("security", "api")
    assert third.id == "api/sample#input-validation-files-1"
    assert third.section == ("Input validation", "Files")


def test_ids_are_stable_across_unrelated_edits() -> None:
    before = {d.text: d.id for d in parse_document(FULL, "sample.md").directives}
    edited = FULL.replace(
        "- [MAY] Scan uploaded files for malware.",
        "- [MAY] Scan uploaded files for malware.\n- [MAY] Cap uploads at 10 MB.",
    )
    edited = edited.replace("Normalise Unicode before", "Always normalise Unicode (NFKC) before")
    after = {d.text: d.id for d in parse_document(edited, "sample.md").directives}
    assert (
        after["Validate every request body against an explicit schema; reject unknown fields with 400."]
        == before["Validate every request body against an explicit schema; reject unknown fields with 400."]
    )
    assert after["Scan uploaded files for malware."] == before["Scan uploaded files for malware."]
    assert "sample#input-validation-2" in after.values()


def test_crlf_parses_like_lf() -> None:
    lf = parse_document(FULL, "sample.md")
    crlf = parse_document(FULL.replace("\n", "\r\n"), "sample.md")
    assert lf == crlf


def test_default_severity_applies_and_is_marked_inferred() -> None:
    doc = parse_document(rule_doc("## Rules\n\n- Use UTC everywhere.", extra="severity: SHOULD\n"), "s.md")
    assert doc.directives[0].severity == "SHOULD"
    assert doc.directives[0].inferred == ("severity",)


@pytest.mark.parametrize(
    ("text", "line", "field", "needle"),
    [
        ("# No front matter\n\n- [MUST] Do it.\n", 1, "front matter", "missing"),
        ("---\nid: x\nlayers: [2-Application\ntopics: [api]\n---\n", 3, "front matter", "invalid YAML"),
        ("---\nid: x\nlayers: [8-Cloud]\ntopics: [api]\n---\n", 3, "layers", "unknown layer '8-Cloud'"),
        ("---\nid: x\nlayers: ['*']\ntopics: [api, blockchain]\n---\n", 4, "topics", "unknown topic 'blockchain'"),
        ("---\nid: x\ntopics: [api]\n---\n", 1, "layers", "missing"),
        ("---\nid: x\nlayers: ['*']\ntopics: [api]\n", 1, "front matter", "never closed"),
        (
            "---\nid: x\nlayers: ['*']\ntopics: [api]\n---\n\n## S\n\n- [MUST] ok\n- Do it without a marker.\n",
            10,
            "directive",
            "no severity marker",
        ),
        (
            "---\nid: x\nlayers: ['*']\ntopics: [api]\n---\n\n## S\n\n- [MUSTNT] Do it.\n",
            9,
            "directive",
            "unknown severity 'MUSTNT'",
        ),
        (
            "---\nid: x\nlayers: ['*']\ntopics: [api]\n---\n\n## S\n\n- [MUST] Do it.\n  Layer: 9-Nope\n",
            9,
            "Layer",
            "unknown layer",
        ),
        ("---\nid: x\nlayers: ['*']\ntopics: [api]\nreviewed: last week\n---\n", 5, "reviewed", "not a date"),
        # YAML reads "Fix: the bug" in a flow list as a mapping, and an empty entry as null: say which item
        (
            "---\nid: x\nlayers: ['*']\ntopics: [api]\nexamples: [Add a page, Fix: the bug]\n---\n",
            5,
            "examples",
            "item 2",
        ),
        (
            "---\nid: x\nlayers: ['*']\ntopics: [api]\nexamples: [Add a page, null]\n---\n",
            5,
            "examples",
            "item 2 is None",
        ),
        ("---\nid: x\nlayers: ['*']\ntopics: [api]\nreviewed: 2026-13-45\n---\n", 5, "reviewed", "not a real date"),
        ("---\nid: x\nlayers: ['*']\ntopics: [api]\nexpires: 2026-02-30\n---\n", 5, "expires", "not a real date"),
        (
            "---\nid: x\nlayers: ['*']\ntopics: [api]\ntopics: [security]\n---\n",
            5,
            "topics",
            "given twice (also on line 4)",
        ),
    ],
)
def test_malformed_documents_name_file_line_and_field(text: str, line: int, field: str, needle: str) -> None:
    with pytest.raises(RuleError) as caught:
        parse_document(text, "rules/bad.md")
    err = caught.value
    assert (err.path, err.line, err.field) == ("rules/bad.md", line, field)
    assert needle in err.message
    assert str(err).startswith(f"rules/bad.md:{line}: {field}: ")


def test_unknown_field_is_a_warning_not_an_error() -> None:
    doc = parse_document(rule_doc("## S\n\n- [MUST] Do it.", extra="colour: blue\n"), "s.md")
    assert any("colour: unknown field ignored" in w for w in doc.warnings)


def test_every_schema_error_of_a_document_in_one_pass() -> None:
    """A mistake in one field or directive used to hide the next: five mistakes took five runs."""
    text = (
        "---\nid: x\nlayers: [9-Bad]\ntopics: [nope]\nscope: world\nreviewed: 2026-13-45\nalways_apply: maybe\n"
        "severity: SHUOLD\n---\n\n## S\n\n- [MUSTNT] Do it.\n- Unmarked items take the (broken) default.\n"
        "- [MUST] Do that.\n  Layer: 9-Nope\n"
    )
    with pytest.raises(RuleErrors) as caught:
        parse_document(text, "bad.md")
    found = [(e.line, e.field) for e in caught.value.errors]
    assert found == [
        (3, "layers"),
        (4, "topics"),
        (5, "scope"),
        (6, "reviewed"),
        (7, "always_apply"),
        (8, "severity"),
        (13, "directive"),
        (15, "Layer"),
    ]


def test_derived_id_of_a_path_with_spaces_or_accents_is_valid() -> None:
    """rules/sub dir/x.md without id: failed with "'sub dir/x' is not a valid id" though no id was written."""
    doc = parse_document(rule_doc("## S\n\n- [MUST] Do it.").replace("id: sample\n", ""), "sub dir/x.md")
    assert doc.rule.id == "sub-dir/x" and doc.directives[0].id == "sub-dir/x#s-1"
    assert parse_document(
        rule_doc("## S\n\n- [MUST] Do it.").replace("id: sample\n", ""), "équipe/café.md"
    ).rule.id == ("equipe/cafe")
    ordinary = parse_document(rule_doc("## S\n\n- [MUST] Do it.").replace("id: sample\n", ""), "api/v1.2_x-y.md")
    assert ordinary.rule.id == "api/v1.2_x-y"


def test_an_id_that_cannot_be_derived_says_to_set_id() -> None:
    fm = frontmatter.split("---\nlayers: ['*']\ntopics: [api]\n---\n", "x.md")
    errors = validate(fm, "x.md", "-not valid-")[2]
    assert [e.field for e in errors] == ["id"] and "set `id:` in the front matter" in errors[0].message


@pytest.mark.parametrize("key", ["title", "description", "version", "id"])
def test_a_list_where_text_is_expected_is_an_error(key: str) -> None:
    """`title: [x, y]` was accepted and shown as "['x', 'y']"."""
    text = f"---\nlayers: ['*']\ntopics: [api]\n{key}: [x, y]\n---\n\n## S\n\n- [MUST] Do it.\n"
    with pytest.raises(RuleError) as caught:
        parse_document(text, "x.md")
    assert (caught.value.line, caught.value.field) == (4, key) and "must be a string, got list" in caught.value.message


def test_authority_outside_the_rules_topics_is_a_warning() -> None:
    doc = parse_document(rule_doc("## S\n\n- [MUST] Do it.", topics="[security]"), "s.md")
    assert any(
        w.startswith("s.md:6: authoritative_for: topic 'api' is not in this rule's topics") for w in doc.warnings
    )
    core = parse_document(rule_doc("## S\n\n- [MUST] Do it.").replace("[api]\nwhen", '["*", api]\nwhen'), "c.md")
    assert not [w for w in core.warnings if "authoritative_for" in w]


def test_globs_written_as_cursor_writes_them_are_split_at_commas_outside_braces() -> None:
    """`globs: "src/**/*.{ts,tsx}, tests/**"` is two patterns: one would never match a file."""
    text = rule_doc(
        "## S\n\n- [MUST] Type every exported function's parameters.", extra='globs: "src/**/*.{ts,tsx}, tests/**"\n'
    )
    assert parse_document(text, "sample.md").rule.globs == ("src/**/*.{ts,tsx}", "tests/**")
    listed = rule_doc("## S\n\n- [MUST] Type every exported function's parameters.", extra='globs: ["**/*.ts"]\n')
    assert parse_document(listed, "sample.md").rule.globs == ("**/*.ts",)


def test_an_unknown_field_suggests_the_known_one_it_most_likely_means() -> None:
    """Cursor writes alwaysApply; ruledex front matter spells it always_apply."""
    text = rule_doc("## S\n\n- [MUST] Type every exported function's parameters.", extra="alwaysApply: true\nfoo: 1\n")
    warnings = parse_document(text, "sample.md").warnings
    assert any("alwaysApply: unknown field ignored; did you mean `always_apply`?" in w for w in warnings)
    assert any("foo: unknown field ignored; known fields are listed in rules/CONTRIBUTING.md" in w for w in warnings)


def test_a_repeated_or_shadowed_example_is_a_warning() -> None:
    """A repeated example lets ``check --examples`` pass by construction; ``example_tasks`` beside ``examples`` is dropped."""
    text = rule_doc("## S\n\n- [MUST] Do it.").replace("Change an endpoint]", "Add an endpoint]")
    doc = parse_document(text, "s.md")
    assert doc.rule.examples == ("Add an endpoint",)
    assert any(w.startswith("s.md:8: examples: 'Add an endpoint' is listed twice") for w in doc.warnings)
    both = parse_document(rule_doc("## S\n\n- [MUST] Do it.", extra="example_tasks: [Rename a column]\n"), "b.md")
    assert any(w.startswith("b.md:9: example_tasks: ignored, since `examples` is set too") for w in both.warnings)


def test_quotes_nested_too_deep_are_refused_at_their_line_not_parsed_for_hours() -> None:
    """marko's time grows ~1.7-fold per '> ' level: 40 levels would hang a build; 16 still read."""
    from ruledex.builder.parse import MAX_QUOTE_DEPTH

    base = rule_doc("## Rules\n\n- [MUST] Validate every request body at the boundary.")
    fine = parse_document(base + "\n" + "> " * MAX_QUOTE_DEPTH + "quoted\n", "a.md")
    assert fine.directives
    for line in ("> " * 40 + "deep", "- " + "> " * 40 + "deep", " >\t" * 40 + "deep"):
        with pytest.raises(RuleError) as exc:
            parse_document(base + "\n" + line + "\n", "a.md")
        assert exc.value.line == base.count("\n") + 2 and exc.value.field == "markdown"
        assert "40 levels deep" in exc.value.message and f"at most {MAX_QUOTE_DEPTH}" in exc.value.message
    # compact markers (>>>>, a merge conflict's >>>>>>>) nest no quote per marker and parse fast
    assert parse_document(base + "\n```\n" + ">" * 40 + " branch\n```\n", "a.md").directives


def test_lists_nested_beyond_the_parsers_depth_are_an_error_naming_the_file() -> None:
    from ruledex.builder.source import SourceFile
    from ruledex.builder.workers import parse_ruledex_file

    base = rule_doc("## Rules\n\n- [MUST] Validate every request body at the boundary.")
    deep = base + "\n" + "".join("  " * i + "- item\n" for i in range(600))
    doc, errors, _ = parse_ruledex_file(SourceFile("deep.md", deep))
    assert doc is None and [(e.path, e.field) for e in errors] == [("deep.md", "file")]
    assert "nested too deeply" in errors[0].message
    nested = "".join("  " * i + f"- [SHOULD] Keep nested item {i} short.\n" for i in range(12))
    doc, errors, _ = parse_ruledex_file(SourceFile("ok.md", base + "\n" + nested))
    assert doc is not None and not errors
