"""Load a model2vec static model and turn it into what the artifact stores.

The default model ships in ``builder/model/`` (distilled by ``ruledex distill`` from
all-MiniLM-L6-v2), so nothing downloads. ``--model`` takes any model2vec model: a local folder,
or a Hugging Face hub name when a network exists.

The artifact stores the token matrix as int8 rows with a float32 scale per row. An int8 model is
stored as is, with scales of one, which makes the reader's encoding identical to
``StaticModel.encode``; a float model is quantised per row. Directives are embedded with the
reader's own :class:`~ruledex.reader.encode.Encoder` over exactly those stored bytes, so queries
and directives live in the same space.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

from ruledex.reader.encode import Encoder, EncoderParams
from ruledex.reader.errors import ConfigError

DEFAULT_MODEL_DIR = Path(__file__).parent / "model"
DEFAULT_MODEL_NAME = "ruledex/minilm-l6-static-taskmap-256-int8"


@dataclass(frozen=True)
class StoredModel:
    """A static model in the artifact's form: tokenizer JSON, int8 rows, row scales, parameters."""

    name: str
    tokenizer_json: str
    vectors: np.ndarray
    scales: np.ndarray
    params: EncoderParams

    @property
    def hash(self) -> str:
        """sha256 over everything the encoder uses: identifies the exact embedding space."""
        digest = hashlib.sha256()
        digest.update(self.tokenizer_json.encode())
        digest.update(np.ascontiguousarray(self.vectors).tobytes())
        digest.update(np.ascontiguousarray(self.scales, dtype="<f4").tobytes())
        digest.update(json.dumps(self.manifest_params(), sort_keys=True).encode())
        return digest.hexdigest()

    def manifest_params(self) -> dict[str, Any]:
        """Encoder parameters as the manifest stores them."""
        p = self.params
        return {
            "dim": p.dim,
            "normalize": p.normalize,
            "max_length": p.max_length,
            "median_token_length": p.median_token_length,
            "unk_token_id": p.unk_token_id,
            "cosine_scale": p.cosine_scale,
            "cosine_shift": p.cosine_shift,
        }

    def encoder(self) -> Encoder:
        """The reader's encoder over this model's stored form."""
        return Encoder.from_json(self.tokenizer_json, self.vectors, self.scales, self.params)


def quantize_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row symmetric int8 quantisation: ``row ~= q * scale``."""
    matrix = np.asarray(matrix, dtype=np.float32)
    scale = np.abs(matrix).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(matrix / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def from_static_model(model: Any, name: str) -> StoredModel:
    """Convert a loaded ``model2vec.StaticModel`` to its stored form."""
    from tokenizers import Tokenizer

    embedding = np.asarray(model.embedding)
    mapping = getattr(model, "token_mapping", None)
    weights = getattr(model, "weights", None)
    if embedding.dtype == np.int8 and mapping is None and weights is None:
        vectors, scales = embedding, np.ones(len(embedding), dtype=np.float32)
    else:
        full = embedding[mapping] if mapping is not None else embedding
        full = full.astype(np.float32)
        if weights is not None:
            full = full * np.asarray(weights, dtype=np.float32)[:, None]
        vectors, scales = quantize_rows(full)
    tokenizer = Tokenizer.from_str(model.tokenizer.to_str())
    tokenizer.no_truncation()
    tokenizer.no_padding()
    unk = getattr(model, "unk_token_id", None)
    scale, shift = _calibration(getattr(model, "config", None) or {}, name)
    params = EncoderParams(
        dim=int(vectors.shape[1]),
        normalize=bool(model.normalize),
        max_length=getattr(model, "max_length", None),
        median_token_length=int(model.median_token_length),
        unk_token_id=None if unk is None else int(unk),
        cosine_scale=scale,
        cosine_shift=shift,
    )
    return StoredModel(name, tokenizer.to_str(), np.ascontiguousarray(vectors), scales, params)


def _calibration(config: dict[str, Any], name: str) -> tuple[float, float]:
    """The model's cosine calibration from its config (1 and 0 when it has none); ConfigError if malformed."""
    scale, shift = config.get("cosine_scale", 1.0), config.get("cosine_shift", 0.0)
    numbers = all(isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in (scale, shift))
    if not numbers or scale <= 0:
        raise ConfigError(
            f"model {name}: config.json fields cosine_scale and cosine_shift must be finite numbers, cosine_scale "
            f"above 0 (got {scale!r} and {shift!r}); fix them, or remove both to use the model's raw cosines"
        )
    return float(scale), float(shift)


def shipped_model() -> Any:
    """The shipped model as a ``model2vec.StaticModel``, made from its three files.

    What ``StaticModel.from_pretrained`` does for a model2vec folder, without its first step:
    importing model2vec's hub and model-card modules (huggingface_hub, jinja2), about 0.2 s of
    every build, for a folder that needs neither. The constructor is model2vec's own, so the
    tokenizer settings, unknown token and median token length are derived as it derives them;
    ``tests/test_encode_parity.py`` checks that both ways give the same stored model.
    """
    from model2vec.model import DEFAULT_MAX_LENGTH, StaticModel
    from safetensors.numpy import load_file
    from tokenizers import Tokenizer

    config = json.loads((DEFAULT_MODEL_DIR / "config.json").read_text(encoding="utf-8"))
    tensors = load_file(str(DEFAULT_MODEL_DIR / "model.safetensors"))
    return StaticModel(
        vectors=tensors["embeddings"],
        tokenizer=Tokenizer.from_file(str(DEFAULT_MODEL_DIR / "tokenizer.json")),
        config=config,
        normalize=bool(config.get("normalize", False)),
        weights=tensors.get("weights"),
        token_mapping=tensors.get("mapping"),
        max_length=config.get("max_length", DEFAULT_MAX_LENGTH),
    )


def load_model(name_or_path: str | None = None) -> StoredModel:
    """Load the default shipped model, a local model2vec folder, or a hub model by name."""
    try:
        from model2vec import StaticModel
    except ImportError:
        raise ConfigError("building needs the builder's dependencies: pip install 'ruledex[build]'") from None
    if name_or_path is None:
        if not (DEFAULT_MODEL_DIR / "config.json").exists():
            raise ConfigError(
                f"the default model is missing from {DEFAULT_MODEL_DIR}; reinstall ruledex, or regenerate it with `ruledex distill`"
            )
        return from_static_model(shipped_model(), DEFAULT_MODEL_NAME)
    local = Path(name_or_path)
    if local.exists():
        if not (local / "config.json").exists():
            raise ConfigError(
                f"{local}: not a model2vec model folder (no config.json); pass a folder written by model2vec or `ruledex distill`"
            )
        return from_static_model(StaticModel.from_pretrained(str(local)), local.name)
    try:
        model = StaticModel.from_pretrained(name_or_path, force_download=False)
    except Exception as exc:
        raise ConfigError(
            f"could not load model {name_or_path!r} ({type(exc).__name__}: {exc}); pass a local model2vec folder, "
            "or omit --model to use the bundled offline model"
        ) from None
    return from_static_model(model, name_or_path)


IDF_FORMULA = "ln((N+1)/(df+1))+1"


def idf_weights(encoder: Encoder, documents: list[str]) -> np.ndarray:
    """Per-token IDF over ``documents`` in the model's own tokens (issue #4's probe: +0.08-0.10 nDCG).

    Baked into the stored row scales, so the reader still takes a plain mean: frequent tokens
    ("the", "use", "must") pull the mean less than distinctive ones ("migration", "csrf").
    """
    return idf_from_ids(len(encoder.scales), encoder.token_ids(documents))


def idf_from_ids(vocab: int, documents: list[list[int]]) -> np.ndarray:
    """:func:`idf_weights` of documents already tokenized (each a list of token ids)."""
    df = np.zeros(vocab, dtype=np.float64)
    for ids in documents:
        df[np.unique(np.asarray(ids, dtype=np.int64))] += 1
    n = len(documents)
    return (np.log((n + 1) / (df + 1)) + 1).astype(np.float32)


def splits_at_whitespace(tokenizer: Tokenizer) -> bool:
    """Whether the tokens of texts joined by whitespace are each text's tokens, one after the other.

    True of BERT's WordPiece pipeline, the shipped model's: its normalizer maps one character at a
    time and its pre-tokenizer cuts at whitespace before WordPiece sees a word. Other tokenizers may
    mark where a word stands (SentencePiece's ``▁``, byte-level BPE's ``Ġ``), so they are not trusted.
    """
    return (
        isinstance(tokenizer.normalizer, normalizers.BertNormalizer)
        and isinstance(tokenizer.pre_tokenizer, pre_tokenizers.BertPreTokenizer)
        and isinstance(tokenizer.model, models.WordPiece)
    )


class PieceTokens:
    """Token ids of texts made of pieces joined by whitespace, each distinct piece tokenized once.

    A directive's document and its embedding text share its text, and every directive repeats its
    section headings and its rule's title: at 10k directives, tokenizing each piece once instead of
    each whole text took the build's tokenizing from about 1.0 to 0.5 s. The ids are exactly
    :meth:`Encoder.token_ids`' of the joined text: a tokenizer that is not
    :func:`splits_at_whitespace`, and a text long enough to be cut (by characters, or at the model's
    ``max_length`` tokens), get the whole text tokenized.
    """

    def __init__(self, encoder: Encoder, pieces: Iterable[str]) -> None:
        """Tokenize every distinct piece (once, in one batch)."""
        self.encoder = encoder
        self.exact = splits_at_whitespace(encoder.tokenizer)
        unique = list(dict.fromkeys(pieces)) if self.exact else []
        encodings = encoder.tokenizer.encode_batch_fast(unique, add_special_tokens=False) if unique else []
        self._ids = {piece: e.ids for piece, e in zip(unique, encodings, strict=True)}

    def token_ids(self, texts: list[list[str]], separator: str) -> list[list[int]]:
        """``encoder.token_ids([separator.join(pieces) for pieces in texts])``, from the pieces' ids."""
        if not self.exact or not separator.isspace():
            return self.encoder.token_ids([separator.join(pieces) for pieces in texts])
        p, cut = self.encoder.params, self.encoder.char_cut
        unk, ids_of = p.unk_token_id, self._ids
        out: list[list[int]] = []
        for pieces in texts:
            ids = [i for piece in pieces for i in ids_of[piece]]
            text = separator.join(pieces)
            if (cut is not None and len(text) > cut) or (p.max_length is not None and len(ids) >= p.max_length):
                out.append(self.encoder.token_ids([text])[0])  # cut or truncated: tokenized whole
            else:
                out.append([i for i in ids if i != unk])
        return out


def weighted(model: StoredModel, weights: np.ndarray) -> StoredModel:
    """The same model with its row scales multiplied by ``weights`` (what the index stores)."""
    return StoredModel(
        model.name, model.tokenizer_json, model.vectors, (model.scales * weights).astype(np.float32), model.params
    )


def embed_texts(encoder: Encoder, texts: list[str]) -> np.ndarray:
    """Unit-length float32 embeddings of ``texts`` (zero rows for texts with no known token)."""
    return embed_token_ids(encoder, encoder.token_ids(texts) if texts else [])


def embed_token_ids(encoder: Encoder, token_ids: list[list[int]]) -> np.ndarray:
    """:func:`embed_texts` of texts already tokenized (:meth:`Encoder.token_ids`)."""
    from ruledex.reader.encode import unit_rows

    return unit_rows(encoder.pool_rows(token_ids))
