"""Helpers for the local-channel tests (squatter, peer uid, client channel); no tests here.

* :func:`nobody_cmd` — run a command as the OS user ``nobody`` (setpriv), with a Python that user can execute;
  skips when not root, fails instead under CI=true.
* :class:`Recorder` — runs tests/security/http_squatter.py (as nobody or as us) and collects what it receives.
* :func:`cli` — the real ``trawl`` CLI in a subprocess, with settings in the test's directories.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

NOBODY_UID = 65534
SETPRIV = ["setpriv", f"--reuid={NOBODY_UID}", f"--regid={NOBODY_UID}", "--clear-groups"]
HTTP_SQUATTER = Path(__file__).with_name("http_squatter.py")


def require_root() -> None:
    if os.geteuid() != 0:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("these tests simulate another OS user (nobody): run them as root under CI")
        pytest.skip("simulating another OS user needs root")


def nobody_python() -> list[str]:
    """setpriv + a Python the user nobody can execute."""
    require_root()
    for py in ("/usr/bin/python3", sys.executable, shutil.which("python3") or ""):
        if py and subprocess.run([*SETPRIV, py, "-I", "-c", "import json, socket, threading"],
                                 capture_output=True, cwd="/").returncode == 0:
            return [*SETPRIV, py, "-I"]
    pytest.fail("no Python the user nobody can run (apt-get install -y python3)")


class Recorder:
    """A running http_squatter.py; ``received()`` is every byte it was sent, ``connections`` how often."""

    def __init__(self, argv: list[str]) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd="/")
        self.events: list[dict[str, Any]] = []
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    @classmethod
    def tcp(cls, port: int, *, as_nobody: bool) -> Recorder:
        py = nobody_python() if as_nobody else [sys.executable, "-I"]
        return cls([*py, "-c", HTTP_SQUATTER.read_text(), "tcp", str(port)]).ready()

    @classmethod
    def unix(cls, path: Path, *, as_nobody: bool) -> Recorder:
        py = nobody_python() if as_nobody else [sys.executable, "-I"]
        return cls([*py, "-c", HTTP_SQUATTER.read_text(), "unix", str(path)]).ready()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._cond:
                self.events.append(json.loads(line))
                self._cond.notify_all()
        with self._cond:
            self.events.append({"event": "exit"})
            self._cond.notify_all()

    def wait_for(self, event: str, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for e in self.events:
                    if e["event"] == event:
                        return e
                if any(e["event"] == "exit" for e in self.events):
                    err = self.proc.stderr.read() if self.proc.stderr else ""
                    raise AssertionError(f"the squatter exited before {event!r}: {err}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no {event!r} from the squatter within {timeout} s")
                self._cond.wait(left)

    def ready(self) -> Recorder:
        info = self.wait_for("ready")
        self.uid = int(info["uid"])
        self.pid = int(info["pid"])
        return self

    @property
    def connections(self) -> int:
        with self._cond:
            return sum(e["event"] == "conn" for e in self.events)

    def received(self, timeout: float = 20.0) -> bytes:
        """Every byte sent to it, once each connection it accepted is over (so nothing is still in flight)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                conns = sum(e["event"] == "conn" for e in self.events)
                ends = sum(e["event"] == "end" for e in self.events)
                if ends >= conns or any(e["event"] == "exit" for e in self.events):
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"{conns - ends} connection(s) to the squatter still open")
                self._cond.wait(left)
            return b"".join(bytes.fromhex(e["hex"]) for e in self.events if e["event"] == "recv")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()  # the setpriv'd child is the same process (setpriv execs)
        self.proc.wait(10)
        self._thread.join(10)


def trawl_env(tmp_path: Path, port: int, **extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update({"TRAWL_STATE_DIR": str(tmp_path / "state"), "TRAWL_CACHE_DIR": str(tmp_path / "cache"),
                "TRAWL_PORT": str(port), "TRAWL_DENSE": "none", **extra})
    return env


def cli(env: dict[str, str], *args: str, timeout: float = 120.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "trawl.cli", *args], env=env, capture_output=True, text=True,
                          timeout=timeout)
