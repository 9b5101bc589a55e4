"""Parse rule files on several processes when there are many.

The markdown parser (marko) is pure Python and is most of a large build's time: 5.5 of the 9.3 s of
a full build of 10k directives on 2 cores. Parsing one file needs nothing from another, so a large
build hands the files to worker processes and takes the results back in the files' order: the
index is byte-identical to one parsed in a single process. A small build stays in one process,
where starting workers would cost more than they save. The jobs live here, beside the parser and
the adapters and away from the rest of the builder, so a spawned worker imports only what parsing
needs (0.28 s here, against 0.45 s for the whole builder).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from ruledex.reader.errors import RuleError, RuleErrors

from .adapters import SkipFile, parse_foreign
from .parse import ParsedDocument, parse_document
from .source import SourceFile

Item = TypeVar("Item")
Result = TypeVar("Result")

PARALLEL_MIN_CHARS = 512 * 1024
"""Below this much rule text a build parses in one process. Parsing runs at about 0.35 MB/s per
core on the Xeon VM and a spawned worker takes 0.3-0.5 s to import the parser, so workers pay off
from about a megabyte; this leaves room for faster machines."""

MAX_JOBS = 8
"""More worker processes than this add start-up and memory for no gain on rule repositories."""


def default_jobs() -> int:
    """The processor cores this process may run on (its affinity where the OS has one)."""
    if hasattr(os, "process_cpu_count"):  # Python 3.13
        return os.process_cpu_count() or 1
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def workers_for(total_chars: int, items: int, jobs: int | None) -> int:
    """How many worker processes to use: 0 (parse here) for small work, one job, or one item."""
    jobs = default_jobs() if jobs is None else jobs
    if jobs <= 1 or items <= 1 or total_chars < PARALLEL_MIN_CHARS:
        return 0
    return min(jobs, MAX_JOBS, items)


PARSE_DEPTH = 950
"""Python frames the parsers may use for one file, above the caller's own (about what Python's
default limit of 1,000 left a build before). Lists or quotes nested hundreds of levels deep exhaust
it; the budget counts from the parse, not from the bottom of the stack, so a file fails or parses
alike in this process and in a worker, whose stack starts deeper."""


@contextlib.contextmanager
def _depth_budget() -> Iterator[None]:
    """Python's recursion limit set to :data:`PARSE_DEPTH` frames above this one, then put back."""
    frame, depth = sys._getframe(), 0
    while frame is not None:
        frame, depth = frame.f_back, depth + 1
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(depth + PARSE_DEPTH)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def parse_ruledex_file(source: SourceFile) -> tuple[ParsedDocument | None, list[RuleError], list[str]]:
    """One ruledex document: the document, or its errors; and its warnings (a worker's job for build and check)."""
    try:
        with _depth_budget():
            doc = parse_document(source.text, source.path)
    except (RuleError, RuleErrors) as exc:
        return None, list(exc.errors), list(exc.warnings)  # warnings found before it failed (unknown fields ...)
    except RecursionError:
        message = "lists or quotes are nested too deeply to read; flatten them (a few levels are plenty)"
        return None, [RuleError(source.path, 1, "file", message)], []
    return doc, [], list(doc.warnings)


def parse_foreign_file(job: tuple[SourceFile, str]) -> tuple[ParsedDocument | None, list[str]]:
    """One foreign file with its rule id: the document, or none; and the warnings (a worker's job)."""
    source, rule_id = job
    try:
        with _depth_budget():
            doc = parse_foreign(source, rule_id)
    except SkipFile as skip:
        return None, [str(skip)]
    except Exception as exc:  # a third-party file must never stop the build
        return None, [f"{source.path}:1: file: could not be read ({type(exc).__name__}: {exc}); file skipped"]
    return doc, list(doc.warnings)


def _exit_quietly(signum: int, frame: object) -> None:
    os._exit(128 + signum)  # the parent, interrupted too, says so; a worker's traceback would only be noise


def _worker_started() -> None:
    """A worker's first act: it ends with the build, and Ctrl-C ends it at once and without a traceback.

    A build that ignores Ctrl-C (started with ``nohup``, or in the background by a shell without job
    control, which is how CI runners and scripts start jobs) hands the ignoring down to its workers
    (a spawned process inherits it), and they keep it: a Ctrl-C meant for the shell's foreground
    must not kill the workers of a build that would carry on without them.
    """
    with _interrupts_held():  # the watcher thread starts with Ctrl-C blocked, so it never takes one
        _exit_with_parent()
        if signal.getsignal(signal.SIGINT) != signal.SIG_IGN:
            signal.signal(signal.SIGINT, _exit_quietly)


def _exit_with_parent() -> None:
    """End this worker as soon as the build that started it is gone, however it ended.

    A worker waits for jobs on a queue whose writing end it holds itself, so it never sees the
    build go: a build killed outright (``kill -9``, the OOM killer, a CI runner's hard stop) left its
    workers asleep forever. A daemon thread waits on the parent's sentinel, which becomes readable
    when the parent's end of the start-up pipe closes at its exit. The thread keeps Ctrl-C blocked
    (its mask is the caller's), so a Ctrl-C still reaches the worker's main thread.
    """
    parent = multiprocessing.parent_process()
    if parent is None:
        return
    sentinel = parent.sentinel

    def watch() -> None:
        multiprocessing.connection.wait([sentinel])
        os._exit(1)  # nobody is left to read a result or an exit status

    threading.Thread(target=watch, name="ruledex-parent-watch", daemon=True).start()


@contextlib.contextmanager
def _interrupts_held() -> Iterator[None]:
    """Ctrl-C held back (blocked, not lost) while workers start and set themselves up.

    Worker processes inherit the mask they start with. A Ctrl-C that reached a worker while Python
    was still starting printed its half-done imports as tracebacks, one per worker. Held, it reaches
    each worker once it can exit quietly (:func:`_worker_started`, which holds it too while it sets
    up), and this process as soon as the workers are started. POSIX only (Windows has no signal
    mask; there the tracebacks remain possible).
    """
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # one held meanwhile arrives now


class Workers:
    """``with Workers(n) as workers: workers.map(fn, items)``: on ``n`` processes, or here when ``n`` is 0.

    One pool serves every ``map`` inside the ``with`` (a build parses its ruledex documents, then
    its foreign files, whose ids depend on the first). Workers are spawned, not forked, on every
    platform: the builder has OpenBLAS's threads by then, and forking a threaded process can deadlock.
    """

    def __init__(self, count: int, progress: Callable[[str], None] | None = None) -> None:
        """``count`` worker processes (see :func:`workers_for`); 0 runs every job in this process.

        ``progress`` hears when the workers fail and the jobs run here instead.
        """
        self.count = count
        self.progress = progress
        self._pool: ProcessPoolExecutor | None = None

    def __enter__(self) -> Workers:
        """Start the pool (its processes start with the first job)."""
        if self.count > 0:
            self._pool = ProcessPoolExecutor(
                max_workers=self.count,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_worker_started,
            )
        return self

    def __exit__(self, *exc: object) -> None:
        """Stop the pool; an error stops it without waiting for queued jobs."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=exc[0] is not None)
            self._pool = None

    def map(self, fn: Callable[[Item], Result], items: Sequence[Item]) -> list[Result]:
        """``[fn(item) for item in items]``, in order.

        ``fn`` must be a module-level function whose results pickle; it should return problems
        as values rather than raise them.
        """
        if self._pool is None or len(items) <= 1:
            return [fn(item) for item in items]
        chunk = max(1, len(items) // (self.count * 4))  # a few chunks per worker evens out uneven files
        try:
            with _interrupts_held():  # the first jobs start the processes
                results = self._pool.map(fn, items, chunksize=chunk)
            return list(results)
        except (BrokenProcessPool, OSError) as exc:
            # a worker that cannot start (no way to spawn here, a frozen launcher, a killed process):
            # the jobs are pure, so this process does them, to the same result
            if self.progress:
                self.progress(f"worker processes failed ({type(exc).__name__}: {exc}); parsing in this process")
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
            return [fn(item) for item in items]
