"""The artifact contract: reproducible bytes, and clear refusals of damaged files."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import struct
from collections.abc import Callable
from pathlib import Path

import msgpack
import numpy as np
import pytest

from ruledex.builder.build import build
from ruledex.reader import format as fmt
from ruledex.reader.cli import main
from ruledex.reader.errors import ArtifactError
from ruledex.reader.index import Index
from ruledex.reader.records import DirectiveRecord, unpack_row

from .conftest import RULES, relayout


def test_rebuild_is_byte_identical(tmp_path: Path, bundled_index: Path) -> None:
    again = build(RULES, tmp_path / "again.ruledex")
    assert again.path.read_bytes() == bundled_index.read_bytes()
    assert again.sha256 == fmt.file_sha256(bundled_index)


def test_sidecar_is_sha256sum_compatible(bundled_index: Path) -> None:
    text = fmt.sidecar_path(bundled_index).read_text()
    assert text == f"{fmt.file_sha256(bundled_index)}  {bundled_index.name}\n"


def test_sections_are_aligned_views_over_the_map(bundled_index: Path) -> None:
    with fmt.open_artifact(bundled_index) as art:
        for name in fmt.SECTIONS:
            view = art.section(name)
            assert not view.flags.writeable
            assert art.manifest["sections"][name]["offset"] % fmt.ALIGN == 0
        assert art.section("directive_vectors").dtype == np.float32
        assert art.manifest["format_version"] == list(fmt.FORMAT_VERSION)


def test_manifest_records_model_and_counts(index: Index) -> None:
    m = index.manifest
    assert m["model"]["name"] == "ruledex/minilm-l6-static-taskmap-256-int8"
    assert len(m["model"]["hash"]) == 64
    assert m["counts"]["directives"] == index.n_directives > 0
    assert "/" not in (m["source"]["repository"] or "").split("://")[0]  # no absolute local paths
    assert not str(m["source"]["path"]).startswith("/")


def test_verify_accepts_a_good_file(bundled_index: Path) -> None:
    report = fmt.verify(bundled_index)
    assert report["sidecar"] == "ok"


def _damage(src: Path, dst: Path, how: str) -> None:
    data = bytearray(src.read_bytes())
    if how == "truncated-header":
        data = data[:10]
    elif how == "truncated-data":
        data = data[: len(data) // 2]
    elif how == "empty":
        data = bytearray()
    elif how == "flipped-magic":
        data[1] ^= 0xFF
    elif how == "major-version":
        struct.pack_into("<H", data, 8, 9)
    elif how in ("section-does-not-fit", "bad-manifest-json", "overlap", "missing-section"):
        (length,) = struct.unpack_from("<Q", data, 16)
        manifest = json.loads(data[24 : 24 + length])
        if how == "section-does-not-fit":
            manifest["sections"]["directive_records"]["offset"] = len(data) * 2 // fmt.ALIGN * fmt.ALIGN
        elif how == "overlap":
            manifest["sections"]["token_scales"]["offset"] = manifest["sections"]["token_vectors"]["offset"]
        elif how == "missing-section":  # what a file of an older minor version looks like to this reader
            del manifest["sections"]["rule_flags"]
        raw = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
        if how == "bad-manifest-json":
            raw = raw[:-1]
        data = relayout(data, length, raw)
    dst.write_bytes(bytes(data))


CORRUPTIONS = {
    "truncated-header": "truncated",
    "truncated-data": "does not fit",
    "empty": "empty",
    "flipped-magic": "not a ruledex index",
    "major-version": f"index format 9.{fmt.FORMAT_VERSION[1]} but this ruledex reads 1.x",
    "section-does-not-fit": "does not fit",
    "bad-manifest-json": "manifest is not valid JSON",
    "overlap": "overlaps",
    "missing-section": "[rule_flags]: required section missing (an older ruledex or another tool wrote this index); rebuild it",
}


@pytest.mark.parametrize("how", sorted(CORRUPTIONS))
def test_damaged_file_is_refused_clearly(
    tmp_path: Path, bundled_index: Path, how: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / f"{how}.ruledex"
    _damage(bundled_index, bad, how)
    with pytest.raises(ArtifactError) as caught:
        Index(bad)
    assert str(bad) in str(caught.value)
    assert CORRUPTIONS[how] in str(caught.value)
    # the CLI turns it into one line on stderr and exit code 1, never a traceback
    assert main(["query", "Add an endpoint", "--index", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("ruledex: error: ") and "Traceback" not in err
    assert main(["verify", str(bad)]) == 1


def test_verify_catches_a_flipped_data_byte(tmp_path: Path, bundled_index: Path) -> None:
    bad = tmp_path / "bitrot.ruledex"
    shutil.copy(bundled_index, bad)
    data = bytearray(bad.read_bytes())
    data[-5] ^= 0x01
    bad.write_bytes(bytes(data))
    with pytest.raises(ArtifactError, match="checksum mismatch"):
        fmt.verify(bad)


def test_verify_catches_a_sidecar_mismatch(
    tmp_path: Path, bundled_index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The remedy names the sidecar by the path given: ``delete copy.ruledex.sha256`` from elsewhere deletes nothing."""
    monkeypatch.chdir(tmp_path)
    copy = Path("vendor") / "copy.ruledex"
    copy.parent.mkdir()
    shutil.copy(bundled_index, copy)
    fmt.sidecar_path(copy).write_text("0" * 64 + "  copy.ruledex\n")
    side = re.escape(str(fmt.sidecar_path(copy)))
    with pytest.raises(ArtifactError, match=rf"does not match {side} .*or delete {side} if"):
        fmt.verify(copy)


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path: Path) -> None:
    arrays = {name: np.zeros((0,) * spec.ndim, dtype=spec.dtype) for name, spec in fmt.SECTIONS.items()}
    target = tmp_path / "x.ruledex"
    target.write_bytes(b"old")
    arrays["kw_doc_len"] = np.zeros(3, dtype=np.float64)  # wrong dtype: the write must fail
    with pytest.raises(ValueError, match="kw_doc_len"):
        fmt.write(target, {}, arrays)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["x.ruledex"]


@pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
def test_written_index_is_readable_like_any_new_file(tmp_path: Path, bundled_index: Path) -> None:
    """mkstemp makes 0600 files; a published index must get the usual 0666-less-umask mode."""
    target = tmp_path / "copy.ruledex"
    fmt.write_bytes_atomic(target, bundled_index.read_bytes())
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~umask


def test_cli_suffix_matches_the_format() -> None:
    from ruledex.reader import cli

    assert cli.SUFFIX == fmt.SUFFIX


def _damage_section(src: Path, dst: Path, section: str, at: float, make: Callable[[int], int]) -> None:
    """Rewrite one byte ``at`` a fraction of ``section`` with ``make(old byte)``: the header stays valid."""
    data = bytearray(src.read_bytes())
    (length,) = struct.unpack_from("<Q", data, 16)
    entry = json.loads(data[24 : 24 + length])["sections"][section]
    start = (24 + length + fmt.ALIGN - 1) // fmt.ALIGN * fmt.ALIGN + entry["offset"]
    where = start + int(entry["nbytes"] * at)
    data[where] = make(data[where])
    dst.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("section", "make"),
    [
        ("tokenizer", lambda old: 0xFF),  # not UTF-8
        ("tokenizer", lambda old: ord("~") if old != ord("~") else ord("!")),  # UTF-8, not the JSON it was
        ("detect_terms", lambda old: 0xC1),  # a byte msgpack never writes
    ],
)
def test_a_section_damaged_after_open_names_the_file_not_a_traceback(
    tmp_path: Path, bundled_index: Path, section: str, make: Callable[[int], int], capsys: pytest.CaptureFixture[str]
) -> None:
    """Only `serve` and `verify` check every checksum; a one-shot query still says what is wrong."""
    bad = tmp_path / "damaged.ruledex"
    _damage_section(bundled_index, bad, section, 0.0 if section == "detect_terms" else 0.5, make)
    assert main(["query", "Add an endpoint", "--index", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"ruledex: error: {bad} [{section}]: cannot be read") and "Traceback" not in err
    assert "ruledex verify" in err


@pytest.mark.parametrize(
    ("section", "argv"), [("dir_rule", ["query", "Add a login endpoint"]), ("dir_severity", ["eval"])]
)
def test_a_number_damaged_inside_a_section_is_named_by_its_checksum_not_a_traceback(
    tmp_path: Path, bundled_index: Path, section: str, argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad id inside a numeric section failed deep in numpy (IndexError); the checksums then name it."""
    bad = tmp_path / "damaged.ruledex"
    data = bytearray(bundled_index.read_bytes())
    (length,) = struct.unpack_from("<Q", data, 16)
    entry = json.loads(data[24 : 24 + length])["sections"][section]
    start = (24 + length + fmt.ALIGN - 1) // fmt.ALIGN * fmt.ALIGN + entry["offset"]
    data[start : start + entry["nbytes"]] = b"\x7f" * entry["nbytes"]  # every value far out of range
    bad.write_bytes(bytes(data))
    if argv == ["eval"]:
        queries = tmp_path / "q.jsonl"
        queries.write_text('{"id": "q1", "task": "Add a login endpoint", "relevant": {"security.md": 2}}\n')
        argv = ["eval", "--queries", str(queries)]
    assert main([*argv, "--index", str(bad)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"ruledex: error: {bad} [{section}]: checksum mismatch") and "Traceback" not in err
    assert main(["query", "Add a login endpoint", "--index", str(bad), "--layer", "9-Nowhere"]) == 1  # not "usage"
    assert f"{bad} [{section}]: checksum mismatch" in capsys.readouterr().err


def test_a_missing_index_or_a_folder_gets_a_hint_that_fits(
    tmp_path: Path, bundled_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``info``/``verify`` take a path, not --index; a folder names the index inside it, or how to build one."""
    assert main(["info", str(tmp_path / "nope.ruledex")]) == 1
    err = capsys.readouterr().err
    assert "nope.ruledex: no such index file; check the path, or build one with `ruledex build`" in err
    assert "--index" not in err
    rules = tmp_path / "rules"
    rules.mkdir()
    assert main(["query", "Add an endpoint", "--index", str(rules)]) == 1
    err = capsys.readouterr().err
    assert f"{rules}: is a folder with no .ruledex file in it" in err and f"`ruledex build {rules}`" in err
    shutil.copy(bundled_index, tmp_path / "dist.ruledex")
    assert main(["verify", str(tmp_path)]) == 1
    assert f"pass the .ruledex file inside it, e.g. {tmp_path / 'dist.ruledex'}" in capsys.readouterr().err


def test_a_sidecar_that_cannot_be_read_is_named_not_a_traceback(
    tmp_path: Path, bundled_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder or a non-UTF-8 file at <index>.sha256: verify crashed, or said only "'utf-8' codec ..." (exit 2)."""
    folder_side = tmp_path / "a.ruledex"
    shutil.copy(bundled_index, folder_side)
    fmt.sidecar_path(folder_side).mkdir()
    assert main(["verify", str(folder_side)]) == 1
    assert f"{folder_side}: its sidecar {fmt.sidecar_path(folder_side)} cannot be read" in capsys.readouterr().err
    before = folder_side.read_bytes()
    assert main(["build", str(RULES), "--out", str(folder_side), "-q", "--name", "other"]) == 1  # not half-written
    assert "a.ruledex.sha256: is a folder" in capsys.readouterr().err and folder_side.read_bytes() == before
    binary_side = tmp_path / "b.ruledex"
    shutil.copy(bundled_index, binary_side)
    fmt.sidecar_path(binary_side).write_bytes(b"\xff\xfe")
    assert main(["verify", str(binary_side), "--json"]) == 1
    out, err = capsys.readouterr()
    assert (
        json.loads(out)["ok"] is False
        and f"its sidecar {fmt.sidecar_path(binary_side)} cannot be read (not UTF-8 text)" in err
    )


def test_a_manifest_value_of_the_wrong_type_is_named_before_the_sidecar_is_read(
    tmp_path: Path, bundled_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The manifest has no checksum of its own; its field types are checked at open, sidecar or not."""
    data = bytearray(bundled_index.read_bytes())
    (length,) = struct.unpack_from("<Q", data, 16)
    manifest = json.loads(data[24 : 24 + length])
    manifest["model"]["dim"] = {}
    bad = tmp_path / "edited.ruledex"
    bad.write_bytes(bytes(relayout(data, length, json.dumps(manifest, sort_keys=True).encode())))
    shutil.copy(fmt.sidecar_path(bundled_index), fmt.sidecar_path(bad))
    assert main(["query", "Add a login endpoint", "--index", str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}: manifest field 'model.dim' is an object ({{}}) where an integer is required" in err
    assert "Traceback" not in err


MANIFEST_EDITS = {
    "counts.directives": ("abc", "'counts.directives' is a string (\"abc\") where an integer is required"),
    "name": (["rules"], "'name' is a list ([\"rules\"]) where a string is required"),
    "source": ("abc", "'source' is a string (\"abc\") where an object is required"),
    "keywords.k1": ([1.2], "'keywords.k1' is a list ([1.2]) where a number is required"),
    "model.dim": (True, "'model.dim' is true or false (true) where an integer is required"),
    "vocab.topics": ("security", "'vocab.topics' is a string (\"security\") where a list of strings is required"),
    "keywords": (None, "'keywords' is null (null) where an object is required"),
}


@pytest.mark.parametrize("field", list(MANIFEST_EDITS))
def test_a_manifest_value_of_the_wrong_type_without_a_sidecar_names_the_field(
    field: str, tmp_path: Path, bundled_index: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without a .sha256 to say the file changed, these failed deep in a query or at open with a traceback."""
    from ruledex.reader.holder import IndexHolder

    value, expected = MANIFEST_EDITS[field]
    data = bytearray(bundled_index.read_bytes())
    (length,) = struct.unpack_from("<Q", data, 16)
    manifest = json.loads(data[24 : 24 + length])
    parent, _, key = field.rpartition(".")
    (manifest[parent] if parent else manifest)[key] = value
    bad = tmp_path / "edited.ruledex"
    bad.write_bytes(bytes(relayout(data, length, json.dumps(manifest, sort_keys=True).encode())))
    assert not fmt.sidecar_path(bad).exists()
    for command in (["query", "Add a login endpoint", "--index", str(bad)], ["info", str(bad)], ["verify", str(bad)]):
        assert main(command) == 1, command
        err = capsys.readouterr().err
        assert f"{bad}: manifest field {expected}" in err and "rebuild the index" in err, err
    with pytest.raises(ArtifactError, match="manifest field"):
        IndexHolder(bad)  # what `ruledex serve` opens before it serves


def test_every_record_decodes_to_what_was_stored(index: Index) -> None:
    """Records come back equal to the builder's, arrays as tuples (frozen and hashable)."""
    for i in range(index.n_directives):
        record = index.directive(i)
        assert msgpack.unpackb(msgpack.packb(record.to_row()), raw=False, use_list=False) == tuple(record.to_row())
        assert isinstance(record.section, tuple) and all(isinstance(pair, tuple) for pair in record.examples)
        hash(record)
    rules = index.rules()
    assert all(isinstance(rule.sections, tuple) and all(isinstance(s, tuple) for s in rule.sections) for rule in rules)
    assert len({hash(rule) for rule in rules}) == index.n_rules


def test_record_rows_of_older_and_newer_builders_decode() -> None:
    """A row an older builder wrote lacks trailing fields (their defaults apply); a newer one's extra fields are left out."""
    full = DirectiveRecord("r#s-1", 0, ("S", "T"), "MUST", "Do it.", "why", ("not this",), (("task", "rule"),))
    row = unpack_row(msgpack.packb(full.to_row()))
    assert DirectiveRecord.from_row(row) == full
    older = DirectiveRecord.from_row(unpack_row(msgpack.packb(full.to_row()[:5])))
    assert older == DirectiveRecord("r#s-1", 0, ("S", "T"), "MUST", "Do it.")
    assert DirectiveRecord.from_row(unpack_row(msgpack.packb([*full.to_row(), "a field of a newer builder"]))) == full
    with pytest.raises(ValueError, match="a record row must be an array, got dict"):
        unpack_row(msgpack.packb({"id": "r#s-1"}))
