"""Warm, in-process query latency: ruledex's ``query_directives`` beside the baselines, interleaved.

Every round runs the whole task list on ruledex, then on each baseline in turn, so machine noise
hits all systems alike and ratios come from the same run. Systems alternate by round, not by task:
interleaving per task let each baseline's garbage and cache traffic land inside the next system's
timing (the memory-scan baseline, which parses its whole graph per call, made ruledex's p50 1.5x
slower at 1k that way; see bench/README.md). A server runs ruledex alone in its process. ruledex's time
is split into its stages from ``diagnostics.stageMs``. The int8 experiment measures what storing
the directive vectors as int8 rows with a scale would cost and keep: the cosine step's time in
several numpy formulations and the top-50 recall against float32.

Beside each corpus, ruledex also answers the same tasks from a one-file index
(:data:`ONE_FILE_DIRECTIVES` directives, :func:`build_one_file_index`), timed in the same rounds:
what a query costs whatever the corpus (encoding the task, detection, the ranking signals, the
block), the floor under every corpus's figure.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from pathlib import Path
from typing import Any

import numpy as np

from .baselines import docs_from_index, make_baselines
from .measure import MB, ratio, summary

STAGES = ("detect", "retrieve", "rank", "format")

ONE_FILE_DIRECTIVES = 20
"""Directives in the one-file index: one synthetic rule document, the smallest realistic corpus."""


def build_one_file_index(work: Path, seed: int) -> Path:
    """Write one synthetic rule document and build it (in this process); returns the index path."""
    from ruledex.builder.build import build

    from .synth import generate

    rules = work / "rules"
    generate(rules, ONE_FILE_DIRECTIVES, seed)
    out = work / "one-file.ruledex"
    build(rules, out)
    return out


def _time_ms(fn: Callable[[], Any]) -> tuple[float, Any]:
    started = time.perf_counter()
    result = fn()
    return (time.perf_counter() - started) * 1000, result


def run_queries(
    index_path: Path,
    tasks: Sequence[str],
    rounds: int,
    workdir: Path,
    *,
    baselines: tuple[str, ...] | None = None,
    baseline_budget_s: float = 60.0,
    one_file_index: Path | None = None,
) -> dict[str, Any]:
    """Warm latency of ruledex and the baselines over ``rounds`` x ``tasks`` (see module docstring).

    A baseline whose samples have used ``baseline_budget_s`` seconds stops early (the memory scan
    reloads its whole graph per query), keeping at least one full pass over the tasks. With
    ``one_file_index``, each round also runs the tasks on it, right after ruledex on the corpus.
    """
    from ruledex.reader.index import Index
    from ruledex.reader.query import query_directives

    with Index(index_path) as index, Index(one_file_index) if one_file_index else nullcontext() as one_file:
        started = time.perf_counter()
        docs = docs_from_index(index)
        made, skipped = make_baselines(docs, workdir, baselines)
        setup_s = time.perf_counter() - started
        for task in tasks:  # warm-up pass: encoder, caches, page cache
            query_directives(index, task)
            if one_file is not None:
                query_directives(one_file, task)
            for b in made:
                b.search(task)
        latencies: dict[str, list[float]] = {"ruledex": [], **{b.name: [] for b in made}}
        one_file_ms: list[float] = []
        spent = dict.fromkeys(latencies, 0.0)
        stages: dict[str, list[float]] = {s: [] for s in STAGES}
        cited: list[int] = []
        gc.collect()
        for r in range(rounds):
            for task in tasks:
                ms, answer = _time_ms(lambda task=task: query_directives(index, task))
                latencies["ruledex"].append(ms)
                cited.append(len(answer["citations"]))
                for s in STAGES:
                    stages[s].append(float(answer["diagnostics"]["stageMs"].get(s, 0.0)))
            if one_file is not None:
                one_file_ms.extend(_time_ms(lambda task=task: query_directives(one_file, task))[0] for task in tasks)
            for b in made:
                if r > 0 and spent[b.name] > baseline_budget_s:
                    continue
                for task in tasks:
                    ms, _ = _time_ms(lambda b=b, task=task: b.search(task))
                    latencies[b.name].append(ms)
                    spent[b.name] += ms / 1000
        for b in made:
            b.close()
        paged = resident_sections(index)
    systems = {name: summary(values) for name, values in latencies.items()}
    rd = systems["ruledex"]
    ratios = {
        name: {"p50": ratio(rd["p50"], s["p50"]), "p95": ratio(rd["p95"], s["p95"])}
        for name, s in systems.items()
        if name != "ruledex" and s["n"]
    }
    fixed: dict[str, Any] | None = None
    if one_file is not None:
        fts5 = systems.get("sqlite_fts5", {})
        fixed = {"directives": one_file.n_directives, **summary(one_file_ms)}
        fixed["over_fts5_p50"] = ratio(fixed["p50"], fts5["p50"]) if fts5.get("n") else None
    return {
        "tasks": len(tasks),
        "rounds": rounds,
        "systems": systems,
        "one_file_ruledex": fixed,
        "ratios_ruledex_over": ratios,
        "stages_ms": {s: summary(v) for s, v in stages.items()},
        "mean_citations": round(float(np.mean(cited)), 2) if cited else 0.0,
        "baseline_setup_s": round(setup_s, 2),
        "paged_in_after_queries": paged,
        "skipped": skipped,
    }


def resident_sections(index: Any) -> dict[str, Any]:
    """How much of each section of an opened index this process has paged in (Linux ``/proc/self/pagemap``).

    A page counts when it is mapped into this process (present bit), which includes the kernel's
    fault-around neighbours of the pages actually read. Sections under 64 KiB are summed as "small".
    """
    pagemap = Path("/proc/self/pagemap")
    if not pagemap.exists():
        return {"available": False, "why": "no /proc/self/pagemap (not Linux)"}
    page = os.sysconf("SC_PAGE_SIZE")
    out: dict[str, Any] = {}
    small = [0, 0]
    with pagemap.open("rb") as fh:
        for name in sorted(index.manifest["sections"]):
            arr = index.artifact.section(name)
            if arr.nbytes == 0:
                continue
            first, last = arr.ctypes.data // page, (arr.ctypes.data + arr.nbytes - 1) // page
            fh.seek(first * 8)
            flags = np.frombuffer(fh.read((last - first + 1) * 8), dtype="<u8")
            present = int(((flags >> np.uint64(63)) & np.uint64(1)).sum()) * page
            mapped = len(flags) * page
            if arr.nbytes < 65536:
                small[0] += present
                small[1] += mapped
            else:
                out[name] = {"resident_mb": round(present / MB, 2), "mb": round(mapped / MB, 2)}
    out["small_sections"] = {"resident_mb": round(small[0] / MB, 2), "mb": round(small[1] / MB, 2)}
    total = sum(v["resident_mb"] for v in out.values()), sum(v["mb"] for v in out.values())
    out["total"] = {
        "resident_mb": round(total[0], 2),
        "mb": round(total[1], 2),
        "share": round(total[0] / total[1], 4) if total[1] else None,
    }
    return {"available": True, **out}


def quantize_rows(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row symmetric int8: ``row ~= q * scale``."""
    scale = np.abs(matrix).max(axis=1) / 127.0
    scale[scale == 0] = 1.0
    q = np.clip(np.rint(matrix / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale.astype(np.float32)


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Ids of the ``k`` highest scores (ties by id), via argpartition then a small sort."""
    k = min(k, len(scores))
    if k == 0:
        return np.zeros(0, np.int64)
    part = np.argpartition(-scores, k - 1)[:k]
    return part[np.lexsort((part, -scores[part]))]


def int8_experiment(index_path: Path, tasks: Sequence[str], rounds: int = 5, k: int = 50) -> dict[str, Any]:
    """Cosine step in float32 vs int8 storage: time per formulation and top-``k`` recall vs float32."""
    from ruledex.reader.index import Index

    with Index(index_path) as index:
        vectors = np.asarray(index.directive_vectors)
        n = len(vectors)
        if n == 0:
            return {"directives": 0}
        q8, scale = quantize_rows(vectors)
        queries = [index.encoder.encode_one(t) for t in tasks]
        queries = [q for q in queries if np.any(q)]

        def f32(q: np.ndarray) -> np.ndarray:
            return vectors @ q

        def int8_upcast(q: np.ndarray) -> np.ndarray:
            return (q8.astype(np.float32) @ q) * scale

        def int8_int(q: np.ndarray) -> np.ndarray:
            qs = float(np.abs(q).max() / 127.0) or 1.0
            qq = np.rint(q / qs).astype(np.int8)
            dots = np.einsum("ij,j->i", q8, qq, dtype=np.int32, casting="unsafe")
            return dots.astype(np.float32) * scale * np.float32(qs)

        def int8_chunked(q: np.ndarray, chunk: int = 4096) -> np.ndarray:
            out = np.empty(n, np.float32)
            for start in range(0, n, chunk):
                block = q8[start : start + chunk].astype(np.float32)
                out[start : start + chunk] = block @ q
            return out * scale

        variants: dict[str, Callable[[np.ndarray], np.ndarray]] = {
            "float32": f32,
            "int8_upcast_per_query": int8_upcast,
            "int8_upcast_chunked": int8_chunked,
            "int8_einsum_int32": int8_int,
        }
        times: dict[str, list[float]] = {name: [] for name in variants}
        recall: dict[str, list[float]] = {name: [] for name in variants if name != "float32"}
        for _ in range(rounds):
            for q in queries:
                exact = None
                for name, fn in variants.items():
                    ms, scores = _time_ms(lambda fn=fn, q=q: fn(q))
                    times[name].append(ms)
                    top = set(_top(scores, k).tolist())
                    if name == "float32":
                        exact = top
                    elif exact:
                        recall[name].append(len(top & exact) / len(exact))
        sort_ms = [_time_ms(lambda q=q: np.lexsort((np.arange(n), -(vectors @ q))))[0] for q in queries]
        part_ms = [_time_ms(lambda q=q: _top(vectors @ q, 100))[0] for q in queries]
    return {
        "directives": n,
        "k": k,
        "bytes_float32": int(vectors.nbytes),
        "bytes_int8": int(q8.nbytes + scale.nbytes),
        "cosine_ms": {name: summary(v) for name, v in times.items()},
        "recall_at_k_vs_float32": {name: round(float(np.mean(v)), 4) if v else None for name, v in recall.items()},
        "top_k_of_cosine_ms": {
            "full_lexsort_plus_matvec": summary(sort_ms),
            "argpartition_plus_matvec": summary(part_ms),
        },
    }


def profile_queries(index_path: Path, tasks: Sequence[str], rounds: int, out: Path) -> str:
    """Profile warm queries with pyinstrument (optional dev dependency); write the text report to ``out``."""
    try:
        from pyinstrument import Profiler
    except ImportError:
        return "pyinstrument is not installed (pip install pyinstrument); no profile written"
    from ruledex.reader.index import Index
    from ruledex.reader.query import query_directives

    with Index(index_path) as index:
        for task in tasks:
            query_directives(index, task)
        profiler = Profiler(interval=0.0002)
        profiler.start()
        for _ in range(rounds):
            for task in tasks:
                query_directives(index, task)
        profiler.stop()
    out.write_text(profiler.output_text(unicode=True, color=False, show_all=False), encoding="utf-8")
    return str(out)
