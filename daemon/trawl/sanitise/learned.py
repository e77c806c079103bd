"""A learned test of whether a passage steers the AI that reads it: logistic regression over hashed character
n-grams, numpy only.

Text is normalised as the phrase rules see it (:func:`.detect.normalise`), lowercased, and cut into windows
(a sentence, or two consecutive sentences, at most ``WINDOW_CHARS``); each window is a set of hashed
character 2-, 3- and 4-grams (``DIM`` buckets), weighted 1/sqrt(count), scored ``bias + w·x``. A text is
flagged when its best window scores at least the shipped threshold. Character n-grams need no tokeniser and
work the same in every script, which is what lets one small table serve many languages.

The weights (``data/injection_lr.npz``: float16 weights, bias, threshold and the feature settings) are built
by ``benchmarks/train_injection.py`` from ``benchmarks/data/injection`` (see the README there) and loaded
once, lazily, on first use.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .cues import CUE_NAMES, cue_vector

MODEL_PATH = Path(__file__).resolve().parent / "data" / "injection_lr.npz"
DIM_BITS = 18
DIM = 1 << DIM_BITS
NGRAMS = (2, 3, 4)
WINDOW_CHARS = 360
MAX_WINDOWS = 200  # per text; longer texts are scored on their first windows only
MIN_WINDOW_CHARS = 16  # shorter windows ("Example:", "<!--") carry too few n-grams to judge

_URL = re.compile(r"https?://\S+|www\.\S+")  # a URL's letters are noise to the model: it sees "http" only
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+|(?<=[。！？；])|\n+")
_MULT = np.uint64(0x100000001B3)
_MIX = np.uint64(0x9E3779B97F4A7C15)
_SHIFT = np.uint64(64 - DIM_BITS)


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s and s.strip()]


def windows(text: str) -> list[str]:
    """The passages a text is judged by: each sentence and each pair of consecutive sentences, cut at
    WINDOW_CHARS (a long sentence gives windows of WINDOW_CHARS overlapping by half)."""
    parts: list[str] = []
    for s in sentences(text):
        if len(s) <= WINDOW_CHARS:
            parts.append(s)
        else:
            step = WINDOW_CHARS // 2
            parts.extend(s[i : i + WINDOW_CHARS] for i in range(0, len(s) - step, step))
    if len(parts) <= 1:
        return [p for p in parts if len(p) >= MIN_WINDOW_CHARS]
    out: list[str] = []
    for i, p in enumerate(parts):
        out.append(p)
        if i + 1 < len(parts) and len(p) + len(parts[i + 1]) < WINDOW_CHARS:
            out.append(p + " " + parts[i + 1])
        if len(out) >= MAX_WINDOWS:
            break
    return [w for w in out if len(w) >= MIN_WINDOW_CHARS]


def features(window: str) -> tuple[np.ndarray, float]:
    """(unique hashed n-gram buckets, the value of each: 1/sqrt(their number))."""
    text = " " + " ".join(_URL.sub("http", window.lower()).split()) + " "
    cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32).astype(np.uint64)
    grams: list[np.ndarray] = []
    with np.errstate(over="ignore"):
        for n in NGRAMS:
            if len(cps) < n:
                continue
            h = np.full(len(cps) - n + 1, np.uint64(n), dtype=np.uint64)
            for k in range(n):
                h = (h * _MULT) ^ cps[k : len(cps) - n + 1 + k]
            grams.append(((h ^ (h >> np.uint64(29))) * _MIX) >> _SHIFT)
    if not grams:
        return np.zeros(0, dtype=np.int64), 0.0
    idx = np.unique(np.concatenate(grams)).astype(np.int64)
    return idx, 1.0 / float(np.sqrt(len(idx)))


@dataclass(frozen=True, slots=True)
class Model:
    weights: np.ndarray  # float32, DIM
    bias: float
    threshold: float

    def score(self, window: str) -> float:
        idx, v = features(window)
        return self.bias + v * float(self.weights[idx].sum()) if len(idx) else self.bias

    def best(self, text: str) -> tuple[float, str]:
        """The highest-scoring window of ``text`` and its score (-inf when the text has none)."""
        best, where = float("-inf"), ""
        for w in windows(text):
            s = self.score(w)
            if s > best:
                best, where = s, w
        return best, where


_model: Model | None = None
_lock = threading.Lock()


def load(path: Path = MODEL_PATH) -> Model:
    with np.load(path) as z:
        if int(z["dim_bits"]) != DIM_BITS or tuple(int(n) for n in z["ngrams"]) != NGRAMS:
            raise ValueError(f"{path}: built for other feature settings")
        return Model(weights=z["weights"].astype(np.float32), bias=float(z["bias"]),
                     threshold=float(z["threshold"]))


def model() -> Model:
    global _model
    if _model is None:
        with _lock:
            if _model is None:
                _model = load()
    return _model


def find(text: str) -> str | None:
    """The window of ``text`` (already normalised) that the shipped model judges to steer its reader, or None."""
    m = model()
    score, where = m.best(text)
    return where if score >= m.threshold else None


# ------------------------------------------------------------------ the embedding detector
# Structural features beside the sentence vector: the phrase-free cues of .cues (which of them occur), the
# reader addressed in the second person, and credentials / contact data named. Each in every language the
# cues cover; a passage's value is presence (0/1), so length does not count.
_SECOND_PERSON = re.compile(
    r"\b(?:you|your|yours|yourself)\b|\b(?:du|dich|dir|dein\w*)\b|\b(?:tu|toi|ton|ta|tes|vous|votre|vos)\b|"
    r"\b(?:tú|usted|tus)\b|\b(?:tuo|tua|tuoi|voi)\b|\b(?:você|teu|tua|seu|sua)\b|\b(?:jij|je|jouw|uw)\b|"
    r"\b(?:ty|twój|twoja|swoj\w*)\b|\b(?:ты|тебя|тебе|твой|твоя|твои|вы|вас|ваш\w*)\b|\b(?:ти|тебе|твій|твоя|ви|ваш\w*)\b|"
    r"你|您|あなた|당신|너는|너의|\b(?:sen|senin|sana|siz|sizin)\b|\bbạn\b|\b(?:आप|तुम|तुम्हारा|आपका)\b|\b(?:kamu|anda)\b|"
    r"أنت|\w+ك\b",
    re.IGNORECASE,
)
_CREDENTIAL = re.compile(
    r"password|passwort|mot de passe|contraseña|senha|wachtwoord|hasło|пароль|密码|密碼|パスワード|비밀번호|"
    r"كلمة المرور|şifre|mật khẩu|पासवर्ड|kata sandi|token|api[ _-]?key|secret|credential|card number|otp|"
    r"verification code|\b2fa\b|@\w[\w.-]*\.\w+|base64",
    re.IGNORECASE,
)
STRUCT_NAMES = (*CUE_NAMES, "second_person", "credential")


def struct_features(text: str) -> np.ndarray:
    """The structural features of a normalised passage (float32, len(STRUCT_NAMES))."""
    v = cue_vector(text)
    v.append(1.0 if _SECOND_PERSON.search(text) else 0.0)
    v.append(1.0 if _CREDENTIAL.search(text) else 0.0)
    return np.asarray(v, dtype=np.float32)
