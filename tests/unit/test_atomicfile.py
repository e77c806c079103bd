"""write_atomic: whole files or nothing, private mode, no temp left behind, no symlink followed."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest
from trawl.atomicfile import TEMP_PREFIX, write_atomic
from trawl.channel.discovery import INFO_FILE, DaemonInfo, read_info, write_info
from trawl.channel.token import TOKEN_FILE, load_or_create_token


def _temps(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(TEMP_PREFIX)]


def test_writes_bytes_and_text_private_by_default(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        assert write_atomic(tmp_path / "a", b"\x00bytes")
        assert write_atomic(tmp_path / "b", "text ü", durable=False)
        assert write_atomic(tmp_path / "c", "shared", mode=0o644)
    finally:
        os.umask(old)
    assert (tmp_path / "a").read_bytes() == b"\x00bytes"
    assert (tmp_path / "b").read_text(encoding="utf-8") == "text ü"
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "c").stat().st_mode) == 0o644
    assert _temps(tmp_path) == []


def test_replaces_or_keeps_an_existing_file(tmp_path: Path) -> None:
    target = tmp_path / "key"
    write_atomic(target, "first")
    assert write_atomic(target, "second")
    assert target.read_text() == "second"
    assert write_atomic(target, "third", exclusive=True) is False  # the one already there wins
    assert target.read_text() == "second"
    assert _temps(tmp_path) == []


def test_a_failed_write_leaves_no_temp_file_and_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "is-a-dir"
    target.mkdir()
    (target / "inside").write_text("kept")
    with pytest.raises(OSError):
        write_atomic(target, "cannot replace a directory")
    assert (target / "inside").read_text() == "kept"
    assert _temps(tmp_path) == []
    with pytest.raises(OSError):
        write_atomic(tmp_path / "missing-dir" / "f", "x")


def test_readers_never_see_half_a_file(tmp_path: Path) -> None:
    target = tmp_path / "big"
    a, b = b"a" * 2_000_000, b"b" * 2_000_000
    write_atomic(target, a, durable=False)
    seen: set[bytes] = set()
    stop = threading.Event()

    def reader() -> None:
        while not stop.is_set():
            data = target.read_bytes()
            seen.add(data[:1] + data[-1:] + str(len(data)).encode())

    t = threading.Thread(target=reader)
    t.start()
    try:
        for i in range(40):
            write_atomic(target, a if i % 2 else b, durable=False)
    finally:
        stop.set()
        t.join()
    assert seen <= {b"aa2000000", b"bb2000000"}, seen


def test_a_symlink_planted_at_the_target_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("the user's file")
    target = tmp_path / "state-file"
    target.symlink_to(victim)
    write_atomic(target, "new content")
    assert victim.read_text() == "the user's file"
    assert not target.is_symlink() and target.read_text() == "new content"


def test_state_files_ignore_symlinks_at_the_old_predictable_temp_names(tmp_path: Path) -> None:
    """The attack on the old copies: plant a link where `.<name>.<pid>.tmp` would be opened with O_TRUNC."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("must survive")
    for name in (TOKEN_FILE, INFO_FILE):
        (state / f".{name}.{os.getpid()}.tmp").symlink_to(victim)
    token = load_or_create_token(state)
    write_info(state, DaemonInfo(pid=os.getpid(), port=4321, version="t", started_at=1.0))
    assert victim.read_text() == "must survive"
    assert (state / TOKEN_FILE).read_text().strip() == token and not (state / TOKEN_FILE).is_symlink()
    info = read_info(state)
    assert info is not None and info.port == 4321
    assert stat.S_IMODE((state / TOKEN_FILE).stat().st_mode) == 0o600
