"""The ``ruledex`` command line: thin verbs over the library; results on stdout, errors on stderr.

Exit codes: 0 ok, 1 failure (the message names the file, field and fix), 2 usage. Builder verbs
(``build``, ``distill``) are defined in ``ruledex.builder.commands``, which imports only argparse;
their heavy dependencies load when they run, so reader-only installs keep working.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import sys
import threading
from contextlib import nullcontext
from pathlib import Path
from typing import Any, NoReturn

from .errors import ConfigError, RuledexError
from .options import EVAL_K, RANGES, QueryOptions

# One BLAS thread: queries are tiny matrix-vector products, and a second BLAS thread made
# concurrent queries 2-3x slower in the prototype (issue #7). Must be set before numpy loads.
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

SUFFIX = ".ruledex"  # = format.SUFFIX; kept here so `--help` does not import numpy

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2

DIST = "dist"
"""Where commands look for an index without ``--index`` or a pin: the newest ``*.ruledex`` there."""

_QUERY_DEFAULTS = QueryOptions()
"""The flags' defaults are the query options' own (reader/options.py)."""


def find_index(explicit: str | None, *, download: bool = True) -> Path:
    """The index to open: ``--index``, else the project's pin, else the newest ``*.ruledex`` in ``./dist``.

    A pin (``ruledex.toml`` or ``[tool.ruledex]`` in pyproject.toml, found walking up from the
    current folder) comes before ``./dist`` because it is the project's declared choice; a URL pin
    is downloaded once into the user cache (``download=False``: the cache only), and the pinned
    sha256 is checked on every call.
    """
    if explicit:
        return _local_index(explicit)
    from .pin import find_pinned_index

    pinned = find_pinned_index(Path.cwd(), download=download)
    if pinned is not None:
        return pinned
    from .format import newest_index

    newest = newest_index(Path(DIST))
    if newest is None:
        raise ConfigError(
            "no index given, no ruledex.toml pin found from here up, and none in ./dist; pin one with "
            "`ruledex pin SOURCE`, build one with `ruledex build`, or pass --index FILE"
        )
    return newest


def _local_index(value: str) -> Path:
    """An index path as given; a URL is a usage error saying how a release asset is used (by a pin)."""
    if value.startswith(("https://", "http://")):
        raise ValueError(
            f"{value}: an index is read from a local file; to use a release asset, pin it (`ruledex pin {value}` "
            "downloads it once and checks its sha256), then leave the index out of the command"
        )
    return Path(value)


def layered_paths(values: list[str]) -> list[Path]:
    """The files of a repeated ``--index``; one file given twice (by any path) is a usage error.

    The same index twice would answer every directive twice; it is never what was meant.
    """
    paths = [_local_index(v) for v in values]
    first: dict[Path, Path] = {}
    for path in paths:
        same = first.setdefault(path.resolve(), path)
        if same is not path:
            shown = f"{same}" if str(same) == str(path) else f"{same} and {path}"
            raise ValueError(
                f"--index: {shown} given twice (the same file); give each layered index once, e.g. "
                "--index org.ruledex --index project.ruledex"
            )
    return paths


def _has_index(explicit: str | None) -> bool:
    """Whether :func:`find_index` has anything to find (``detect`` works without an index)."""
    from .pin import find_config

    return bool(explicit) or find_config(Path.cwd()) is not None or any(Path(DIST).glob(f"*{SUFFIX}"))


def _open(args: argparse.Namespace) -> Any:
    from .index import Index

    return Index(find_index(args.index))


def _print_json(value: object) -> None:
    print(json.dumps(value, indent=2, ensure_ascii=False))


QUERY_FLAGS = {
    "taskDescription": "TASK",
    "options.topicsBias": "--topic",
    "options.severityFilter": "--severity",
    "options.layer": "--layer",
    "options.files": "--files",
}
"""The MCP tool's field names, as the command's own flags: errors name what the user typed."""


def _as_flags(message: str) -> str:
    field, sep, rest = message.partition(":")
    return f"{QUERY_FLAGS[field]}{sep}{rest}" if field in QUERY_FLAGS else message


def _task_text(value: str) -> str:
    """The task as given, or read from stdin for ``-`` (an issue body piped in: no quoting, no argv limit)."""
    return sys.stdin.buffer.read().decode("utf-8", errors="replace") if value == "-" else value


def cmd_query(args: argparse.Namespace) -> int:
    """``ruledex query``."""
    from .options import clamp_notes
    from .query import MAX_TASK_CHARS, query_indexes

    options: dict[str, Any] = {
        "maxItems": args.max_items,
        "tokenBudget": args.token_budget,
        "strictLayer": not args.no_strict_layer,
    }
    if args.severity:
        options["severityFilter"] = args.severity
    if args.layer:
        options["layer"] = args.layer
    if args.topic:
        options["topicsBias"] = args.topic
    if args.rationale:
        options["includeRationale"] = True
    if args.explain:
        options["includeDiagnostics"] = True
    if args.files:
        options["files"] = args.files
    for note in clamp_notes(options):
        print(f"ruledex: note: {note}", file=sys.stderr)
    task = _task_text(args.task)
    if len(task) > MAX_TASK_CHARS:  # the answer's diagnostics say so too, but the block alone would not
        print(
            f"ruledex: note: the task has {len(task)} characters; only the first {MAX_TASK_CHARS} are read",
            file=sys.stderr,
        )
    from .index import Index

    paths = layered_paths(args.index) if args.index else [find_index(None)]
    indexes = [Index(p) for p in paths]
    try:
        result = query_indexes(indexes, task, args.mode, options, llm=_llm(args))
    except ValueError as exc:
        raise ValueError(_as_flags(str(exc))) from None
    finally:
        for index in indexes:
            index.close()
    if args.json:
        _print_json(result)
    else:
        print(result["context_block"], end="")
        if args.explain:
            print(json.dumps(result["diagnostics"], indent=2), file=sys.stderr)
    return EXIT_OK


def cmd_detect(args: argparse.Namespace) -> int:
    """``ruledex detect``."""
    from .llm import llm_detect, llm_note
    from .options import parse_files
    from .paths import edited_files
    from .query import read_task

    args.text = _task_text(args.text)
    if not args.text.strip():
        raise ValueError("text: must be a non-empty task description")
    llm = _llm(args)
    answer = llm_detect(args.text, llm) if llm is not None else None
    # the checks query and the MCP tools apply
    edited = edited_files(args.text, parse_files(args.files) if args.files else ())
    # without an index, read_task answers with the built-in detector alone
    with _open(args) if _has_index(args.index) else nullcontext() as index:
        indexes = [index] if index is not None else []
        found = read_task(indexes, args.text, args.mode, edited.files, edited.evidence, answer).to_dict()
    found["notes"] = edited.notes()
    if llm is not None:  # as query's notes say; a rejection's reason is on the ruledex.llm logger
        found["notes"].append(llm_note(llm, answer))
    if args.json:
        _print_json(found)
    else:
        for note in found["notes"]:
            print(f"ruledex: note: {note}", file=sys.stderr)
        print(f"layer:        {found['detectedLayer'] or '(none)'}  (confidence {found['confidence']})")
        print(f"topics:       {', '.join(found['topics']) or '(none)'}")
        print(f"technologies: {', '.join(found['technologies']) or '(none)'}")
        print(f"keywords:     {', '.join(found['keywords'])}")
        for alt in found["alternativeContexts"]:
            print(f"alternative:  {alt['layer']} ({alt['confidence']})")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    """``ruledex list``."""
    from .catalog import rule_summary

    with _open(args) as index:
        rules = [rule_summary(r) for r in index.rules()]
    if args.json:
        _print_json(rules)
        return EXIT_OK
    width = max([len(r["domain"]) for r in rules] + [6])
    print(f"{'domain':<{width}}  {'directives':>10}  {'layers':<28}  title")
    for r in rules:
        print(f"{r['domain']:<{width}}  {r['directives']:>10}  {', '.join(r['layers']):<28}  {r['title']}")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    """``ruledex show``."""
    from .catalog import closest_domains, render_rule, rule_summary

    with _open(args) as index:
        i = index.find_rule(args.domain)
        if i is None:
            close = closest_domains(index, args.domain)
            nearest = f"closest: {', '.join(close)}" if close else "no domain is spelled like it"
            raise ConfigError(
                f"no rule {args.domain!r} in {index.path}; "
                + (f"{nearest} (see `ruledex list`)" if index.n_rules else "the index holds no rules")
            )
        if args.json:
            _print_json({**rule_summary(index.rule(i)), "content": render_rule(index, i)})
        else:
            print(render_rule(index, i), end="")
    return EXIT_OK


def cmd_info(args: argparse.Namespace) -> int:
    """``ruledex info``."""
    from .format import open_artifact

    path = find_index(args.file)
    with open_artifact(path) as art:
        m = art.manifest
        size = art.size
    if args.json:
        _print_json(m)
        return EXIT_OK
    src, model, counts = m.get("source", {}), m.get("model", {}), m.get("counts", {})
    print(f"file:        {path} ({size:,} bytes)")
    print(
        f"index:       {m.get('name')} {m.get('version')}  (format {'.'.join(map(str, m['format_version']))}, built by ruledex {m.get('tool', {}).get('version')})"
    )
    print(
        f"source:      {src.get('repository') or '-'} {src.get('path') or ''} @ {src.get('commit', '')[:12] or '-'} ({src.get('ref') or '-'}){' DIRTY' if src.get('dirty') else ''}"
    )
    print(f"built from:  commit time {m.get('build_time') or '-'}")
    examples = f", {counts['examples']} example tasks" if "examples" in counts else ""  # format 1.3 on
    print(
        f"contents:    {counts.get('rules')} rules, {counts.get('sections')} sections, {counts.get('directives')} directives{examples}"
    )
    print(
        f"model:       {model.get('name')} (dim {model.get('dim')}, vocab {model.get('vocab_size')}, sha256 {str(model.get('hash'))[:16]}...)"
    )
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    """``ruledex verify``."""
    from .errors import ArtifactError
    from .format import verify

    path = find_index(args.file)
    try:
        report = verify(path)
    except ArtifactError as exc:
        if args.json:  # a script reads the verdict from stdout either way; the error also goes to stderr
            _print_json({"path": str(path), "ok": False, "section": exc.section, "error": exc.message})
        raise
    report = {**report, "ok": True}
    if args.json:
        _print_json(report)
    else:
        print(
            f"ok: {report['path']} sha256 {report['sha256']} (sidecar {report['sidecar']}, format {'.'.join(map(str, report['format_version']))})"
        )
    return EXIT_OK


def cmd_eval(args: argparse.Namespace) -> int:
    """``ruledex eval``."""
    from .evaluate import evaluate, format_report, load_queries, with_files

    queries = load_queries(Path(args.queries))
    if args.files:
        queries = with_files(queries, Path(args.files))
    if args.half:  # lines 1, 3, 5 ... are "odd": the weights were chosen on the even lines
        queries = queries[1::2] if args.half == "odd" else queries[0::2]
        if not queries:
            raise ConfigError(f"{args.queries}: --half {args.half} leaves none of its 1 task; leave --half out")
    with _open(args) as index:
        report = evaluate(index, queries, k=args.k, rules_dir=Path(args.rules) if args.rules else None)
    if args.json:
        _print_json(report)
    else:
        print(format_report(report), end="")
    return EXIT_OK


def cmd_check(args: argparse.Namespace) -> int:
    """``ruledex check``: lint a rules folder (and, with --examples, test its example tasks)."""
    from ruledex.builder.commands import _require_build_deps, chosen_jobs

    if args.index and not args.examples:  # the linter alone reads no index: a flag that did nothing
        raise ValueError("--index: only --examples reads an index; add --examples, or leave --index out")
    _require_build_deps()
    from ruledex.builder.check import check

    if args.ref or args.repo:
        from ruledex.builder.gitsource import tree_subdir

        args.path = tree_subdir(args.rules_dir, args.path, Path(args.repo) if args.repo else None)
    findings = check(
        Path(args.rules_dir or "rules"),
        repo=Path(args.repo) if args.repo else None,
        ref=args.ref,
        subpath=args.path,
        examples=args.examples,
        index_path=Path(args.index) if args.index else None,
        strict=args.strict,
        jobs=chosen_jobs(args),
    )
    errors = sum(f.level == "error" for f in findings)
    if args.json or args.format == "json":
        _print_json({"errors": errors, "warnings": len(findings) - errors, "findings": [f.to_dict() for f in findings]})
    else:
        where = _shown_folder(args, github=args.format == "github")
        for f in findings:
            print(f.github(where) if args.format == "github" else f.text(where))
        checked = f"{args.ref or 'HEAD'}:{where or '/'}" if args.ref or args.repo else args.rules_dir or "rules"
        print(f"{errors} error(s), {len(findings) - errors} warning(s) in {checked}", file=sys.stderr)
    return EXIT_FAIL if errors else EXIT_OK


def _shown_folder(args: argparse.Namespace, *, github: bool = False) -> str:
    """The checked folder, for paths a user can open: as given (``rules/core.md``, not ``core.md``).

    With ``--ref``, the rules folder in the commit's tree (a path in the repository). GitHub places
    annotations by repository path (``file=core.md`` would not land on the pull request's diff), so
    for ``github`` an absolute folder is made relative to the working directory when it is below it.
    """
    if args.repo or args.ref:
        from ruledex.builder.gitsource import rules_subdir

        return rules_subdir(Path(args.repo or "."), args.ref or "HEAD", args.path)
    folder = Path(args.rules_dir or "rules")
    if not github:
        return folder.as_posix()
    if folder.is_absolute():
        with contextlib.suppress(ValueError):
            folder = folder.relative_to(Path.cwd())
    return "" if str(folder) == "." else folder.as_posix()


def _diff_side(value: str, repo: str | None, workdir: Path) -> Path:
    """An index file as given, or a git ref built into ``workdir`` (needs the builder)."""
    if Path(value).is_file():
        return Path(value)
    if value.endswith(SUFFIX):
        raise ConfigError(f"{value}: no such index file (a git ref would not end in {SUFFIX}); check the path")
    from ruledex.builder.commands import _require_build_deps

    _require_build_deps()
    from ruledex.builder.build import build
    from ruledex.builder.gitsource import open_repository, resolve_commit

    try:  # say both readings: a mistyped file name is as likely a slip as a mistyped ref
        resolve_commit(open_repository(Path(repo or ".")), value)
    except ConfigError as exc:
        if Path(value).is_dir():
            raise ConfigError(f"{value}: is a folder; diff takes two index files or two git refs") from None
        raise ConfigError(f"{value}: no such index file, and not a git ref either ({exc})") from None

    out = workdir / f"{len(list(workdir.iterdir()))}.ruledex"
    return build(None, out, repo=Path(repo or "."), ref=value).path


def cmd_diff(args: argparse.Namespace) -> int:
    """``ruledex diff``: two index files, or two git refs of a rules repository."""
    import tempfile

    from .diff import diff_indexes, to_markdown
    from .index import Index

    with tempfile.TemporaryDirectory(prefix="ruledex-diff-") as tmp:
        old_path = _diff_side(args.old, args.repo, Path(tmp))
        new_path = _diff_side(args.new, args.repo, Path(tmp))
        with Index(old_path) as old, Index(new_path) as new:
            result = diff_indexes(old, new)
    if args.json:
        _print_json(result)
    else:
        print(to_markdown(result), end="")
    return EXIT_FAIL if args.exit_code and result["changed"] else EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    """``ruledex serve``: the MCP server (imports the MCP SDK only here)."""
    from .pin import find_config, read_pin
    from .server import serve

    paths = layered_paths(args.index or [])
    config = None if paths else find_config(Path.cwd())
    pinned = read_pin(config).sha256 if config is not None else None
    chosen_from_dist = not paths and config is None  # then follow the newest build there; a pin is exact
    return serve(
        pinned_sha256=pinned,
        pin_config=config,
        follow=Path(DIST).absolute() if chosen_from_dist else None,
        index_path=find_index(str(paths[0]) if paths else None),
        layers=[Path(p) for p in paths[1:]],
        http=args.http,
        log_queries=Path(args.log_queries) if args.log_queries else None,
    )


def _llm(args: argparse.Namespace) -> Any:
    from .llm import LLMConfig

    return LLMConfig.from_flags(args.llm_url, args.llm_model, args.llm_api)


def _add_llm(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("local model detector (optional; default: off, or $RULEDEX_LLM_URL)")
    g.add_argument("--llm-url", help="Ollama (http://localhost:11434) or OpenAI-compatible (.../v1) endpoint")
    g.add_argument("--llm-model", help="model name (or $RULEDEX_LLM_MODEL)")
    g.add_argument("--llm-api", choices=["ollama", "openai"], help="API flavour (default: from the URL)")


def cmd_pin(args: argparse.Namespace) -> int:
    """``ruledex pin``: verify an index (downloading a URL into the cache) and record it in ruledex.toml."""
    from .format import SIDECAR_SUFFIX
    from .pin import CONFIG_NAME, default_config, pin_source, write_pin

    config = Path(args.config) if args.config else default_config(Path.cwd())
    if config.is_dir():  # before a download, not after it
        raise ConfigError(f"{config}: is a folder; --config takes the file to write, e.g. {config / CONFIG_NAME}")
    pin = pin_source(args.source, config)
    write_pin(config, pin)
    label = f" ({pin.name})" if pin.name else ""
    print(f"pinned {pin.source}{label} sha256 {pin.sha256} in {config}")
    if pin.is_url:  # what the sha256 was checked against: the release's own checksum, or only the download
        published = pin.source + SIDECAR_SUFFIX
        print(
            f"the download matches the {published} published beside it"
            if pin.checked
            else f"no {published} is published beside it: the sha256 is the download's own; compare it "
            "with the one the release states"
        )
    return EXIT_OK


def _positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1 (argparse turns the error into exit 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


class Once(argparse.Action):
    """An option that may be given once: a second value is an error, not silently the one used."""

    def __call__(
        self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option: Any = None
    ) -> None:
        """Store the value; refuse a second one."""
        if getattr(namespace, self.dest, None) is not None:
            parser.error(f"{option}: given twice; this command reads one index (query and serve layer several)")
        setattr(namespace, self.dest, values)


def _add_index(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--index",
        action=Once,
        help="index file (default: the pin in ruledex.toml or pyproject.toml, else the newest in ./dist)",
    )


def build_parser() -> argparse.ArgumentParser:
    """The full argument parser (also used by the docs test)."""
    from ruledex.builder.commands import add_commands, add_jobs_option

    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="ruledex",
        description="Give AI coding assistants the right project rules: build an index from markdown rules, "
        "then query it in milliseconds, offline.",
        epilog='Example: ruledex build rules/ && ruledex query "Add user registration API endpoint"',
        formatter_class=raw,
    )
    parser.add_argument("--version", action=_Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_CommandParser)
    add_commands(sub)

    p = sub.add_parser(
        "query",
        help="the rules that matter for a task, as a markdown block",
        formatter_class=raw,
        description="Detect the task's layer and topics, rank the directives and print a token-budgeted "
        "markdown block with citations. --json prints the query_directives tool output.",
        epilog='Example: ruledex query "Add a login button to the header" --max-items 5',
    )
    p.add_argument("task", help="the task, in the words you would give the assistant; - reads it from stdin")
    p.add_argument(
        "--index",
        action="append",
        help="index file; repeat to layer several (organisation, team, project): all answer at once, "
        "project-scoped rules first (default: the project's pin, else the newest *.ruledex in ./dist)",
    )
    p.add_argument("--json", action="store_true", help="print {context_block, citations, diagnostics} as JSON")
    low, high = RANGES["maxItems"]
    p.add_argument(
        "--max-items",
        type=_positive_int,
        default=_QUERY_DEFAULTS.maxItems,
        help=f"directives to show, clamped to {low}-{high} (default: %(default)s)",
    )
    low, high = RANGES["tokenBudget"]
    p.add_argument(
        "--token-budget",
        type=_positive_int,
        default=_QUERY_DEFAULTS.tokenBudget,
        help=f"token budget of the block, clamped to {low}-{high} (default: %(default)s)",
    )
    p.add_argument("--mode", choices=["architect", "code", "debug"], help="assistant mode: biases detection")
    p.add_argument("--layer", help="use this layer instead of the detected one (e.g. 4-Persistence)")
    p.add_argument("--topic", action="append", help="bias towards a topic (repeatable)")
    p.add_argument("--severity", action="append", help="only these severities (repeatable: MUST, SHOULD, MAY)")
    p.add_argument("--no-strict-layer", action="store_true", help="boost the detected layer instead of filtering by it")
    p.add_argument("--rationale", action="store_true", help="add each directive's one-line rationale")
    p.add_argument(
        "--files",
        nargs="+",
        action="extend",
        metavar="PATH",
        help="files the task touches (relative to the rules repository root): their paths say where the work is "
        "(tests/, migrations/, a .tsx page ...) and in what; rules whose globs match rank higher",
    )
    p.add_argument("--explain", action="store_true", help="include score breakdowns (in --json, or on stderr)")
    _add_llm(p)
    p.set_defaults(run=cmd_query)

    p = sub.add_parser(
        "serve",
        help="serve an index to AI assistants over MCP (stdio, or Streamable HTTP)",
        formatter_class=raw,
        description="Run the ruledex MCP server. stdio by default (what IDEs spawn); --http serves Streamable HTTP "
        "on 127.0.0.1 unless a host is given. Logs go to stderr.",
        epilog="Example: ruledex serve --index dist/rules-v1.2.0.ruledex --http 8765",
    )
    p.add_argument(
        "--index",
        action="append",
        help="index file; repeat to layer several (organisation, team, project): every tool answers from all "
        "(default: the project's pin, else the newest *.ruledex in ./dist, followed as new builds land there)",
    )
    p.add_argument(
        "--http", metavar="[HOST:]PORT", help="serve Streamable HTTP instead of stdio (host default 127.0.0.1)"
    )
    p.add_argument(
        "--log-queries", metavar="FILE", help="append one JSON line per tool call (secrets masked); off by default"
    )
    p.set_defaults(run=cmd_serve)

    p = sub.add_parser(
        "eval",
        help="measure retrieval quality on a labeled query set, beside a BM25 floor",
        formatter_class=raw,
        description="Run every task of a JSONL query set ({id, task, relevant: {path: grade}, layer, topics}) and "
        "print nDCG@5/K, Recall@5/K, MRR, layer accuracy, topic F1 and mean tokens per block, for ruledex and for "
        "plain BM25 over whole documents: the source files as written with --rules, else the index's rendering "
        "of each rule (which leaves out text the parser keeps no directive from, so it understates the floor).",
        epilog="Example: ruledex eval --queries tests/data/eval_bundled.jsonl --index dist/bundled.ruledex --rules rules/",
    )
    p.add_argument("--queries", required=True, help="JSONL file of labeled tasks")
    p.add_argument(
        "--files",
        metavar="FILE",
        help='JSONL file of {"id", "files": [path, ...]} lines: each task is asked with the files being edited, '
        "as an IDE would pass them (e.g. tests/data/files_bundled.jsonl)",
    )
    _add_index(p)
    p.add_argument(
        "--rules",
        metavar="DIR",
        help="the folder the index was built from: the BM25 floor and the all-documents token count then use "
        "its files as written",
    )
    p.add_argument(
        "--k",
        type=_positive_int,
        default=EVAL_K,
        metavar="K",
        help="the deeper cutoff of nDCG and Recall (default: %(default)s; @5 is always reported)",
    )
    p.add_argument(
        "--half",
        choices=("even", "odd"),
        help="only the even (1st, 3rd, ...) or odd (2nd, 4th, ...) tasks: the default ranking weights were chosen on the "
        "even ones of the shipped sets, so the odd ones are held out",
    )
    p.add_argument("--json", action="store_true", help="print the full report with per-query rows")
    p.set_defaults(run=cmd_eval)

    p = sub.add_parser(
        "check",
        help="lint rule documents: schema, duplicates, contradictions, secrets, vague or stale directives",
        formatter_class=raw,
        description="The contributor's linter. Reports schema errors, duplicate rule ids, exact and near-duplicate "
        "directives across files, likely contradictions, secret-looking strings (never echoed), directives too short "
        "or generic to act on, two rules claiming authority for the same topic and layer, expired rules, and with "
        "--examples, example tasks that do not retrieve their rule in the top 3. Output: path:line:col: "
        "error|warning: message [code]. Exit 1 on errors, 0 on warnings only (needs the [build] extra).",
        epilog="Example: ruledex check rules/ --examples --format github",
    )
    p.add_argument(
        "rules_dir",
        nargs="?",
        help="folder of rule documents (default: rules/); with --ref, the rules folder inside the commit, as --path",
    )
    p.add_argument("--examples", action="store_true", help="also check that example tasks retrieve their rule")
    p.add_argument("--repo", metavar="PATH", help="check a git ref of this repository instead of a folder")
    p.add_argument("--ref", metavar="REF", help="branch, tag or commit to check (reads the commit's tree)")
    p.add_argument("--path", metavar="SUBDIR", help="rules folder inside the tree (default: rules/ when present)")
    p.add_argument("--index", action=Once, help="check examples against this index instead of building one")
    p.add_argument("--strict", action="store_true", help="expired rules and example misses are errors")
    add_jobs_option(p)
    p.add_argument(
        "--format",
        choices=["text", "github", "json"],
        default="text",
        help="text (default), GitHub annotations, or JSON",
    )
    p.add_argument("--json", action="store_true", help="same as --format json")
    p.set_defaults(run=cmd_check)

    p = sub.add_parser(
        "diff",
        help="what changed between two indexes: rules and directives added, removed, reworded, re-graded",
        formatter_class=raw,
        description="Compare two index files. Markdown output is ready to post as a pull-request comment; "
        "--json gives every change with directive ids.",
        epilog="Example: ruledex diff origin/main HEAD > diff.md   (or two .ruledex files)",
    )
    p.add_argument("old", help="the index before the change, or a git ref (built from --repo)")
    p.add_argument("new", help="the index after the change, or a git ref (built from --repo)")
    p.add_argument("--repo", metavar="PATH", help="repository whose refs OLD/NEW name (default: the current folder)")
    p.add_argument("--json", action="store_true", help="print the changes as JSON")
    p.add_argument("--exit-code", action="store_true", help="exit 1 when anything changed (like git diff --exit-code)")
    p.set_defaults(run=cmd_diff)

    p = sub.add_parser(
        "detect",
        help="detect a task's layer, topics, technologies and keywords",
        formatter_class=raw,
        description="Run context detection only. Uses the index's learnt tables when one is found.",
        epilog='Example: ruledex detect "Fix the flaky checkout test" --mode debug --json',
    )
    p.add_argument("text", help="task text; - reads it from stdin")
    _add_index(p)
    p.add_argument("--mode", choices=["architect", "code", "debug"], help="assistant mode")
    p.add_argument(
        "--files",
        nargs="+",
        action="extend",
        metavar="PATH",
        help="files the task touches: their paths say where the work is (tests/, migrations/, a .tsx page ...)",
    )
    p.add_argument("--json", action="store_true", help="print the detect_context tool output as JSON")
    _add_llm(p)
    p.set_defaults(run=cmd_detect)

    p = sub.add_parser(
        "list", help="list the rule documents in an index", formatter_class=raw, epilog="Example: ruledex list --json"
    )
    _add_index(p)
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(run=cmd_list)

    p = sub.add_parser(
        "show",
        help="print one whole rule document from an index",
        formatter_class=raw,
        epilog="Example: ruledex show security",
    )
    p.add_argument("domain", help="rule id or file stem (see `ruledex list`)")
    _add_index(p)
    p.add_argument("--json", action="store_true", help="print as JSON")
    p.set_defaults(run=cmd_show)

    p = sub.add_parser(
        "info",
        help="print an index file's manifest summary",
        formatter_class=raw,
        epilog="Example: ruledex info dist/rules-v1.2.0.ruledex --json",
    )
    p.add_argument(
        "file",
        nargs="?",
        help="index file (default: the pin in ruledex.toml or pyproject.toml, else the newest in ./dist)",
    )
    p.add_argument("--json", action="store_true", help="print the whole manifest as JSON")
    p.set_defaults(run=cmd_info)

    p = sub.add_parser(
        "verify",
        help="check an index file completely: structure, checksums, sidecar",
        formatter_class=raw,
        epilog="Example: ruledex verify dist/rules-v1.2.0.ruledex",
    )
    p.add_argument(
        "file",
        nargs="?",
        help="index file (default: the pin in ruledex.toml or pyproject.toml, else the newest in ./dist)",
    )
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    p.set_defaults(run=cmd_verify)

    p = sub.add_parser(
        "pin",
        help="pin this project to one index file or release URL, by sha256",
        formatter_class=raw,
        description="Verify an index (a local file, or an https:// release asset downloaded once into the user "
        "cache) and write its source and sha256 to ruledex.toml. query, serve and the other commands then use it "
        "when --index is not given, and refuse it if its sha256 ever differs. Writes the config that applies "
        "here (found walking up), else ./ruledex.toml; pyproject.toml is never edited: the lines to paste are "
        "printed instead.",
        epilog="Example: ruledex pin https://github.com/acme/rules/releases/download/v1.2.0/rules-v1.2.0.ruledex",
    )
    p.add_argument("source", help="index file path, or https:// URL of a release asset")
    p.add_argument(
        "--config",
        metavar="PATH",
        help="config file to write (default: the one found from here up, else ./ruledex.toml)",
    )
    p.set_defaults(run=cmd_pin)
    return parser


class _CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: a missing task after ``--files`` says why it is missing."""

    def error(self, message: str) -> NoReturn:
        """Exit 2 with the message; ``--files PATH...`` takes every word after it, the task too."""
        if message.endswith(("required: task", "required: text")) and any(
            a.option_strings == ["--files"] for a in self._actions
        ):
            message += " (if it came after --files, --files took it as a path: put the task before --files)"
        super().error(message)


class _Version(argparse.Action):
    """``--version``, reading the installed version only when asked.

    Read to build the parser, importlib.metadata cost every ``ruledex`` process ~30 ms, a tenth of a
    whole ``ruledex query``.
    """

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="show the version and exit")

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(f"{parser.prog} {_version()}")
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("ruledex")
    except PackageNotFoundError:  # pragma: no cover
        return "0+unknown"


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    # a kill (a cancelled CI job) unwinds like Ctrl-C, so a file being written leaves no temp file
    # behind; the server keeps its own shutdown, and a caller's handler is put back afterwards
    own = args.command != "serve" and threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminated) if own else None
    try:
        return _run(args)
    finally:
        if own:  # None: the handler was not set from Python (then it was the default)
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _run(args: argparse.Namespace) -> int:
    """Run the chosen command, translating its errors into a message and an exit code."""
    try:
        return int(args.run(args))
    except RuledexError as exc:
        print(f"ruledex: error: {exc}", file=sys.stderr)
        return EXIT_FAIL
    except ValueError as exc:
        damaged = _damaged_index(args)
        print(f"ruledex: error: {damaged or exc}", file=sys.stderr)
        return EXIT_FAIL if damaged else EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader of our stdout went away (e.g. `| head`): stop quietly, as other CLI tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_FAIL
    except Exception:
        damaged = _damaged_index(args)
        if damaged is None:
            raise  # a bug in ruledex: the traceback is what a report needs
        print(f"ruledex: error: {damaged}", file=sys.stderr)
        return EXIT_FAIL


def _terminated(signum: int, _frame: object) -> None:
    """SIGTERM: exit 128 + 15 through the usual unwinding (``finally`` blocks, the atomic writer's cleanup)."""
    raise SystemExit(128 + signum)


def _damaged_index(args: argparse.Namespace) -> RuledexError | None:
    """After an unexpected failure: the error of a damaged section in an index the command read, if any.

    A one-shot command checks an index's structure but not every byte (that would cost more than
    the query), so a corrupt value inside a section, or a manifest value of the wrong type, fails
    somewhere in numpy or in a conversion; ``ruledex verify``'s checks (the section checksums, then
    the ``.sha256`` sidecar) then say which file changed and where.
    """
    from .format import verify

    values: list[str | None] = []
    for name in ("index", "file", "old", "new"):
        value = getattr(args, name, None)
        values.extend(value if isinstance(value, list) else [value])
    paths = [Path(v) for v in values if v]
    if not paths and hasattr(args, "index"):  # the pinned index or the newest in ./dist; never a download here
        with contextlib.suppress(RuledexError):
            paths = [find_index(None, download=False)]
    for path in paths:
        if not path.is_file():
            continue
        try:
            verify(path)
        except RuledexError as exc:
            return exc
    return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
