"""Which trawl daemons this user runs, whatever their settings: one small file per running daemon in a folder
found from HOME alone (``~/.local/state/trawl-running/<pid>.json``: pid, port, state directory).

A client whose settings point at one daemon reads it to learn that the user runs another (started from a shell
whose ``TRAWL_*`` variables or ``XDG_STATE_HOME`` the client never saw), and says so instead of silently starting
a second, unpaired daemon. The files hold no secret: finding and trusting a daemon stays
:func:`trawl.channel.discovery.locate`'s job (socket credentials, the mutual proof).
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path

from ..atomicfile import write_atomic
from ..settings import running_dir


@dataclass(frozen=True, slots=True)
class RunningDaemon:
    pid: int
    port: int
    state_dir: str

    def describe(self) -> str:
        return f"pid {self.pid}, port {self.port}, state dir {self.state_dir}"


def register(pid: int, port: int, state_dir: Path, folder: Path | None = None) -> None:
    """Called by the daemon once its ports are bound."""
    folder = folder or running_dir()
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        entry = RunningDaemon(pid=pid, port=port, state_dir=str(state_dir.resolve()))
        write_atomic(folder / f"{pid}.json", json.dumps(asdict(entry)), durable=False)
    except OSError:  # a courtesy to clients: the daemon runs without it
        return


def unregister(pid: int, folder: Path | None = None) -> None:
    with contextlib.suppress(OSError):
        ((folder or running_dir()) / f"{pid}.json").unlink()


def _alive(pid: int) -> bool:
    """The process lives, is this user's, and (where /proc shows it) still runs trawl: a reused pid is not."""
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or another user's process took the pid
        return False
    try:
        return b"trawl" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # no /proc (macOS): the signal check is all there is
        return True


def running(folder: Path | None = None) -> list[RunningDaemon]:
    """This user's daemons that are still alive (a file whose process is gone is removed)."""
    folder = folder or running_dir()
    out: list[RunningDaemon] = []
    try:
        files = sorted(folder.glob("*.json"))
    except OSError:
        return out
    for f in files:
        try:
            data = json.loads(f.read_text())
            entry = RunningDaemon(pid=int(data["pid"]), port=int(data["port"]), state_dir=str(data["state_dir"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if _alive(entry.pid):
            out.append(entry)
        else:
            with contextlib.suppress(OSError):
                f.unlink()
    return out


def others(state_dir: Path, folder: Path | None = None) -> tuple[list[RunningDaemon], bool]:
    """The daemons this user runs with another state directory than ``state_dir``, and whether one runs with it."""
    mine = str(state_dir.expanduser().resolve())
    alive = running(folder)
    return [d for d in alive if d.state_dir != mine], any(d.state_dir == mine for d in alive)
