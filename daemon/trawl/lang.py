"""Everything trawl knows about scripts and languages, in one place.

- **Scripts**: one table of Unicode ranges (:data:`SCRIPT_RANGES`). The chunker's CJK share, the token
  estimate and the BM25 tokenizer's CJK runs all use :data:`CJK_CLASS` from it.
- **Language identification**: :func:`detect` names the language of a text, short question or page,
  with Google's Compact Language Detector 2 (``pycld2``: ~80 languages, ~10 µs for a question, no model
  to load). A ``hint`` (the page's language, for a question asked on it) settles short, ambiguous
  questions such as "¿Abre los domingos?" and is overruled by text that is clearly another language.
  When CLD2 has no answer, an unambiguous script still names the language (Hangul → ko, ...).
- **Pages**: :func:`detect_language` weighs a declared tag (``<html lang>``) against the text.
- **Retrieval**: :func:`same_language`, :func:`script_of` and :func:`stopwords` (question words that
  say nothing about the page, left out of BM25's coverage); :func:`stemmer_of` names the Snowball stemmer
  BM25 uses for a language (where it was measured to help) and :func:`normalise_words` the light
  normalisation some scripts need first (Arabic: vowel marks, letter variants, the article).
- **Passages**: :func:`refers_back` tells a text that opens by pointing back at the one before it ("This
  government ...", "この政府は..."), so retrieval keeps it with what it continues.

All functions return primary tags ("en", "zh", "he"), or "" when they cannot tell.
``benchmarks/bench_lang.py`` measures detection per language against the former stop-word detectors.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter

import pycld2

SAMPLE_CHARS = 3000  # of a page: enough for a sure answer, bounded cost
SCRIPT_SAMPLE = 1000  # letters' scripts are counted on this much (one regex pass per script)
MIN_LETTERS = 3  # fewer letters than this say nothing about a language
_TAG = re.compile(r"^[A-Za-z]{2,3}(?=$|[-_])")
_LETTER = re.compile(r"[^\W\d_]")
_WORD = re.compile(r"[^\W\d_]+")
_UK_LETTERS = re.compile("[іїєґІЇЄҐ]")
_BE_LETTERS = re.compile("[ўЎ]")
_SR_LETTERS = re.compile("[ђћџљњЂЋЏЉЊ]")
_FA_LETTERS = re.compile("[پچژگ]")
# Letters that only some Cyrillic alphabets have: without one, a short text is not in that language.
_CYRILLIC_MARKS = {
    lang: re.compile(f"[{letters}]", re.IGNORECASE)
    for lang, letters in (("uk", "іїєґ"), ("be", "ўі"), ("sr", "ђћџљњј"), ("mk", "ѓќѕјљњ"))
}
# CLD2 rejects text that is not valid UTF-8 (lone surrogates) and reads markup-ish control characters badly.
_UNENCODABLE = re.compile(r"[\ud800-\udfff\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")

# ---------------------------------------------------------------- scripts: the one table of ranges
SCRIPT_RANGES: dict[str, str] = {
    "latin": "A-Za-z\u00c0-\u024f\u1e00-\u1eff",  # incl. Latin Extended Additional (Vietnamese)
    "greek": "\u0370-\u03ff\u1f00-\u1fff",
    "cyrillic": "\u0400-\u052f",
    "armenian": "\u0530-\u058f",
    "hebrew": "\u0590-\u05ff\ufb1d-\ufb4f",
    "arabic": "\u0600-\u06ff\u0750-\u077f\u08a0-\u08ff\ufb50-\ufdff\ufe70-\ufeff",
    "devanagari": "\u0900-\u097f",
    "bengali": "\u0980-\u09ff",
    "gurmukhi": "\u0a00-\u0a7f",
    "gujarati": "\u0a80-\u0aff",
    "tamil": "\u0b80-\u0bff",
    "telugu": "\u0c00-\u0c7f",
    "kannada": "\u0c80-\u0cff",
    "malayalam": "\u0d00-\u0d7f",
    "sinhala": "\u0d80-\u0dff",
    "thai": "\u0e00-\u0e7f",
    "lao": "\u0e80-\u0eff",
    "tibetan": "\u0f00-\u0fff",
    "myanmar": "\u1000-\u109f",
    "georgian": "\u10a0-\u10ff",
    "ethiopic": "\u1200-\u137f",
    "khmer": "\u1780-\u17ff",
    "hangul": "\u1100-\u11ff\u3130-\u318f\uac00-\ud7af",
    "kana": "\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f",
    "han": "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002a6df",
}
CJK_SCRIPTS = ("han", "kana", "hangul")
# Han, kana and Hangul as one regex character class body (scripts written without spaces between words).
CJK_CLASS = "".join(SCRIPT_RANGES[s] for s in CJK_SCRIPTS)
_SCRIPT_RE = {name: re.compile(f"[{ranges}]") for name, ranges in SCRIPT_RANGES.items()}

# The language a script alone names, when CLD2 cannot tell (scripts shared by several languages are absent).
_SCRIPT_LANG = {
    "greek": "el", "armenian": "hy", "hebrew": "he", "bengali": "bn", "gurmukhi": "pa", "gujarati": "gu",
    "tamil": "ta", "telugu": "te", "kannada": "kn", "malayalam": "ml", "sinhala": "si", "thai": "th",
    "lao": "lo", "tibetan": "bo", "myanmar": "my", "georgian": "ka", "khmer": "km", "hangul": "ko",
    "kana": "ja", "han": "zh",
}  # fmt: skip
# The script of each language written in something other than Latin (everything else: "latin").
_LANG_SCRIPT = {
    **{lang: script for script, lang in _SCRIPT_LANG.items()},
    **dict.fromkeys(("ru", "uk", "be", "bg", "sr", "mk", "kk", "ky", "tg", "mn", "tt", "ba", "cv"), "cyrillic"),
    **dict.fromkeys(("ar", "fa", "ur", "ps", "ku", "sd", "ug"), "arabic"),
    **dict.fromkeys(("hi", "mr", "ne", "sa"), "devanagari"),
    "yi": "hebrew", "am": "ethiopic", "ti": "ethiopic", "as": "bengali", "dz": "tibetan", "ja": "kana",
}  # fmt: skip
# Languages close enough that their words match each other (BM25 helps across them).
_CLOSE = [frozenset(g) for g in (("no", "nb", "nn", "da"), ("ms", "id"), ("hr", "sr", "bs"))]
# CLD2's codes that are not today's primary tags.
_CLD2_CODES = {"iw": "he", "in": "id", "ji": "yi", "jw": "jv", "un": "", "xxx": ""}
_CLD2_HINTS = {code for _, code in pycld2.LANGUAGES}
_HINT_CODES = {"he": "iw", "jv": "jw"}


def primary_tag(tag: str | None) -> str:
    """``"en-US"`` → ``"en"``; anything that is not a language tag → ``""``."""
    if not tag:
        return ""
    m = _TAG.match(tag.strip())
    if not m:
        return ""
    code = m.group(0).lower()
    return _CLD2_CODES.get(code, code)


def script_counts(text: str) -> Counter[str]:
    """Letters per script in ``text`` (one C-speed regex pass per script)."""
    counts: Counter[str] = Counter()
    for name, pattern in _SCRIPT_RE.items():
        n = len(pattern.findall(text))
        if n:
            counts[name] = n
    return counts


def dominant_script(text: str) -> str:
    """The script most of ``text``'s letters are in; "cjk" for Han/kana/Hangul text; "" when mixed or none."""
    counts = script_counts(text[:SCRIPT_SAMPLE])
    total = sum(counts.values())
    if not total:
        return ""
    if sum(counts[s] for s in CJK_SCRIPTS) >= 0.3 * total:
        return "cjk"
    script, n = counts.most_common(1)[0]
    return script if n >= 0.5 * total else ""


def script_of(lang: str) -> str:
    """Writing system of a language tag: "cjk" for zh/ja, "hangul", "cyrillic", "arabic", ... else "latin"."""
    tag = primary_tag(lang)
    if not tag:
        return ""
    script = _LANG_SCRIPT.get(tag, "latin")
    return "cjk" if script in ("han", "kana") else script


# ---------------------------------------------------------------- identification
def _cld2_once(text: str, hint: str = "") -> tuple[str, bool]:
    try:
        reliable, _, found = pycld2.detect(text, bestEffort=True, hintLanguage=hint or None)
    except pycld2.error:  # bytes CLD2 refuses despite the clean-up: no answer rather than an error
        return "", False
    return primary_tag(found[0][1]), bool(reliable)


def _cld2(text: str, hint: str = "") -> tuple[str, bool]:
    """CLD2's best language for ``text`` and whether it calls that reliable; ("", False) when it has none.

    With a ``hint`` that CLD2's plain answer contradicts, CLD2 looks again with the hint as its prior
    (only then: a hint costs it ~50 times a plain call).
    """
    if _UNENCODABLE.search(text):
        text = _UNENCODABLE.sub(" ", text)
    code, reliable = _cld2_once(text)
    cld2_hint = _HINT_CODES.get(hint, hint)
    if hint and cld2_hint in _CLD2_HINTS and not _close(code, hint):
        code, reliable = _cld2_once(text, cld2_hint)
    return code, reliable


def _share(counts: Counter[str], script: str) -> float:
    total = sum(counts.values())
    if not total:
        return 0.0
    n = sum(counts[s] for s in CJK_SCRIPTS) if script == "cjk" else counts[script]
    return n / total


def _cyrillic(text: str, hint: str) -> str:
    if hint and script_of(hint) == "cyrillic":
        return hint
    if _UK_LETTERS.search(text):
        return "uk"
    if _BE_LETTERS.search(text):
        return "be"
    if _SR_LETTERS.search(text):
        return "sr"
    return "ru"


def _by_script(text: str, hint: str = "") -> str:
    """The language the letters' script names (Hangul → ko, ...), or the hint's when it is written in it."""
    counts = script_counts(text[:SCRIPT_SAMPLE])
    total = sum(counts.values())
    if not total:
        return ""
    if counts["kana"] >= 0.05 * total:
        return "ja"
    if counts["hangul"] >= 0.2 * total:
        return "ko"
    script, n = counts.most_common(1)[0]
    if n < 0.5 * total:
        return ""
    if hint and script_of(hint) == ("cjk" if script in CJK_SCRIPTS else script):
        return hint
    if script == "cyrillic":
        return _cyrillic(text, hint)
    if script == "arabic":
        return "fa" if _FA_LETTERS.search(text) else "ar"
    return _SCRIPT_LANG.get(script, "")


def _letters(text: str, enough: int) -> int:
    """Letters in ``text``, counted up to ``enough``."""
    return sum(1 for _ in itertools.islice(_LETTER.finditer(text), enough))


def _is_japanese(text: str) -> bool:
    """Kana among the Han characters make a text Japanese, whatever the Han characters suggest."""
    sample = text[:SCRIPT_SAMPLE]
    kana = len(_SCRIPT_RE["kana"].findall(sample))
    return kana > 0 and kana >= 0.05 * len(_LETTER.findall(sample))


def _settle(text: str, found: str, hint: str) -> str:
    """A short question CLD2 names differently from its page (``hint``): whose language is it?

    CLD2 reads names and borrowed words as their own language ("Was ist das Engineering News-Record?" is
    English to it) and has no answer for some plain Russian questions. The question is the page's
    language when it is written in the page's (non-Latin) script, or when it holds more of that
    language's function words than of CLD2's choice; else CLD2, asked again with the hint, decides.
    """
    hint_script, found_script = script_of(hint), script_of(found)
    if hint_script != "latin":
        if found_script != hint_script and _share(script_counts(text[:SCRIPT_SAMPLE]), hint_script) >= 0.2:
            return hint
        mark = _CYRILLIC_MARKS.get(found)
        if found_script == hint_script == "cyrillic" and mark is not None and not mark.search(text):
            return hint  # "Где правила династия Чан?" is not Serbian without a Serbian letter
    elif not found or found_script == "latin":
        words = _WORD.findall(text.casefold())
        theirs = sum(w in stopwords(found) for w in words)
        ours = sum(w in stopwords(hint) for w in words)
        if ours != theirs:
            return hint if ours > theirs else found
    again, _ = _cld2(text, hint)
    return again or _by_script(text, hint)


def detect(text: str, hint: str = "") -> str:
    """Language of ``text`` (a question or a page sample); ``hint``, the page's language, settles doubt."""
    sample = text[:SAMPLE_CHARS]
    if _letters(sample, MIN_LETTERS) < MIN_LETTERS:
        return ""
    if _UNENCODABLE.search(sample):
        sample = _UNENCODABLE.sub(" ", sample)
    hint = primary_tag(hint)
    found, _ = _cld2_once(sample)
    if hint and not _close(found, hint):
        found = _settle(sample, found, hint)
    if found in ("zh", "ko") and _is_japanese(sample):
        return "ja"  # kana makes it Japanese whatever the Han characters suggest
    return found or _by_script(sample, hint)


def detect_language(text: str, declared: str = "") -> str:
    """Language of a page's ``text``; the ``declared`` tag (``<html lang>``) wins unless the text clearly disagrees.

    A declared tag names a dialect or script CLD2 does not tell apart (``sr`` in Latin letters, ``no`` vs
    ``nb``), so it is kept whenever the text is in a close language or the detector is unsure; a template
    default (``lang="en"`` on a French article) is overruled by a reliable answer from enough text.
    """
    tag = primary_tag(declared)
    sample = text[:SAMPLE_CHARS]
    if not tag:
        return detect(sample)
    letters = _letters(sample, 100)
    found, reliable = _cld2(sample, tag) if letters >= MIN_LETTERS else ("", False)
    if tag in ("zh", "ja") and found in ("zh", "ja"):
        return detect(sample) or tag  # a "zh" page full of kana is Japanese
    if found and _close(found, tag):
        return tag
    if not found:
        script = dominant_script(sample)
        return tag if not script or script == script_of(tag) else (_by_script(sample) or found)
    if reliable and letters >= 100:
        return found
    return tag if dominant_script(sample) in ("", script_of(tag)) else found


def _close(a: str, b: str) -> bool:
    return a == b or any(a in g and b in g for g in _CLOSE)


def same_language(query_lang: str, page_lang: str) -> bool | None:
    """True/False when both are known; None when either is unknown."""
    q, p = primary_tag(query_lang), primary_tag(page_lang)
    if not q or not p:
        return None
    if {q, p} <= {"ja", "zh"}:
        return True if q == p else None  # a kanji-only Japanese question looks Chinese
    return _close(q, p)


# ---------------------------------------------------------------- stop words (BM25 coverage)
def _words(s: str) -> frozenset[str]:
    return frozenset(s.split())


# Question and function words per language: a question's words that say nothing about whether a page
# answers it. Retrieval leaves them out of BM25's coverage of the question.
_STOPWORDS: dict[str, frozenset[str]] = {
    "en": _words(
        "the of and to in is was what which who whom whose when where why how did does do a an for on with by "
        "from as at that this were are be been has have had it its his her their they than or not"
    ),
    "de": _words(
        "der die das und ist war wer wie was wann wo welche welcher welches warum ein eine einer eines dem den "
        "des im in zu mit von auf für nicht sich auch als bei nach wurde wurden sind hat haben aus"
    ),
    "fr": _words(
        "le la les et est était qui que quoi quand où pourquoi comment un une des du de dans pour sur avec par "
        "au aux ce cette sont ont il elle"
    ),
    "es": _words(
        "el la los las y es era qué que quién cuándo dónde por cómo un una unos del de en para con se su sus fue son al"
    ),
    "it": _words("il lo la gli le e è era che chi quando dove perché come un una dei del della di in per con"),
    "nl": _words("de het een en is was wie wat wanneer waar waarom hoe van in op met voor door zijn werd"),
    "pt": _words("o a os as e é era que quem quando onde por como um uma do da dos das de em para com"),
    "sv": _words("och att det som är för med inte på av den till har jag ett vad vem när var hur vilken"),
    "da": _words("og at det som er for med ikke på af den til har jeg et hvad hvem hvornår hvor hvordan"),
    "no": _words("og at det som er for med ikke på av den til har jeg et hva hvem når hvor hvordan"),
    "pl": _words("i w nie na się z do że jest to jak dla po przez są co kto kiedy gdzie dlaczego"),
    "cs": _words("a v se na je že to s z do jako pro jsou by ale co kdo kdy kde proč jak"),
    "tr": _words("ve bir bu da de için ile çok olarak daha gibi ne var değil mi mı kim nerede"),
    "id": _words("dan yang di ini itu dengan untuk dari tidak ada dalam akan pada apa siapa kapan"),
    "vi": _words("và của là có các không cho được một những trong với người này gì ai"),
    "fi": _words("ja on ei että se oli ovat kuin myös mutta tai hän joka tämä mikä kuka"),
    "hu": _words("a az és hogy nem egy is van meg csak de mint ez mi ki"),
    "ro": _words("și de la în cu pe care este din pentru nu o un sunt ce cine"),
}


def stopwords(lang: str) -> frozenset[str]:
    """Function and question words of ``lang`` (empty for languages without a list)."""
    return _STOPWORDS.get(primary_tag(lang), frozenset())


# Languages that capitalise every noun: there a capital letter does not mark a name.
_CAPITALISED_NOUNS = frozenset({"de", "lb"})


def capitals_mark_names(lang: str) -> bool:
    """Whether a capitalised word inside a sentence of ``lang`` is likely a name: not in German, where every
    noun is capitalised; yes in a language not known (or not given)."""
    return primary_tag(lang) not in _CAPITALISED_NOUNS


# ---------------------------------------------------------------- word forms (BM25 terms)
# The Snowball stemmer BM25 uses per language (PyStemmer's algorithm names); the tokenizer cuts stems to
# 7 letters. Languages without one keep its language-free rule (words cut to their first 7 letters); CJK
# scripts are matched by bigrams. BM25 recall@1 alone, qa-dev-long / qa-dev, cut words -> stems cut:
# en>en 0.835 -> 0.851 / 0.837 -> 0.848, ru>ru 0.782 -> 0.802 / 0.785 -> 0.810, but de>de 0.805 -> 0.789 /
# 0.810 -> 0.797: German (and the Scandinavian languages and Dutch, which build compounds the same way)
# keep cut words, which match the parts of a compound that a stemmer leaves whole.
_STEMMERS: dict[str, str] = {
    "en": "english", "fr": "french", "es": "spanish", "it": "italian", "pt": "portuguese", "fi": "finnish",
    "hu": "hungarian", "ro": "romanian", "tr": "turkish", "ru": "russian", "pl": "polish",
    "cs": "czech", "sr": "serbian", "lt": "lithuanian", "et": "estonian", "ca": "catalan", "eu": "basque",
    "ga": "irish", "el": "greek", "id": "indonesian", "ms": "indonesian", "ar": "arabic", "fa": "persian",
    "hi": "hindi", "ne": "nepali", "ta": "tamil", "hy": "armenian", "yi": "yiddish", "eo": "esperanto",
}  # fmt: skip


def stemmer_of(lang: str) -> str:
    """The Snowball algorithm BM25 stems ``lang``'s words with, or "" for none."""
    return _STEMMERS.get(primary_tag(lang), "")


_ARABIC_MARKS = re.compile("[\u0610-\u061a\u064b-\u065f\u0670\u06d6-\u06ed\u0640]")  # vowels, tatweel
_ARABIC_LETTERS = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ى": "ي", "ة": "ه", "ؤ": "و", "ئ": "ي"})
# The article with the conjunctions and prepositions written onto it (و ف ب ك ل + ال, and لل).
_ARABIC_ARTICLE = re.compile(r"^(?:[وف]?[بكل]?ال|[وف]?لل)(?=\w{2})")


def normalise_words(lang: str, words: list[str]) -> list[str]:
    """Light normalisation before stemming: Arabic (and Persian, Urdu) words lose vowel marks and the
    article, and letter variants are folded (``المقياس`` and ``مقياس`` become one term)."""
    if script_of(lang) != "arabic":
        return words
    out = []
    for w in words:
        w = _ARABIC_MARKS.sub("", w).translate(_ARABIC_LETTERS)
        out.append(_ARABIC_ARTICLE.sub("", w) or w)
    return out


# ---------------------------------------------------------------- sentences that point back (passages)
# Openings that point back at the sentence before ("This government adopted ...", "All of this set the stage
# ..."): demonstratives and the pronouns and adverbs built on them. A chunk that opens with one continues the
# chunk before it. Personal pronouns ("he", "it") are left out: they open too many sentences that stand alone.
_BACK_WORDS: dict[str, frozenset[str]] = {
    "en": _words("this these those such thereby thus hence"),
    "de": _words("dies diese dieser dieses diesem diesen dadurch damit daher deshalb dabei darauf solche"),
    "fr": _words("ce cet cette ces ceci cela celui celle ceux ainsi"),
    "es": _words("este esta estos estas esto ese esa esos esas eso dicho dicha dichos dichas así"),
    "it": _words("questo questa questi queste ciò tale tali"),
    "pt": _words("este esta estes estas isto esse essa esses essas isso tal"),
    "nl": _words("deze dit die daardoor daarom zulke"),
    "ru": _words("это этот эта эти этого этой этим этом таким такой такая такие поэтому"),
    "uk": _words("це цей ця ці цього цієї цим тому"),
    "pl": _words("ten ta to te tego tej tym dlatego taki taka"),
}
_BACK_PHRASES: dict[str, tuple[str, ...]] = {"en": ("all of this", "all this", "all of these")}
# Scripts written without spaces: the openings as prefixes (この "this", その "that", 同社 "the same firm").
_BACK_PREFIXES: dict[str, tuple[str, ...]] = {
    "ja": ("この", "その", "これ", "それ", "こう", "そう", "同"),
    "zh": ("这", "這", "该", "該", "此", "上述", "同"),
    "ko": ("이 ", "이러", "이는", "이것", "이에", "그 ", "그러", "그것", "이와", "해당"),
}
_OPENING = re.compile(r"[\W_]*([^\W\d_]+)")


def refers_back(text: str, lang: str) -> bool:
    """Whether ``text`` (in ``lang``) opens by pointing back at what came before it."""
    tag = primary_tag(lang)
    start = text.lstrip(" \t\n\"'“‘«(*#>-")[:24]
    prefixes = _BACK_PREFIXES.get(tag)
    if prefixes is not None:
        return start.startswith(prefixes)
    low = start.lower()
    if any(low.startswith(p) for p in _BACK_PHRASES.get(tag, ())):
        return True
    m = _OPENING.match(low)
    return m is not None and m.group(1) in _BACK_WORDS.get(tag, frozenset())
