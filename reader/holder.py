"""The served index, hot-reloaded: :class:`IndexHolder` owns it for the MCP server.

Between requests it notices when the file was replaced (atomic rename: a new inode, size or mtime,
or a new sidecar), verifies the new file completely and swaps it in; a file that fails verification
is refused with a log line and the old index keeps serving. An index is closed only when no request
is using it. When the server chose the newest index in a folder itself, it follows that folder.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from . import format as fmt
from .errors import ArtifactError
from .index import Index
from .pin import CONFIG_NAME, from_here, verify_pinned
from .query import query_directives

log = logging.getLogger("ruledex.server")
T = TypeVar("T")

Signature = tuple[Any, ...]

WARM_UP_TASK = "Add a tested API endpoint that saves an order to the database and deploy it"
"""The throwaway query that warms an index up (:meth:`IndexHolder.warm_up`): any task would do; one
that names several layers reaches more of the index's rules."""

FOLDER_SETTLE_NS = 2_000_000_000
"""A followed folder changed more recently than this is scanned again at the next check: a second
change within the file system's timestamp granularity might not move its mtime."""


def file_signature(path: Path) -> Signature:
    """What identifies one version of an index file: device, inode, size, mtime, and the sidecar's."""
    st = os.stat(path)
    try:
        side = os.stat(fmt.sidecar_path(path))
        side_sig: tuple[int, int, int] | None = (side.st_ino, side.st_size, side.st_mtime_ns)
    except OSError:
        side_sig = None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, side_sig)


@dataclass(eq=False)
class Loaded:
    """One opened index version, with its users and the data derived from it."""

    index: Index
    signature: Signature
    users: int = 0
    retired: bool = False
    closed: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    _cache: dict[str, Any] = field(default_factory=dict)
    _warm: bool = False

    def warm(self) -> None:
        """Build the lazy parts (query encoder, learnt tables) once, under a lock."""
        if self._warm:
            return
        with self.lock:
            if not self._warm:
                if self.index.n_directives:
                    _ = self.index.encoder, self.index.learnt_by_term
                self._warm = True

    def cached(self, key: str, build: Callable[[Index], T]) -> T:
        """``build(index)``, computed once per index version."""
        if key not in self._cache:
            with self.lock:
                if key not in self._cache:
                    self._cache[key] = build(self.index)
        return self._cache[key]


class IndexHolder:
    """The served index: opened once, swapped between requests when its file is replaced."""

    def __init__(
        self,
        path: Path,
        *,
        check_interval: float = 1.0,
        pinned_sha256: str | None = None,
        pin_config: Path | None = None,
        follow: Path | None = None,
    ) -> None:
        """Open and check ``path`` (raises :class:`~ruledex.reader.errors.ArtifactError`); look for a new file at most every ``check_interval`` s.

        With ``pinned_sha256`` (the project pins its index), a replacement is served only if it is
        the pinned file: a pin means one exact rule set, even under hot reload; ``pin_config``, the
        config file that pins it, is named when a replacement is refused. With ``follow`` (the
        folder the index was chosen from, ``./dist`` without ``--index`` or a pin), a newer
        ``*.ruledex`` there is served instead once it verifies: a rebuild writes a new file name.
        """
        self.path = Path(path)
        self.check_interval = check_interval
        self.pinned_sha256 = pinned_sha256
        self.pin_config = pin_config
        self.follow = Path(follow) if follow is not None else None
        self._folder_seen: int | None = None
        fmt.check_sections(self.path)  # every section's checksum, as a reload checks: never serve a damaged file
        index = Index(self.path)
        self._current = Loaded(index, file_signature(self.path))
        self._lock = threading.Lock()
        self._reload_lock = threading.Lock()
        self._refused: Signature | None = None
        self._refusal = ""
        """Why the file with the ``_refused`` signature was refused (what a tool error then says)."""
        self._missing = False
        self._next_check = time.monotonic() + check_interval
        self._closed = False

    @property
    def index(self) -> Index:
        """The index serving now (for a quick look; use :meth:`use` around a request)."""
        return self._current.index

    def warm_up(self) -> None:
        """Answer one throwaway query (:data:`WARM_UP_TASK`), so that the first real one is as fast as the rest.

        A first query loads what every later one reuses: the query encoder, the shipped task model,
        the vectors' pages (52-66 ms more than the next on the bundled rules, 90-110 ms at 100k
        directives). A server does this while it waits for its first call. Never raises: whatever
        stops it (a file rewritten in place, the server closing) is what that call reports.
        """
        started = time.perf_counter()
        try:
            with self.use() as loaded:  # counts as a user: the index is not closed under it
                query_directives(loaded.index, WARM_UP_TASK)
        except Exception as exc:  # a warm-up must never stop a server
            log.warning("no warm-up: %s", exc)  # the error names the file
            return
        m = loaded.index.manifest
        log.info(
            "warmed up %s %s for the first call in %.0f ms",
            m.get("name"),
            m.get("version"),
            (time.perf_counter() - started) * 1000,
        )

    def look_due(self) -> bool:
        """Whether the next request looks for a replaced or newer file (at most every ``check_interval`` s).

        Looking may verify a whole new file (every section's checksum), which a server does off its
        event loop; every other request is a few milliseconds of work on the mapped index. A file
        rewritten in place is looked at by the next request, whenever it comes.
        """
        return time.monotonic() >= self._next_check or self._rewritten_in_place() is not None

    def _rewritten_in_place(self) -> os.stat_result | None:
        """The served file's ``stat`` if it has the same inode but another size or time, else None."""
        try:
            st = os.stat(self.path)
        except OSError:
            return None
        current = self._current.signature
        if (st.st_dev, st.st_ino) != current[:2] or (st.st_size, st.st_mtime_ns) == current[2:4]:
            return None
        return st

    @contextmanager
    def use(self) -> Iterator[Loaded]:
        """The current index for one request; it stays open until the request is done."""
        self._check_in_place()
        self.maybe_reload()
        with self._lock:
            if self._closed:
                raise RuntimeError("the server is shutting down")
            loaded = self._current
            loaded.users += 1
        try:
            loaded.warm()
            yield loaded
        finally:
            with self._lock:
                loaded.users -= 1
                done = loaded.retired and loaded.users == 0
            if done:
                self._close(loaded)

    def _check_in_place(self) -> None:
        """Never read a mapping whose file was rewritten in place (``cp`` over it, truncated).

        Reading pages that are gone kills the process (SIGBUS), so every request looks (one
        ``stat``): same inode but another size or time means the bytes under the mapping changed. A
        new file that verifies is served at once; otherwise the request gets this error, and the
        server keeps answering until a good file is renamed over it. A replacement by rename keeps
        the old inode alive and needs none of this.
        """
        st = self._rewritten_in_place()
        if st is None:
            return
        self._next_check = 0.0
        if self.maybe_reload() or self._current.signature[2:4] == (st.st_size, st.st_mtime_ns):
            return
        why = self._refusal.removeprefix(f"{self.path}: ")  # the same file's name once is enough
        raise ArtifactError(
            str(self.path),
            "",
            f"was overwritten in place while being served, and the new content does not verify{f' ({why})' if why else ''}"
            "; replace an index by writing a new file and renaming it over the old one (ruledex build does), then retry",
        )

    def maybe_reload(self) -> bool:
        """Swap in a replaced index file if it is time to look and it verifies; True if swapped."""
        if time.monotonic() < self._next_check or not self._reload_lock.acquire(blocking=False):
            return False
        try:
            self._next_check = time.monotonic() + self.check_interval
            if self.follow is not None and self._follow_newest(self.follow):
                return True
            try:
                signature = file_signature(self.path)
            except OSError as exc:
                if not self._missing:
                    log.warning("cannot read %s (%s); still serving the index opened before", self.path, exc.strerror)
                self._missing = True
                return False
            self._missing = False
            if signature in (self._current.signature, self._refused):
                return False
            return self._load(signature)
        finally:
            self._reload_lock.release()

    def _follow_newest(self, folder: Path) -> bool:
        """Serve the newest index in ``folder`` if it is another file and verifies; True if swapped.

        One ``stat`` of the folder per check: its mtime moves when a file is renamed into it. A change
        too recent to be sure the mtime would move again (timestamps are coarse) is looked at again.
        """
        try:
            mtime = os.stat(folder).st_mtime_ns
        except OSError:
            return False
        if mtime == self._folder_seen:
            return False
        if time.time_ns() - mtime > FOLDER_SETTLE_NS:
            self._folder_seen = mtime
        newest = fmt.newest_index(folder)
        if newest is None or newest.resolve() == self.path.resolve():
            return False
        try:
            signature = file_signature(newest)
        except OSError:
            return False
        return signature != self._refused and self._load(signature, newest)

    def _load(self, signature: Signature, path: Path | None = None) -> bool:
        """Verify and serve ``path`` (default: the served file, replaced) if it still has ``signature``."""
        path = self.path if path is None else path
        replaced = path == self.path
        what = "the replaced index file" if replaced else f"the newest index in {path.parent}, {path.name}"
        new: Loaded | None = None
        try:
            # structure and every section's CRC-32; not the sidecar, which lands in a second rename
            # just after the index (checking it here refused good releases for a moment), so no sha256
            # of the whole file either (~1 ms per MB, paid inside a request): a pin hashes it below
            fmt.check_sections(path)
            if self.pinned_sha256 is not None:
                verify_pinned(
                    path,
                    self.pinned_sha256,
                    origin=str(self.pin_config or CONFIG_NAME),
                    source=from_here(path),
                    serving=True,
                )
            new = Loaded(Index(path), signature)
            new.warm()
        except Exception as exc:  # whatever is wrong with a new file, the old index keeps serving
            if new is not None:
                self._close(new)
            self._refused, self._refusal = signature, str(exc)
            log.error(
                "refused %s: %s; still serving %s %s (it is retried when the file or its sidecar changes again)",
                what,
                exc,
                self.index.manifest.get("name"),
                self.index.manifest.get("version"),
            )
            return False
        with suppress(OSError):
            if file_signature(path) != signature:  # replaced again while we read it: look again next time
                self._close(new)
                self._next_check = 0.0
                return False
        with self._lock:
            if self._closed:
                old = new
            else:
                old, self._current, self.path = self._current, new, path
            old.retired = True
            done = old.users == 0
        self._refused = None
        if done:
            self._close(old)
        if old is new:
            return False
        m = new.index.manifest
        log.info(
            "switched to %s: %s %s (%d rules, %d directives)",
            f"{what} {path}" if replaced else what,
            m.get("name"),
            m.get("version"),
            new.index.n_rules,
            new.index.n_directives,
        )
        return True

    @staticmethod
    def _close(loaded: Loaded) -> None:
        if not loaded.closed:
            loaded.closed = True
            loaded.index.close()

    def close(self) -> None:
        """Close the index now, or when its last request ends."""
        with self._lock:
            self._closed = True
            loaded = self._current
            loaded.retired = True
            done = loaded.users == 0
        if done:
            self._close(loaded)


# ---------------------------------------------------------------------------------------------
# Validation helpers
