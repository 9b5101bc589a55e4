"""``python -m bench.compare REF INDEX...``: the reader at a git ref against the working tree, in one process.

Two full bench runs minutes apart differ by more than a 10% change on this shared machine; one
process that alternates old and new code task by task does not. REF's ``reader/`` is taken with
``git archive`` into a temporary package (its imports are relative, so it loads beside the working
tree's), both answer every bench task on each index, and the run reports whether every answer is
the same (block, cited ids, score breakdowns) and the time ratio per task.

Example: python -m bench.compare eb5a38a /tmp/bundled.ruledex /tmp/synth-1k.ruledex
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # as the reader pins it
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tarfile  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402
from types import ModuleType  # noqa: E402
from typing import Any  # noqa: E402

from .tasks import TASKS  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
OLD_PACKAGE = "ruledex_at_ref"


def load_reader_at(ref: str, folder: Path) -> tuple[ModuleType, ModuleType]:
    """(query, index) modules of ``reader/`` as committed at ``ref``, importable next to the current ones."""
    try:
        blob = subprocess.run(
            ["git", "archive", ref, "reader"], cwd=REPO, check=True, capture_output=True, timeout=60
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        detail = exc.stderr.decode(errors="replace").strip() if isinstance(exc, subprocess.CalledProcessError) else exc
        raise SystemExit(f"error: cannot read reader/ at {ref!r} from git in {REPO}: {detail}") from None
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        tar.extractall(folder / OLD_PACKAGE, filter="data")
    sys.path.insert(0, str(folder))
    return (
        importlib.import_module(f"{OLD_PACKAGE}.reader.query"),
        importlib.import_module(f"{OLD_PACKAGE}.reader.index"),
    )


def _answer_key(answer: dict[str, Any]) -> tuple[str, list[str], Any]:
    return answer["context_block"], [c["id"] for c in answer["citations"]], answer["diagnostics"]["scores"]


def compare(ref: str, indexes: list[Path], rounds: int = 10, tasks: tuple[str, ...] = TASKS) -> list[dict[str, Any]]:
    """Per index: answers compared, how many differ, and old/new time (median of per-task minima)."""
    from ruledex.reader import index as new_index
    from ruledex.reader import query as new_query

    diagnostics = {"includeDiagnostics": True}
    rows = []
    with tempfile.TemporaryDirectory(prefix="ruledex-compare-") as tmp:
        old_query, old_index = load_reader_at(ref, Path(tmp))
        for path in indexes:
            old_ix, new_ix = old_index.Index(path), new_index.Index(path)
            differ = sum(
                _answer_key(old_query.query_directives(old_ix, t, options=diagnostics))
                != _answer_key(new_query.query_directives(new_ix, t, options=diagnostics))
                for t in tasks
            )
            times: dict[str, dict[str, list[float]]] = {"old": {t: [] for t in tasks}, "new": {t: [] for t in tasks}}
            sides = [("old", old_query, old_ix), ("new", new_query, new_ix)]
            for r in range(rounds):
                for task in tasks:
                    for side, query, ix in sides if r % 2 else sides[::-1]:  # alternate who goes first
                        started = time.perf_counter()
                        query.query_directives(ix, task)
                        times[side][task].append(time.perf_counter() - started)
            best = {side: {t: min(v) for t, v in per.items()} for side, per in times.items()}
            rows.append(
                {
                    "index": str(path),
                    "answers": len(tasks),
                    "differ": differ,
                    "old_ms": round(statistics.median(best["old"].values()) * 1000, 3),
                    "new_ms": round(statistics.median(best["new"].values()) * 1000, 3),
                    "ratio": round(statistics.median(best["new"][t] / best["old"][t] for t in tasks), 3),
                }
            )
            old_ix.close()
            new_ix.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the comparison and print a table (or JSON)."""
    p = argparse.ArgumentParser(
        prog="python -m bench.compare",
        description="Time the reader at a git ref against the working tree in one process, on the 40 bench "
        "tasks, and check that every answer is the same.",
        epilog="Example: python -m bench.compare eb5a38a /tmp/bundled.ruledex",
    )
    p.add_argument("ref", help="git commit or branch whose reader/ is the 'old' side")
    p.add_argument("indexes", nargs="+", type=Path, help="index files built with `ruledex build`")
    p.add_argument("--rounds", type=int, default=10, help="timed rounds over all tasks (default 10)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = p.parse_args(argv)
    missing = [str(x) for x in args.indexes if not x.is_file()]
    if missing:
        print(f"error: no such index file: {', '.join(missing)}; build one with `ruledex build`", file=sys.stderr)
        return 2
    rows = compare(args.ref, args.indexes, args.rounds)
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"{'index':40s} {'answers':>7s} {'differ':>6s} {'old ms':>8s} {'new ms':>8s} {'new/old':>8s}")
        for r in rows:
            print(
                f"{Path(r['index']).name:40s} {r['answers']:>7d} {r['differ']:>6d} "
                f"{r['old_ms']:>8.3f} {r['new_ms']:>8.3f} {r['ratio']:>8.3f}"
            )
        print("times: median over tasks of each task's fastest run; new/old: median of per-task ratios")
    return 0


if __name__ == "__main__":
    sys.exit(main())
