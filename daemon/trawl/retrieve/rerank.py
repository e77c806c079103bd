"""Optional cross-encoder: ``POST {rerank_url}/v1/rerank`` (llama-server, TEI, Jina/Cohere style).

Request ``{"model", "query", "documents"}``; reply ``{"results": [{"index", "relevance_score"}]}``
(TEI's bare list of ``{"index", "score"}`` is accepted too).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np

from ..netguard import endpoint_transport
from ..settings import Settings


class RerankError(Exception):
    pass


class Reranker:
    def __init__(self, settings: Settings, transport: httpx.BaseTransport | None = None) -> None:
        self._url = settings.rerank_url.rstrip("/")
        if self._url.endswith("/v1"):
            self._url = self._url[: -len("/v1")]
        self._model = settings.rerank_model
        t = settings.endpoint_timeout_s
        self._client = httpx.Client(timeout=httpx.Timeout(t, connect=min(t, 3.0)),
                                    transport=transport or endpoint_transport(settings))

    @property
    def url(self) -> str:
        return self._url

    def scores(self, query: str, documents: Sequence[str]) -> list[float]:
        """One relevance score per document, in the documents' order."""
        if not documents:
            return []
        body: dict[str, Any] = {"query": query, "documents": list(documents)}
        if self._model:
            body["model"] = self._model
        try:
            resp = self._client.post(f"{self._url}/v1/rerank", json=body)
            resp.raise_for_status()
            data = resp.json()
        except httpx.TimeoutException as exc:
            raise RerankError(f"rerank endpoint {self._url} timed out") from exc
        except httpx.HTTPError as exc:
            raise RerankError(f"rerank endpoint {self._url} failed: {exc}") from exc
        except ValueError as exc:
            raise RerankError(f"rerank endpoint {self._url} sent invalid JSON") from exc
        results = data.get("results") if isinstance(data, dict) else data
        if not isinstance(results, list):
            raise RerankError(f"rerank endpoint {self._url} sent no results")
        out: list[float | None] = [None] * len(documents)
        try:
            for r in results:
                i = int(r["index"])
                s = r.get("relevance_score", r.get("score"))
                if 0 <= i < len(documents) and s is not None:
                    out[i] = float(s)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise RerankError(f"rerank endpoint {self._url} sent an unreadable reply: {exc}") from exc
        if any(s is None for s in out):
            raise RerankError(f"rerank endpoint {self._url} scored {sum(s is not None for s in out)} of {len(out)}")
        return [float(s) for s in out if s is not None]

    def close(self) -> None:
        self._client.close()


def apply_scores(
    order: list[int], fused: np.ndarray, head: list[int], scores: list[float]
) -> tuple[list[int], np.ndarray]:
    """Reorder ``head`` (the top of ``order``) by the cross-encoder; the rest keeps the fused order.

    Reranked chunks get scores in [1, 2] so they stay above the others.
    """
    new = np.array(fused, dtype=np.float64)
    lo, hi = min(scores), max(scores)
    span = (hi - lo) or 1.0
    for i, sc in zip(head, scores, strict=True):
        new[i] = 1.0 + (sc - lo) / span
    return sorted(head, key=lambda i: -new[i]) + order[len(head) :], new
