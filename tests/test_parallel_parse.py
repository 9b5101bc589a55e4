"""Large builds parse their files on worker processes; the result is the one a single process gives."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from ruledex.builder import workers
from ruledex.builder.build import build, parse_all
from ruledex.builder.source import read_sources
from ruledex.reader.errors import RuleErrors

from .conftest import REPO, rule_doc, write_rules


def _mixed_rules(folder: Path) -> Path:
    """Good and broken ruledex documents, foreign files with warnings, an unreadable file."""
    files = {
        f"team/r{i:02d}.md": rule_doc(f"## Rules\n\n- [MUST] Validate payload {i} at the boundary.", id=f"r{i:02d}")
        for i in range(12)
    }
    files["team/broken.md"] = rule_doc("## Rules\n\n- [MUST] Do it.", id="broken", layers="[9-Nowhere]")
    files[".cursor/rules/react.mdc"] = (
        "---\ndescription: React\nglobs: 42\n---\n- Use function components with hooks.\n"
    )
    files["AGENTS.md"] = "# Agents\n\n- Run the tests before you push.\n\n```python\nunclosed = True\n"
    write_rules(folder, files)
    (folder / "team" / "latin1.md").write_bytes(b"---\nid: x\n---\n\xe9\xe9\n")
    return folder


def test_parsing_on_worker_processes_gives_the_same_documents_warnings_and_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sources = read_sources(_mixed_rules(tmp_path / "rules"))
    with pytest.raises(RuleErrors) as one_process:
        parse_all(sources, jobs=1)
    monkeypatch.setattr(workers, "PARALLEL_MIN_CHARS", 0)  # this small set would otherwise stay in one process
    said: list[str] = []
    with pytest.raises(RuleErrors) as two_processes:
        parse_all(sources, jobs=2, progress=said.append)
    assert said == [f"parsing {len(sources) - 1} files on 2 processes"]  # the unreadable file is not parsed
    assert [str(e) for e in two_processes.value.errors] == [str(e) for e in one_process.value.errors]
    assert two_processes.value.warnings == one_process.value.warnings
    assert any("9-Nowhere" in str(e) for e in one_process.value.errors)
    assert any("latin1.md" in w and "UTF-8" in w for w in one_process.value.warnings)
    assert any("react.mdc" in w for w in one_process.value.warnings)

    (tmp_path / "rules" / "team" / "broken.md").unlink()
    (tmp_path / "rules" / "team" / "latin1.md").unlink()
    sources = read_sources(tmp_path / "rules")
    monkeypatch.setattr(workers, "PARALLEL_MIN_CHARS", 10**9)
    alone = parse_all(sources, jobs=2)
    monkeypatch.setattr(workers, "PARALLEL_MIN_CHARS", 0)
    assert parse_all(sources, jobs=2) == alone and len(alone[0]) == 14


def test_how_many_workers() -> None:
    big = workers.PARALLEL_MIN_CHARS
    assert workers.workers_for(big - 1, 500, 8) == 0  # too little text to pay for starting processes
    assert workers.workers_for(big, 500, 1) == 0
    assert workers.workers_for(big, 1, 8) == 0
    assert workers.workers_for(big, 3, 8) == 3
    assert workers.workers_for(big * 10, 500, 64) == workers.MAX_JOBS
    assert workers.workers_for(big, 500, None) == min(workers.default_jobs(), workers.MAX_JOBS, 500) or (
        workers.default_jobs() == 1
    )


def test_build_on_two_processes_writes_the_same_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = REPO / "rules"
    one = build(rules, tmp_path / "one.ruledex", jobs=1)
    monkeypatch.setattr(workers, "PARALLEL_MIN_CHARS", 0)
    two = build(rules, tmp_path / "two.ruledex", jobs=2)
    assert (tmp_path / "one.ruledex").read_bytes() == (tmp_path / "two.ruledex").read_bytes()
    assert two.warnings == one.warnings


@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_jobs_must_be_a_number_of_processes(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    from ruledex.reader.cli import main

    with pytest.raises(SystemExit) as exit_:
        main(["build", str(REPO / "rules"), "--out", "/nonexistent/x.ruledex", "--jobs", value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "--jobs" in err and ("must be at least 1" in err or "expected a whole number" in err)


def test_check_on_worker_processes_finds_the_same(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from ruledex.builder.check import check

    rules = _mixed_rules(tmp_path / "rules")
    alone = check(rules, jobs=1)
    monkeypatch.setattr(workers, "PARALLEL_MIN_CHARS", 0)
    assert check(rules, jobs=2) == alone
    assert {f.code for f in alone} >= {"schema", "file"}


class _BrokenPool:
    """A pool whose workers die, as when a process cannot be spawned."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        pass

    def map(self, *args: object, **kwargs: object) -> list[object]:
        from concurrent.futures.process import BrokenProcessPool

        raise BrokenProcessPool("a child process terminated abruptly")

    def shutdown(self, *args: object, **kwargs: object) -> None:
        pass


def test_failed_workers_leave_the_parsing_to_this_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rules = tmp_path / "rules"
    write_rules(
        rules,
        {f"r{i}.md": rule_doc(f"## Rules\n\n- [MUST] Check input {i} at the edge.", id=f"r{i}") for i in range(4)},
    )
    sources = read_sources(rules)
    expected = parse_all(sources, jobs=1)
    monkeypatch.setattr(workers, "PARALLEL_MIN_CHARS", 0)
    monkeypatch.setattr(workers, "ProcessPoolExecutor", _BrokenPool)
    said: list[str] = []
    assert parse_all(sources, jobs=2, progress=said.append) == expected
    assert said[-1].startswith("worker processes failed (BrokenProcessPool") and "parsing in this process" in said[-1]


def test_a_library_call_parses_in_one_process_unless_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Spawned workers import the caller's script again: only the CLI, or a caller passing jobs, starts them."""

    class NoPool:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("a worker pool was started")

    monkeypatch.setattr(workers, "PARALLEL_MIN_CHARS", 0)
    monkeypatch.setattr(workers, "ProcessPoolExecutor", NoPool)
    result = build(REPO / "rules", tmp_path / "x.ruledex")
    assert result.directives > 0


def test_an_incremental_build_of_foreign_files_parses_only_the_changed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reused files are not work for the workers: a few changed foreign files do not start a pool."""

    class NoPool:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("a worker pool was started")

    rules = tmp_path / "rules"
    files = {
        f".cursor/rules/r{i:02d}.mdc": f"---\ndescription: r{i}\n---\n- Check input {i} at the edge.\n"
        for i in range(6)
    }
    write_rules(rules, files)
    sources = read_sources(rules)
    parsed, _, _ = parse_all(sources, jobs=1)
    by_path = {doc.rule.path: doc for doc in parsed}
    cache = {(s.path, s.blob): by_path[s.path] for s in sources}
    (rules / ".cursor" / "rules" / "r00.mdc").write_text(files[".cursor/rules/r00.mdc"] + "- Log every retry.\n")
    sources = read_sources(rules)
    expected = parse_all(sources, cache, jobs=1)
    monkeypatch.setattr(workers, "PARALLEL_MIN_CHARS", 0)
    monkeypatch.setattr(workers, "ProcessPoolExecutor", NoPool)
    said: list[str] = []
    assert parse_all(sources, cache, jobs=2, progress=said.append) == expected
    assert expected[2] == 5 and said == []


def _when_workers_exist(group: int) -> None:
    """Wait (up to 10 s) until the build's process group holds its two workers besides itself."""
    import subprocess
    import time

    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        found = subprocess.run(["pgrep", "-g", str(group)], capture_output=True, text=True).stdout.split()
        if len(found) >= 3:
            return
        time.sleep(0.005)


def _signal_as_workers_start(
    tmp_path: Path, signum: int, *, group: bool, ignored: bool = False, later: float = 0.0
) -> tuple[int, str, Path, int]:
    """Build 3,000 directives on 2 workers and send ``signum`` as the workers start (``later`` seconds on).

    To the build's whole process group (a Ctrl-C in a terminal) or to the build alone. The build
    starts with Ctrl-C handled as in a terminal, or ``ignored`` as under ``nohup`` or in a shell's
    background job (set here, not inherited from whatever started the tests: a test run from a
    background job has it ignored). Returns the exit code, stderr, the index path and the group.
    Waits at most a minute for the build and 15 s for its stderr to close (a worker left running
    would hold it open: that fails here, after ending the group, rather than hanging the tests).
    """
    import os
    import signal
    import subprocess
    import threading
    import time

    from bench.synth import generate

    repo = generate(tmp_path / "rules", 3000).root  # about 0.6 MB: above the threshold for workers
    out = tmp_path / "x.ruledex"
    handler = "signal.SIG_IGN" if ignored else "signal.default_int_handler"
    launch = f"import runpy, signal, sys; signal.signal(signal.SIGINT, {handler}); sys.argv[0] = 'ruledex'; "
    launch += "runpy.run_module('ruledex.reader.cli', run_name='__main__')"
    with subprocess.Popen(
        [sys.executable, "-c", launch, "build", str(repo), "--out", str(out), "--jobs", "2"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    ) as proc:
        assert proc.stderr is not None
        stderr = proc.stderr
        seen: list[str] = []
        started = threading.Event()

        def read() -> None:
            for line in stderr:
                seen.append(line)
                if "files on 2 processes" in line:
                    started.set()  # as the workers start: the moment a Ctrl-C printed their tracebacks

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        assert started.wait(60), "".join(seen)
        _when_workers_exist(proc.pid)
        time.sleep(later)
        (os.killpg if group else os.kill)(proc.pid, signum)
        code = proc.wait(timeout=60)
        reader.join(15)
        outlived = reader.is_alive()
        if outlived:  # end what is left, or closing stderr under the blocked reader would hang
            os.killpg(proc.pid, signal.SIGKILL)
            reader.join(15)
        assert not outlived, "the build's stderr stayed open: a process it started outlived it"
    return code, "".join(seen), out, proc.pid


def _still_running(group: int, within: float) -> list[str]:
    """The states of the group's processes still running after up to ``within`` seconds (zombies aside:
    an exited helper can stay one where PID 1 does not reap)."""
    import subprocess
    import time

    deadline = time.monotonic() + within
    while True:
        states = subprocess.run(["ps", "-o", "stat=", "-g", str(group)], capture_output=True, text=True).stdout
        running = [state for state in states.split() if not state.startswith("Z")]
        if not running or time.monotonic() > deadline:
            return running
        time.sleep(0.1)


@pytest.mark.skipif(sys.platform == "win32", reason="sends SIGINT to a process group (POSIX)")
def test_ctrl_c_during_a_parallel_build_stops_it_quietly(tmp_path: Path) -> None:
    """Exit 130, no worker tracebacks (workers start with Ctrl-C held back), no process or file left."""
    import signal

    code, stderr, out, group = _signal_as_workers_start(tmp_path, signal.SIGINT, group=True)
    assert code == 130, stderr
    assert "Traceback" not in stderr and not out.exists()
    assert _still_running(group, within=0) == []


@pytest.mark.skipif(sys.platform == "win32", reason="sends SIGINT to a process group (POSIX)")
def test_a_build_that_ignores_ctrl_c_keeps_its_workers(tmp_path: Path) -> None:
    """Under nohup or in a background job the build ignores Ctrl-C, and so do its workers: it finishes on them."""
    import signal

    from ruledex.reader.index import Index

    code, stderr, out, _ = _signal_as_workers_start(tmp_path, signal.SIGINT, group=True, ignored=True)
    assert code == 0, stderr
    assert "worker processes failed" not in stderr and "Traceback" not in stderr
    with Index(out) as index:
        assert index.n_directives == 3000


@pytest.mark.skipif(sys.platform == "win32", reason="kills the build with SIGKILL (POSIX)")
def test_workers_end_when_the_build_is_killed_outright(tmp_path: Path) -> None:
    """kill -9 (or the OOM killer) on the build: its workers and their helper exit too, none left asleep."""
    import signal

    # half a second on, the workers are parsing or waiting for their next files
    code, _, out, group = _signal_as_workers_start(tmp_path, signal.SIGKILL, group=False, later=0.5)
    assert code == -signal.SIGKILL
    assert _still_running(group, within=10) == [], "worker processes outlived the killed build"
    assert not out.exists() and [p.name for p in out.parent.iterdir()] == ["rules"]  # nothing half-written
