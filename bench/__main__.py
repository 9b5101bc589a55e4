"""``python -m bench``: build, query, serve and compare ruledex at several corpus sizes; print a table, write JSON.

Example: python -m bench --quick            # tiny corpus, few repeats (about 20 s)
         python -m bench --sizes 1000,10000 # two synthetic sizes and the bundled rules
"""

from __future__ import annotations

import os

# The reader pins numpy's BLAS to one thread (reader/cli.py); do the same here before numpy loads,
# so in-process numbers measure what the CLI and the server run.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import datetime as dt  # noqa: E402
import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"
SECTIONS = ("build", "query", "int8", "cold", "stdio", "concurrency")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    """Command-line options."""
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark ruledex (issue #7): build, warm queries with baselines, cold start, memory, concurrency.",
        epilog="Example: python -m bench --sizes 1000,10000 --rounds 5",
    )
    p.add_argument(
        "--quick", action="store_true", help="tiny corpus, few tasks and repeats (for tests and smoke checks)"
    )
    p.add_argument(
        "--sizes", help="synthetic corpus sizes in directives, comma-separated (default 1000,10000,100000; quick: 300)"
    )
    p.add_argument("--no-bundled", action="store_true", help="skip the bundled rules/ corpus")
    p.add_argument(
        "--seed", type=int, default=None, help="synthetic generator seed (default: bench.synth.DEFAULT_SEED)"
    )
    p.add_argument("--rounds", type=int, help="warm query rounds over the task set (default 10; quick: 2)")
    p.add_argument("--only", help=f"comma-separated sections to run: {','.join(SECTIONS)} (default: all)")
    p.add_argument(
        "--process-sizes", help="corpus sizes that get cold/stdio/concurrency (default: all; quick: the last)"
    )
    p.add_argument("--out", type=Path, help="JSON results file (default bench/results/<timestamp>.json)")
    p.add_argument("--workdir", type=Path, help="keep generated corpora and indexes here (default: a temporary folder)")
    p.add_argument(
        "--snapshot",
        action="store_true",
        help="run from a copy of reader/ and builder/ taken at the start (for a tree others are editing)",
    )
    p.add_argument(
        "--profile", action="store_true", help="also write a pyinstrument profile of warm queries per corpus"
    )
    return p.parse_args(argv)


def _log(message: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def _git(*args: str) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(REPO), *args], capture_output=True, text=True, timeout=10
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def source_fingerprint(root: Path = REPO) -> str:
    """The code's fingerprint (``builder.fingerprint``): a run whose code changes midway mixes versions."""
    from ruledex.builder.fingerprint import code_fingerprint

    return code_fingerprint(root)


def snapshot_sources(work: Path) -> Path:
    """Copy reader/ and builder/ into ``work`` and run everything from that copy.

    The copy goes first on ``sys.path`` and on ``PYTHONPATH`` (inherited by every ``ruledex build``,
    ``ruledex query`` and ``ruledex serve`` the run starts), so edits to the working tree during a
    long run cannot mix two versions of the code into one set of results.
    """
    snap = work / "snapshot"
    for folder in ("reader", "builder"):
        target = snap / "ruledex" / folder
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(REPO / folder, target, ignore=shutil.ignore_patterns("__pycache__"))
    sys.path.insert(0, str(snap))
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(snap), os.environ.get("PYTHONPATH", "")) if p)
    return snap / "ruledex"


def _section(
    result: dict[str, Any], key: str, errors: list[str], fn: Callable[..., Any], *args: Any, **kwargs: Any
) -> None:
    """Run one measurement, ``fn(*args, **kwargs)``; a failure is recorded and the run goes on."""
    _log(f"{result['name']}: {key}")
    started = time.perf_counter()
    try:
        result[key] = fn(*args, **kwargs)
    except Exception as exc:  # one broken section must not lose the others
        name = result["name"]
        errors.append(f"{name} {key}: {type(exc).__name__}: {exc}")
        result[key] = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()[-2000:]}
    result.setdefault("seconds", {})[key] = round(time.perf_counter() - started, 1)


def run(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """Every measurement for every corpus; returns the results dict (also written as it goes)."""
    from . import buildbench, mcpbench, querybench, synth
    from .measure import machine
    from .report import evaluate_targets
    from .tasks import QUICK_TASKS, TASKS

    quick = args.quick
    sizes = [int(s) for s in (args.sizes or ("300" if quick else "1000,10000,100000")).split(",") if s.strip()]
    sections = tuple(s.strip() for s in args.only.split(",")) if args.only else SECTIONS
    unknown = sorted(set(sections) - set(SECTIONS))
    if unknown:
        raise SystemExit(f"--only: unknown section(s) {', '.join(unknown)}; choose from {', '.join(SECTIONS)}")
    tasks = QUICK_TASKS if quick else TASKS
    rounds = args.rounds or (2 if quick else 10)
    seed = synth.DEFAULT_SEED if args.seed is None else args.seed
    corpora: list[tuple[str, int | None]] = [] if args.no_bundled else [("bundled", None)]
    corpora += [(f"synth-{n // 1000}k" if n % 1000 == 0 else f"synth-{n}", n) for n in sizes]
    if args.process_sizes:
        process_names = {name for name, n in corpora if n is not None and str(n) in args.process_sizes.split(",")}
    else:
        process_names = {corpora[-1][0]} if quick else {name for name, _ in corpora}
    code_root = snapshot_sources(work) if args.snapshot else REPO
    out = args.out or RESULTS / f"{dt.datetime.now().strftime('%Y%m%d-%H%M%S')}{'-quick' if quick else ''}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "meta": {
            "started": dt.datetime.now().isoformat(timespec="seconds"),
            "mode": "quick" if quick else "full",
            "argv": sys.argv[1:],
            "commit": _git("rev-parse", "HEAD"),
            "dirty": bool(_git("status", "--porcelain", "--", "reader", "builder")),
            "source_fingerprint": source_fingerprint(code_root),
            "code": f"snapshot copied to {code_root}" if args.snapshot else "working tree",
            "seed": seed,
            "tasks": len(tasks),
            "rounds": rounds,
            "sections": list(sections),
        },
        "machine": machine(),
        "corpora": [],
        "errors": [],
        "skipped": [],
    }
    one_file = None
    if "query" in sections:
        _log(f"one-file index ({querybench.ONE_FILE_DIRECTIVES} directives): building")
        one_file = querybench.build_one_file_index(work / "one-file", seed)
    for name, n in corpora:
        result: dict[str, Any] = {"name": name, "synthetic": n is not None}
        results["corpora"].append(result)
        rules_dir, index = work / name / "rules", work / name / f"{name}.ruledex"
        if rules_dir.exists():
            shutil.rmtree(rules_dir)
        if n is None:
            shutil.copytree(REPO / "rules", rules_dir)
        else:
            started = time.perf_counter()
            repo = synth.generate(rules_dir, n, seed)
            result["generate"] = {
                "files": repo.files,
                "bytes": repo.bytes,
                "seconds": round(time.perf_counter() - started, 2),
            }
        _log(f"{name}: building")
        repeats = 1 if quick or (n or 0) > 2000 else 3
        incremental_repeats = 1 if quick or (n or 0) > 20000 else 3  # the 10k target: a median, not one sample
        _section(
            result,
            "build",
            results["errors"],
            buildbench.run_build,
            rules_dir,
            index,
            touch=True,
            repeats=repeats,
            incremental_repeats=incremental_repeats,
        )
        if not index.exists():
            continue
        result["directives"] = result["build"].get("directives") if "error" not in result["build"] else None
        if "query" in sections:
            _section(
                result,
                "query",
                results["errors"],
                querybench.run_queries,
                index,
                tasks,
                rounds,
                work / name,
                one_file_index=one_file,
            )
            results["skipped"] += [s for s in result["query"].get("skipped", []) if s not in results["skipped"]]
        if "int8" in sections:
            _section(result, "int8", results["errors"], querybench.int8_experiment, index, tasks, max(1, rounds // 2))
        if args.profile:
            target = out.with_name(f"{out.stem}-profile-{name}.txt")
            result["profile"] = querybench.profile_queries(index, tasks, max(1, rounds // 2), target)
        if name in process_names and {"cold", "stdio", "concurrency"} & set(sections):
            reference = mcpbench.reference_answers(index, tasks)
            if "cold" in sections:
                # 9, not 5: on a shared VM the SDK floor's samples spread over 600 ms, and so did a median of 5
                cold_repeats = 2 if quick else 9
                _section(result, "cold", results["errors"], mcpbench.cold_start, index, tasks[0], cold_repeats)
            if "stdio" in sections:
                _section(
                    result,
                    "stdio",
                    results["errors"],
                    mcpbench.stdio_latency,
                    index,
                    tasks,
                    max(1, rounds // 2),
                    reference,
                )
            if "concurrency" in sections:
                counts = (10,) if quick else (10, 50)
                conc_rounds = 2 if quick else 20
                _section(
                    result,
                    "concurrency",
                    results["errors"],
                    mcpbench.http_concurrency,
                    index,
                    tasks,
                    counts,
                    conc_rounds,
                    reference,
                )
                if not quick and n == 10000:
                    _section(
                        result,
                        "concurrency_blas2",
                        results["errors"],
                        mcpbench.http_concurrency,
                        index,
                        tasks,
                        (10,),
                        conc_rounds,
                        reference,
                        blas_threads="2",
                    )
        if source_fingerprint(code_root) != results["meta"]["source_fingerprint"] and not results["meta"].get(
            "source_changed"
        ):
            results["meta"]["source_changed"] = name
            results["errors"].append(
                f"reader/ or builder/ changed while {name} was measured: the results mix code versions; run again"
            )
        results["targets"] = evaluate_targets(results)
        out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    results["meta"]["finished"] = dt.datetime.now().isoformat(timespec="seconds")
    results["machine"]["load_average_end"] = (
        [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None
    )
    results["targets"] = evaluate_targets(results)
    results["meta"]["out"] = str(out)
    out.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return results


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; 0 when every section ran (missed targets are results, not failures)."""
    args = parse_args(argv)
    from .report import render

    if args.workdir:
        args.workdir.mkdir(parents=True, exist_ok=True)
        results = run(args, args.workdir.resolve())
    else:
        with tempfile.TemporaryDirectory(prefix="ruledex-bench-") as tmp:
            results = run(args, Path(tmp))
    print(render(results), end="")
    print(f"\nresults: {results['meta']['out']}")
    for error in results["errors"]:
        print(f"error: {error}", file=sys.stderr)
    return 1 if results["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
