"""Measuring helpers: latency summaries, ratios, process memory from /proc, child processes, timed spawns,
and the servers they measure (a free port, waiting for /healthz, stopping).

Memory figures come from Linux's ``/proc/PID/status``, ``smaps_rollup`` and ``smaps`` (no psutil
needed); on other systems they are reported as unavailable rather than guessed.
"""

from __future__ import annotations

import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

MB = 1024 * 1024


def summary(samples_ms: Sequence[float]) -> dict[str, Any]:
    """n, p50, p95, p99, mean, min and max of latencies in milliseconds (rounded to µs)."""
    if not samples_ms:
        return {"n": 0}
    a = np.asarray(samples_ms, dtype=np.float64)
    p50, p95, p99 = np.percentile(a, [50, 95, 99])
    return {
        "n": len(a),
        "p50": round(float(p50), 3),
        "p95": round(float(p95), 3),
        "p99": round(float(p99), 3),
        "mean": round(float(a.mean()), 3),
        "min": round(float(a.min()), 3),
        "max": round(float(a.max()), 3),
    }


def median(values: Sequence[float]) -> float | None:
    """The median, or None for no values."""
    return round(float(statistics.median(values)), 3) if values else None


def ratio(a: float | None, b: float | None) -> float | None:
    """``a / b`` rounded, or None when either side is missing or ``b`` is zero."""
    if a is None or b is None or b == 0:
        return None
    return round(a / b, 3)


def _kib_fields(path: Path, wanted: tuple[str, ...]) -> dict[str, float]:
    """``Name:   1234 kB`` lines of a /proc file -> {Name: MiB}."""
    out: dict[str, float] = {}
    for line in path.read_text().splitlines():
        name, _, rest = line.partition(":")
        if name in wanted:
            parts = rest.split()
            if parts and parts[0].isdigit():
                out[name] = round(int(parts[0]) / 1024, 2)
    return out


def process_memory(pid: int, mapped_file: Path | None = None) -> dict[str, Any]:
    """Peak and current RSS of a process, split into anonymous and file-backed, in MiB.

    ``mapped_file``: also report how much of that file's mapping is resident in this process
    (``Rss`` of its mappings in ``smaps``) beside the file's size: what mmap actually paged in.
    """
    proc = Path(f"/proc/{pid}")
    if not proc.exists():
        return {"available": False, "why": f"no /proc/{pid} (not Linux, or the process ended)"}
    status = _kib_fields(proc / "status", ("VmHWM", "VmRSS", "RssAnon", "RssFile", "RssShmem", "Threads"))
    threads = next(
        (int(line.split()[1]) for line in (proc / "status").read_text().splitlines() if line.startswith("Threads:")), 0
    )
    rollup = _kib_fields(proc / "smaps_rollup", ("Rss", "Pss", "Private_Clean", "Private_Dirty", "Anonymous"))
    out: dict[str, Any] = {
        "available": True,
        "peak_rss_mb": status.get("VmHWM"),
        "rss_mb": status.get("VmRSS"),
        "anon_mb": status.get("RssAnon"),
        "file_mb": status.get("RssFile"),
        "private_mb": round(rollup.get("Private_Clean", 0) + rollup.get("Private_Dirty", 0), 2),
        "threads": threads,
    }
    if mapped_file is not None:
        out.update(mapping_residency(pid, mapped_file))
    return out


def mapping_residency(pid: int, path: Path) -> dict[str, Any]:
    """Resident MiB of ``path``'s mappings in process ``pid`` and the file's size (from smaps)."""
    target = str(Path(path).resolve())
    resident_kib = 0
    inside = False
    for line in Path(f"/proc/{pid}/smaps").read_text().splitlines():
        first = line.split(maxsplit=5)
        if len(first) >= 5 and "-" in first[0] and ":" in first[3]:  # a mapping header line
            inside = len(first) == 6 and first[5] == target
        elif inside and line.startswith("Rss:"):
            resident_kib += int(line.split()[1])
    size = Path(path).stat().st_size
    return {
        "artifact_mb": round(size / MB, 2),
        "artifact_resident_mb": round(resident_kib / 1024, 2),
        "artifact_resident_share": round(resident_kib * 1024 / size, 4) if size else None,
    }


def children(parent: int | None = None) -> list[int]:
    """Pids whose parent is ``parent`` (default: this process), from /proc (Linux)."""
    parent = os.getpid() if parent is None else parent
    found: list[int] = []
    if not Path("/proc").is_dir():
        return found
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2 :].split()
        if len(fields) > 1 and int(fields[1]) == parent:
            found.append(int(entry.name))
    return sorted(found)


def cmdline(pid: int) -> list[str]:
    """A process' argv (empty when it is gone)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return []


def timed_run(argv: list[str], *, env: dict[str, str] | None = None, timeout: float = 120) -> tuple[float, str]:
    """Run a process to completion: (wall ms from spawn to exit, stderr). Raises on failure."""
    started = time.perf_counter()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    try:
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise
    elapsed = (time.perf_counter() - started) * 1000
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} ... exited {proc.returncode}: {err.decode()[-500:]}")
    return elapsed, err.decode()


def time_to_marker(argv: list[str], marker: str = "ready", *, timeout: float = 120) -> float:
    """Ms from spawning ``argv`` until it prints a line starting with ``marker`` (its exit is not counted)."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith(marker):
                return (time.perf_counter() - started) * 1000
        raise RuntimeError(f"{' '.join(argv[:3])} ... exited without printing {marker!r}")
    finally:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def run_with_rusage(argv: list[str], *, timeout: float = 1800) -> tuple[float, float | None, str, str]:
    """Run a process, reaped with ``wait4`` where available: (wall s, its peak RSS MiB, stdout, stderr)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        peak: float | None = None
        if hasattr(os, "wait4"):
            deadline = started + timeout
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    proc.returncode = os.waitstatus_to_exitcode(status)
                    peak = round(usage.ru_maxrss / 1024, 1)  # KiB on Linux
                    break
                if time.perf_counter() > deadline:
                    proc.kill()
                    proc.wait()
                    raise subprocess.TimeoutExpired(argv, timeout)
                time.sleep(0.01)
        else:  # pragma: no cover - not Linux/macOS
            proc.wait(timeout=timeout)
        elapsed = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} ... exited {proc.returncode}: {stderr[-800:]}")
    return elapsed, peak, stdout, stderr


def machine() -> dict[str, Any]:
    """What the numbers were taken on: CPU, cores, memory, load, versions."""
    cpu = ""
    try:
        cpu = next(
            (
                line.split(":", 1)[1].strip()
                for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")
            ),
            "",
        )
        mem = _kib_fields(Path("/proc/meminfo"), ("MemTotal",)).get("MemTotal")
    except OSError:
        mem = None
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "cpu": cpu or platform.processor(),
        "cores": os.cpu_count(),
        "memory_gb": round(mem / 1024, 1) if mem else None,
        "load_average": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
        "numpy": np.__version__,
        "blas_threads_env": {
            k: os.environ.get(k) for k in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
        },
    }
    try:
        import sqlite3

        info["sqlite"] = sqlite3.sqlite_version
    except ImportError:  # pragma: no cover
        pass
    from importlib.metadata import PackageNotFoundError, version

    for package in ("ruledex", "mcp", "tokenizers", "bm25s"):
        try:
            info[package] = version(package)
        except PackageNotFoundError:
            info[package] = None
    return info


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_healthy(url: str, process: subprocess.Popen[bytes], timeout: float = 60.0) -> dict[str, Any]:
    """Poll ``ruledex serve --http``'s health URL until it answers; its JSON. Fails if the server exits."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"ruledex serve --http exited with {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                return json.loads(response.read())
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.1)
    raise RuntimeError(f"ruledex serve --http did not answer {url} within {timeout} s")


def stop(process: subprocess.Popen[bytes], timeout: float = 15) -> None:
    """Terminate a server process, killing it if it does not exit within ``timeout`` s."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)
