"""Wall detection figures: precision/recall on the fixture pages, walls reported on WCXB dev pages.

    .venv/bin/python benchmarks/bench_walls.py [--fixtures tests/fixtures/walls] [--wcxb ../shared/bench/wcxb-dev]
                                               [--limit N] [--skip-wcxb]

Fixtures: ``cases.json`` in the fixture folder lists each page with the wall it is (or ``null`` for a
negative twin), plus the URL/final URL/status it is served with. Each page goes through the engine's
stage sequence (``trawl.stages.prepare``: extract -> clean -> walls -> chunk); a wall is its WallError.
WCXB: every ``html/NNNN.html.gz`` (real content pages: any wall
reported there is a false positive unless the page really is one) is run the same way, with the URL
from its ground truth; each page reported is listed with the rule's message, to be judged by hand.
Also prints the time ``detect`` takes per page that is not a wall (median / p95 / max), next to extraction's.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import sys
from pathlib import Path

from trawl.settings import Settings
from trawl.stages import prepare
from trawl.types import Page, TrawlError
from trawl.walls import WallError

ROOT = Path(__file__).resolve().parents[1]


def load_fixture_cases(folder: Path) -> list[tuple[dict, Page]]:
    cases = json.loads((folder / "cases.json").read_text())
    out = []
    for case in cases:
        html = (folder / case["file"]).read_text()
        url = case.get("url", f"https://example.org/{case['file']}")
        page = Page(url=url, final_url=case.get("final_url", url), kind="html", source=case.get("source", "http"),
                    html=html, status=case.get("status", 200))
        out.append((case, page))
    return out


def _wall_kind(page: Page, settings: Settings) -> str | None:
    try:
        prepare(page, settings)
    except WallError as err:
        return err.kind
    except TrawlError:
        return None
    return None


def fixtures(folder: Path, settings: Settings) -> None:
    cases = load_fixture_cases(folder)
    tp = fp = fn = tn = exact = 0
    rows = []
    for case, page in cases:
        got = _wall_kind(page, settings)
        want = case["expect"]
        if want and got:
            tp += 1
            exact += got == want
        elif got and not want:
            fp += 1
        elif want and not got:
            fn += 1
        else:
            tn += 1
        mark = "ok " if got == want else "BAD"
        rows.append(f"  {mark} {case['file']:<40} expect={want!s:<10} got={got!s}")
    print(f"fixtures: {len(cases)} pages ({tp + fn} walls, {tn + fp} negatives) in {folder}")
    print("\n".join(rows))
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print(f"wall vs content: precision {precision:.3f}  recall {recall:.3f}  (tp {tp}, fp {fp}, fn {fn}, tn {tn})")
    print(f"right kind among detected walls: {exact}/{tp}")


def wcxb(folder: Path, settings: Settings, limit: int | None) -> None:
    files = sorted((folder / "html").glob("*.html.gz"))[:limit]
    hits = []
    detect_ms: list[float] = []
    extract_ms: list[float] = []
    failed = 0
    for path in files:
        stem = path.name.split(".")[0]
        gt_path = folder / "ground-truth" / f"{stem}.json"
        url = json.loads(gt_path.read_text()).get("url", "") if gt_path.exists() else ""
        html = gzip.decompress(path.read_bytes()).decode("utf-8", errors="replace")
        page = Page(url=url or f"https://example.org/{stem}", final_url=url or f"https://example.org/{stem}",
                    kind="html", source="http", html=html, status=200)
        try:
            ready = prepare(page, settings)
        except WallError as err:
            hits.append((stem, url, str(err.code), err.message))
            continue
        except TrawlError:  # an empty page: not a wall
            continue
        except Exception as exc:  # report, keep going: this bench is about walls, not extraction
            failed += 1
            print(f"  extract failed on {stem}: {exc}", file=sys.stderr)
            continue
        extract_ms.append(ready.timings_ms["extract"])
        detect_ms.append(ready.timings_ms["walls"])
    print(f"\nWCXB dev: {len(files)} pages from {folder} ({failed} failed extraction)")
    print(f"walls reported: {len(hits)}")
    for stem, url, code, msg in hits:
        print(f"  {stem}  {code:<15} {msg}  <{url}>")
    if detect_ms:
        q = statistics.quantiles(detect_ms, n=20)
        print(f"detect time per page: median {statistics.median(detect_ms):.2f} ms, p95 {q[18]:.2f} ms, "
              f"max {max(detect_ms):.1f} ms  (extract median {statistics.median(extract_ms):.1f} ms)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fixtures", type=Path, default=ROOT / "tests" / "fixtures" / "walls")
    ap.add_argument("--wcxb", type=Path, default=ROOT / ".." / "shared" / "bench" / "wcxb-dev")
    ap.add_argument("--limit", type=int, default=None, help="only the first N WCXB pages")
    ap.add_argument("--skip-wcxb", action="store_true")
    args = ap.parse_args()
    settings = Settings()
    fixtures(args.fixtures, settings)
    if not args.skip_wcxb:
        wcxb(args.wcxb, settings, args.limit)


if __name__ == "__main__":
    main()
