"""A real Arize Phoenix on loopback for the tests: ``phoenix serve`` as a subprocess.

Free ports, a temporary working directory, no outside requests. Startup is awaited on the
server's own "Uvicorn running" line, not on a timer. One per session and database (the
``phoenix`` fixture of tests/conftest.py; tests/test_runs_backends.py starts one on PostgreSQL):
each start costs half a minute on a busy machine.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

__all__ = ["Phoenix", "free_port"]

STARTUP_LIMIT = 180.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _phoenix_command() -> list[str]:
    beside = Path(sys.executable).with_name("phoenix")
    found = str(beside) if beside.exists() else shutil.which("phoenix")
    if found is None:
        pytest.skip("arize-phoenix is not installed (pip install -e '.[dev]')")
    return [found, "serve"]


class Phoenix:
    """A ``phoenix serve`` subprocess; ``url`` is its HTTP root."""

    def __init__(self, workdir: Path, env: dict[str, str] | None = None) -> None:
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = {
            **os.environ,
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(port),
            "PHOENIX_GRPC_PORT": str(free_port()),
            "PHOENIX_WORKING_DIR": str(workdir),
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "PHOENIX_ALLOW_EXTERNAL_RESOURCES": "false",
            **(env or {}),  # PHOENIX_SQL_DATABASE_URL for PostgreSQL (test_runs_backends.py)
        }
        self.log = workdir / "phoenix.log"
        self.ready = threading.Event()
        self.started = time.perf_counter()
        self.startup_seconds = float("nan")
        self.process = subprocess.Popen(
            _phoenix_command(),
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        with self.log.open("w") as log:
            for line in self.process.stdout:
                log.write(line)
                if "Uvicorn running on" in line and not self.ready.is_set():
                    self.startup_seconds = time.perf_counter() - self.started
                    self.ready.set()
        self.ready.set()  # the process ended: let the waiter look at why

    def wait_ready(self) -> None:
        if not self.ready.wait(STARTUP_LIMIT) or self.process.poll() is not None:
            tail = self.log.read_text()[-3000:] if self.log.exists() else ""
            self.stop()
            pytest.fail(f"phoenix did not start within {STARTUP_LIMIT:.0f}s:\n{tail}")
        assert httpx.get(f"{self.url}/healthz", timeout=10).status_code == 200

    def spans(self, trace_id: str) -> list[dict[str, Any]]:
        answer = httpx.get(
            f"{self.url}/v1/projects/default/spans",
            params={"trace_id": trace_id, "limit": 1000},
            timeout=10,
        )
        answer.raise_for_status()
        return list(answer.json()["data"])

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        self._reader.join(10)
        if self.process.stdout is not None:
            self.process.stdout.close()
