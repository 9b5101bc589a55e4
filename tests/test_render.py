"""The block stays near its token budget whatever a rule holds."""

from __future__ import annotations

from ruledex.reader.records import DirectiveRecord, RuleRecord
from ruledex.reader.render import MAX_SHOWN_WORDS, Item, render
from ruledex.reader.text import count_tokens

RULE = RuleRecord(id="essay", title="Essay", path="essay.md", layers=("2-Application",), topics=("api",))


def _item(n: int, words: int, severity: str = "MUST") -> Item:
    text = " ".join(f"word{i % 97}" for i in range(words))
    return Item(DirectiveRecord(f"essay#s-{n}", 3, ("S",), severity, text), RULE, 10.0 - n)


def test_a_pasted_essay_is_shortened_not_shown_whole() -> None:
    """A guaranteed MUST passes the budget; a 40,000-word one must not take 90,000 tokens with it."""
    out = render([_item(1, 40_000), _item(2, 12, "SHOULD")], header="", footer="", token_budget=300, max_items=8)
    line = out.block.splitlines()[0]
    assert "shortened from 40000 words: see the rule" in line and "`[essay#s-1]`" in line
    assert len(line.split()) < MAX_SHOWN_WORDS + 20
    assert out.tokens == count_tokens(out.block) < 2 * 300
    assert [c["id"] for c in out.citations] == ["essay#s-1"], "the short one does not fit what is left"


def test_directives_of_ordinary_length_are_shown_whole() -> None:
    out = render([_item(1, MAX_SHOWN_WORDS)], header="", footer="", token_budget=900, max_items=8)
    assert "shortened" not in out.block and "word5" in out.block


def test_the_block_count_is_the_whole_blocks_whatever_the_header_and_footer() -> None:
    """The block's tokens come from its parts' words only where no word can span two parts."""
    items = [_item(1, 12), _item(2, 30, "SHOULD"), _item(3, 7, "MAY")]
    always = [Item(DirectiveRecord("core#c-1", 1, ("C",), "MUST", "Always this."), RULE, 0.0)]
    for header, footer in [("## H\n\n", "\n_src_\n"), ("", ""), ("no space", "tail"), ("h ", "x"), ("", "joined")]:
        out = render(items, header=header, footer=footer, token_budget=900, max_items=8, always=always)
        assert out.tokens == count_tokens(out.block), (header, footer)
