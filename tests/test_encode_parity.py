"""The reader's encoder reproduces model2vec's StaticModel.encode on the shipped model."""

from __future__ import annotations

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


def test_text_without_known_tokens_is_a_zero_vector() -> None:
    vec = load_model().encoder().encode_one("😀😀")
    assert vec.dtype == np.float32
    assert not np.any(vec)


def test_index_encoder_matches_builder_encoder(index: Index) -> None:
    stored = load_model()
    np.testing.assert_array_equal(index.encoder.encode(TEXTS), stored.encoder().encode(TEXTS))
    assert index.manifest["model"]["hash"] == stored.hash
