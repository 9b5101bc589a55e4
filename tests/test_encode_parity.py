"""The reader's encoder reproduces model2vec's StaticModel.encode on the shipped model."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ruledex.builder.embed import DEFAULT_MODEL_DIR, load_model
from ruledex.reader.index import Index

TEXTS = [
    "Add user registration API endpoint",
    "Parameterize every SQL query; never build SQL by string concatenation.",
    "Ünïcödé and emoji 😀 and a verylongwordthatisnotinthevocabularyatallxyz",
    "x" * 5000,
    "",
    "😀😀",
]


def test_matches_static_model_encode() -> None:
    model2vec = pytest.importorskip("model2vec")
    reference = model2vec.StaticModel.from_pretrained(str(DEFAULT_MODEL_DIR))
    expected = reference.encode(TEXTS)
    ours = load_model().encoder().encode(TEXTS)
    np.testing.assert_allclose(ours, expected, rtol=1e-6, atol=1e-7)


def test_the_shipped_model_loads_as_model2vec_loads_it() -> None:
    """Builds read the shipped folder without model2vec's hub loader: the same model, to the byte."""
    model2vec = pytest.importorskip("model2vec")
    from ruledex.builder.embed import DEFAULT_MODEL_NAME, from_static_model

    reference = from_static_model(model2vec.StaticModel.from_pretrained(str(DEFAULT_MODEL_DIR)), DEFAULT_MODEL_NAME)
    fast = load_model()
    assert (fast.hash, fast.params, fast.tokenizer_json) == (reference.hash, reference.params, reference.tokenizer_json)


def test_text_without_known_tokens_is_a_zero_vector() -> None:
    vec = load_model().encoder().encode_one("😀😀")
    assert vec.dtype == np.float32
    assert not np.any(vec)


def test_index_stores_the_model_with_idf_weights_baked_in(index: Index) -> None:
    from ruledex.builder.embed import idf_weights, weighted
    from ruledex.builder.keywords import directive_document

    stored = load_model()
    documents = [
        directive_document(index.rule(index.directive(i).rule), index.directive(i)) for i in range(index.n_directives)
    ]
    expected = weighted(stored, idf_weights(stored.encoder(), documents))
    np.testing.assert_array_equal(index.artifact.section("token_vectors"), stored.vectors)
    np.testing.assert_allclose(index.artifact.section("token_scales"), expected.scales, rtol=1e-6)
    np.testing.assert_allclose(index.encoder.encode(TEXTS), expected.encoder().encode(TEXTS), rtol=1e-5, atol=1e-6)
    assert index.manifest["model"]["hash"] == stored.hash
    assert index.manifest["model"]["token_weighting"]["method"] == "idf"


def test_the_shipped_model_carries_its_cosine_calibration_into_every_index(index: Index) -> None:
    import json

    config = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text())
    scale, shift = config["cosine_scale"], config["cosine_shift"]
    assert 0 < scale < 1 and 0 < shift < 1  # the mapped space's cosines are lower and wider than the plain model's
    assert (index.manifest["model"]["cosine_scale"], index.manifest["model"]["cosine_shift"]) == (scale, shift)
    q = index.encoder.encode_one("Add user registration API endpoint")
    raw = index.directive_vectors @ q
    np.testing.assert_allclose(index.cosines(index.directive_vectors, q), scale * raw + shift, rtol=1e-5, atol=1e-6)
    nothing = index.encoder.encode_one("😀😀")  # no known token: no evidence by meaning at all
    assert not index.cosines(index.directive_vectors, nothing).any()


def test_a_model_without_a_calibration_keeps_its_raw_cosines() -> None:
    from ruledex.reader.encode import EncoderParams

    old = {"dim": 4, "normalize": True, "max_length": 512, "median_token_length": 4, "unk_token_id": 100}
    params = EncoderParams.from_manifest(old)  # an index built before calibrations existed
    raw = np.array([0.1, 0.5, -0.2], dtype=np.float32)
    assert params.calibrate(raw) is raw
    calibrated = EncoderParams.from_manifest(old | {"cosine_scale": 0.5, "cosine_shift": 0.25})
    np.testing.assert_allclose(calibrated.calibrate(raw), [0.3, 0.5, 0.15], rtol=1e-6)
    assert calibrated.calibrate(raw).dtype == np.float32


def test_a_model_with_a_malformed_calibration_is_refused_naming_the_field(tmp_path: Path) -> None:
    import json
    import shutil

    from ruledex.reader.errors import ConfigError

    pytest.importorskip("model2vec")
    folder = tmp_path / "my-model"
    shutil.copytree(DEFAULT_MODEL_DIR, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | {"cosine_scale": "0.8"}))
    with pytest.raises(ConfigError, match=r"my-model: config.json fields cosine_scale and cosine_shift .* \(got '0.8'"):
        load_model(str(folder))
    del config["cosine_scale"], config["cosine_shift"]
    (folder / "config.json").write_text(json.dumps(config))
    params = load_model(str(folder)).params  # a model without a calibration keeps its raw cosines
    assert (params.cosine_scale, params.cosine_shift) == (1.0, 0.0)


PIECES = [
    ["Migrations", "Zero-downtime changes"],
    ["Never log secrets; mask tokens.", "Why: logs are copied to many places", "Security", "Application security"],
    ["Ünïcödé façade", "ΣΊΣΥΦΟΣ ΟΔΟΣ", "中文字符 and 日本語", "emoji 😀 done"],
    ["tab\there", "control\x00\x07chars", "zero\u200bwidth", "İstanbul ǅ ß"],
    ["", "only the second piece", ""],
    ["verylongwordthatisnotinthevocabularyatallxyz" * 3, "x"],
    ["go " * 600, "tail"],  # over 512 tokens: the tokenizer truncates, so the whole text is tokenized
    ["y" * 2000, "z" * 2000],  # over max_length * median_token_length characters: cut, so whole
    [],
]


@pytest.mark.parametrize("separator", ["\n", " "])
def test_piece_tokens_are_the_joined_texts_tokens(separator: str) -> None:
    """Tokenizing each piece once gives every text exactly the ids of tokenizing it whole."""
    from ruledex.builder.embed import PieceTokens

    encoder = load_model().encoder()
    pieces = PieceTokens(encoder, (p for parts in PIECES for p in parts))
    assert pieces.exact  # the shipped tokenizer is BERT's WordPiece
    expected = encoder.token_ids([separator.join(parts) for parts in PIECES])
    assert pieces.token_ids(PIECES, separator) == expected
    assert any(len(ids) == 512 for ids in expected)  # the truncated text is among them


def test_piece_tokens_tokenize_whole_texts_for_other_tokenizers() -> None:
    """A tokenizer that marks where a word stands is not trusted with pieces.

    Byte-level BPE's pre-tokenizer keeps the space before a word ("a b" is "a", "Ġb"), so "b" alone
    is another token than "b" after a space: pieces tokenized alone would give other ids.
    """
    from tokenizers import Tokenizer, models, pre_tokenizers

    from ruledex.builder.embed import PieceTokens, splits_at_whitespace
    from ruledex.reader.encode import Encoder, EncoderParams

    tokenizer = Tokenizer(models.WordLevel({"[UNK]": 0, "a": 1, "Ġb": 2, "b": 3}, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    assert not splits_at_whitespace(tokenizer)
    params = EncoderParams(dim=2, normalize=True, max_length=None, median_token_length=1, unk_token_id=0)
    encoder = Encoder(tokenizer, np.zeros((4, 2), np.int8), np.ones(4, np.float32), params)
    texts = [["a", "b"], ["b"]]
    pieces = PieceTokens(encoder, (p for parts in texts for p in parts))
    assert pieces.token_ids(texts, " ") == encoder.token_ids(["a b", "b"]) == [[1, 2], [3]]
