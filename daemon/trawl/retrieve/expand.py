"""Optional query expansion (HyDE): a chat model writes a short hypothetical answer to the question, and the
dense query becomes the question's vector blended with that answer's vector.

    POST {expand_url}/v1/chat/completions   (OpenAI-compatible: llama-server, vLLM, Ollama, LM Studio, OpenAI...)
    request  {"model", "messages": [{"role": "system", ...}, {"role": "user", "content": <the question>}],
              "max_tokens", "temperature": 0, "stream": false}
    reply    {"choices": [{"index": 0, "message": {"role": "assistant", "content": "<answer>"}, ...}], ...}

How it combines: the question's vector q (the embedder's query form) and the answer's vector a (its passage form:
the answer is written like a passage of the page) are both unit length; the query is normalise(q + a), one dense
query with equal weight. One vector keeps fusion, the dense budget and the embedding cache as they are; a second
dense ranking fused by RRF would double the work for the same idea.

What goes out: the question only (never page text), to the endpoint the user configured, and in an agent call only
where the exit rule lets it (``exitflow.endpoint_refusal``: after a private read, not to an endpoint off this
machine nobody vouched for). What comes back is
untrusted: it only shapes a vector, never reaches the agent, the page store or a log line. Every failure (timeout,
HTTP error, malformed or empty reply, an answer that is only whitespace) falls back to the plain question with the
reason in the result's ``warnings``; after a failure the endpoint is skipped for ``endpoint_retry_s``.
Off by default (``expand_url`` empty). Measured effect: see benchmarks/bench_expand.py (no measured win yet).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from typing import Any

import httpx
import numpy as np

from ..exitflow import endpoint_refusal
from ..netguard import endpoint_transport
from ..settings import Settings

log = logging.getLogger("trawl.retrieve.expand")

SYSTEM_PROMPT = (
    "Write a short passage (two or three sentences) that would answer the user's question, in the language of the "
    "question, as it might appear on a web page or in documentation. Plain text only; if you are unsure, write a "
    "plausible answer anyway."
)
MAX_ANSWER_CHARS = 1500  # longer replies are cut: the answer only shapes a vector
CACHE_SIZE = 256


class ExpandError(Exception):
    """The endpoint could not give an answer; the message says why (no reply text in it)."""


class Expander:
    """Asks the configured chat endpoint for a hypothetical answer; remembers answers per question."""

    def __init__(self, settings: Settings, transport: httpx.BaseTransport | None = None) -> None:
        url = settings.expand_url.rstrip("/")
        self.url = url[: -len("/v1")] if url.endswith("/v1") else url
        self._model = settings.expand_model
        self._max_tokens = settings.expand_max_tokens
        self._retry_s = settings.endpoint_retry_s
        key = settings.expand_api_key.get_secret_value()
        t = settings.expand_timeout_s
        self._client = httpx.Client(timeout=httpx.Timeout(t, connect=min(t, 3.0)),
                                    transport=transport or endpoint_transport(settings),
                                    headers={"Authorization": f"Bearer {key}"} if key else {})
        self._timeout = t
        self._answers: OrderedDict[str, str] = OrderedDict()
        self._lock = threading.Lock()
        self._down_until = 0.0
        self._down_reason = ""

    @classmethod
    def of(cls, settings: Settings, transport: httpx.BaseTransport | None = None) -> Expander | None:
        return cls(settings, transport) if settings.expand_url else None

    def answer(self, question: str, warnings: list[str]) -> str | None:
        """A hypothetical answer to ``question``, or None with the reason appended to ``warnings``."""
        question = question.strip()
        if not question:
            return None
        with self._lock:
            hit = self._answers.get(question)
            if hit is not None:
                self._answers.move_to_end(question)
                return hit
            down = time.monotonic() < self._down_until
        if down:
            warnings.append(f"query expansion skipped: the expansion endpoint failed recently ({self._down_reason}); "
                            "searched with the question alone")
            return None
        if held := endpoint_refusal(self.url):  # the exit rule on the question (exitflow.py)
            warnings.append(f"query expansion skipped ({held}); searched with the question alone")
            return None
        try:
            text = self._ask(question)
        except ExpandError as exc:
            with self._lock:
                self._down_until = time.monotonic() + self._retry_s
                self._down_reason = str(exc)
            log.warning("query expansion failed: %s", exc)
            warnings.append(f"query expansion unavailable ({exc}); searched with the question alone")
            return None
        with self._lock:
            self._answers[question] = text
            while len(self._answers) > CACHE_SIZE:
                self._answers.popitem(last=False)
        return text

    def _ask(self, question: str) -> str:
        body: dict[str, Any] = {
            "messages": [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": question}],
            "max_tokens": self._max_tokens, "temperature": 0, "stream": False,
        }
        if self._model:
            body["model"] = self._model
        where = f"expansion endpoint {self.url}"
        try:
            resp = self._client.post(f"{self.url}/v1/chat/completions", json=body)
        except httpx.TimeoutException as exc:
            raise ExpandError(f"{where} timed out after {self._timeout:g} s") from exc
        except httpx.HTTPError as exc:
            raise ExpandError(f"{where} failed: {type(exc).__name__}") from exc
        if resp.status_code != 200:
            raise ExpandError(f"{where} answered HTTP {resp.status_code}")
        try:
            data = resp.json()
        except ValueError:
            raise ExpandError(f"{where} sent a reply that is not JSON") from None
        content = _content(data)
        if content is None:
            raise ExpandError(f"{where} sent a reply without choices[0].message.content")
        text = " ".join(content.split())[:MAX_ANSWER_CHARS]
        if not text:
            raise ExpandError(f"{where} sent an empty answer")
        return text

    def describe(self) -> dict[str, Any]:
        return {"url": self.url, "model": self._model or None,
                "down": time.monotonic() < self._down_until}

    def close(self) -> None:
        self._client.close()


def _content(data: Any) -> str | None:
    """``choices[0].message.content`` when it is a string (some servers send a list of text parts: joined)."""
    if not isinstance(data, dict):
        return None
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        return None
    msg = choices[0].get("message")
    content = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(content, list):  # [{"type": "text", "text": "..."}]
        parts = [str(p["text"]) for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
        content = " ".join(parts) if parts else None
    return content if isinstance(content, str) else None


def blend(question_vec: np.ndarray, answer_vec: np.ndarray) -> np.ndarray:
    """normalise(q + a) for unit q and a; the question alone when the shapes differ or the sum vanishes."""
    q = np.asarray(question_vec, dtype=np.float32)
    a = np.asarray(answer_vec, dtype=np.float32).reshape(-1)
    if a.shape != q.shape or not np.all(np.isfinite(a)):
        return q
    s = q + a
    n = float(np.linalg.norm(s))
    return q if n < 1e-6 else (s / n).astype(np.float32)
