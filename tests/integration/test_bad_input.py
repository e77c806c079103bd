"""Every bad input from the issue, through the public path: ``Engine(Settings(...)).fetch``.

Each must end in the expected typed error (or a graceful result). Time is not asserted here: a hang is caught
by a generous guard (HANG_GUARD_S), and each case's time beside its budget is a figure printed by
``benchmarks/bad_input_table.py``. Deadlines are checked as behaviour: the silent server never answers, so only
the fetch's own timeout can end that case, with the ``timeout`` error.
Local files and a local site on 127.0.0.1 come from tests/fixtures/bad_inputs.py; the
same cases print as a table with ``benchmarks/bad_input_table.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from trawl import Engine, Settings

from tests.fixtures.bad_inputs import OK, BadSite, Case, cases, write_files

HTTP_TIMEOUT_S = 1.0
HANG_GUARD_S = 300.0  # catches a hang only: far above any case's budget, even on a loaded machine
_NAMES = cases(Path("/unused"), "http://127.0.0.1:1", "http://127.0.0.1:2/", HTTP_TIMEOUT_S)
PARAMS = [pytest.param(c.name, id=c.name, marks=[pytest.mark.slow] if c.slow else []) for c in _NAMES]


@pytest.fixture
async def site() -> AsyncIterator[BadSite]:
    async with BadSite().running() as s:
        yield s


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[Engine]:
    settings = Settings(cache_dir=tmp_path / "cache", state_dir=tmp_path / "state", http_timeout_s=HTTP_TIMEOUT_S,
                        dense="none")
    eng = Engine(settings)
    yield eng
    await eng.aclose()


@pytest.mark.timeout(HANG_GUARD_S + 60)
@pytest.mark.parametrize("name", PARAMS)
async def test_bad_input(name: str, tmp_path: Path, site: BadSite, engine: Engine) -> None:
    files = tmp_path / "files"
    files.mkdir()
    write_files(files)
    case: Case = next(c for c in cases(files, site.base, site.silent, HTTP_TIMEOUT_S) if c.name == name)
    result = await asyncio.wait_for(engine.fetch(case.target, case.query), timeout=HANG_GUARD_S)
    code = OK if result.error is None else str(result.error.code)
    assert code in case.expect, f"{name}: got {code}: {result.error}"
    if result.error is not None:
        assert result.error.message and not result.chunks
    else:
        assert result.chunks, f"{name}: ok with no chunks"
        if case.must_contain:
            assert any(case.must_contain in c.text for c in result.chunks), [c.text[:80] for c in result.chunks]
    d = result.to_dict()  # the JSON edge must serialise every outcome
    assert d["ok"] == (result.error is None)
