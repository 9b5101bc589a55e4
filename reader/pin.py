"""Per-project index pinning: a project names the one index it uses, by source and sha256.

A pin lives in ``ruledex.toml`` (``[index]``) or in ``pyproject.toml`` (``[tool.ruledex.index]``;
the ``ruledex.toml`` document is the ``[tool.ruledex]`` table, as ruff does it)::

    [index]
    source = "https://github.com/acme/rules/releases/download/v1.2.0/rules-v1.2.0.ruledex"
    sha256 = "9f2c...64 lowercase hex digits"
    name = "rules v1.2.0"     # optional label, written by `ruledex pin`

``source`` is a local path (relative to the config file's folder, or absolute) or an ``https://``
URL (``http://`` only on loopback, for tests). A URL is downloaded once into :func:`cache_dir`
as ``<sha256>.ruledex``: content-addressed, so a pinned hash names one file and two projects that
pin the same release share it. Downloads go to ``<sha256>.ruledex.part`` (resumed with an HTTP
``Range`` when the server answers 206), are hashed and only then renamed into place, under a
per-hash OS lock; a ``<sha256>.ruledex`` in the cache is therefore always complete. The sha256 is
checked every time a pin is resolved (one streamed hash: ~8.5 ms for the bundled 8.6 MB index with
the page cache warm), and a mismatch is refused with both hashes named.

Only the standard library is used (tomllib, urllib, hashlib): the reader stays light.
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from .errors import ArtifactError, ConfigError, shown
from .format import SIDECAR_SUFFIX, SUFFIX, file_sha256, fsync_dir, open_artifact, verify, write_bytes_atomic

log = logging.getLogger(__name__)

CONFIG_NAME = "ruledex.toml"
PYPROJECT = "pyproject.toml"
CACHE_ENV = "RULEDEX_CACHE"
_SHA256 = re.compile(r"[0-9a-f]{64}")
_KEYS = ("source", "sha256", "name")
_LOOPBACK = {"127.0.0.1", "::1", "localhost"}
_BLOCK = 1 << 16


@dataclass(frozen=True)
class Pin:
    """The index a project uses: where it comes from and the sha256 it must have."""

    source: str
    sha256: str
    name: str = ""
    checked: bool = field(default=False, compare=False)
    """Set by :func:`pin_source` for a URL whose published ``.sha256`` matched (not written to the config)."""

    @property
    def is_url(self) -> bool:
        """True when ``source`` is downloaded rather than read from disk."""
        return _is_url(self.source)


def _is_url(source: str) -> bool:
    # "://" never occurs in a local path (Windows drive paths are "C:\\..." or "C:/...")
    return "://" in source


# --- finding and reading the config -------------------------------------------------------------


def _read_config(config: Path) -> str:
    """A config file's text; a :class:`ConfigError` naming it when it is a folder, unreadable or not UTF-8."""
    try:
        return config.read_text(encoding="utf-8")
    except IsADirectoryError:
        raise ConfigError(f"{config}: is a folder; name the config file, e.g. {config / CONFIG_NAME}") from None
    except OSError as exc:
        raise ConfigError(f"{config}: cannot read the pin config ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{config}: is not UTF-8 (byte {exc.start}); re-save it as UTF-8") from None


def _pyproject_has_table(path: Path) -> bool:
    """Whether a pyproject.toml declares ``[tool.ruledex]`` (parsed only when it mentions ruledex)."""
    text = _read_config(path)
    if "ruledex" not in text:  # most pyprojects on the way up: no TOML parse, no error from a broken one
        return False
    tool = _parse(path, text).get("tool", {})
    return isinstance(tool, dict) and "ruledex" in tool


def find_config(start: Path) -> Path | None:
    """The pin config that applies at ``start``: the nearest one walking up to the filesystem root.

    At each folder ``ruledex.toml`` wins over a ``pyproject.toml`` with a ``[tool.ruledex]`` table
    (a pyproject without that table is passed over, so a sub-package inside a monorepo still
    finds the root's pin). The walk does not stop at a repository root: a ``~/ruledex.toml``
    works as a per-user default.
    """
    folder = Path(start).resolve()
    for candidate in (folder, *folder.parents):
        config = candidate / CONFIG_NAME
        if config.is_file():
            return config
        pyproject = candidate / PYPROJECT
        if pyproject.is_file() and _pyproject_has_table(pyproject):
            return pyproject
    return None


def _parse(config: Path, text: str) -> dict[str, Any]:
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(
            f"{config}: not valid TOML ({exc}); fix it, or rewrite it with `ruledex pin SOURCE`"
        ) from None


def _table_name(config: Path) -> str:
    return "[tool.ruledex.index]" if config.name == PYPROJECT else "[index]"


def read_pin(config: Path) -> Pin:
    """Read and check the pin in ``ruledex.toml`` or ``pyproject.toml``.

    Raises:
        ConfigError: naming the file, the key and the fix, for a missing table or key, a wrong
            type, an unknown key (typos must not silently un-pin), a sha256 that is not 64
            lowercase hex digits, or a source that is neither a path nor an allowed URL.
    """
    config = Path(config)
    data = _parse(config, _read_config(config))
    where = _table_name(config)
    if config.name == PYPROJECT:
        tool = data.get("tool", {})
        data = tool.get("ruledex", {}) if isinstance(tool, dict) else {}
    table = data.get("index") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise ConfigError(f"{config}: no {where} table; add one with `ruledex pin SOURCE` (see docs/pinning.md)")
    unknown = sorted(set(table) - set(_KEYS))
    if unknown:
        raise ConfigError(f"{config}: {where} has unknown key(s) {', '.join(unknown)}; allowed: {', '.join(_KEYS)}")
    values: dict[str, str] = {}
    for key in _KEYS:
        value = table.get(key, "")
        if not isinstance(value, str):
            raise ConfigError(
                f'{config}: {where} {key} must be a string, got {type(value).__name__}; quote it: {key} = "..."'
            )
        values[key] = value
    pin = Pin(**values)
    check_pin(pin, f"{config}: {where}")
    return pin


def check_pin(pin: Pin, where: str) -> None:
    """Refuse a pin whose values cannot work, before any file is touched or byte downloaded."""
    if not pin.source.strip():
        raise ConfigError(f"{where} source is missing or empty; set it to an index path or an https:// URL")
    if not _SHA256.fullmatch(pin.sha256):
        found = repr(pin.sha256) if pin.sha256 else "missing"
        raise ConfigError(
            f"{where} sha256 is {found}, not 64 lowercase hex digits; copy it from the index's .sha256 file "
            "or run `ruledex pin SOURCE`"
        )
    if pin.is_url:
        parts = urlsplit(pin.source)
        if parts.scheme == "https" and parts.hostname:
            return
        if parts.scheme == "http" and parts.hostname in _LOOPBACK:
            return
        raise ConfigError(
            f"{where} source {pin.source!r}: only https:// URLs are downloaded (http:// only from 127.0.0.1, "
            "localhost or ::1); use the release asset's https URL or a local path"
        )


# --- writing the config --------------------------------------------------------------------------


def _toml_string(value: str) -> str:
    """A TOML basic string: backslash, quote and control characters escaped, the rest verbatim."""
    short = {"\\": "\\\\", '"': '\\"', "\b": "\\b", "\t": "\\t", "\n": "\\n", "\f": "\\f", "\r": "\\r"}
    out = []
    for ch in value:
        if ch in short:
            out.append(short[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def format_pin(pin: Pin, table: str = "[index]") -> str:
    """The TOML text of a pin: a fixed, tiny document, so no TOML writer is needed."""
    lines = [table, f"source = {_toml_string(pin.source)}", f"sha256 = {_toml_string(pin.sha256)}"]
    if pin.name:
        lines.append(f"name = {_toml_string(pin.name)}")
    return "\n".join(lines) + "\n"


_HEADER = "# The index this project uses; written by `ruledex pin`. See docs/pinning.md.\n"


def write_pin(config: Path, pin: Pin) -> None:
    """Write ``pin`` into ``ruledex.toml`` atomically (readers see the old file or the new one).

    ``ruledex pin`` owns ``ruledex.toml``: it is rewritten whole, so a file holding anything but
    an ``[index]`` table is refused rather than silently losing those settings (comments are not
    kept). A ``pyproject.toml`` is never edited: doing that safely needs a TOML writer that keeps
    the owner's comments and layout (tomlkit), which the stdlib-only reader does not carry; the
    error prints the exact lines to paste instead.
    """
    config = Path(config)
    check_pin(pin, "the pin")
    if config.name == PYPROJECT:
        raise ConfigError(
            f"{config}: ruledex does not edit pyproject.toml (rewriting it safely needs a TOML writer that keeps "
            f"your comments and layout); paste these lines into it yourself, replacing its [tool.ruledex.index] table "
            f"if it has one (TOML refuses a table defined twice):\n\n{format_pin(pin, '[tool.ruledex.index]')}\n"
            f"or pin into a ruledex.toml instead: `ruledex pin {pin.source} --config {config.with_name(CONFIG_NAME)}`"
        )
    if config.exists():
        data = _parse(config, _read_config(config))
        extra = sorted(set(data) - {"index"})
        index = data.get("index", {})
        extra += [f"index.{key}" for key in sorted(set(index) - set(_KEYS))] if isinstance(index, dict) else []
        if extra:
            raise ConfigError(
                f"{config}: holds {', '.join(extra)} besides the pin, which rewriting would lose; "
                "edit its [index] table by hand:\n\n" + format_pin(pin)
            )
    try:
        write_bytes_atomic(config, (_HEADER + format_pin(pin)).encode("utf-8"))
    except OSError as exc:
        raise ConfigError(
            f"{config}: cannot write the pin ({exc.strerror or exc}); check the folder's permissions"
        ) from None


def default_config(start: Path) -> Path:
    """Where ``ruledex pin`` writes by default: the config ``ruledex query`` would read, else ./ruledex.toml."""
    return find_config(start) or Path(start).resolve() / CONFIG_NAME


# --- the cache -----------------------------------------------------------------------------------


def cache_dir() -> Path:
    """The per-user download cache: ``$RULEDEX_CACHE``, else the platform's user cache folder."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    home = Path.home()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA")
        return (Path(base) if base else home / "AppData" / "Local") / "ruledex" / "Cache"
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "ruledex"
    xdg = os.environ.get("XDG_CACHE_HOME")
    # the XDG spec says relative values are invalid and must be ignored
    return (Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".cache") / "ruledex"


def cached_path(sha256: str) -> Path:
    """Where the index with this sha256 lives in the cache."""
    return cache_dir() / f"{sha256}{SUFFIX}"


@contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    """Hold an OS lock on ``lock_path`` so one process at a time downloads a given hash.

    Without it two ``ruledex serve`` started together would append to the same ``.part`` file.
    The OS drops the lock when the process dies, so there are no stale locks to clean up; the
    empty lock file itself stays (deleting it would race with a waiting process).
    """
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+b") as fh:
        if sys.platform == "win32":
            import msvcrt

            fh.seek(0)
            while True:
                try:
                    msvcrt.locking(fh.fileno(), msvcrt.LK_LOCK, 1)  # retries for ~10 s, then raises
                    break
                except OSError as exc:
                    if exc.errno != errno.EDEADLK:  # the only "still locked" answer; anything else is real
                        raise
            try:
                yield
            finally:
                fh.seek(0)
                msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


# --- downloading ---------------------------------------------------------------------------------


def _user_agent() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"ruledex/{version('ruledex')}"
    except PackageNotFoundError:  # pragma: no cover
        return "ruledex"


def _request(url: str, offset: int, timeout: float, *, optional: bool = False) -> Any:
    """Open ``url``, from byte ``offset`` if non-zero; None when the server cannot continue (416).

    ``optional``: None too when the server has no such file (404, 410), for a file that may be absent.
    """
    from http.client import HTTPException  # the network modules cost ~40 ms to import: only a download needs them
    from urllib.error import HTTPError
    from urllib.request import Request, urlopen

    headers = {"User-Agent": _user_agent()}
    if offset:
        headers["Range"] = f"bytes={offset}-"
    try:
        return urlopen(Request(url, headers=headers), timeout=timeout)  # scheme checked by check_pin
    except HTTPError as exc:
        exc.close()
        if (exc.code == 416 and offset) or (optional and exc.code in (404, 410)):  # 416: the partial is too long
            return None
        raise ConfigError(
            f"cannot download {url}: HTTP {exc.code} {exc.reason}; check the URL "
            "(the release or asset may have been renamed or removed)"
        ) from None
    except (OSError, HTTPException) as exc:  # URLError, timeouts, refused or reset connections
        reason = getattr(exc, "reason", None) or exc
        raise ConfigError(f"cannot download {url}: {reason}; check the network and the URL") from None


def _content_range(value: str | None) -> tuple[int | None, int | None]:
    """``(start, total)`` from ``Content-Range: bytes START-END/TOTAL`` (None where absent or ``*``)."""
    match = re.fullmatch(r"\s*bytes\s+(\d+)-\d+/(\d+|\*)\s*", value or "")
    if not match:
        return None, None
    return int(match.group(1)), None if match.group(2) == "*" else int(match.group(2))


def _stream(url: str, response: BinaryIO, fh: BinaryIO, digest: Any, received: int, total: int | None) -> None:
    """Copy the body into ``fh`` and the hash; raise, keeping what arrived, if it ends early."""
    from http.client import HTTPException  # imported by _request already

    # read1 returns whatever has arrived, so a stall or a cut keeps every received byte for the resume
    read = getattr(response, "read1", response.read)
    of_total = f" of {total:,}" if total is not None else ""
    try:
        while block := read(_BLOCK):
            fh.write(block)
            digest.update(block)
            received += len(block)
    except (OSError, HTTPException) as exc:
        cause = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise ConfigError(
            f"download of {url} stopped after {received:,}{of_total} bytes ({cause}); run the command again to resume"
        ) from None
    finally:
        fh.flush()
        os.fsync(fh.fileno())
    if total is not None and received != total:
        raise ConfigError(
            f"download of {url} stopped after {received:,}{of_total} bytes (the connection was closed); "
            "run the command again to resume"
        )


def published_sha256(url: str, timeout: float) -> str | None:
    """The sha256 published beside a release asset, in ``URL.sha256`` as ``ruledex build`` writes it; None if absent.

    ``ruledex pin URL`` compares it with what it downloaded: the pin should record the release as
    published, not whatever arrived (an asset replaced mid-download, a proxy's error page that
    happens to be an older index).
    """
    response = _request(url + SIDECAR_SUFFIX, 0, timeout, optional=True)
    if response is None:
        return None
    with response:
        words = response.read(4096).decode("utf-8", "replace").split()
    return words[0].lower() if words else ""


def _fetch(url: str, part: Path, *, timeout: float, resume: bool) -> str:
    """Download ``url`` into ``part`` and return the sha256 of the whole file.

    With ``resume`` and a non-empty ``part``, ask for the rest with ``Range``: a 206 whose
    ``Content-Range`` starts where the file ends is appended; a 200 is written from the start;
    a 206 from another offset or a 416 asks again for the whole file. ``part`` is fsynced and
    kept on network errors so the next run resumes; the caller judges the result by its hash.
    """
    offset = part.stat().st_size if resume and part.exists() else 0
    while True:  # loops at most once more: a restart sets offset to 0, which never restarts
        response = _request(url, offset, timeout)
        if response is None:
            offset = 0
            continue
        with response:
            length = response.headers.get("Content-Length")
            if offset and response.status == 206:
                start, total = _content_range(response.headers.get("Content-Range"))
                if start != offset:
                    offset = 0
                    continue
                if total is None and length is not None:
                    total = offset + int(length)
            else:
                offset, total = 0, int(length) if length is not None and response.status == 200 else None
            log.info("downloading %s%s", url, f" from byte {offset:,}" if offset else "")
            digest = hashlib.sha256()
            part.parent.mkdir(parents=True, exist_ok=True)
            with open(part, "r+b" if offset else "wb") as fh:
                while offset and (block := fh.read(min(1 << 20, offset - fh.tell()))):  # the prefix on disk
                    digest.update(block)
                fh.truncate()
                _stream(url, response, fh, digest, offset, total)
            return digest.hexdigest()


def _download_pinned(pin: Pin, final: Path, *, timeout: float, origin: str) -> None:
    """Download a pinned URL into ``final``: resume, verify, rename; never leave a wrong ``final``."""
    part = final.with_name(final.name + ".part")
    if part.exists() and file_sha256(part) == pin.sha256:  # finished earlier, stopped before the rename
        os.replace(part, final)
        fsync_dir(final.parent)
        return
    resumed = part.exists() and part.stat().st_size > 0
    actual = _fetch(pin.source, part, timeout=timeout, resume=True)
    if actual != pin.sha256 and resumed:
        # the prefix may come from an older asset at the same URL: one clean download decides
        part.unlink(missing_ok=True)
        actual = _fetch(pin.source, part, timeout=timeout, resume=False)
    if actual != pin.sha256:
        part.unlink(missing_ok=True)
        raise ArtifactError(
            pin.source,
            "",
            f"expected sha256 {pin.sha256} ({origin}) but the download has {actual}; the release asset changed "
            f"or the pin is wrong; re-pin with `ruledex pin {pin.source}`",
        )
    os.replace(part, final)
    fsync_dir(final.parent)


# --- resolving -----------------------------------------------------------------------------------


def from_here(path: Path) -> str:
    """``path`` as the current folder reaches it, for a hint to type.

    Relative, so that ``ruledex pin`` stores it relative to the config again: an absolute path in a
    shared config breaks it for everyone else.
    """
    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows): only the absolute path reaches it
        return str(path)


def verify_pinned(
    path: Path, expected: str, *, origin: str = CONFIG_NAME, source: str = "", serving: bool = False
) -> None:
    """Check that ``path`` has the pinned sha256; done every time a pin is resolved.

    The cost is one streamed sha256 of the file (~8.5 ms for the bundled 8.6 MB index, warm), paid
    once per ``ruledex query`` or server start, against opening an index that is not the pinned one.
    ``serving``: the check of a running server's hot reload, whose remedy needs a restart too (the
    server reads the pin once, at start, so re-pinning alone leaves it refusing the new file).

    Raises:
        ArtifactError: naming both hashes, or that the file is missing.
    """
    path = Path(path)
    then = " and restart `ruledex serve` (it reads the pin once, at start)" if serving else ""
    try:
        actual = file_sha256(path)
    except FileNotFoundError:
        raise ArtifactError(
            str(path),
            "",
            f"no such file, pinned by {origin}; build or restore it, or re-pin with `ruledex pin FILE`{then}",
        ) from None
    except OSError as exc:
        raise ArtifactError(str(path), "", f"cannot read the pinned index ({exc.strerror})") from None
    if actual != expected:
        raise ArtifactError(
            str(path),
            "",
            f"expected sha256 {expected} ({origin}) but the file has {actual}; it changed after it was pinned: "
            f"restore the pinned version or re-pin with `ruledex pin {source or path}`{then}",
        )


def resolve(
    pin: Pin, config_dir: Path, *, download: bool = True, timeout: float = 30, origin: str = CONFIG_NAME
) -> Path:
    """The verified local file of a pin, downloading a URL into the cache on first use.

    Args:
        pin: what to resolve.
        config_dir: the folder of the config file; relative local sources are relative to it.
        download: False to use the cache only (a missing file is an error, not a download).
        timeout: seconds for the connection and for each read, not for the whole download.
        origin: the config file, named in error messages.

    Raises:
        ArtifactError: the file's sha256 is not the pinned one (both hashes named).
        ConfigError: the pin is malformed, or the download failed (URL and cause named).
    """
    check_pin(pin, origin)
    if not pin.is_url:
        path = Path(pin.source)
        path = path if path.is_absolute() else Path(config_dir) / path
        verify_pinned(path, pin.sha256, origin=origin, source=from_here(path))
        return path
    final = cached_path(pin.sha256)
    if final.exists():
        try:
            verify_pinned(final, pin.sha256, origin=origin, source=pin.source)
            return final
        except ArtifactError:
            if not download:
                raise
            log.warning("cached %s does not match its pinned sha256; downloading it again", final)
    if not download:
        raise ConfigError(
            f"{pin.source} is pinned by {origin} but not in the cache ({final}); run once with network access"
        )
    try:
        with _exclusive(final.with_name(final.name + ".lock")):
            if final.exists() and file_sha256(final) == pin.sha256:  # another process finished it while we waited
                return final
            _download_pinned(pin, final, timeout=timeout, origin=origin)
    except OSError as exc:  # network errors are already ConfigErrors: this is the cache folder itself
        raise _cache_error(final.parent, exc) from None
    except ConfigError as exc:  # the URL is not on the command line: say where it comes from
        raise ConfigError(f"{exc} (pinned by {origin})") from None
    return final


def _cache_error(folder: Path, exc: OSError) -> ConfigError:
    return ConfigError(
        f"cannot write the ruledex cache {folder} ({exc.strerror or exc}); free space or fix its permissions, "
        f"or set {CACHE_ENV} to a writable folder"
    )


def resolve_config(config: Path, *, download: bool = True, timeout: float = 30) -> Path:
    """Read the pin in ``config`` and resolve it (relative sources are relative to its folder)."""
    config = Path(config)
    return resolve(read_pin(config), config.parent, download=download, timeout=timeout, origin=str(config))


def find_pinned_index(start: Path, *, download: bool = True) -> Path | None:
    """The pinned index for a project folder, or None when no pin config applies there."""
    config = find_config(start)
    return None if config is None else resolve_config(config, download=download)


# --- pinning -------------------------------------------------------------------------------------


def _label(path: Path) -> str:
    """``name version`` from the manifest: a label that tells a reader of ruledex.toml what is pinned."""
    with open_artifact(path) as art:
        name, version = art.manifest.get("name"), art.manifest.get("version")
    return " ".join(str(v) for v in (name, version) if v)


def pin_source(source: str, config: Path, *, timeout: float = 30) -> Pin:
    """Check an index and return the pin to write into ``config``.

    A local file is verified in full (structure, per-section CRC-32, its ``.sha256`` sidecar if
    present) and its path stored relative to the config's folder when it was given relative (an
    absolute path stays absolute). A URL is downloaded into a temporary file in the cache (its
    hash is not known yet, so nothing can be resumed), hashed, verified, and moved to
    ``<sha256>.ruledex``, so the first ``ruledex query`` after pinning needs no network. Its hash
    must match the ``URL.sha256`` published beside it, when there is one (:func:`published_sha256`;
    ``Pin.checked`` says whether there was).

    Raises:
        ArtifactError: the file is not a usable index.
        ConfigError: the URL is not allowed or the download failed.
    """
    config = Path(config)
    if not _is_url(source):
        path = Path(source)
        if not path.exists():
            raise ConfigError(f"{path}: no such index file; build one with `ruledex build`, or pin its https:// URL")
        report = verify(path)
        if path.is_absolute():
            stored = path.as_posix()
        else:
            try:
                stored = Path(os.path.relpath(path.resolve(), config.resolve().parent)).as_posix()
            except ValueError:  # another drive on Windows: no relative path exists
                stored = path.resolve().as_posix()
        return Pin(stored, report["sha256"], _label(path))
    check_pin(Pin(source, "0" * 64), "ruledex pin:")
    folder = cache_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=".pin-", suffix=".part", dir=folder)
    except OSError as exc:
        raise _cache_error(folder, exc) from None
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        sha = _fetch(source, tmp, timeout=timeout, resume=False)
        try:
            verify(tmp)
            label = _label(tmp)
        except ArtifactError as exc:
            raise ArtifactError(
                source, exc.section, f"the download is not a usable ruledex index: {exc.message}"
            ) from None
        published = published_sha256(source, timeout)
        if published is not None and not _SHA256.fullmatch(published):  # e.g. a proxy's or portal's page
            raise ConfigError(
                f"{source}{SIDECAR_SUFFIX} does not hold a sha256 (it begins {shown(published)}); "
                "check the release's assets, or pin a local copy you have checked"
            )
        if published is not None and published != sha:
            raise ArtifactError(
                source,
                "",
                f"the download has sha256 {sha} but {source}{SIDECAR_SUFFIX} says {published or '(empty)'}: the "
                "asset was replaced while it downloaded, or one of the two files is damaged; run `ruledex pin` "
                "again, and if they still differ, republish the release (build it again: it writes both)",
            )
        os.replace(tmp, cached_path(sha))
        fsync_dir(folder)
    finally:
        tmp.unlink(missing_ok=True)
    return Pin(source, sha, label, checked=published is not None)
