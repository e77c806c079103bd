"""Cheap language detection: the page's declared language, checked against the text's script.

Order: a declared tag (``<html lang>``, ``content-language``) is trusted when the text's script agrees
with it; otherwise the script decides (Hangul → ko, kana → ja, Han → zh, Cyrillic → ru/uk/bg,
Greek, Arabic/Persian, Hebrew, Thai, Devanagari, ...), and for Latin script the most frequent
stopwords decide among common languages. Returns a primary tag like "en" or "" when unsure.
"""

from __future__ import annotations

import re
from collections import Counter

SAMPLE_CHARS = 3000
_TAG = re.compile(r"^[A-Za-z]{2,3}(?=$|[-_])")
_WORD = re.compile(r"[^\W\d_]+")

# Character classes per script, counted on a sample with one regex each (C speed).
_SCRIPTS: dict[str, re.Pattern[str]] = {
    name: re.compile(f"[{ranges}]")
    for name, ranges in (
        ("latin", "A-Za-z\u00c0-\u024f"),
        ("greek", "\u0370-\u03ff"),
        ("cyrillic", "\u0400-\u04ff"),
        ("hebrew", "\u0590-\u05ff"),
        ("arabic", "\u0600-\u06ff"),
        ("devanagari", "\u0900-\u097f"),
        ("bengali", "\u0980-\u09ff"),
        ("thai", "\u0e00-\u0e7f"),
        ("georgian", "\u10a0-\u10ff"),
        ("armenian", "\u0530-\u058f"),
        ("kana", "\u3040-\u30ff"),
        ("han", "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"),
        ("hangul", "\uac00-\ud7af\u1100-\u11ff"),
    )
}
_SCRIPT_LANG = {
    "greek": "el", "hebrew": "he", "devanagari": "hi", "bengali": "bn", "thai": "th",
    "georgian": "ka", "armenian": "hy", "hangul": "ko",
}  # fmt: skip
# Which script each declared language is written in (for the agreement check).
_LANG_SCRIPT = {
    "ru": "cyrillic", "uk": "cyrillic", "bg": "cyrillic", "sr": "cyrillic", "mk": "cyrillic", "be": "cyrillic",
    "kk": "cyrillic", "el": "greek", "he": "hebrew", "ar": "arabic", "fa": "arabic", "ur": "arabic",
    "hi": "devanagari", "mr": "devanagari", "ne": "devanagari", "bn": "bengali", "th": "thai", "ka": "georgian",
    "hy": "armenian", "ja": "cjk", "zh": "cjk", "ko": "cjk",
}  # fmt: skip


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# A handful of very frequent, fairly distinctive words per Latin-script language.
_STOPWORDS: dict[str, frozenset[str]] = {
    "en": _set("the and of to is in that for with are this was you not be on have from"),
    "de": _set("der die und das ist nicht mit den ein eine sich auf für ich dem des auch wird"),
    "fr": _set("le la les et des est une pour que dans qui pas sur avec sont du au ce"),
    "es": _set("el la los las y que es por una para con del se su como más pero"),
    "it": _set("il di che è la per una sono con del della gli non anche le questo"),
    "pt": _set("de que não uma para com os do da em se mais como por são também"),
    "nl": _set("de het een van en is dat niet voor zijn met op ook aan er"),
    "sv": _set("och att det som är för med inte på av den till har jag ett"),
    "da": _set("og at det som er for med ikke på af den til har jeg et"),
    "no": _set("og at det som er for med ikke på av den til har jeg et ikkje"),
    "pl": _set("i w nie na się z do że jest to jak dla po przez są"),
    "cs": _set("a v se na je že to s z do jako pro jsou by ale"),
    "tr": _set("ve bir bu da de için ile çok olarak daha gibi ne var değil"),
    "id": _set("dan yang di ini itu dengan untuk dari tidak ada dalam akan pada"),
    "vi": _set("và của là có các không cho được một những trong với người này"),
    "fi": _set("ja on ei että se oli ovat kuin myös mutta tai hän joka tämä"),
    "hu": _set("a az és hogy nem egy is van meg csak de mint ez"),
    "ro": _set("și de la în cu pe care este din pentru nu o un sunt"),
}
_MIN_STOPWORD_HITS = 3


def primary_tag(tag: str | None) -> str:
    """``"en-US"`` → ``"en"``; anything that is not a language tag → ``""``."""
    if not tag:
        return ""
    m = _TAG.match(tag.strip())
    return m.group(0).lower() if m else ""


def script_counts(text: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for name, pattern in _SCRIPTS.items():
        n = len(pattern.findall(text))
        if n:
            counts[name] = n
    return counts


def _latin_language(text: str) -> str:
    words = _WORD.findall(text.lower())
    if not words:
        return ""
    counts = Counter(words)
    hits = {lang: sum(counts[w] for w in sw) for lang, sw in _STOPWORDS.items()}
    lang, best = max(hits.items(), key=lambda kv: kv[1])
    return lang if best >= _MIN_STOPWORD_HITS else ""


def _cyrillic_language(text: str) -> str:
    if re.search(r"[іїєґ]", text, re.I):
        return "uk"
    return "ru"


def _arabic_language(text: str) -> str:
    return "fa" if re.search(r"[پچژگ]", text) else "ar"


def detect_from_text(text: str) -> str:
    """Language of ``text`` from scripts and stopwords; "" when the text is too short or unclear."""
    sample = text[:SAMPLE_CHARS]
    counts = script_counts(sample)
    total = sum(counts.values())
    if total < 8:
        return ""
    if counts["kana"] >= 0.05 * total:
        return "ja"
    if counts["hangul"] >= 0.2 * total:
        return "ko"
    if counts["han"] >= 0.3 * total:
        return "zh"
    script, n = counts.most_common(1)[0]
    if n < 0.4 * total:
        return ""
    if script == "latin":
        return _latin_language(sample)
    if script == "cyrillic":
        return _cyrillic_language(sample)
    if script == "arabic":
        return _arabic_language(sample)
    return _SCRIPT_LANG.get(script, "")


def _script_of_text(text: str) -> str:
    counts = script_counts(text[:SAMPLE_CHARS])
    total = sum(counts.values())
    if not total:
        return ""
    if counts["kana"] + counts["han"] + counts["hangul"] >= 0.3 * total:
        return "cjk"
    script, n = counts.most_common(1)[0]
    return script if n >= 0.5 * total else ""


def detect_language(text: str, declared: str = "") -> str:
    """Best guess for the language of ``text``; ``declared`` (e.g. ``<html lang>``) wins when it fits."""
    tag = primary_tag(declared)
    if tag:
        script = _script_of_text(text)
        if not script or _LANG_SCRIPT.get(tag, "latin") == script:
            if tag in ("zh", "ja", "ko") and script == "cjk":
                found = detect_from_text(text)
                return found or tag  # a "zh" page full of kana is Japanese
            if script == "latin" and tag in _STOPWORDS:
                other = _contradicting_latin(text, tag)
                if other:
                    return other  # a template default ("en") on a text in another language
            return tag
    return detect_from_text(text)


def _contradicting_latin(text: str, declared: str) -> str:
    """A Latin-script language the stopwords clearly prefer over ``declared``, else ""."""
    words = _WORD.findall(text[:SAMPLE_CHARS].lower())
    if len(words) < 40:
        return ""
    counts = Counter(words)
    shares = {lang: sum(counts[w] for w in sw) / len(words) for lang, sw in _STOPWORDS.items()}
    best = max(shares, key=lambda k: shares[k])
    if best != declared and shares[best] >= 0.12 and shares[declared] < 0.3 * shares[best]:
        return best
    return ""
