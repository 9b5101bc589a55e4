"""The command-line arguments every tool over a labeled query set takes (transformer, annotator, tune)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ruledex.reader.errors import ConfigError


def labeled_set_parser(
    prog: str, description: str, queries_help: str = "JSONL labeled tasks (as for ruledex eval)"
) -> argparse.ArgumentParser:
    """A parser with --queries, --index, --rules and --json; the tool adds its own options."""
    p = argparse.ArgumentParser(prog=prog, description=description)
    p.add_argument("--queries", type=Path, required=True, help=queries_help)
    p.add_argument("--index", type=Path, required=True, help="index built from the rules the set labels")
    p.add_argument(
        "--rules",
        type=Path,
        help="the folder the index was built from: the floor (and the tool) read its files as written",
    )
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    return p


def print_result(
    args: argparse.Namespace, compute: Callable[[], dict[str, Any]], table: Callable[[dict[str, Any]], str]
) -> int:
    """Run ``compute`` and print its result as JSON (``--json``) or a table; a bad input is exit 2 with its error."""
    try:
        result = compute()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(result, indent=2) if args.json else table(result))
    return 0
