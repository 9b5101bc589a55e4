"""Per-project pins: config parsing and writing, resolution, and downloads from a loopback server.

The HTTP server runs on 127.0.0.1 in a thread, serves bytes the test chooses, answers ``Range``
with 206, returns 404 for unknown paths, and can cut the connection or stall mid-body.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import socket
import sys
import threading
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from ruledex.reader.errors import ArtifactError, ConfigError
from ruledex.reader.format import file_sha256
from ruledex.reader.pin import (
    Pin,
    cache_dir,
    cached_path,
    default_config,
    find_config,
    find_pinned_index,
    format_pin,
    pin_source,
    read_pin,
    resolve,
    resolve_config,
    write_pin,
)

BODY = bytes(range(256)) * 1024  # 256 KiB: several read blocks, so a cut lands mid-download
BODY_SHA = hashlib.sha256(BODY).hexdigest()


# --- the loopback server --------------------------------------------------------------------------


@dataclass
class Asset:
    body: bytes
    ranges: bool = True  # answer Range with 206; False: ignore it and send the whole body (200)
    cut_after: int | None = None  # send this many body bytes, then drop the connection (once)
    stall_after: int | None = None  # send this many body bytes, then wait until the test ends


@dataclass
class Assets:
    port: int = 0
    files: dict[str, Asset] = field(default_factory=dict)
    requests: list[tuple[str, str | None]] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def serve(self, path: str, body: bytes, **options: object) -> str:
        self.files[path] = Asset(body, **options)  # type: ignore[arg-type]
        return self.url(path)


class _Server(ThreadingHTTPServer):
    assets: Assets

    def handle_error(self, request: object, client_address: object) -> None:
        """Quiet: a client that went away (after a stall or a cut) is expected here."""


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        """No access log on stderr."""

    def do_GET(self) -> None:
        assets = self.server.assets
        wanted = self.headers.get("Range")
        assets.requests.append((self.path, wanted))
        asset = assets.files.get(self.path)
        if asset is None:
            self.send_error(404, "Not Found")
            return
        body, start = asset.body, 0
        if wanted and asset.ranges:
            start = int(re.fullmatch(r"bytes=(\d+)-", wanted).group(1))  # type: ignore[union-attr]
            if start >= len(body):
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{len(body)}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(body) - 1}/{len(body)}")
        else:
            self.send_response(200)
        rest = body[start:]
        self.send_header("Content-Length", str(len(rest)))
        self.end_headers()
        if asset.cut_after is not None:
            self.wfile.write(rest[: asset.cut_after])
            asset.cut_after = None
            self.connection.shutdown(socket.SHUT_WR)  # a clean FIN: the client sees a short body
            return
        if asset.stall_after is not None:
            self.wfile.write(rest[: asset.stall_after])
            assets.release.wait(10)
            return
        self.wfile.write(rest)


@pytest.fixture
def server() -> Iterator[Assets]:
    assets = Assets()
    httpd = _Server(("127.0.0.1", 0), _Handler)
    httpd.assets = assets
    assets.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield assets
    finally:
        assets.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("RULEDEX_CACHE", str(folder))
    return folder


def cache_files(folder: Path) -> list[str]:
    """What a download left behind, ignoring the empty per-hash lock files."""
    return sorted(p.name for p in folder.glob("*") if not p.name.endswith(".lock")) if folder.exists() else []


# --- downloads ------------------------------------------------------------------------------------


def test_url_pin_downloads_once_then_resolves_from_the_cache(server: Assets, cache: Path, tmp_path: Path) -> None:
    pin = Pin(server.serve("/v1/rules.ruledex", BODY), BODY_SHA)
    path = resolve(pin, tmp_path)
    assert path == cache / f"{BODY_SHA}.ruledex" == cached_path(BODY_SHA)
    assert path.read_bytes() == BODY
    assert cache_files(cache) == [f"{BODY_SHA}.ruledex"]
    assert resolve(pin, tmp_path) == path
    assert resolve(pin, tmp_path, download=False) == path
    assert len(server.requests) == 1  # the second and third resolve did not touch the server


def test_http_404_is_a_config_error_naming_the_url(server: Assets, cache: Path, tmp_path: Path) -> None:
    url = server.url("/v1/missing.ruledex")
    with pytest.raises(ConfigError, match=r"HTTP 404") as caught:
        resolve(Pin(url, BODY_SHA), tmp_path, origin="app/ruledex.toml")
    assert url in str(caught.value) and str(caught.value).endswith("(pinned by app/ruledex.toml)")
    assert cache_files(cache) == []


def test_wrong_hash_is_refused_naming_both_hashes_and_nothing_is_cached(
    server: Assets, cache: Path, tmp_path: Path
) -> None:
    pinned = hashlib.sha256(b"the release we pinned").hexdigest()
    url = server.serve("/v1/rules.ruledex", BODY)
    with pytest.raises(ArtifactError) as caught:
        resolve(Pin(url, pinned), tmp_path, origin="proj/ruledex.toml")
    message = str(caught.value)
    assert pinned in message and BODY_SHA in message
    assert "proj/ruledex.toml" in message and f"ruledex pin {url}" in message
    assert cache_files(cache) == []


def test_connection_cut_mid_download_leaves_no_index_and_the_next_resolve_resumes(
    server: Assets, cache: Path, tmp_path: Path
) -> None:
    pin = Pin(server.serve("/v1/rules.ruledex", BODY, cut_after=100_000), BODY_SHA)
    with pytest.raises(ConfigError, match=r"stopped after 100,000 of 262,144 bytes.*run the command again"):
        resolve(pin, tmp_path)
    assert cache_files(cache) == [f"{BODY_SHA}.ruledex.part"]
    assert (cache / f"{BODY_SHA}.ruledex.part").stat().st_size == 100_000
    path = resolve(pin, tmp_path)
    assert path.read_bytes() == BODY
    assert server.requests[-1] == ("/v1/rules.ruledex", "bytes=100000-")
    assert cache_files(cache) == [f"{BODY_SHA}.ruledex"]


def test_a_server_that_ignores_range_gets_a_full_restart(server: Assets, cache: Path, tmp_path: Path) -> None:
    pin = Pin(server.serve("/v1/rules.ruledex", BODY, cut_after=70_000, ranges=False), BODY_SHA)
    with pytest.raises(ConfigError, match="stopped after 70,000"):
        resolve(pin, tmp_path)
    assert resolve(pin, tmp_path).read_bytes() == BODY
    assert cache_files(cache) == [f"{BODY_SHA}.ruledex"]


def test_a_partial_from_an_older_asset_is_discarded_after_one_clean_retry(
    server: Assets, cache: Path, tmp_path: Path
) -> None:
    cache.mkdir()
    (cache / f"{BODY_SHA}.ruledex.part").write_bytes(b"x" * 5000)  # not a prefix of BODY
    pin = Pin(server.serve("/v1/rules.ruledex", BODY), BODY_SHA)
    assert resolve(pin, tmp_path).read_bytes() == BODY
    assert [r for _, r in server.requests] == ["bytes=5000-", None]


def test_a_complete_partial_is_renamed_without_a_download(server: Assets, cache: Path, tmp_path: Path) -> None:
    cache.mkdir()
    (cache / f"{BODY_SHA}.ruledex.part").write_bytes(BODY)  # finished, then stopped before the rename
    pin = Pin(server.serve("/v1/rules.ruledex", BODY), BODY_SHA)
    assert resolve(pin, tmp_path).read_bytes() == BODY
    assert server.requests == []


def test_a_partial_longer_than_the_asset_restarts_after_416(server: Assets, cache: Path, tmp_path: Path) -> None:
    cache.mkdir()
    (cache / f"{BODY_SHA}.ruledex.part").write_bytes(BODY + b"junk")
    pin = Pin(server.serve("/v1/rules.ruledex", BODY), BODY_SHA)
    assert resolve(pin, tmp_path).read_bytes() == BODY
    assert [r for _, r in server.requests] == [f"bytes={len(BODY) + 4}-", None]


def test_a_stalled_download_times_out_with_the_cause(server: Assets, cache: Path, tmp_path: Path) -> None:
    pin = Pin(server.serve("/v1/rules.ruledex", BODY, stall_after=1000), BODY_SHA)
    with pytest.raises(ConfigError, match=r"stopped after 1,000 of 262,144 bytes \(TimeoutError"):
        resolve(pin, tmp_path, timeout=0.3)
    assert not cached_path(BODY_SHA).exists()
    assert (cache / f"{BODY_SHA}.ruledex.part").stat().st_size == 1000  # kept for the resume


def test_connection_refused_names_the_url_and_cause(cache: Path, tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on once this closes
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/rules.ruledex"
    with pytest.raises(ConfigError, match=r"cannot download http://127\.0\.0\.1:\d+/rules\.ruledex: .*refused"):
        resolve(Pin(url, BODY_SHA), tmp_path)


def test_a_corrupted_cache_file_is_downloaded_again_or_refused_offline(
    server: Assets, cache: Path, tmp_path: Path
) -> None:
    pin = Pin(server.serve("/v1/rules.ruledex", BODY), BODY_SHA)
    path = resolve(pin, tmp_path)
    path.write_bytes(b"tampered")
    tampered = hashlib.sha256(b"tampered").hexdigest()
    with pytest.raises(ArtifactError, match=f"expected sha256 {BODY_SHA} .* has {tampered}"):
        resolve(pin, tmp_path, download=False)
    assert resolve(pin, tmp_path).read_bytes() == BODY
    assert len(server.requests) == 2


def test_offline_resolve_of_an_uncached_url_says_what_to_do(cache: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"not in the cache .* run once with network access"):
        resolve(Pin("https://example.invalid/r.ruledex", BODY_SHA), tmp_path, download=False)


def test_an_unusable_cache_folder_is_a_config_error_naming_the_variable(
    server: Assets, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setenv("RULEDEX_CACHE", str(tmp_path / "a-file" / "cache"))
    url = server.serve("/v1/rules.ruledex", BODY)
    with pytest.raises(ConfigError, match=r"cannot write the ruledex cache .* set RULEDEX_CACHE to a writable folder"):
        resolve(Pin(url, BODY_SHA), tmp_path)
    with pytest.raises(ConfigError, match=r"cannot write the ruledex cache"):
        pin_source(url, tmp_path / "ruledex.toml")
    assert server.requests == []


def test_concurrent_resolves_download_once(server: Assets, cache: Path, tmp_path: Path) -> None:
    pin = Pin(server.serve("/v1/rules.ruledex", BODY * 8), hashlib.sha256(BODY * 8).hexdigest())
    results: list[object] = []

    def worker() -> None:
        try:
            results.append(resolve(pin, tmp_path))
        except Exception as exc:  # pragma: no cover - reported by the assert below
            results.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert results == [cached_path(pin.sha256)] * 3
    assert len(server.requests) == 1


# --- local pins and pinning -----------------------------------------------------------------------


def test_local_pin_is_relative_to_the_config_folder(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path / "project"
    (project / "vendor").mkdir(parents=True)
    (project / "vendor" / "rules.ruledex").write_bytes(BODY)
    (project / "ruledex.toml").write_text(f'[index]\nsource = "vendor/rules.ruledex"\nsha256 = "{BODY_SHA}"\n')
    monkeypatch.chdir(tmp_path)  # not the project folder: the path is relative to the config
    assert resolve_config(project / "ruledex.toml") == project / "vendor" / "rules.ruledex"
    (project / "vendor" / "rules.ruledex").write_bytes(BODY + b"rebuilt")
    with pytest.raises(ArtifactError) as caught:
        resolve_config(project / "ruledex.toml")
    message = str(caught.value)
    assert BODY_SHA in message and hashlib.sha256(BODY + b"rebuilt").hexdigest() in message
    assert str(project / "ruledex.toml") in message
    hint = message.split("re-pin with `ruledex pin ", 1)[1].split("`", 1)[0]
    assert Path(hint).is_file(), "the hint names the file as this folder sees it, not relative to the config"
    assert not Path(hint).is_absolute(), "typed as given, `ruledex pin` stores it relative to the config"
    assert Path(hint).resolve() == (project / "vendor" / "rules.ruledex").resolve()
    assert cache_files(cache) == []  # local pins never copy into the cache


def test_a_missing_local_index_names_the_config(tmp_path: Path) -> None:
    with pytest.raises(ArtifactError, match=r"no such file, pinned by ruledex\.toml"):
        resolve(Pin("gone.ruledex", BODY_SHA), tmp_path)


def test_pin_a_local_index_then_query_resolution_finds_it(
    bundled_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = tmp_path.resolve() / "project"  # resolved: the cwd is (macOS: /var -> /private/var)
    (project / "dist").mkdir(parents=True)
    shutil.copy(bundled_index, project / "dist" / "rules.ruledex")
    shutil.copy(bundled_index.with_name(bundled_index.name + ".sha256"), project / "dist" / "rules.ruledex.sha256")
    (project / "src" / "app").mkdir(parents=True)
    monkeypatch.chdir(project / "src")
    config = default_config(Path.cwd())
    assert config == project / "src" / "ruledex.toml"  # no config yet: the current folder
    config = project / "ruledex.toml"
    pin = pin_source("../dist/rules.ruledex", config)
    assert pin == Pin("dist/rules.ruledex", file_sha256(bundled_index), pin.name)
    assert pin.name  # "<index name> <version>" from the manifest
    write_pin(config, pin)
    assert read_pin(config) == pin
    assert default_config(project / "src" / "app") == config
    assert find_pinned_index(project / "src" / "app") == project / "dist" / "rules.ruledex"


def test_pin_an_absolute_path_keeps_it_absolute(bundled_index: Path, tmp_path: Path) -> None:
    pin = pin_source(str(bundled_index), tmp_path / "ruledex.toml")
    assert pin.source == bundled_index.as_posix()


def test_pin_refuses_a_file_that_is_not_an_index(tmp_path: Path) -> None:
    (tmp_path / "notes.ruledex").write_bytes(b"just some bytes, not an index")
    with pytest.raises(ArtifactError, match="not a ruledex index"):
        pin_source(str(tmp_path / "notes.ruledex"), tmp_path / "ruledex.toml")


def test_pin_a_url_downloads_into_the_cache_so_resolve_needs_no_network(
    bundled_index: Path, server: Assets, cache: Path, tmp_path: Path
) -> None:
    url = server.serve("/releases/v1/rules.ruledex", bundled_index.read_bytes())
    pin = pin_source(url, tmp_path / "ruledex.toml")
    sha = file_sha256(bundled_index)
    assert (pin.source, pin.sha256) == (url, sha)
    assert cache_files(cache) == [f"{sha}.ruledex"]
    assert resolve(pin, tmp_path) == cache / f"{sha}.ruledex"
    assert [path for path, _ in server.requests] == ["/releases/v1/rules.ruledex", "/releases/v1/rules.ruledex.sha256"]
    assert not pin.checked  # no checksum published beside it: the sha256 is the download's own


def test_pin_a_url_checks_the_sha256_published_beside_it(
    bundled_index: Path, server: Assets, cache: Path, tmp_path: Path
) -> None:
    sha = file_sha256(bundled_index)
    url = server.serve("/releases/v1/rules.ruledex", bundled_index.read_bytes())
    server.serve("/releases/v1/rules.ruledex.sha256", f"{sha.upper()}  rules.ruledex\n".encode())
    assert pin_source(url, tmp_path / "ruledex.toml").checked
    server.serve("/releases/v1/rules.ruledex.sha256", f"{'0' * 64}  rules.ruledex\n".encode())
    (cache / f"{sha}.ruledex").unlink()
    with pytest.raises(ArtifactError) as e:
        pin_source(url, tmp_path / "ruledex.toml")
    message = str(e.value)
    assert f"the download has sha256 {sha} but {url}.sha256 says {'0' * 64}" in message and "republish" in message
    assert cache_files(cache) == []  # nothing pinned, nothing cached
    server.serve("/releases/v1/rules.ruledex.sha256", b"<!doctype html><title>Sign in to the proxy</title>")
    with pytest.raises(ConfigError, match=r"rules.ruledex.sha256 does not hold a sha256 \(it begins '<!doctype"):
        pin_source(url, tmp_path / "ruledex.toml")
    assert cache_files(cache) == []


def test_pin_a_url_that_is_not_an_index_leaves_nothing(server: Assets, cache: Path, tmp_path: Path) -> None:
    url = server.serve("/releases/v1/page.html", b"<html>sign in to continue</html>")
    with pytest.raises(ArtifactError, match=r"the download is not a usable ruledex index: not a ruledex index") as e:
        pin_source(url, tmp_path / "ruledex.toml")
    assert url in str(e.value)
    assert cache_files(cache) == []


def test_pin_refuses_a_plain_http_url_off_loopback(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="only https:// URLs"):
        pin_source("http://example.com/rules.ruledex", tmp_path / "ruledex.toml")


# --- config files ---------------------------------------------------------------------------------


def test_pyproject_tool_ruledex_is_read_but_never_written(tmp_path: Path) -> None:
    pyproject = tmp_path.resolve() / "pyproject.toml"  # find_config answers with real paths
    original = (
        '[project]\nname = "app"  # keep me\n\n'
        f'[tool.ruledex.index]\nsource = "rules.ruledex"\nsha256 = "{BODY_SHA}"\nname = "acme rules 1.2"\n'
    )
    pyproject.write_text(original)
    assert find_config(tmp_path) == pyproject
    assert read_pin(pyproject) == Pin("rules.ruledex", BODY_SHA, "acme rules 1.2")
    new = Pin("other.ruledex", "a" * 64)
    with pytest.raises(ConfigError, match=r"does not edit pyproject.toml") as caught:
        write_pin(pyproject, new)
    assert format_pin(new, "[tool.ruledex.index]") in str(caught.value)  # the lines to paste
    assert "--config" in str(caught.value) and "ruledex.toml" in str(caught.value)
    assert pyproject.read_text() == original


def test_find_config_walks_up_and_prefers_ruledex_toml(tmp_path: Path) -> None:
    root = tmp_path.resolve() / "repo"
    deep = root / "pkg" / "src" / "mod"
    deep.mkdir(parents=True)
    (root / "ruledex.toml").write_text(f'[index]\nsource = "a.ruledex"\nsha256 = "{BODY_SHA}"\n')
    (root / "pkg" / "pyproject.toml").write_text('[project]\nname = "pkg"\n')  # no [tool.ruledex]: passed over
    (root / "pkg" / "src" / "pyproject.toml").write_text("this is [not toml")  # never parsed: no "ruledex" in it
    assert find_config(deep) == root / "ruledex.toml"
    (root / "pkg" / "pyproject.toml").write_text(f'[tool.ruledex.index]\nsource = "b.ruledex"\nsha256 = "{BODY_SHA}"\n')
    assert find_config(deep) == root / "pkg" / "pyproject.toml"  # nearest wins
    (root / "pkg" / "ruledex.toml").write_text(f'[index]\nsource = "c.ruledex"\nsha256 = "{BODY_SHA}"\n')
    assert find_config(deep) == root / "pkg" / "ruledex.toml"  # same folder: ruledex.toml wins


def test_find_config_finds_nothing_outside_a_pinned_project(tmp_path: Path) -> None:
    assert find_config(tmp_path) is None
    assert find_pinned_index(tmp_path) is None


GOOD = f'source = "rules.ruledex"\nsha256 = "{BODY_SHA}"\n'


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[index\n", r"not valid TOML"),
        ('[project]\nname = "x"\n', r"no \[index\] table; add one with `ruledex pin SOURCE`"),
        ('[index]\nsource = "rules.ruledex"\n', r"\[index\] sha256 is missing, not 64 lowercase hex"),
        (GOOD.replace(BODY_SHA, BODY_SHA.upper()), r"\[index\] sha256 is '[0-9A-F]{64}', not 64 lowercase hex"),
        (GOOD.replace(BODY_SHA, BODY_SHA[:40]), r"sha256 is '[0-9a-f]{40}', not 64 lowercase hex digits; copy it"),
        (f'sha256 = "{BODY_SHA}"\n', r"\[index\] source is missing or empty"),
        (
            f'source = 3\nsha256 = "{BODY_SHA}"\n',
            r'\[index\] source must be a string, got int; quote it: source = "..."',
        ),
        (GOOD + 'sha = "x"\n', r"\[index\] has unknown key\(s\) sha; allowed: source, sha256, name"),
        (GOOD.replace("rules.ruledex", "ftp://example.com/r.ruledex"), r"only https:// URLs are downloaded"),
        (GOOD.replace("rules.ruledex", "http://example.com/r.ruledex"), r"http:// only from 127.0.0.1"),
    ],
)
def test_bad_config_values_name_file_key_and_fix(tmp_path: Path, text: str, expected: str) -> None:
    config = tmp_path / "ruledex.toml"
    config.write_text(text if text.startswith("[") else "[index]\n" + text)
    with pytest.raises(ConfigError, match=expected) as caught:
        read_pin(config)
    assert str(config) in str(caught.value)


def test_write_pin_escapes_and_round_trips_through_tomllib(tmp_path: Path) -> None:
    config = tmp_path / "ruledex.toml"
    for source in ["C:\\rules\\v1.ruledex", 'odd "quoted" name.ruledex', "règles/índice.ruledex", "tab\there\x7fdel"]:
        pin = Pin(source, BODY_SHA, 'acme "rules" v1\n')
        write_pin(config, pin)
        assert read_pin(config) == pin
        assert tomllib.loads(config.read_text(encoding="utf-8"))["index"]["source"] == source
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ruledex.toml"]  # atomic write left no temp file


def test_write_pin_replaces_an_old_pin_but_refuses_to_drop_other_settings(tmp_path: Path) -> None:
    config = tmp_path / "ruledex.toml"
    config.write_text(f'[index]\nsource = "old.ruledex"\nsha256 = "{"b" * 64}"\n')
    write_pin(config, Pin("new.ruledex", BODY_SHA))
    assert read_pin(config) == Pin("new.ruledex", BODY_SHA)
    config.write_text(f'[index]\nsource = "old.ruledex"\nsha256 = "{"b" * 64}"\n\n[serve]\nhttp = 8765\n')
    with pytest.raises(ConfigError, match=r"holds serve besides the pin"):
        write_pin(config, Pin("new.ruledex", BODY_SHA))
    assert "[serve]" in config.read_text()


def test_cache_dir_follows_the_platform(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    home = tmp_path / "home"
    monkeypatch.setattr(Path, "home", classmethod(lambda cls: home))
    for var in ("RULEDEX_CACHE", "XDG_CACHE_HOME", "LOCALAPPDATA"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    assert cache_dir() == home / ".cache" / "ruledex"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert cache_dir() == home / ".cache" / "ruledex"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "ruledex"
    monkeypatch.setattr(sys, "platform", "darwin")
    assert cache_dir() == home / "Library" / "Caches" / "ruledex"
    monkeypatch.setattr(sys, "platform", "win32")
    assert cache_dir() == home / "AppData" / "Local" / "ruledex" / "Cache"
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "local"))
    assert cache_dir() == tmp_path / "local" / "ruledex" / "Cache"
    monkeypatch.setenv("RULEDEX_CACHE", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"


# --- the command line -----------------------------------------------------------------------------


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from ruledex.reader.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_pin_then_query_uses_the_pin_before_dist(
    bundled_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "vendor").mkdir()
    (tmp_path / "dist").mkdir()
    shutil.copy(bundled_index, tmp_path / "vendor" / "rules.ruledex")
    (tmp_path / "dist" / "newer.ruledex").write_bytes(b"not an index: used only if the pin is ignored")
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(["pin", "vendor/rules.ruledex"], capsys)
    assert code == 0 and out.startswith("pinned vendor/rules.ruledex") and file_sha256(bundled_index) in out
    assert read_pin(tmp_path / "ruledex.toml").source == "vendor/rules.ruledex"
    code, out, _ = run_cli(["query", "Add user registration API endpoint"], capsys)
    assert code == 0 and "security#input-validation-1" in out
    code, out, _ = run_cli(["info"], capsys)
    assert code == 0 and "vendor" in out
    with (tmp_path / "vendor" / "rules.ruledex").open("ab") as fh:
        fh.write(b"\0")
    code, _, err = run_cli(["query", "Add user registration API endpoint"], capsys)
    assert code == 1 and file_sha256(bundled_index) in err and file_sha256(tmp_path / "vendor" / "rules.ruledex") in err
    code, out, _ = run_cli(["query", "Add user registration API endpoint", "--index", str(bundled_index)], capsys)
    assert code == 0  # --index still wins over the pin


def test_cli_pin_a_url_then_query_offline_from_the_cache(
    bundled_index: Path,
    server: Assets,
    cache: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url = server.serve("/releases/download/v1/rules.ruledex", bundled_index.read_bytes())
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(["pin", url], capsys)
    assert code == 0 and f"pinned {url}" in out
    assert f"no {url}.sha256 is published beside it: the sha256 is the download's own" in out
    server.serve("/releases/download/v1/rules.ruledex.sha256", f"{file_sha256(bundled_index)}  x\n".encode())
    code, out, _ = run_cli(["pin", url], capsys)
    assert code == 0 and f"the download matches the {url}.sha256 published beside it" in out
    server.files.clear()  # from now on the server answers 404: the cache must be enough
    code, out, _ = run_cli(["query", "Add user registration API endpoint"], capsys)
    assert code == 0 and "security#input-validation-1" in out
    assert len(server.requests) == 4  # the asset and its checksum, for each pin; none for the query


def test_cli_pin_into_pyproject_prints_the_lines_to_paste(
    bundled_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.ruledex.index]\nsource = "x.ruledex"\nsha256 = "' + "a" * 64 + '"\n'
    )
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(["pin", str(bundled_index)], capsys)
    assert code == 1 and "[tool.ruledex.index]" in err and file_sha256(bundled_index) in err
    assert "replacing its [tool.ruledex.index] table if it has one" in err, "pasted beside it, the TOML breaks"


def test_a_config_that_is_a_folder_or_not_utf8_is_named_not_a_traceback(
    bundled_index: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every command reads the pin config walking up, so one bad byte there must say which file it is."""
    (tmp_path / "folder").mkdir()
    code, _, err = run_cli(["pin", str(bundled_index), "--config", str(tmp_path / "folder")], capsys)
    assert code == 1 and f"{tmp_path / 'folder'}: is a folder; --config takes the file to write" in err
    (tmp_path / "ruledex.toml").write_bytes(b'[index]\nsource = "r\xe9gles.ruledex"\n')
    monkeypatch.chdir(tmp_path)
    for argv in (["query", "Add a login endpoint"], ["pin", str(bundled_index)]):
        code, _, err = run_cli(argv, capsys)
        assert code == 1 and f"{tmp_path / 'ruledex.toml'}: is not UTF-8 (byte 19); re-save it as UTF-8" in err
    (tmp_path / "ruledex.toml").unlink()
    (tmp_path / "pyproject.toml").write_bytes(b'[tool.ruledex.index]\nsource = "r\xe9gles.ruledex"\n')
    code, _, err = run_cli(["query", "Add a login endpoint"], capsys)
    assert code == 1 and f"{tmp_path / 'pyproject.toml'}: is not UTF-8" in err
