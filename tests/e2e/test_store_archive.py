"""The Chrome Web Store archive `trawl extension --zip` builds loads in real Chromium as it is: its manifest (no
pinned key, icons named) is accepted, the service worker starts under the new id the browser gives it, and the
popup page opens with its icon files present."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from playwright.async_api import async_playwright
from trawl.browser.identity import PINNED_EXTENSION_ID

from .conftest import BROWSER_FLAGS

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(150)]


async def test_the_store_archive_loads_unpacked_in_chromium(tmp_path: Path, chromium: str) -> None:
    archive = tmp_path / "store.zip"
    r = subprocess.run([sys.executable, "-m", "trawl.cli", "extension", "--zip", "--dest", str(archive)],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    folder = tmp_path / "unzipped"
    with zipfile.ZipFile(archive) as z:
        z.extractall(folder)
    manifest = json.loads((folder / "manifest.json").read_text())
    assert "key" not in manifest and manifest["icons"]

    async with async_playwright() as pw:
        context = await pw.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=chromium, headless=True,
            args=[*BROWSER_FLAGS, f"--disable-extensions-except={folder}", f"--load-extension={folder}"],
            timeout=30_000)
        try:
            workers = context.service_workers or [await context.wait_for_event("serviceworker", timeout=20_000)]
            url = workers[0].url
            assert url.startswith("chrome-extension://") and url.endswith("/background.js"), url
            ext_id = url.split("/")[2]
            assert ext_id != PINNED_EXTENSION_ID  # no key: the id is not the pinned one (the store assigns its own)
            page = await context.new_page()
            for icon in manifest["icons"].values():
                resp = await page.goto(f"chrome-extension://{ext_id}/{icon}")
                assert resp is not None and resp.ok, icon
            resp = await page.goto(f"chrome-extension://{ext_id}/{manifest['action']['default_popup']}")
            assert resp is not None and resp.ok
            assert await page.locator("body").count() == 1
        finally:
            await context.close()
