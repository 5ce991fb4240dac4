"""OpenAI-compatible chat backend (OpenAI, vLLM, ``transformers serve``, ...).

The API key is read from the environment variable named in the config (never from
the config itself) and appears in no log, cache key or result.  Every request has
a timeout and is retried a bounded number of times with exponential backoff and
jitter on connection errors, timeouts, rate limits and server errors; other errors
(a bad request, a wrong key) fail at once.  Requests run concurrently in a thread
pool of ``concurrency`` workers (high for a local server so it can batch, low for a
public API); ``on_batch`` hears of each reply as it arrives, so the call cache keeps it
even if the job dies before the rest.  Plain prompts are sent as one user message.

* **Rate limits** (public APIs): ``requests_per_minute`` and ``tokens_per_minute``
  hold the requests inside a sliding 60-second window shared by all threads -- and, inside
  the workflow, by every job of the run that calls the same account and model (a
  file-locked window, :class:`.rate_limit.SharedRateLimiter`).  A 429 is retried after
  the ``Retry-After`` the server sends (else with exponential backoff).  A request counts ``max_tokens`` plus an estimate of its prompt (words x
  1.3, the API's own accounting counts ``max_tokens`` too) until it returns, then
  the tokens the server reports (:mod:`.rate_limit`).
* **Budget**: before each request its bound is reserved in the run's shared spend ledger
  and refused when it would cross ``budget:`` (:mod:`.budget`); the reply's tokens settle it.
* **Batch** (``batch: {poll_s: ...}``): generations go through the Batch API instead
  (:mod:`.batch`); same requests, same call-cache keys.
* **Usage**: requests and the input and output tokens the server reports go to the
  job's usage record (:mod:`.usage`); calls answered from the call cache are not
  sent and not counted.
* **Decoding** the chat API cannot apply -- beams, ``min_new_tokens``, n-gram
  blocking, a repetition penalty, ``max_input_tokens`` -- is refused at config check
  (:mod:`isqaflow.models.planning.servecheck`) unless the entry says ``unsupported_decoding: drop``; then it is
  dropped with a warning (once per setting) and listed in the usage record's
  ``dropped_decoding``.  What each generation setting became (honoured, emulated,
  dropped: :mod:`isqaflow.models.capabilities`) is the usage record's ``decoding``.  Served local
  models (:mod:`isqaflow.models.served.model`) pass them to the engine instead, or fail.
* **A prompt longer than the model's context**: the server's refusal (HTTP 400, "maximum
  context length is N tokens", vLLM's ``--max-model-len`` or the API's) fails the job with
  :class:`~isqaflow.models.refusals.PromptTooLong` (:mod:`isqaflow.models.refusals`), naming the job, the record (the id a stage gives with
  :func:`~isqaflow.models.refusals.naming_records`; else the prompt's first words), the model, the prompt's tokens, the
  limit and what to change -- not the client's raw ``BadRequestError``.
* **The model is checked first**: a model on OpenAI's endpoint (no ``base_url``), or
  any with ``check_model: true``, is looked up in the endpoint's model list (one
  ``GET /models``) when the job builds it, so a retired snapshot fails before any
  request, naming the model, the endpoint and the config entry (and, for the whole
  config at the workflow's start, :func:`.model_lists.check_api_models`).
* **Log-probabilities** (``logprobs``, for logprob-mode judges):

  - ``top_logprobs`` (default): one generated token with ``logprobs`` and
    ``top_logprobs=K`` (``top_logprobs``, default 20, the OpenAI maximum).  The
    candidates' common prefix (``"<rating>"`` of ``"<rating>1"``/``"<rating>2"``)
    is sent as the start of the assistant reply (a prefill, which only some servers
    offer: vLLM's ``continue_final_message``; the OpenAI API has none, so such
    candidates fail there with :class:`LogprobsUnavailable` before any request).
    A candidate's score is then the log-probability of the token that spells the
    rest of it (``"1"``), i.e. log P(rest | request, prefix): the prefix's own
    log-probability is the same for every candidate and left out, so comparisons
    and margins between candidates are those of the full log-probabilities, while
    absolute values differ from the hf backend's by that constant.  The rest must
    be one token.  A candidate absent from the top K is given the floor of the
    returned list (the smallest log-probability there: an upper bound of its own),
    and counted in the usage record's ``scoring.absent_candidates`` (items where
    no candidate was listed: ``items_without_candidates``, logged as a warning:
    their candidates then tie at the floor).
  - ``prompt_logprobs``: exact log-probabilities from the prompt's own
    log-probabilities (vLLM); needs the model's tokenizer, so only for a served
    local model (:mod:`isqaflow.models.served.model`).
  - ``none``: scoring is refused.

  A server that answers without log-probabilities (``transformers serve`` ignores
  the request for them) fails with :class:`LogprobsUnavailable` naming the model
  and the mode.
"""

from __future__ import annotations

import logging
import math
import os
import random
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Any

from isqaflow.models.api import budget
from isqaflow.models import capabilities, refusals, usage
from isqaflow.models.base import (
    BatchCallback,
    Generation,
    GenerationParams,
    LanguageModel,
    Request,
    canonical_request,
)
from isqaflow.models.api.rate_limit import (
    SharedRateLimiter,
    account_limiter,
    estimate_tokens,
    retry_after,
)

log = logging.getLogger(__name__)

LOGPROB_MODES = ("top_logprobs", "prompt_logprobs", "none")
MAX_TOP_LOGPROBS = 20


class LogprobsUnavailable(RuntimeError):
    """Log-probability scoring that this model, its server or its settings cannot do."""


def split_candidates(candidates: Sequence[str]) -> tuple[str, list[str]]:
    """The candidates' common prefix and what follows it in each (never empty).

    ``["<rating>1", "<rating>2"]`` -> ``("<rating>", ["1", "2"])``; one candidate
    has no prefix.
    """
    if not candidates:
        raise ValueError("no candidates to score")
    if any(not c for c in candidates):
        raise ValueError("cannot score an empty candidate")
    if len(candidates) == 1:
        return "", list(candidates)
    prefix = os.path.commonprefix(list(candidates))
    prefix = prefix[: min(len(prefix), min(len(c) for c in candidates) - 1)]
    return prefix, [c[len(prefix) :] for c in candidates]


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
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        logprobs: str = "top_logprobs",
        top_logprobs: int = MAX_TOP_LOGPROBS,
        name: str | None = None,
        check_model: bool | None = None,
        batch: dict[str, Any] | None = None,
    ) -> None:
        import openai

        self.name = name or model
        if max_retries < 0:
            raise ValueError(f"model {self.name}: max_retries must be >= 0")
        if concurrency < 1 or timeout <= 0:
            raise ValueError(f"model {self.name}: concurrency must be >= 1 and timeout > 0")
        if logprobs not in LOGPROB_MODES:
            raise ValueError(
                f"model {self.name}: logprobs must be one of {', '.join(LOGPROB_MODES)}, got {logprobs!r}"
            )
        if not 1 <= top_logprobs <= MAX_TOP_LOGPROBS:
            raise ValueError(
                f"model {self.name}: top_logprobs must lie between 1 and {MAX_TOP_LOGPROBS}"
            )
        self._check_logprob_mode(logprobs)
        self.model = model
        self.base_url = base_url
        self.max_retries = max_retries
        self.backoff = backoff
        self.concurrency = concurrency
        self.logprobs = logprobs
        self.top_logprobs = top_logprobs
        self.batch = batch
        # the account's limits shared by every job of the run (the workflow names their directory)
        self.limiter = account_limiter(
            requests_per_minute,
            tokens_per_minute,
            base_url,
            api_key_env,
            model,
            (budget.settings() or {}).get("rate_limits"),
        )
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
        self.usage = self._register_usage()
        self._noted_decoding: set[GenerationParams] = set()
        if check_model if check_model is not None else base_url is None:
            self.check_model()

    def check_model(self) -> None:
        """Fail unless the endpoint lists this model (one ``GET /models``, before any request)."""
        endpoint = self.base_url or "https://api.openai.com/v1"
        try:
            listed = sorted(m.id for m in self.client.models.list())
        except self._retryable as err:
            raise RuntimeError(
                f"model {self.name}: cannot list the models of {endpoint} to check that it serves "
                f"{self.model!r}: {type(err).__name__}"
            ) from err
        if self.model not in listed:
            near = [m for m in listed if m.split("-")[:2] == self.model.split("-")[:2]][:8]
            raise RuntimeError(
                f"model {self.name}: the endpoint {endpoint} does not serve {self.model!r} (the `model` of its "
                f"config entry under models:, used here as {self.name}); set that key to a model the endpoint "
                f"lists{' such as ' + ', '.join(near) if near else ''} -- a substitute judge is checked against "
                "the validity table (docs/validity.md) before its verdicts are read as the paper's"
            )
        log.info("%s: %s lists %s", self.name, endpoint, self.model)

    # ------------------------------------------------------------ hooks for served models
    def _check_logprob_mode(self, mode: str) -> None:
        if mode == "prompt_logprobs":
            raise LogprobsUnavailable(
                f"model {self.name}: logprobs: prompt_logprobs needs the model's tokenizer to place the "
                "candidate tokens in the prompt, i.e. a local model served through serve:; an API model "
                "offers top_logprobs"
            )

    def _register_usage(self) -> usage.ModelUsage:
        return usage.register(self.name, self.backend, self.model)

    def _decoding_extras(self, params: GenerationParams) -> dict[str, Any]:
        """Extra request fields for decoding settings beyond the standard API (none here: dropped)."""
        dropped = [
            f"{key}={value}"
            for key, value, default in (
                ("num_beams", params.num_beams, 1),
                ("min_new_tokens", params.min_new_tokens, 0),
                ("no_repeat_ngram_size", params.no_repeat_ngram_size, 0),
                ("repetition_penalty", params.repetition_penalty, 1.0),
                ("max_input_tokens", params.max_input_tokens, None),
            )
            if value != default
        ]
        new = self.usage.note_dropped(dropped)
        if new:
            log.warning(
                "%s: the API cannot apply %s; decoding without %s",
                self.name,
                ", ".join(new),
                "them" if len(new) > 1 else "it",
            )
        return {}

    def _prefill_fields(self) -> dict[str, Any] | None:
        """Request fields that make the server continue a final assistant message; None: unsupported."""
        return None

    def _plain_text(self, request: Request) -> str | None:
        """The text to send to the completions endpoint instead of a chat; None: chat."""
        return None

    # ------------------------------------------------------------------ requests
    def identity(self) -> dict[str, Any]:
        return {"backend": self.backend, "model": self.model, "base_url": self.base_url}

    def _messages(self, request: Request) -> list[dict[str, str]]:
        canon = canonical_request(request)
        return [{"role": "user", "content": canon}] if isinstance(canon, str) else canon

    def _send(self, create: Callable[..., Any], estimate: int, **kwargs: Any) -> Any:
        """One request with bounded retries, the rate limit and usage accounting."""
        for attempt in range(self.max_retries + 1):
            ticket = budget.reserve(self.model, estimate)  # BudgetExceeded before anything is sent
            booking = self.limiter.acquire(estimate) if self.limiter else None
            try:
                response = create(**kwargs)
                break
            except BaseException as err:
                budget.settle(ticket, self.model, 0, 0)
                if isinstance(self.limiter, SharedRateLimiter):
                    self.limiter.settle(
                        booking, 0
                    )  # the attempt left the account's window busy until now
                if not isinstance(err, self._retryable):
                    raise
                if attempt == self.max_retries:
                    raise RuntimeError(
                        f"model {self.name}: request failed after {attempt + 1} attempts: {type(err).__name__}"
                    ) from err
                asked = retry_after(err)  # a 429's Retry-After: wait what the server asks, no less
                delay = (
                    asked + random.random() * 0.1
                    if asked is not None
                    else self.backoff * 2**attempt * (1 + random.random())
                )
                log.warning(
                    "%s: %s, retry %d/%d in %.1fs",
                    self.name,
                    type(err).__name__,
                    attempt + 1,
                    self.max_retries,
                    delay,
                )
                time.sleep(delay)
        used = response.usage
        n_in = getattr(used, "prompt_tokens", 0) or 0
        n_out = self._output_tokens(response)
        if booking is not None and (n_in or n_out or isinstance(self.limiter, SharedRateLimiter)):
            self.limiter.settle(booking, n_in + n_out)
        budget.settle(ticket, self.model, n_in, n_out)
        self.usage.add(1, n_in, n_out)
        return response

    def _named_refusal(
        self, request: Request, call: Callable[[], Any], tokens: int | None = None
    ) -> Any:
        """``call()``, with the server's context-length refusal of ``request`` raised as
        :class:`~isqaflow.models.refusals.PromptTooLong` (any other error as it is)."""
        import openai

        try:
            return call()
        except openai.BadRequestError as err:
            text = str(getattr(err, "message", "") or err)
            if tokens is None and refusals.context_limit(text) is not None:
                tokens = self._prompt_tokens(request)
            refusals.raise_if_too_long(
                text, err, request, f"{self.name} ({self.model})", tokens, self._length_advice()
            )
            raise

    def _prompt_tokens(self, request: Request) -> int | None:
        """The request's prompt tokens, where the client can count them (a served model); else None."""
        return None

    def _length_advice(self) -> str:
        """What to change when a prompt is too long for the model (:class:`PromptTooLong`)."""
        return (
            f"shorten the stage's inputs (its input settings), or set models.{self.name}.model to one "
            "with a longer context"
        )

    def _output_tokens(self, response: Any) -> int:
        """New tokens of the answer the job keeps (a served model with beams overrides this)."""
        return getattr(getattr(response, "usage", None), "completion_tokens", 0) or 0

    def _sampling(self, params: GenerationParams) -> dict[str, Any]:
        kwargs: dict[str, Any] = dict(
            max_tokens=params.max_new_tokens,
            temperature=params.temperature if params.do_sample else 0.0,
            top_p=params.top_p if params.do_sample else 1.0,
            seed=params.seed,
        )
        if params.stop:
            kwargs["stop"] = list(params.stop)
        extra = self._decoding_extras(params)
        if extra:
            kwargs["extra_body"] = extra
        if params not in self._noted_decoding:
            self._noted_decoding.add(params)
            settings = {k: v for k, v in params.as_dict().items() if k != "return_logprobs"}
            self.usage.note_decoding(
                settings,
                capabilities.applied(
                    settings, self._capability_backend(), self.usage.dropped_decoding
                ),
            )
        return kwargs

    def _capability_backend(self) -> str:
        """The column of :data:`.capabilities.TABLE` this backend follows."""
        return "openai"

    def _chat_kwargs(self, request: Request, params: GenerationParams) -> dict[str, Any]:
        kwargs = dict(model=self.model, messages=self._messages(request), **self._sampling(params))
        if params.return_logprobs:
            kwargs["logprobs"] = True
        return kwargs

    def _call(self, request: Request, params: GenerationParams) -> Generation:
        text = self._plain_text(request)
        if text is not None:
            return self._complete(text, params)
        kwargs = self._chat_kwargs(request, params)
        response = self._send(
            self.client.chat.completions.create,
            estimate_tokens(kwargs["messages"]) + params.max_new_tokens,
            **kwargs,
        )
        return self._chat_generation(response, params)

    def _chat_generation(self, response: Any, params: GenerationParams) -> Generation:
        choice = response.choices[0]
        logprob = None
        if params.return_logprobs and choice.logprobs and choice.logprobs.content:
            logprob = float(sum(t.logprob for t in choice.logprobs.content))
        return Generation(
            text=(choice.message.content or "").strip(),
            n_input_tokens=getattr(response.usage, "prompt_tokens", 0) or 0,
            n_new_tokens=self._output_tokens(response),
            logprob=logprob,
            finish_reason=choice.finish_reason,
        )

    def _complete(self, prompt: str, params: GenerationParams) -> Generation:
        """A plain-text request through the completions endpoint (served local models)."""
        kwargs = dict(model=self.model, prompt=prompt, **self._sampling(params))
        if params.return_logprobs:
            kwargs["logprobs"] = 1
        response = self._send(
            self.client.completions.create,
            estimate_tokens(prompt) + params.max_new_tokens,
            **kwargs,
        )
        choice = response.choices[0]
        logprob = None
        if params.return_logprobs and choice.logprobs and choice.logprobs.token_logprobs:
            logprob = float(sum(lp for lp in choice.logprobs.token_logprobs if lp is not None))
        return Generation(
            text=(choice.text or "").strip(),
            n_input_tokens=getattr(response.usage, "prompt_tokens", 0) or 0,
            n_new_tokens=self._output_tokens(response),
            logprob=logprob,
            finish_reason=choice.finish_reason,
        )

    def _map(
        self, fn: Callable[[Any], Any], items: Sequence[Any], on_batch: BatchCallback | None = None
    ) -> list[Any]:
        """``fn`` over ``items`` in ``concurrency`` threads; ``on_batch`` hears of each result
        as it arrives (each reply is its own batch).  On an exception (SIGTERM's JobTerminated
        included) it returns at once, without waiting for requests in flight, so the job's
        clean-up (stopping its server) runs while the scheduler still waits."""
        pool = ThreadPoolExecutor(max_workers=self.concurrency)
        reported: set[int] = set()
        try:
            results: list[Any] = [None] * len(items)
            futures = {pool.submit(fn, item): i for i, item in enumerate(items)}
            for future in as_completed(futures):
                i = futures[future]
                results[i] = future.result()
                reported.add(i)
                if on_batch is not None:
                    on_batch([(i, results[i])])
            return results
        except budget.BudgetExceeded:
            # the requests already sent are paid for: wait for them and report them (the call
            # cache keeps them), start no other
            pool.shutdown(wait=True, cancel_futures=True)
            for future, i in futures.items():
                if (
                    i not in reported
                    and future.done()
                    and not future.cancelled()
                    and future.exception() is None
                ):
                    if on_batch is not None:
                        on_batch([(i, future.result())])
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)

    def generate(
        self,
        requests: Sequence[Request],
        params: GenerationParams,
        on_batch: BatchCallback | None = None,
    ) -> list[Generation]:
        started = time.monotonic()
        if self.batch is not None:  # the Batch API (.openai_batch): one batch for all requests
            from isqaflow.models.api.batch import generate_in_batch

            return generate_in_batch(self, requests, params, on_batch)
        results = self._map(
            lambda r: self._named_refusal(r, lambda: self._call(r, params)), requests, on_batch
        )
        log.info("%s: %d requests in %.1fs", self.name, len(requests), time.monotonic() - started)
        return results

    # ------------------------------------------------------------------ scoring
    def score_batch(
        self, items: Sequence[tuple[Request, Sequence[str]]], on_batch: BatchCallback | None = None
    ) -> list[list[float]]:
        """Log-probabilities of each item's candidates; see the module docstring for the modes."""
        if self.logprobs == "none":
            raise LogprobsUnavailable(
                f"model {self.name}: log-probability scoring is switched off (logprobs: none); "
                "use a text-mode judge with this model"
            )
        plans = [
            (context, self._plan_scoring(context, candidates)) for context, candidates in items
        ]
        return self._map(
            lambda plan: self._named_refusal(plan[0], lambda: self._score_planned(*plan[1])),
            plans,
            on_batch,
        )

    def _plan_scoring(
        self, context: Request, candidates: Sequence[str]
    ) -> tuple[Any, str, list[str]]:
        """Checks made for every item before any request: the payload (messages), prefix and rests."""
        prefix, rests = split_candidates(list(candidates))
        self._check_prefill(prefix)
        return self._messages(context), prefix, rests

    def _check_prefill(self, prefix: str) -> None:
        if prefix and self._prefill_fields() is None:
            raise LogprobsUnavailable(
                f"model {self.name}: the candidates share the prefix {prefix!r}; scoring them with "
                "logprobs: top_logprobs sends that prefix as the start of the assistant reply, which "
                "this server does not offer (vLLM does: a served model with engine vllm); use a "
                "text-mode judge with this model"
            )

    def _score_planned(
        self, messages: list[dict[str, str]], prefix: str, rests: list[str]
    ) -> list[float]:
        kwargs: dict[str, Any] = dict(
            model=self.model,
            max_tokens=1,
            temperature=0.0,
            seed=0,
            logprobs=True,
            top_logprobs=self.top_logprobs,
        )
        if prefix:
            messages = [*messages, {"role": "assistant", "content": prefix}]
            kwargs["extra_body"] = self._prefill_fields()
        response = self._send(
            self.client.chat.completions.create,
            estimate_tokens(messages) + 1,
            messages=messages,
            **kwargs,
        )
        choice = response.choices[0]
        content = getattr(choice.logprobs, "content", None) if choice.logprobs else None
        if not content or not content[0].top_logprobs:
            raise LogprobsUnavailable(
                f"model {self.name}: the server returned no log-probabilities for a chat completion "
                f"with logprobs=true, top_logprobs={self.top_logprobs} (logprobs: top_logprobs), so it "
                "cannot serve a logprob-mode judge; use mode text, or a server that returns them "
                "(vLLM, SGLang, the OpenAI API)"
            )
        return self._read_top(
            [(entry.token, entry.logprob) for entry in content[0].top_logprobs], rests, prefix
        )

    def _read_top(
        self, top: Sequence[tuple[str, float]], rests: list[str], prefix: str
    ) -> list[float]:
        """Each rest's log-probability from the returned (token, log-probability) list."""
        best: dict[str, float] = {}
        for token, logprob in top:  # several token ids may spell the same text: keep the likeliest
            value = (
                float(logprob) if float(logprob) > -9999.0 else -math.inf
            )  # vLLM's floor for -inf
            best[token] = max(best.get(token, -math.inf), value)
        floor = min(best.values())
        scores = [best.get(rest, floor) for rest in rests]
        absent = [rest for rest in rests if rest not in best]
        self.usage.add_scoring(
            items=1,
            absent_candidates=len(absent),
            items_without_candidates=int(len(absent) == len(rests)),
        )
        if len(absent) == len(rests):
            log.warning(
                "%s: none of the candidates %s after %r is among the top %d tokens %s; all get the "
                "floor %.2f",
                self.name,
                rests,
                prefix,
                len(best),
                sorted(best, key=best.get)[::-1][:5],
                floor,
            )
        return scores

    def close(self) -> None:
        self.client.close()
