"""OpenAI-compatible chat backend (OpenAI, vLLM, ``transformers serve``, ...).

The API key is read from the environment variable named in the config (never from
the config itself) and appears in no log, cache key or result.  Every request has
a timeout and is retried a bounded number of times with exponential backoff and
jitter on connection errors, timeouts, rate limits and server errors; other errors
(a bad request, a wrong key) fail at once.  Requests run concurrently in a small
thread pool; ``on_batch`` hears of each reply as it arrives, so the call cache keeps
it even if the job dies before the rest.  Plain prompts are sent as one user message.
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from isqaflow.models.base import BatchCallback, Generation, GenerationParams, LanguageModel, Request, canonical_request

log = logging.getLogger(__name__)


class OpenAIModel(LanguageModel):
    backend = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        timeout: float = 120.0,
        max_retries: int = 5,
        backoff: float = 1.0,
        concurrency: int = 4,
        name: str | None = None,
    ) -> None:
        import openai

        self.name = name or model
        if max_retries < 0:
            raise ValueError(f"model {self.name}: max_retries must be >= 0")
        if concurrency < 1 or timeout <= 0:
            raise ValueError(f"model {self.name}: concurrency must be >= 1 and timeout > 0")
        self.model = model
        self.base_url = base_url
        self.max_retries = max_retries
        self.backoff = backoff
        self.concurrency = concurrency
        key = os.environ.get(api_key_env) or None  # set but empty is missing too
        if key is None:
            if base_url is None:
                raise RuntimeError(
                    f"model {self.name}: environment variable {api_key_env} holds no API key"
                )
            key = "unused"  # local servers (vLLM, transformers serve) accept any key
        # Retries are ours (bounded, logged), so the client's own are switched off.
        self.client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=0)
        self._retryable = (
            openai.APIConnectionError,
            openai.APITimeoutError,
            openai.RateLimitError,
            openai.InternalServerError,
        )

    def identity(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model, "base_url": self.base_url}

    def _messages(self, request: Request) -> list[dict[str, str]]:
        canon = canonical_request(request)
        return [{"role": "user", "content": canon}] if isinstance(canon, str) else canon

    def _call(self, request: Request, params: GenerationParams) -> Generation:
        kwargs: dict[str, Any] = dict(
            model=self.model,
            messages=self._messages(request),
            max_tokens=params.max_new_tokens,
            temperature=params.temperature if params.do_sample else 0.0,
            top_p=params.top_p if params.do_sample else 1.0,
            seed=params.seed,
        )
        if params.stop:
            kwargs["stop"] = list(params.stop)
        if params.return_logprobs:
            kwargs["logprobs"] = True
        for attempt in range(self.max_retries + 1):
            try:
                response = self.client.chat.completions.create(**kwargs)
                break
            except self._retryable as err:
                if attempt == self.max_retries:
                    raise RuntimeError(
                        f"model {self.name}: request failed after {attempt + 1} attempts: {type(err).__name__}"
                    ) from err
                delay = self.backoff * 2**attempt * (1 + random.random())
                log.warning(
                    "%s: %s, retry %d/%d in %.1fs", self.name, type(err).__name__, attempt + 1, self.max_retries, delay
                )
                time.sleep(delay)
        choice = response.choices[0]
        logprob = None
        if params.return_logprobs and choice.logprobs and choice.logprobs.content:
            logprob = float(sum(t.logprob for t in choice.logprobs.content))
        usage = response.usage
        return Generation(
            text=(choice.message.content or "").strip(),
            n_input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
            n_new_tokens=getattr(usage, "completion_tokens", 0) or 0,
            logprob=logprob,
            finish_reason=choice.finish_reason,
        )

    def generate(self, requests: Sequence[Request], params: GenerationParams,
                 on_batch: BatchCallback | None = None) -> list[Generation]:
        if params.num_beams > 1:
            log.warning("%s: beam search is not available through the API; decoding greedily", self.name)
        started = time.monotonic()
        results: list[Generation] = [None] * len(requests)  # type: ignore[list-item]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {pool.submit(self._call, request, params): i for i, request in enumerate(requests)}
            for future in as_completed(futures):
                i = futures[future]
                results[i] = future.result()
                if on_batch is not None:  # each reply is its own batch
                    on_batch([(i, results[i])])
        log.info("%s: %d requests in %.1fs", self.name, len(requests), time.monotonic() - started)
        return results

    def close(self) -> None:
        self.client.close()
