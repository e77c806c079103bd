"""Wall detection: is this page the content, or something standing in front of it?

``detect(page, doc)`` runs after extraction on every HTML page, from every
source (the extension's captures too: a login page is a login page). It
returns a :class:`TrawlError` for

=================  ==================  ==============================================
kind               code                evidence (always together with little content)
=================  ==================  ==============================================
paywall            BLOCKED             "subscribe to continue reading"-style phrases,
                                       ``isAccessibleForFree: false``, paywall markup
login form         LOGIN_REQUIRED      a password field, a sign-in URL or title with
                                       a username field, or HTTP 401
bot challenge      BLOCKED             Cloudflare / Incapsula / DataDome / PerimeterX
                                       / Akamai markers, captcha widgets, "checking
                                       your browser" phrases, HTTP 403/429/503
consent wall       BLOCKED             a consent.* host, or text that is mostly
                                       cookie-consent vocabulary with an accept button
empty JS shell     EMPTY_RENDER        scripts or an empty mount point and almost no
                                       visible text
=================  ==================  ==============================================

and ``None`` otherwise. Every rule needs the page to carry little readable
content, so an article that mentions "log in", a page with a newsletter form
or a site header with a sign-in box is never a wall; pages with more than
``MAX_WALL_WORDS`` words of main content skip the rules altogether (that is
also what keeps detection cheap). Thresholds are named below and were checked
against the 1,497 WCXB dev pages (``benchmarks/bench_walls.py``).
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import urlsplit

from .lang import CJK_CLASS
from .types import Document, ErrorCode, Page, TrawlError

# ----------------------------------------------------------------- thresholds
LOGIN_MAX_WORDS = 150  # a password form with more content than this is a page with a login box
LOGIN_TITLED_MAX_WORDS = 300  # ... unless the title says "sign in"
LOGIN_MAX_VISIBLE = 500  # whole-page visible words (navigation and footer included)
PAYWALL_MAX_WORDS = 350  # a teaser; a full article is longer
PAYWALL_WEAK_MAX_WORDS = 175  # weaker evidence needs an even shorter page
CHALLENGE_MAX_WORDS = 200
CHALLENGE_MAX_VISIBLE = 300
CONSENT_MAX_WORDS = 300
CONSENT_MAX_VISIBLE = 800
SHELL_MAX_WORDS = 25  # main-content words on a page that rendered nothing
SHELL_VISIBLE_WORDS = 8  # "Loading…": a real page, however small, says more
SHELL_MOUNT_MAX_VISIBLE = 150  # with an empty app mount point and script-heavy HTML
MAX_WALL_WORDS = max(LOGIN_TITLED_MAX_WORDS, PAYWALL_MAX_WORDS, CHALLENGE_MAX_WORDS, CONSENT_MAX_WORDS)
HTML_SCAN_CHARS = 3_000_000  # visible text is computed from this much HTML
MARKUP_SCAN_CHARS = 400_000  # markers are looked for in the first part of the HTML
TEXT_SCAN_CHARS = 20_000  # phrases are looked for in the first part of the visible text
VISIBLE_SCAN_CHARS = 300_000  # of the HTML left once scripts and styles are gone
COUNT_SCAN_CHARS = 60_000  # words are counted up to here: beyond it a page is never "little content"

# ----------------------------------------------------------------- vocabulary
_LOGIN_RE = re.compile(
    r"(?i)sign[\s-]?in|log[\s-]?in|sign[\s-]?on|anmelden|anmeldung|einloggen|connexion|se connecter|identifiez"
    r"|iniciar sesi[oó]n|inicia sesi[oó]n|acceder|accedi|entrar|iniciar sess[aã]o|fazer login|inloggen|aanmelden"
    r"|zaloguj|logowanie|войти|вход|авторизация|увійти|ログイン|サインイン|登录|登入|登錄|로그인|giriş yap"
    r"|oturum aç|logga in|kirjaudu|přihlásit|bejelentkezés|تسجيل الدخول"
)
_LOGIN_PATH_RE = re.compile(r"(?i)/(?:login|log-in|signin|sign-in|sign_in|logon|auth|sso|session/new|account/login|"
                            r"users/sign_in|accounts/login|oauth2?/authorize|idp|saml)\b")
_PASSWORD_RE = re.compile(r"""<input\b[^<>]{0,400}?\btype\s*=\s*["']?password\b""")
_USERNAME_RE = re.compile(
    r"""<input\b[^<>]{0,400}?\b(?:type\s*=\s*["']?email\b|(?:name|id|autocomplete)\s*=\s*["']?"""
    r"""[\w\[\]-]{0,20}(?:user(?:name)?|email|login|identifier)\b)"""
)

_PAYWALL_MARKERS = ("paywall", "pay-wall", "regwall", "metered-content", "meteredcontent", "subscriber-only",
                    "premium-wall", "premium-content-lock", "article-locked", "tp-modal", "piano-offer")
_NOT_FREE_RE = re.compile(r""""isaccessibleforfree"\s*:\s*"?false""")
_PAYWALL_TEXT_RE = re.compile(
    r"(?i)(?:subscribe|sign up|register|log in|create a free account) to (?:continue|keep) reading"
    r"|to continue reading,? (?:please )?(?:subscribe|log in|sign in|register|become a (?:member|subscriber))"
    r"|(?:this|the) (?:article|story|content) is (?:only )?(?:available )?(?:for|to) (?:subscribers|members)"
    r"|subscribers? only|exclusive(?:ly)? for subscribers"
    r"|you(?:'ve| have) (?:reached|used) (?:your|all) (?:limit of )?(?:\w+ )?free (?:articles|stories)"
    r"|weiterlesen mit|jetzt abonnieren|nur für abonnenten|artikel ist abonnenten"
    r"|réservé aux abonnés|article réservé|il vous reste \d+ ?% de l'article"
    r"|solo para suscriptores|exclusivo para suscriptores|riservato agli abbonati|exclusivo para assinantes"
    r"|только для подписчиков|доступно подписчикам|会員限定|有料会員|订阅后阅读|付费内容|구독자 전용"
)
# Shown on full articles too: counts only on a short page with paywall markup.
_PAYWALL_WEAK_RE = re.compile(
    r"(?i)already a subscriber|already have an account\?|déjà abonné|bereits abonnent|ya eres suscriptor"
    r"|уже подписаны|subscribe (?:now|today) for (?:full|unlimited) access"
)

_CHALLENGE_MARKERS = (
    "/cdn-cgi/challenge-platform/h/", "cf-browser-verification", "cf_chl_opt", "cf-chl-", 'id="challenge-form"',
    "_incapsula_resource", "incapsula incident id", "captcha-delivery.com", "px-captcha", "/_sec/cp_challenge",
    "ddos-guard", "sucuri website firewall", "awswaf", "aws-waf-token", "g-recaptcha", "h-captcha",
    "cf-turnstile", "challenges.cloudflare.com/turnstile",
)
_CHALLENGE_TEXT_RE = re.compile(
    r"(?i)checking (?:if the site connection is secure|your browser)|just a moment\.\.\."
    r"|verify(?:ing)? you are (?:a )?human"
    r"|attention required!? \| cloudflare|why have i been blocked|enable javascript and cookies to continue"
    r"|access to this page has been denied|pardon our interruption|request unsuccessful\. incapsula"
    r"|unusual traffic from your computer network|are you a robot|press (?:&|and) hold"
    r"|please complete the security check"
    r"|please verify you are (?:a )?human|one more step|ddos protection by|bot (?:protection|detection) "
    r"|access denied.{0,200}reference #|bitte bestätigen sie, dass sie ein mensch sind|vérifiez que vous êtes humain"
    r"|проверка браузера|подтвердите, что вы не робот|人机验证|ロボットではありません"
)
_DENIED_TEXT_RE = re.compile(r"(?i)access denied|forbidden|you have been blocked|too many requests|rate limit")

_CONSENT_HOST_RE = re.compile(r"(?i)^(?:consent|cmp|privacy-?center|cookie-?consent)\.")
_CONSENT_WORD_RE = re.compile(
    r"(?i)\b(?:cookies?|consent|partners?|vendors?|legitimate interest|personali[sz]ed|preferences|tracking"
    r"|datenschutz|einwilligung|zustimm\w*|akzeptier\w*|consentement|traceurs|согласи\w*|куки)\b"
    r"|同意|クッキー|쿠키"
)
_CONSENT_ACCEPT_RE = re.compile(
    r"(?i)accept all|accept cookies|allow all|agree(?: and| &) (?:close|continue|proceed)|i agree|i accept"
    r"|alle akzeptieren|zustimmen|akzeptieren und weiter|tout accepter|j'accepte|aceptar todo|aceptar cookies"
    r"|accetta tutto|accetto|aceitar tudo|alles accepteren|akceptuj|принять все|согласен|同意する|全部接受|모두 동의"
)

_NOSCRIPT_JS_RE = re.compile(
    r"(?s)<noscript\b[^<>]{0,200}>.{0,400}?(?:enable|activate|turn on|aktivieren)\s+javascript"
)
_MOUNT_RE = re.compile(
    r"""<(?:div|main|app-root)\b[^<>]{0,200}?\bid\s*=\s*["']?(?:root|app|__next|__nuxt|svelte|main-app|"""
    r"""application|app-root|react-root|mount|ember-application)["'\s>][^<>]{0,400}>\s*</(?:div|main|app-root)>"""
    r"""|<app-root>\s*</app-root>"""
)
_TITLE_RE = re.compile(r"(?is)<title\b[^<>]{0,200}>([^<]{0,1000})</title>")
_HEADING_OPEN_RE = re.compile(r"<h[12]\b")
_TAG_RE = re.compile(r"<[^<>]{0,2000}>")
_INVISIBLE_TAGS = ("script", "style", "noscript", "svg", "head")  # not template: shadow roots live there
_CHROME_TAGS = ("form", "header", "nav", "footer", "aside")
_MD_LINK_RE = re.compile(r"!?\[([^\[\]\n]{0,500})\]\([^()\n]{0,2000}\)")
_WORD_RE = re.compile(r"[^\W\d_]{2,}|\d+")
_CJK_RE = re.compile(f"[{CJK_CLASS}]")


def _words(text: str) -> int:
    """Word count; CJK characters count half a word each (no spaces to split on)."""
    cjk = len(_CJK_RE.findall(text))
    latin = len(_WORD_RE.findall(_CJK_RE.sub(" ", text) if cjk else text))
    return latin + cjk // 2


def _strip_blocks(html: str, tags: tuple[str, ...]) -> tuple[str, dict[str, int]]:
    """Remove ``<tag ...>...</tag>`` blocks and comments in one linear pass (an unclosed block runs to the end).

    Hand-rolled: one ``<(a|b)>.*?</\\1>`` regex turns quadratic on pages full of unclosed tags.
    """
    opener = re.compile(r"(?i)<!--|<(" + "|".join(tags) + r")(?=[\s/>])")
    parts: list[str] = []
    removed: dict[str, int] = {}
    pos = 0
    while (m := opener.search(html, pos)) is not None:
        parts.append(html[pos : m.start()])
        tag = (m.group(1) or "").lower()
        if tag:
            close = re.compile(rf"(?i)</{tag}\s*>").search(html, m.end())
            end = close.end() if close is not None else len(html)
        else:
            at = html.find("-->", m.end())
            end = at + 3 if at >= 0 else len(html)
        removed[tag or "comment"] = removed.get(tag or "comment", 0) + end - m.start()
        parts.append(" ")
        pos = end
    parts.append(html[pos:])
    return "".join(parts), removed


@dataclass(frozen=True)
class _Signals:
    """What the rules look at, each computed once and only when a rule asks."""

    page: Page
    doc: Document

    @cached_property
    def text(self) -> str:
        return _MD_LINK_RE.sub(r"\1", (self.doc.markdown or "")[:COUNT_SCAN_CHARS])

    @cached_property
    def words(self) -> int:
        """Words of main content, as the extractor found it (counted up to a window: beyond is "many")."""
        if len(self.doc.markdown or "") > COUNT_SCAN_CHARS:
            return max(_words(self.text), 10 * MAX_WALL_WORDS)
        return _words(self.text)

    @cached_property
    def markup(self) -> str:
        """The first part of the HTML, lower-cased, for literal markers."""
        return (self.page.html or "")[:MARKUP_SCAN_CHARS].lower()

    @cached_property
    def stripped(self) -> tuple[str, dict[str, int]]:
        """The HTML without invisible blocks (script, style, ...), and the characters each kind took."""
        return _strip_blocks((self.page.html or "")[:HTML_SCAN_CHARS], _INVISIBLE_TAGS)

    @cached_property
    def visible_text(self) -> str:
        text = html.unescape(_TAG_RE.sub(" ", self.stripped[0][:VISIBLE_SCAN_CHARS]))
        return re.sub(r"\s+", " ", text).strip()

    @cached_property
    def visible_words(self) -> int:
        """Visible words; any page with more visible text than the scan window counts as "many"."""
        if len(self.visible_text) > COUNT_SCAN_CHARS:
            return max(_words(self.visible_text[:COUNT_SCAN_CHARS]), 10 * CONSENT_MAX_VISIBLE)
        return _words(self.visible_text)

    @cached_property
    def body_words(self) -> int:
        """Visible words outside forms and page chrome (header, nav, footer, aside)."""
        body = _strip_blocks(self.stripped[0][:VISIBLE_SCAN_CHARS], _CHROME_TAGS)[0]
        return _words(_TAG_RE.sub(" ", body)[:COUNT_SCAN_CHARS])

    @cached_property
    def title(self) -> str:
        t = self.doc.title or self.page.title
        if not t:
            m = _TITLE_RE.search(self.markup[:200_000])
            t = m.group(1) if m else ""
        return re.sub(r"\s+", " ", t).strip()

    @cached_property
    def head_text(self) -> str:
        """Title plus the first headings: where a page says what it is."""
        heads = []
        for m, _ in zip(_HEADING_OPEN_RE.finditer(self.markup, 0, 200_000), range(3), strict=False):
            window = self.markup[m.end() : m.end() + 600]
            end = window.find("</h")
            heads.append(_TAG_RE.sub(" ", "<" + window[: end if end >= 0 else 0]))
        return " ".join([self.title, *heads])

    @cached_property
    def host(self) -> str:
        return urlsplit(self.page.final_url or self.page.url).hostname or ""

    def phrase(self, rx: re.Pattern[str], *, limit: int = TEXT_SCAN_CHARS) -> re.Match[str] | None:
        return rx.search(self.text[:limit]) or rx.search(self.visible_text[:limit])


# ----------------------------------------------------------------- rules
_HIDDEN_RE = re.compile(
    r"""display\s*:\s*none|visibility\s*:\s*hidden|\shidden(?:\s|=|>|/)|aria-hidden\s*=\s*["']?true"""
    r"""|class\s*=\s*["'][^"'<>]{0,200}\b(?:hidden|d-none|is-hidden|visually-hidden|sr-only)\b"""
)


def _visible_password(markup: str) -> bool:
    """A password field not hidden itself nor inside a hidden form (forums keep a hidden login form on every page)."""
    for m, _ in zip(_PASSWORD_RE.finditer(markup), range(5), strict=False):
        tag_end = markup.find(">", m.end())
        if _HIDDEN_RE.search(markup[m.start() : tag_end + 1 if tag_end >= 0 else m.end()]):
            continue
        form_at = markup.rfind("<form", max(0, m.start() - 20_000), m.start())
        if form_at >= 0 and markup.rfind("</form", form_at, m.start()) < 0:
            form_end = markup.find(">", form_at)
            if _HIDDEN_RE.search(markup[form_at : form_end + 1 if form_end >= 0 else form_at + 500]):
                continue
        return True
    return False


def _paywall(s: _Signals) -> str | None:
    if s.words > PAYWALL_MAX_WORDS:
        return None
    markup = any(m in s.markup for m in _PAYWALL_MARKERS) or bool(_NOT_FREE_RE.search(s.markup))
    hit = s.phrase(_PAYWALL_TEXT_RE)
    if hit and (markup or s.words < PAYWALL_WEAK_MAX_WORDS):
        return f"paywall: \u201c{hit.group(0)}\u201d and {s.words} words of content"
    weak = s.phrase(_PAYWALL_WEAK_RE)
    if weak and markup and s.words < PAYWALL_WEAK_MAX_WORDS:
        return f"paywall: \u201c{weak.group(0)}\u201d, paywall markup and {s.words} words of content"
    return None


def _login(s: _Signals) -> str | None:
    if s.words > LOGIN_TITLED_MAX_WORDS:
        return None
    if s.page.status == 401:
        return "login page: HTTP 401"
    if s.visible_words > LOGIN_MAX_VISIBLE:
        return None
    titled = bool(_LOGIN_RE.search(s.head_text))
    words = max(s.words, s.body_words)
    if _visible_password(s.markup) and (words <= LOGIN_MAX_WORDS or (titled and words <= LOGIN_TITLED_MAX_WORDS)):
        return f"login page: a password field and {words} words of content"
    asked = urlsplit(s.page.url).path
    landed = urlsplit(s.page.final_url or s.page.url).path
    login_url = bool(_LOGIN_PATH_RE.search(landed)) and (asked != landed or titled)
    if (titled or login_url) and words <= LOGIN_MAX_WORDS and _USERNAME_RE.search(s.markup):
        return f"login page: a sign-in form ({'sign-in URL' if login_url else 'sign-in title'}), {words} words"
    return None


def _challenge(s: _Signals) -> str | None:
    if s.words > CHALLENGE_MAX_WORDS or s.visible_words > CHALLENGE_MAX_VISIBLE:
        return None
    hit = _CHALLENGE_TEXT_RE.search(s.head_text) or _CHALLENGE_TEXT_RE.search(s.visible_text[:5000])
    marker = next((m for m in _CHALLENGE_MARKERS if m in s.markup), None)
    if hit and (marker or s.words < CHALLENGE_MAX_WORDS // 2):
        return f"bot check: \u201c{hit.group(0)[:60]}\u201d"
    if marker and s.words < 60:
        return f"bot check: {marker!r} on a page with {s.words} words"
    if s.page.status in (403, 429, 503) and s.words < 60 and _DENIED_TEXT_RE.search(s.visible_text[:3000]):
        return f"blocked: HTTP {s.page.status}"
    return None


def _consent(s: _Signals) -> str | None:
    if _CONSENT_HOST_RE.match(s.host):
        return f"consent wall: redirected to {s.host}"
    if s.words > CONSENT_MAX_WORDS or s.visible_words > CONSENT_MAX_VISIBLE:
        return None
    text = s.text if s.words >= 15 else s.visible_text
    hits = _CONSENT_WORD_RE.findall(text[:TEXT_SCAN_CHARS])
    distinct = {h.lower().rstrip("s") for h in hits}
    total = max(1, _words(text[:TEXT_SCAN_CHARS]))
    if len(distinct) >= 3 and len(hits) * 12 >= total and _CONSENT_ACCEPT_RE.search(s.visible_text[:TEXT_SCAN_CHARS]):
        return f"consent wall: cookie-consent text is the page ({len(hits)} consent words in {total})"
    return None


def _shell(s: _Signals) -> str | None:
    # Distinct words: extractors sometimes fill an empty page with its title repeated from metadata.
    distinct = len({w.lower() for w in _WORD_RE.findall(s.text)}) if s.words > SHELL_MAX_WORDS else s.words
    if distinct > SHELL_MAX_WORDS or s.visible_words > SHELL_MOUNT_MAX_VISIBLE:
        return None
    scripts = s.markup.count("<script")
    noscript = bool(_NOSCRIPT_JS_RE.search(s.markup))
    mount = bool(_MOUNT_RE.search(s.markup))
    if s.visible_words <= SHELL_VISIBLE_WORDS and (scripts or noscript or mount):
        return f"empty page: {s.visible_words} visible words, {scripts} scripts"
    if (mount or noscript) and s.stripped[1].get("script", 0) > 4 * max(1, len(s.visible_text)):
        return f"JavaScript app shell: an empty {'mount point' if mount else 'page'} and {s.visible_words} words"
    return None


_RULES = (
    (_paywall, ErrorCode.BLOCKED, "paywall"),
    (_login, ErrorCode.LOGIN_REQUIRED, "login"),
    (_challenge, ErrorCode.BLOCKED, "challenge"),
    (_consent, ErrorCode.BLOCKED, "consent"),
    (_shell, ErrorCode.EMPTY_RENDER, "shell"),
)

_HINTS = {
    "paywall": "The article is behind a paywall. If the user subscribes, open it in their browser with the "
    "trawl extension attached and ask again.",
    "login": "The page needs a signed-in session. Open it in your browser where you are logged in, with the "
    "trawl extension attached, and ask again.",
    "challenge": "The site showed a bot check instead of the page. Open it in your browser with the trawl "
    "extension attached and ask again.",
    "consent": "A cookie-consent wall hides the page. Open it in your browser with the trawl extension "
    "attached (answer the banner once) and ask again.",
    "shell": "The page is a JavaScript app that rendered no readable text. Open it in your browser with the "
    "trawl extension attached and ask again.",
}
_EXTENSION_HINTS = {
    "paywall": "The tab shows a paywall; the user's account has no access to this article.",
    "login": "The tab shows a sign-in page. Ask the user to log in to the site in that browser, then ask again.",
    "challenge": "The tab shows a bot check. Ask the user to complete it in the browser, then ask again.",
    "consent": "The tab shows a cookie-consent wall. Ask the user to answer it in the browser, then ask again.",
    "shell": "The tab has no readable text yet. Wait for it to finish loading, then ask again.",
}


def _find(page: Page, doc: Document) -> tuple[str, ErrorCode, str] | None:
    if page.kind != "html" or not page.html:
        return None
    s = _Signals(page, doc)
    if s.words > MAX_WALL_WORDS and not _CONSENT_HOST_RE.match(s.host):
        return None  # plenty of content: not a wall (and the common case stays cheap)
    for rule, code, kind in _RULES:
        why = rule(s)
        if why is not None:
            return kind, code, why
    return None


class WallError(TrawlError):
    """A wall, as the typed error the agent gets; ``kind`` says which ("paywall", "login", ...)."""

    def __init__(self, kind: str, code: ErrorCode, message: str, hint: str) -> None:
        super().__init__(code, message, hint)
        self.kind = kind


def detect(page: Page, doc: Document) -> WallError | None:
    """The wall this page is, as a typed error with a hint the agent can pass on; None for content."""
    found = _find(page, doc)
    if found is None:
        return None
    kind, code, why = found
    hints = _EXTENSION_HINTS if page.source == "extension" else _HINTS
    return WallError(kind, code, why, hints[kind])


def classify(page: Page, doc: Document) -> str | None:
    """The wall kind ("paywall", "login", "challenge", "consent", "shell") or None; for benchmarks and tests."""
    found = _find(page, doc)
    return found[0] if found else None
