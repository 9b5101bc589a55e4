"""Encode text into the index's embedding space, exactly as model2vec's ``StaticModel.encode``.

The artifact carries the static model's token matrix (int8 rows with a float32 scale per row) and
its tokenizer, so queries are encoded with no model download and no model2vec import. The steps
mirror model2vec 0.10: cut the text to ``max_length * median_token_length`` characters, tokenize
without special tokens (truncating to ``max_length`` tokens), drop the unknown token, look up and
scale the rows, take the mean, and L2-normalise when the model normalises. Text with no known
token encodes to a float32 zero vector.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from tokenizers import Tokenizer


@dataclass(frozen=True)
class EncoderParams:
    """The model facts the encoder needs; stored in the manifest under ``model``."""

    dim: int
    normalize: bool
    max_length: int | None
    median_token_length: int
    unk_token_id: int | None
    cosine_scale: float = 1.0
    cosine_shift: float = 0.0
    """``cosine_scale * cos + cosine_shift`` puts this model's task-to-text cosines on the scale ruledex's
    ranking and detection constants were set on (those of the plain distilled model). ``ruledex distill``
    fits it for the model it maps onto the teacher's sentence space; any other model keeps 1 and 0."""

    @classmethod
    def from_manifest(cls, model: dict[str, Any]) -> EncoderParams:
        """Read the parameters from a manifest's ``model`` entry."""
        return cls(
            dim=int(model["dim"]),
            normalize=bool(model["normalize"]),
            max_length=model.get("max_length"),
            median_token_length=int(model["median_token_length"]),
            unk_token_id=model.get("unk_token_id"),
            cosine_scale=float(model.get("cosine_scale", 1.0)),
            cosine_shift=float(model.get("cosine_shift", 0.0)),
        )

    def calibrate(self, cosines: np.ndarray) -> np.ndarray:
        """Raw cosines (float32) on the calibrated scale; unchanged for an uncalibrated model."""
        if self.cosine_scale == 1.0 and self.cosine_shift == 0.0:
            return cosines
        return (cosines * np.float32(self.cosine_scale) + np.float32(self.cosine_shift)).astype(np.float32, copy=False)


class Encoder:
    """Turns text into unit vectors with a tokenizer and an int8 token matrix."""

    def __init__(self, tokenizer: Tokenizer, vectors: np.ndarray, scales: np.ndarray, params: EncoderParams) -> None:
        """Wrap a tokenizer and the (vocab, dim) int8 matrix with its per-row scales."""
        self.tokenizer = tokenizer
        self.vectors = vectors
        self.scales = scales
        self.params = params
        if params.max_length is None:
            tokenizer.no_truncation()
        else:
            tokenizer.enable_truncation(params.max_length)
        tokenizer.no_padding()

    @classmethod
    def from_json(cls, tokenizer_json: str, vectors: np.ndarray, scales: np.ndarray, params: EncoderParams) -> Encoder:
        """Build an encoder from a tokenizer.json string."""
        return cls(Tokenizer.from_str(tokenizer_json), vectors, scales, params)

    @property
    def char_cut(self) -> int | None:
        """How many characters of a text are tokenized (model2vec's ``max_length * median_token_length``)."""
        p = self.params
        return None if p.max_length is None else p.max_length * p.median_token_length

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """Token ids per text, as model2vec computes them (no special tokens, no unknowns)."""
        p = self.params
        cut = self.char_cut
        if cut is not None:
            texts = [t[:cut] for t in texts]
        encodings = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        unk = p.unk_token_id
        return [[i for i in e.ids if i != unk] for e in encodings]

    def pool(self, ids: list[int]) -> np.ndarray:
        """Mean of the scaled token rows, normalised per the model; zeros when ``ids`` is empty."""
        if not ids:
            return np.zeros(self.params.dim, dtype=np.float32)
        idx = np.asarray(ids, dtype=np.int64)
        # float64 accumulation, as model2vec does for int8 rows, keeps the result identical
        rows = self.vectors[idx].astype(np.float64) * self.scales[idx, None]
        vec = (rows.sum(axis=0) / len(ids)).astype(np.float32)
        if self.params.normalize:
            vec = vec / (np.sqrt(vec.dot(vec)) + np.float32(1e-32))  # np.linalg.norm's own formula, without its wrapper
        return vec.astype(np.float32, copy=False)

    def encode(self, texts: list[str]) -> np.ndarray:
        """Encode texts into a (len(texts), dim) float32 matrix."""
        return self.pool_rows(self.token_ids(texts))

    def pool_rows(self, token_ids: list[list[int]]) -> np.ndarray:
        """:meth:`pool` each text's token ids (as :meth:`token_ids` gives them) into one row of a matrix."""
        out = np.zeros((len(token_ids), self.params.dim), dtype=np.float32)
        for row, ids in enumerate(token_ids):
            out[row] = self.pool(ids)
        return out

    def encode_one(self, text: str) -> np.ndarray:
        """Encode one text into a (dim,) float32 vector (the same as :meth:`encode`'s row, without the matrix)."""
        return self.pool(self.token_ids([text])[0])


def unit_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (zero rows stay zero), as float32."""
    matrix = np.asarray(matrix, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
