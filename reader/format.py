r"""The ruledex index file format, version 1.3. This module is the contract; nothing else knows bytes.

Layout of a ``.ruledex`` file (all integers little-endian)::

    offset 0   magic            8 bytes  b"\x89RDX\r\n\x1a\n"  (PNG-style: catches text-mode mangling)
    offset 8   major            u16      format major version
    offset 10  minor            u16      format minor version
    offset 12  reserved         u32      zero
    offset 16  manifest_length  u64      bytes of the manifest that follows
    offset 24  manifest         UTF-8 JSON object, keys sorted, at most MAX_MANIFEST bytes
    ...        zero padding up to the next multiple of ALIGN: the data region starts here
    data       sections, each starting at a multiple of ALIGN from the data region's start

The manifest holds the build's facts (format and tool version, source repository, commit, ref,
build time from the commit, model name/dimension/hash and encoder parameters with the model's
cosine calibration, keyword tokenizer and BM25 parameters, counts) and ``sections``: ``name ->
{offset, nbytes, dtype, shape, crc32}`` with ``offset`` relative to the data region. Every section
is a C-contiguous array of the dtype :data:`SECTIONS` fixes for it, so the reader views it in place
with ``np.frombuffer`` over one read-only ``mmap``; byte blobs (tokenizer JSON, msgpack records)
are ``|u1`` arrays.

Compatibility rule: a reader opens any file of the same major version; sections it does not know
are ignored (a newer minor version may add some), sections it needs must be present, except those a
later minor version added (:attr:`SectionSpec.since`): a file older than a section does without it. A different
major version is refused with a message that says which side to upgrade.

Before any view is made the file is checked: length, magic, major version, manifest size and
JSON, the JSON type of every manifest field the reader uses (:data:`MANIFEST_FIELDS`), and for every section its dtype, shape, alignment, bounds, overlap and
``nbytes == prod(shape) * itemsize``. ``verify`` additionally checks each section's CRC-32 and
the ``<file>.sha256`` sidecar.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import json
import mmap
import os
import struct
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from .errors import ArtifactError, ConfigError

MAGIC = b"\x89RDX\r\n\x1a\n"
FORMAT_VERSION: tuple[int, int] = (1, 3)
"""1.1 added ``rule_flags`` and the whole-rule posting lists ``rule_kw_*``. A 1.1 reader refuses a 1.0
file (a required section is missing: rebuild it); a 1.0 reader opens a 1.1 file and ignores them.
1.2 added the model's cosine calibration to the manifest (``model.cosine_scale`` and
``model.cosine_shift``, see ``encode.EncoderParams``): a 1.2 reader reads a 1.1 file as uncalibrated
(1 and 0, as that file's model was); a 1.1 reader opens a 1.2 file and ranks with raw cosines.
1.3 added each rule's example tasks as phrases (``example_vectors``, ``example_rule``): a 1.3 reader
reads an older file as having none, so an index pinned before still opens; a 1.2 reader opens a 1.3
file and ignores them."""
ALIGN = 64
MAX_MANIFEST = 16 * 1024 * 1024
_HEADER = struct.Struct("<8sHHIQ")
HEADER_SIZE = _HEADER.size
SUFFIX = ".ruledex"


@dataclass(frozen=True)
class SectionSpec:
    """What a section holds: its dtype, number of dimensions and meaning."""

    dtype: str
    ndim: int
    doc: str
    since: tuple[int, int] = (1, 0)
    """The format version that added the section: a file of an earlier version does without it."""


SECTIONS: dict[str, SectionSpec] = {
    # embeddings
    "directive_vectors": SectionSpec("<f4", 2, "unit-norm directive embeddings (directives, dim)"),
    "token_vectors": SectionSpec("|i1", 2, "static model token embeddings, int8 (vocab, dim)"),
    "token_scales": SectionSpec("<f4", 1, "per-token scale applied to token_vectors rows (vocab,)"),
    "tokenizer": SectionSpec("|u1", 1, "the model's tokenizer.json, UTF-8"),
    # keyword index, CSR over sorted terms
    "kw_terms": SectionSpec("|u1", 1, "sorted keyword terms, UTF-8, concatenated"),
    "kw_term_offsets": SectionSpec("<u4", 1, "start of each term in kw_terms, plus the end (terms+1,)"),
    "kw_indptr": SectionSpec("<u4", 1, "postings of term i are [indptr[i], indptr[i+1]) (terms+1,)"),
    "kw_postings": SectionSpec("<u4", 1, "directive ids, ascending within a term (postings,)"),
    "kw_tf": SectionSpec("<u2", 1, "term frequency per posting (postings,)"),
    "kw_doc_len": SectionSpec("<u4", 1, "keyword tokens per directive document (directives,)"),
    "rule_kw_indptr": SectionSpec("<u4", 1, "rule postings of term i are [indptr[i], indptr[i+1]) (terms+1,)"),
    "rule_kw_postings": SectionSpec("<u4", 1, "rule ids, ascending within a term (rule postings,)"),
    "rule_kw_tf": SectionSpec("<u2", 1, "term frequency per rule posting (rule postings,)"),
    "rule_kw_doc_len": SectionSpec("<u4", 1, "keyword tokens per whole rule document (rules,)"),
    # per-directive tables
    "dir_rule": SectionSpec("<u4", 1, "rule index of each directive (directives,)"),
    "dir_severity": SectionSpec("|u1", 1, "index into vocab.SEVERITIES (directives,)"),
    "dir_layers": SectionSpec("|u1", 1, "bit mask over vocab.LAYERS (directives,)"),
    "dir_topics": SectionSpec("<u4", 1, "bit mask over vocab.TOPICS (directives,)"),
    # per-rule tables
    "rule_authority": SectionSpec("<u4", 1, "topic mask of authoritative_for (rules,)"),
    "rule_core": SectionSpec("|u1", 1, "1 if the rule is a core rule, authoritative for '*' (rules,)"),
    "rule_flags": SectionSpec("|u1", 1, "RULE_ALWAYS_APPLY | RULE_HAS_GLOBS | RULE_DECLARED bits per rule (rules,)"),
    "wta_vectors": SectionSpec("<f4", 2, "unit-norm when_to_apply phrase embeddings (phrases, dim)"),
    "wta_rule": SectionSpec("<u4", 1, "rule index of each when_to_apply phrase (phrases,)"),
    "example_vectors": SectionSpec("<f4", 2, "unit-norm example task embeddings (examples, dim)", (1, 3)),
    "example_rule": SectionSpec("<u4", 1, "rule index of each example task, in rule order (examples,)", (1, 3)),
    # detection tables learnt from the rules
    "layer_vectors": SectionSpec("<f4", 2, "unit-norm prototype per layer, zero if unused (layers, dim)"),
    "topic_vectors": SectionSpec("<f4", 2, "unit-norm prototype per topic, zero if unused (topics, dim)"),
    "detect_terms": SectionSpec("|u1", 1, "msgpack {'layers': {name: [term]}, 'topics': {...}}"),
    # records: msgpack rows concatenated, offsets array (records+1,)
    "rule_records": SectionSpec("|u1", 1, "msgpack RuleRecord rows, concatenated"),
    "rule_offsets": SectionSpec("<u8", 1, "start of each rule row, plus the end (rules+1,)"),
    "directive_records": SectionSpec("|u1", 1, "msgpack DirectiveRecord rows, concatenated"),
    "directive_offsets": SectionSpec("<u8", 1, "start of each directive row, plus the end"),
}
"""Every section of format 1.x, in the order the writer lays them out."""

RULE_ALWAYS_APPLY = 1
"""``rule_flags`` bit: the rule always applies (Cursor's alwaysApply)."""
RULE_HAS_GLOBS = 2
"""``rule_flags`` bit: the rule is tied to file globs. With the bit above, a query knows which rules
it must consider without decoding every rule record (4,998 records cost ~320 ms at 100k directives)."""
RULE_DECLARED = 4
"""``rule_flags`` bit: the rule's authors wrote its topics (a ruledex rule document), where a rule
imported from another tool's format has them inferred. Indexes built before the bit existed have
it clear everywhere, so they keep the ranking they were built for (``rank.ranking_for``)."""


def _align(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def fsync_dir(folder: Path) -> None:
    """Make a rename durable where the platform allows it (not on Windows)."""
    if os.name == "nt":
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@functools.cache
def _default_mode() -> int:
    """The mode ``open()`` would give a new file (0o666 less the umask); mkstemp's is 0o600.

    Reading the umask means setting it; cached, so that happens once per process.
    """
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def output_folder(path: Path | str) -> Path:
    """``path`` as a folder to write files into (made when they are written); a file there is an error."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ConfigError(f"{path}: is a file; --out takes the folder to write the files into")
    return path


def check_index_output(path: Path) -> None:
    """Refuse, before a build starts, an output path where writing an index would destroy something else.

    A folder, or an existing file that is not an index (``--out rules/api.md`` by a slip), is an
    error; an index there (or an empty file) is replaced, as every rebuild does.
    """
    path = Path(path)
    for target in (path, sidecar_path(path)):  # the sidecar is written second: a folder there would fail halfway
        if target.is_dir():
            raise ConfigError(f"{target}: is a folder; pass the path of a file to write")
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(MAGIC))
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write here ({exc.strerror or exc}); choose another path") from None
    if head and head != MAGIC:
        raise ConfigError(
            f"{path}: exists and is not a ruledex index, which the build would overwrite; remove it or choose "
            f"another --out (e.g. dist/rules{SUFFIX})"
        )


def refuse_folders(paths: list[Path]) -> None:
    """Refuse, before writing any of several files, when a folder stands where one of them goes.

    ``write_bytes_atomic`` would refuse that one file, but only after the files before it were written.
    """
    folders = [str(p) for p in paths if Path(p).is_dir()]
    if folders:
        raise ConfigError(f"{', '.join(folders)}: is a folder where a file goes; nothing was written. Move it away")


def write_bytes_atomic(path: Path, chunks: list[bytes] | bytes) -> None:
    """Write a file so that readers see the old file or the whole new one, never a part."""
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"{path}: is a folder; pass the path of a file to write")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write here ({exc.strerror or exc}); choose another path") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            for chunk in [chunks] if isinstance(chunks, bytes) else chunks:
                fh.write(chunk)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, _default_mode())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def write(path: Path, manifest: dict[str, Any], arrays: dict[str, np.ndarray]) -> str:
    """Write an index file atomically, then its ``.sha256`` sidecar; return the sha256.

    ``arrays`` must hold every section of :data:`SECTIONS` with its declared dtype; the section
    table and format version are added to ``manifest`` here, so no caller knows offsets.
    """
    missing = sorted(set(SECTIONS) - set(arrays))
    unknown = sorted(set(arrays) - set(SECTIONS))
    if missing or unknown:
        raise ValueError(f"sections missing {missing} / unknown {unknown}")
    table: dict[str, dict[str, Any]] = {}
    payloads: list[tuple[int, bytes]] = []
    offset = 0
    for name, spec in SECTIONS.items():
        arr = np.ascontiguousarray(arrays[name])
        if arr.dtype != np.dtype(spec.dtype) or arr.ndim != spec.ndim:
            raise ValueError(f"section {name}: got {arr.dtype}/{arr.ndim}d, need {spec.dtype}/{spec.ndim}d")
        data = arr.tobytes()
        offset = _align(offset)
        table[name] = {
            "offset": offset,
            "nbytes": len(data),
            "dtype": spec.dtype,
            "shape": list(arr.shape),
            "crc32": zlib.crc32(data),
        }
        payloads.append((offset, data))
        offset += len(data)
    full = dict(manifest, format_version=list(FORMAT_VERSION), sections=table)
    manifest_bytes = json.dumps(full, sort_keys=True, ensure_ascii=False, separators=(",", ":")).encode()
    if len(manifest_bytes) > MAX_MANIFEST:
        raise ValueError(f"manifest is {len(manifest_bytes)} bytes, limit {MAX_MANIFEST}")
    header = _HEADER.pack(MAGIC, FORMAT_VERSION[0], FORMAT_VERSION[1], 0, len(manifest_bytes))
    head = header + manifest_bytes
    data_start = _align(len(head))
    chunks = [head, b"\0" * (data_start - len(head))]
    position = 0
    for start, data in payloads:
        chunks.append(b"\0" * (start - position))
        chunks.append(data)
        position = start + len(data)
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk)
    sha = digest.hexdigest()
    path = Path(path)
    write_bytes_atomic(path, chunks)
    write_bytes_atomic(sidecar_path(path), f"{sha}  {path.name}\n".encode())
    return sha


SIDECAR_SUFFIX = ".sha256"
"""Added to an index file's name (or a release asset's URL) to name its ``sha256sum``-compatible checksum."""


def sidecar_path(path: Path) -> Path:
    """Where the ``sha256sum``-compatible checksum of an index file lives."""
    path = Path(path)
    return path.with_name(path.name + SIDECAR_SUFFIX)


def newest_index(folder: Path) -> Path | None:
    """The newest ``*.ruledex`` in ``folder`` (by modification time, then name); None if there is none.

    What commands and the server use without ``--index`` or a pin (``./dist``): a build writes a new
    file name per version, so the newest is the latest build.
    """
    candidates = []
    for path in Path(folder).glob(f"*{SUFFIX}"):
        try:
            candidates.append((path.stat().st_mtime, path.name, path))
        except OSError:  # removed while we looked
            continue
    return max(candidates)[2] if candidates else None


class Artifact:
    """An opened index file: owns one read-only mmap and the numpy views over it."""

    def __init__(self, path: Path, buffer: mmap.mmap | bytes, manifest: dict[str, Any], data_start: int) -> None:
        """Use :func:`open_artifact`; this constructor trusts already-validated input."""
        self.path = Path(path)
        self.manifest = manifest
        self._buffer = buffer
        self._data_start = data_start
        self._views: dict[str, np.ndarray] = {}

    @property
    def size(self) -> int:
        """File size in bytes."""
        return len(self._buffer)

    def section(self, name: str) -> np.ndarray:
        """A read-only view of one section (validated at open)."""
        view = self._views.get(name)
        if view is None:
            entry = self.manifest["sections"].get(name)
            if entry is None:
                raise ArtifactError(str(self.path), name, "section missing; rebuild the index")
            shape = tuple(entry["shape"])
            dtype = np.dtype(entry["dtype"])
            if entry["nbytes"] == 0:
                view = np.zeros(shape, dtype=dtype)
            else:
                start = self._data_start + entry["offset"]
                view = np.frombuffer(self._buffer, dtype=dtype, count=int(np.prod(shape)), offset=start)
                view = view.reshape(shape)
            view.flags.writeable = False
            self._views[name] = view
        return view

    def has(self, name: str) -> bool:
        """Whether the file holds section ``name`` (one newer than the file may be absent)."""
        return name in self.manifest["sections"]

    def section_bytes(self, name: str) -> bytes:
        """A byte section as ``bytes`` (tokenizer JSON, msgpack tables)."""
        return self.section(name).tobytes()

    def close(self) -> None:
        """Release the views and the mmap; later section access is an error."""
        self._views.clear()
        if isinstance(self._buffer, mmap.mmap):
            # numpy views handed out to callers may still reference the map; it is freed with them
            with contextlib.suppress(BufferError):
                self._buffer.close()

    def __enter__(self) -> Artifact:
        """Context-manager support: close on exit."""
        return self

    def __exit__(self, *exc: object) -> None:
        """Close the mmap."""
        self.close()


def _fail(path: Path, message: str, section: str = "") -> ArtifactError:
    return ArtifactError(str(path), section, message)


def parse_header(path: Path, buffer: bytes | mmap.mmap) -> tuple[dict[str, Any], int]:
    """Validate header and manifest; return the manifest and the data region's start."""
    size = len(buffer)
    if size < HEADER_SIZE:
        raise _fail(
            path, f"truncated: {size} bytes, a ruledex index has at least {HEADER_SIZE}; rebuild or re-download it"
        )
    magic, major, minor, _reserved, manifest_len = _HEADER.unpack_from(buffer, 0)
    if magic != MAGIC:
        raise _fail(
            path,
            f"not a ruledex index (magic {magic!r}, expected {MAGIC!r}); check the path, or rebuild with `ruledex build`",
        )
    if major != FORMAT_VERSION[0]:
        side = "ruledex (pip install -U ruledex)" if major > FORMAT_VERSION[0] else "the index (ruledex build)"
        raise _fail(
            path,
            f"index format {major}.{minor} but this ruledex reads {FORMAT_VERSION[0]}.x; upgrade {side}",
        )
    if manifest_len > MAX_MANIFEST:
        raise _fail(
            path,
            f"manifest length {manifest_len} exceeds the {MAX_MANIFEST}-byte limit; the header is corrupt, rebuild the index",
        )
    if HEADER_SIZE + manifest_len > size:
        raise _fail(
            path,
            f"truncated: manifest needs {HEADER_SIZE + manifest_len} bytes, file has {size}; re-download or rebuild it",
        )
    raw = bytes(buffer[HEADER_SIZE : HEADER_SIZE + manifest_len])
    try:
        manifest = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _fail(path, f"manifest is not valid JSON ({exc}); the file is corrupt, rebuild it") from None
    if not isinstance(manifest, dict) or not isinstance(manifest.get("sections"), dict):
        raise _fail(path, "manifest has no section table; the file is corrupt, rebuild it")
    if manifest.get("format_version") != [major, minor]:
        raise _fail(
            path,
            f"manifest format_version {manifest.get('format_version')} disagrees with header {major}.{minor}; rebuild it",
        )
    _check_manifest_fields(path, manifest)
    data_start = _align(HEADER_SIZE + manifest_len)
    _check_sections(path, manifest["sections"], size - data_start, (major, minor))
    return manifest, data_start


_TEXT = "a string"
_FLAG = "true or false"
_WHOLE = "an integer"
_NUMBER = "a number"
_TABLE = "an object"
_NAMES = "a list of strings"
MANIFEST_FIELDS: dict[str, tuple[str, bool]] = {
    "name": (_TEXT, False),
    "version": (_TEXT, False),
    "build_time": (_TEXT, False),
    "tool": (_TABLE, False),
    "tool.version": (_TEXT, False),
    "source": (_TABLE, False),
    "source.repository": (_TEXT, False),
    "source.commit": (_TEXT, False),
    "source.ref": (_TEXT, False),
    "source.path": (_TEXT, False),
    "source.dirty": (_FLAG, False),
    "model": (_TABLE, True),
    "model.name": (_TEXT, False),
    "model.hash": (_TEXT, False),
    "model.vocab_size": (_WHOLE, False),
    "model.dim": (_WHOLE, True),
    "model.normalize": (_FLAG, True),
    "model.max_length": (_WHOLE, False),
    "model.median_token_length": (_WHOLE, True),
    "model.unk_token_id": (_WHOLE, False),
    "model.cosine_scale": (_NUMBER, False),
    "model.cosine_shift": (_NUMBER, False),
    "keywords": (_TABLE, True),
    "keywords.k1": (_NUMBER, True),
    "keywords.rule_k1": (_NUMBER, False),
    "keywords.b": (_NUMBER, True),
    "keywords.avgdl": (_NUMBER, True),
    "keywords.terms": (_WHOLE, False),
    "counts": (_TABLE, False),
    "counts.rules": (_WHOLE, False),
    "counts.sections": (_WHOLE, False),
    "counts.directives": (_WHOLE, False),
    "counts.when_to_apply": (_WHOLE, False),
    "counts.examples": (_WHOLE, False),
    "vocab": (_TABLE, False),
    "vocab.layers": (_NAMES, False),
    "vocab.topics": (_NAMES, False),
    "vocab.severities": (_NAMES, False),
}
"""The manifest fields a reader uses: ``dotted.name -> (expected type, required)``. A field that is
absent and not required is read as its default; ``null`` is read as absent (``build_time`` is null
outside git)."""


def _is(kind: str, value: Any) -> bool:
    """Whether a JSON value is of one of :data:`MANIFEST_FIELDS`' kinds (true is not an integer)."""
    if kind == _TEXT:
        return isinstance(value, str)
    if kind == _FLAG:
        return isinstance(value, bool)
    if kind == _TABLE:
        return isinstance(value, dict)
    if kind == _NAMES:
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    whole = isinstance(value, int) and not isinstance(value, bool)
    return whole or (kind == _NUMBER and isinstance(value, float))


def json_kind(value: Any) -> str:
    """A JSON value's type as a reader would say it."""
    for kind in (_FLAG, _WHOLE, _NUMBER, _TEXT, _TABLE):
        if _is(kind, value):
            return kind
    return "null" if value is None else "a list"


def _check_manifest_fields(path: Path, manifest: dict[str, Any]) -> None:
    """Refuse a manifest whose fields (:data:`MANIFEST_FIELDS`) are missing or of the wrong JSON type.

    The manifest has no checksum of its own: without this, an edited value failed deep in a query
    as a traceback (a ``.sha256`` sidecar, when present, also tells that the file changed).
    """
    for field, (kind, required) in MANIFEST_FIELDS.items():
        parent, _, key = field.rpartition(".")
        table = manifest.get(parent) if parent else manifest
        if not isinstance(table, dict):
            continue  # the parent was reported first (fields are listed parents first), or is absent
        value = table.get(key)
        if value is None and not required:
            continue
        if value is None or not _is(kind, value):
            found = "missing" if key not in table else f"{json_kind(value)} ({json.dumps(value)[:40]})"
            raise _fail(
                path,
                f"manifest field {field!r} is {found} where {kind} is required; the manifest was edited or "
                "damaged: rebuild the index with `ruledex build` (or download it again)",
            )


def _check_sections(path: Path, table: dict[str, Any], data_size: int, version: tuple[int, int]) -> None:
    """Check every known section fits, is aligned, typed as specified and does not overlap.

    A section newer than the file's ``version`` may be absent (:attr:`SectionSpec.since`).
    """
    spans: list[tuple[int, int, str]] = []
    for name, spec in SECTIONS.items():
        entry = table.get(name)
        if entry is None and version < spec.since:
            continue
        if not isinstance(entry, dict):
            raise _fail(
                path, "required section missing (an older ruledex or another tool wrote this index); rebuild it", name
            )
        try:
            offset, nbytes = int(entry["offset"]), int(entry["nbytes"])
            shape = tuple(int(d) for d in entry["shape"])
            dtype = np.dtype(entry["dtype"])
        except (KeyError, TypeError, ValueError) as exc:
            raise _fail(path, f"section entry is malformed ({exc}); rebuild the index", name) from None
        if dtype != np.dtype(spec.dtype) or len(shape) != spec.ndim or any(d < 0 for d in shape):
            raise _fail(
                path,
                f"dtype/shape {entry['dtype']}{list(shape)} where {spec.dtype} with {spec.ndim} dims is required",
                name,
            )
        if nbytes != int(np.prod(shape, dtype=np.int64)) * dtype.itemsize:
            raise _fail(
                path,
                f"declares {nbytes} bytes but shape {list(shape)} of {dtype} needs {int(np.prod(shape)) * dtype.itemsize}",
                name,
            )
        if offset < 0 or offset % ALIGN:
            raise _fail(path, f"offset {offset} is not a multiple of {ALIGN}", name)
        if offset + nbytes > data_size:
            raise _fail(
                path,
                f"does not fit: ends at {offset + nbytes} but the data region has {data_size} bytes (truncated?); re-download or rebuild",
                name,
            )
        spans.append((offset, offset + nbytes, name))
    spans.sort()
    for (_s1, end1, n1), (s2, _e2, n2) in itertools.pairwise(spans):
        if s2 < end1:
            raise _fail(path, f"overlaps section {n1}; the file is corrupt, rebuild it", n2)


def open_artifact(path: Path) -> Artifact:
    """Open and validate an index file, memory-mapped read-only."""
    path = Path(path)
    if path.is_dir():  # before open: Windows reports a folder as PermissionError
        raise _fail(path, _folder_hint(path))
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if size == 0:
                raise _fail(path, "file is empty; rebuild it with `ruledex build` or re-download it")
            buffer = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except FileNotFoundError:
        raise _fail(path, "no such index file; check the path, or build one with `ruledex build`") from None
    except PermissionError:
        raise _fail(path, "permission denied reading the index file") from None
    try:
        manifest, data_start = parse_header(path, buffer)
    except BaseException:
        buffer.close()
        raise
    return Artifact(path, buffer, manifest, data_start)


def _folder_hint(path: Path) -> str:
    """What to do when a folder is given where an index file belongs."""
    newest = newest_index(path)
    if newest is not None:
        return f"is a folder, not an index file; pass the {SUFFIX} file inside it, e.g. {newest}"
    return (
        f"is a folder with no {SUFFIX} file in it; to build an index from the rules in it, run "
        f"`ruledex build {path}` and pass the file it writes"
    )


def file_sha256(path: Path) -> str:
    """The sha256 of a file, streamed."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_sections(path: Path) -> str:
    """Check an index's structure and every section's CRC-32 (no sha256); return its format version.

    What a server runs before serving a file: a damaged section fails here, naming it, instead of
    answering wrongly or failing on every request later. Raises :class:`ArtifactError`.
    """
    with open_artifact(Path(path)) as art:
        for name, entry in sorted(art.manifest["sections"].items()):
            if name not in SECTIONS:
                continue
            crc = zlib.crc32(art.section(name).data)  # the mapped bytes, not a copy
            if crc != entry.get("crc32"):
                raise _fail(
                    Path(path),
                    f"checksum mismatch (crc32 {crc:08x}, manifest says {entry.get('crc32', 0):08x}); the file is corrupt, rebuild or re-download it",
                    name,
                )
        return art.manifest["format_version"]


def verify(path: Path, *, check_sidecar: bool = True) -> dict[str, Any]:
    """Fully check an index: structure, each section's CRC-32, and the sidecar if present.

    ``check_sidecar=False`` skips the sidecar comparison: a server reloading a file that was just
    replaced may see the new index before its new sidecar lands (they are two atomic renames).

    Returns a report ``{path, sha256, sidecar, sections, format_version}``; raises
    :class:`ArtifactError` naming the first problem.
    """
    path = Path(path)
    version = check_sections(path)
    sha = file_sha256(path)
    sidecar = compare_sidecar(path, sha) if check_sidecar else "absent"
    return {"path": str(path), "sha256": sha, "sidecar": sidecar, "sections": len(SECTIONS), "format_version": version}


def compare_sidecar(path: Path, sha: str | None = None) -> str:
    """Compare an index with its ``.sha256`` sidecar: ``"ok"``, or ``"absent"`` (the file is then not hashed).

    ``sha``: the file's sha256 if already known. Raises :class:`ArtifactError` when they differ or
    the sidecar cannot be read.
    """
    path = Path(path)
    side = sidecar_path(path)
    if not side.exists():
        return "absent"
    try:
        words = side.read_text(encoding="utf-8").split()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not UTF-8 text"
        raise _fail(path, f"its sidecar {side} cannot be read ({reason}); delete it, or rebuild") from None
    expected = words[0] if words else ""
    sha = sha or file_sha256(path)
    if expected != sha:
        raise _fail(
            path,
            f"sha256 {sha} does not match {side} ({expected or 'empty'}); the file changed after it was built: "
            f"rebuild it (or download it again with its sidecar), or delete {side} if you changed the file on purpose",
        )
    return "ok"
