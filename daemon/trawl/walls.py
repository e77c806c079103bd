"""Wall detection: is this page the content, or something standing in front of it?

``detect(page, doc)`` runs after extraction on every HTML page, from every
source (the extension's captures too: a login page is a login page). It
returns a :class:`TrawlError` for

=================  ==================  ==============================================
kind               code                evidence (always together with little content)
=================  ==================  ==============================================
paywall            BLOCKED             ``isAccessibleForFree: false`` / paywall
                                       markup / "subscribe to continue" phrases
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

and ``None`` otherwise. Every rule requires the page to carry little readable
content: an article that mentions "log in", a page with a newsletter form or
a site header with a sign-in box is never a wall. The thresholds are named
below and were checked against the 1,497 WCXB dev pages
(``benchmarks/bench_walls.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from urllib.parse import urlsplit

from .types import Document, ErrorCode, Page, TrawlError

# ----------------------------------------------------------------- thresholds
SCAN_CHARS = 3_000_000  # markers are looked for in the first part of big pages
LOGIN_MAX_WORDS = 150  # a password form with more content than this is a page with a login box
LOGIN_TITLED_MAX_WORDS = 300  # ... unless the title says "sign in"
PAYWALL_MAX_WORDS = 350  # a teaser; a full article is longer
CHALLENGE_MAX_WORDS = 200
CONSENT_MAX_WORDS = 300
SHELL_MAX_WORDS = 25  # visible words on a page that rendered nothing
SHELL_MOUNT_MAX_WORDS = 150  # with an empty app mount point and script-heavy HTML
# Visible text of the whole page (navigation, footer included) caps each rule too, so a page whose
# extractor kept little (a product grid, a table) but which shows plenty is never taken for a wall.
LOGIN_MAX_VISIBLE = 500
CHALLENGE_MAX_VISIBLE = 300
CONSENT_MAX_VISIBLE = 800

# ----------------------------------------------------------------- vocabulary
_LOGIN_TERMS = (
    r"sign[\s-]?in|log[\s-]?in|sign[\s-]?on|anmelden|anmeldung|einloggen|connexion|se connecter|identifiez"
    r"|iniciar sesi[oó]n|inicia sesi[oó]n|acceder|accedi|entrar|iniciar sess[aã]o|fazer login|inloggen|aanmelden"
    r"|zaloguj|logowanie|войти|вход|авторизация|увійти|ログイン|サインイン|登录|登入|登錄|로그인|giriş yap"
    r"|oturum aç|logga in|kirjaudu|přihlásit|bejelentkezés|تسجيل الدخول"
)
_LOGIN_RE = re.compile(rf"(?i)(?:{_LOGIN_TERMS})")
_LOGIN_PATH_RE = re.compile(r"(?i)/(?:login|log-in|signin|sign-in|sign_in|logon|auth|sso|session/new|account/login|"
                            r"users/sign_in|accounts/login|oauth2?/authorize|idp|saml)\b")
_PASSWORD_RE = re.compile(r"""(?i)<input\b[^>]{0,400}?\btype\s*=\s*["']?password\b""")
_USERNAME_RE = re.compile(
    r"""(?i)<input\b[^>]{0,400}?\b(?:type\s*=\s*["']?email\b|(?:name|id|autocomplete)\s*=\s*["']?"""
    r"""[\w\[\]-]{0,20}(?:user(?:name)?|email|login|identifier)\b)"""
)

_PAYWALL_MARKUP_RE = re.compile(
    r"""(?i)"isAccessibleForFree"\s*:\s*"?false|\b(?:class|id)\s*=\s*["'][^"']{0,200}?"""
    r"""\b(?:paywall|pay-wall|regwall|metered-?content|subscriber-only|premium-(?:wall|content-lock)|"""
    r"""article-locked|tp-modal|piano-(?:offer|paywall)|fc-paywall)\b"""
)
_PAYWALL_TEXT_RE = re.compile(
    r"(?i)(?:subscribe|sign up|register|log in|create a free account) to (?:continue|keep) reading"
    r"|to continue reading,? (?:please )?(?:subscribe|log in|sign in|register|become a (?:member|subscriber))"
    r"|(?:this|the) (?:article|story|content) is (?:only )?(?:available )?(?:for|to) (?:subscribers|members)"
    r"|subscribers? only|exclusive(?:ly)? for subscribers|already a subscriber"
    r"|you(?:'ve| have) (?:reached|used) (?:your|all) (?:limit of )?(?:\w+ )?free (?:articles|stories)"
    r"|weiterlesen mit|jetzt abonnieren|nur für abonnenten|artikel ist abonnenten"
    r"|réservé aux abonnés|article réservé|il vous reste \d+ ?% de l'article"
    r"|solo para suscriptores|exclusivo para suscriptores|riservato agli abbonati|exclusivo para assinantes"
    r"|только для подписчиков|доступно подписчикам|会員限定|有料会員|订阅后阅读|付费内容|구독자 전용"
)

_CHALLENGE_MARKUP_RE = re.compile(
    r"(?i)/cdn-cgi/challenge-platform/h/|cf-browser-verification|cf_chl_opt|\bcf-chl-|id=[\"']challenge-form"
    r"|_Incapsula_Resource|Incapsula incident ID|captcha-delivery\.com|geo\.captcha-delivery"
    r"|\bpx-captcha\b|/_sec/cp_challenge|ddos-guard|sucuri[\s_-]?(?:website )?firewall|awswaf|aws-waf-token"
    r"|class=[\"'][^\"']{0,80}\b(?:g-recaptcha|h-captcha|cf-turnstile)\b|challenges\.cloudflare\.com/turnstile"
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
    r"|datenschutz|einwilligung|zustimm\w*|akzeptier\w*|consentement|traceurs|cookies?|согласи\w*|куки)\b"
    r"|同意|クッキー|쿠키"
)
_CONSENT_ACCEPT_RE = re.compile(
    r"(?i)accept all|accept cookies|allow all|agree(?: and| &) (?:close|continue|proceed)|i agree|i accept"
    r"|alle akzeptieren|zustimmen|akzeptieren und weiter|tout accepter|j'accepte|aceptar todo|aceptar cookies"
    r"|accetta tutto|accetto|aceitar tudo|alles accepteren|akceptuj|принять все|согласен|同意する|全部接受|모두 동의"
)

_SCRIPT_RE = re.compile(r"(?is)<script\b[^>]*>(.*?)</script\s*>")
_INVISIBLE_RE = re.compile(r"(?is)<(script|style|noscript|svg|head)\b[^>]*>.*?</\1\s*>|<!--.*?-->")
_TAG_RE = re.compile(r"(?s)<[^>]+>")
_NOSCRIPT_JS_RE = re.compile(r"(?is)<noscript\b[^>]*>.{0,400}?(?:enable|activate|turn on|aktivieren)\s+javascript")
_MOUNT_RE = re.compile(
    r"""(?i)<(?:div|main|app-root)\b[^>]{0,200}?\bid\s*=\s*["']?(?:root|app|__next|__nuxt|svelte|main-app|"""
    r"""application|app-root|react-root|mount|ember-application)["'\s>][^>]*>\s*</(?:div|main|app-root)>|<app-root>\s*</app-root>"""
)
_MD_LINK_RE = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_WORD_RE = re.compile(r"[^\W\d_]{2,}|\d+", re.UNICODE)
_CJK_RE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def _words(text: str) -> int:
    """Word count; CJK characters count half a word each (no spaces to split on)."""
    cjk = len(_CJK_RE.findall(text))
    latin = len(_WORD_RE.findall(_CJK_RE.sub(" ", text)))
    return latin + cjk // 2


@dataclass(frozen=True)
class _Signals:
    page: Page
    doc: Document

    @cached_property
    def html(self) -> str:
        return (self.page.html or "")[:SCAN_CHARS]

    @cached_property
    def text(self) -> str:
        return _MD_LINK_RE.sub(r"\1", self.doc.markdown or "")

    @cached_property
    def words(self) -> int:
        """Words of main content, as the extractor found it."""
        return _words(self.text)

    @cached_property
    def visible_text(self) -> str:
        body = _INVISIBLE_RE.sub(" ", self.html)
        return re.sub(r"\s+", " ", _TAG_RE.sub(" ", body)).strip()

    @cached_property
    def visible_words(self) -> int:
        return _words(self.visible_text)

    @cached_property
    def title(self) -> str:
        t = self.doc.title or self.page.title
        if not t:
            m = re.search(r"(?is)<title\b[^>]*>(.*?)</title>", self.html[:200_000])
            t = m.group(1) if m else ""
        return re.sub(r"\s+", " ", t).strip()

    @cached_property
    def head_text(self) -> str:
        """Title plus the first headings: where a page says what it is."""
        heads = re.findall(r"(?is)<h[12]\b[^>]*>(.*?)</h[12]>", self.html[:SCAN_CHARS])[:3]
        return " ".join([self.title, *(_TAG_RE.sub(" ", h) for h in heads)])

    @cached_property
    def paths(self) -> tuple[str, str]:
        return urlsplit(self.page.url).path, urlsplit(self.page.final_url or self.page.url).path

    @cached_property
    def host(self) -> str:
        return urlsplit(self.page.final_url or self.page.url).hostname or ""

    @cached_property
    def script_chars(self) -> int:
        return sum(len(m.group(1)) for m in _SCRIPT_RE.finditer(self.html)) + 400 * self.html.lower().count("<script")


# ----------------------------------------------------------------- rules
def _paywall(s: _Signals) -> str | None:
    if s.words > PAYWALL_MAX_WORDS:
        return None
    text_hit = _PAYWALL_TEXT_RE.search(s.text) or _PAYWALL_TEXT_RE.search(s.visible_text)
    markup_hit = _PAYWALL_MARKUP_RE.search(s.html)
    if text_hit and (markup_hit or s.words < PAYWALL_MAX_WORDS // 2):
        return f"paywall: \u201c{text_hit.group(0)}\u201d and {s.words} words of content"
    return None


def _login(s: _Signals) -> str | None:
    if s.page.status == 401 and s.words <= LOGIN_TITLED_MAX_WORDS:
        return "login page: HTTP 401"
    if s.visible_words > LOGIN_MAX_VISIBLE:
        return None
    titled = bool(_LOGIN_RE.search(s.head_text))
    password = _PASSWORD_RE.search(s.html)
    if password and (s.words <= LOGIN_MAX_WORDS or (titled and s.words <= LOGIN_TITLED_MAX_WORDS)):
        return f"login page: a password field and {s.words} words of content"
    asked, landed = s.paths
    login_url = bool(_LOGIN_PATH_RE.search(landed)) and (asked != landed or titled)
    if (titled or login_url) and s.words <= LOGIN_MAX_WORDS and _USERNAME_RE.search(s.html):
        return f"login page: a sign-in form ({'sign-in URL' if login_url else 'sign-in title'}), {s.words} words"
    return None


def _challenge(s: _Signals) -> str | None:
    if s.words > CHALLENGE_MAX_WORDS or s.visible_words > CHALLENGE_MAX_VISIBLE:
        return None
    hit = _CHALLENGE_TEXT_RE.search(s.head_text) or _CHALLENGE_TEXT_RE.search(s.visible_text[:5000])
    markup = _CHALLENGE_MARKUP_RE.search(s.html)
    if hit and (markup or s.words < CHALLENGE_MAX_WORDS // 2):
        return f"bot check: \u201c{hit.group(0)[:60]}\u201d"
    if markup and s.words < 60:
        return f"bot check: {markup.group(0)[:40]!r} on a page with {s.words} words"
    if s.page.status in (403, 429, 503) and s.words < 60 and _DENIED_TEXT_RE.search(s.visible_text[:3000]):
        return f"blocked: HTTP {s.page.status}"
    return None


def _consent(s: _Signals) -> str | None:
    if _CONSENT_HOST_RE.match(s.host) and s.words <= CONSENT_MAX_WORDS * 3:
        return f"consent wall: redirected to {s.host}"
    if s.words > CONSENT_MAX_WORDS or s.visible_words > CONSENT_MAX_VISIBLE:
        return None
    text = s.text if _words(s.text) >= 15 else s.visible_text
    hits = _CONSENT_WORD_RE.findall(text)
    distinct = {h.lower().rstrip("s") for h in hits}
    if len(distinct) >= 3 and len(hits) * 12 >= max(1, _words(text)) and _CONSENT_ACCEPT_RE.search(s.visible_text):
        return f"consent wall: cookie-consent text is the page ({len(hits)} consent words in {_words(text)})"
    return None


def _shell(s: _Signals) -> str | None:
    if s.words > SHELL_MAX_WORDS or s.visible_words > SHELL_MOUNT_MAX_WORDS:
        return None
    scripts = s.html.lower().count("<script")
    noscript = bool(_NOSCRIPT_JS_RE.search(s.html))
    mount = bool(_MOUNT_RE.search(s.html))
    if s.visible_words <= SHELL_MAX_WORDS and (scripts or noscript or mount):
        return f"empty page: {s.visible_words} visible words, {scripts} scripts"
    if (mount or noscript) and s.script_chars > 4 * max(1, len(s.visible_text)):
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


def detect(page: Page, doc: Document) -> TrawlError | None:
    """The wall this page is, as a typed error with a hint the agent can pass on; None for content."""
    if page.kind != "html" or not page.html:
        return None
    s = _Signals(page, doc)
    for rule, code, kind in _RULES:
        why = rule(s)
        if why is not None:
            hints = _EXTENSION_HINTS if page.source == "extension" else _HINTS
            return TrawlError(code, why, hints[kind])
    return None


def classify(page: Page, doc: Document) -> str | None:
    """The wall kind ("paywall", "login", "challenge", "consent", "shell") or None; for benchmarks and tests."""
    if page.kind != "html" or not page.html:
        return None
    s = _Signals(page, doc)
    return next((kind for rule, _code, kind in _RULES if rule(s) is not None), None)
