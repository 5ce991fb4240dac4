"""The one interface every stage uses to talk to a language model.

* ``generate(requests, params)`` -- a batch of requests, each a plain prompt (``str``)
  or a chat conversation (a list of ``{"role", "content"}`` messages), decoded with
  the same :class:`GenerationParams`.
* ``score(context, candidates)`` -- the log-probability of each candidate
  continuation given the context; judges use it to choose YES/NO or a label
  deterministically, without parsing free text.

Both take an optional ``on_batch`` callback: a backend that accepts it calls it
after every batch it finishes (a forward batch, one API reply) with the ``(index,
result)`` pairs of that batch, indices into the request list.  The call cache
(:class:`~.cache.CachedModel`) commits them there, so a killed job loses at most the
batch in flight while the backend keeps its own plan (length order, prefix groups).

Backends (:mod:`.inprocess.hf`, :mod:`.api.openai`, :mod:`.served.model`) implement it; :class:`~.cache.CachedModel`
wraps any backend with the persistent call cache.
"""

from __future__ import annotations

import dataclasses
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from isqaflow.settings import from_mapping

Message = dict[str, str]
Request = str | list[Message]
#: ``on_batch`` of generate / score_batch: the (request index, result) pairs of one finished batch.
BatchCallback = Callable[[list[tuple[int, Any]]], None]


@dataclass(frozen=True)
class GenerationParams:
    """How to decode.  Part of every cache key: a changed value is a new call.

    ``max_input_tokens`` is a safeguard: a longer request is cut from the left (its
    end holds the question and the generation prompt) and the cut is reported in
    :attr:`Generation.truncated_tokens`; stages that must keep the head of a document
    fit it to the budget themselves before building the request.
    """

    max_new_tokens: int = 128
    min_new_tokens: int = 0
    num_beams: int = 1
    do_sample: bool = False
    temperature: float = 1.0
    top_p: float = 1.0
    no_repeat_ngram_size: int = 0
    repetition_penalty: float = 1.0
    max_input_tokens: int | None = None
    stop: tuple[str, ...] = ()
    seed: int = 0
    return_logprobs: bool = False

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError("max_new_tokens must be at least 1")
        if not 0 <= self.min_new_tokens <= self.max_new_tokens:
            raise ValueError("min_new_tokens must lie between 0 and max_new_tokens")
        if self.num_beams < 1:
            raise ValueError("num_beams must be at least 1")
        object.__setattr__(self, "stop", tuple(self.stop))

    @classmethod
    def from_dict(cls, values: Mapping[str, Any] | None) -> GenerationParams:
        return from_mapping(cls, values, "generation")

    def as_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["stop"] = list(self.stop)
        return out

    def replace(self, **changes: Any) -> GenerationParams:
        return dataclasses.replace(self, **changes)

    def for_repetition(self, repetition: int) -> GenerationParams:
        """A repeated judgment's decoding (a judge's ``repeats``): with sampling, the seed moves
        by the repetition's index; greedy decoding stays as it is."""
        if not self.do_sample or repetition == 0:
            return self
        return self.replace(seed=self.seed + repetition)


@dataclass
class Generation:
    text: str
    n_input_tokens: int = 0
    n_new_tokens: int = 0
    truncated_tokens: int = 0
    logprob: float | None = None  # sum of the generated tokens' log-probabilities
    finish_reason: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, values: Mapping[str, Any]) -> Generation:
        """From a cached dict; fields a newer or older version stored are ignored."""
        known = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in values.items() if k in known})


def canonical_request(request: Request) -> Any:
    """A JSON-able, order-stable form of a request (for cache keys and logs)."""
    if isinstance(request, str):
        return request
    if isinstance(request, Sequence):
        messages = []
        for message in request:
            if not isinstance(message, Mapping) or set(message) - {"role", "content"}:
                raise TypeError(
                    f"a chat message must be a mapping with role and content, got {message!r}"
                )
            messages.append({"role": str(message["role"]), "content": str(message["content"])})
        return messages
    raise TypeError(
        f"a request is a prompt string or a list of messages, got {type(request).__name__}"
    )


def request_json(request: Request) -> str:
    return json.dumps(canonical_request(request), ensure_ascii=False, sort_keys=True)


def flatten_messages(messages: Sequence[Message]) -> str:
    """Render a conversation as plain text for models without a chat template.

    Used for seq2seq instruction models such as Flan-T5, which are prompted with
    plain text: the turns' contents in order, separated by blank lines.
    """
    return "\n\n".join(m["content"].strip() for m in messages if m["content"].strip())


class LanguageModel(ABC):
    """A text generator and scorer.  See the module docstring."""

    backend: str = "abstract"

    @abstractmethod
    def identity(self) -> dict[str, Any]:
        """What determines this model's outputs (ids, revisions, weight and adapter hashes).

        It keys the call cache and goes into the provenance manifest; it never holds
        secrets.
        """

    @abstractmethod
    def generate(
        self,
        requests: Sequence[Request],
        params: GenerationParams,
        on_batch: BatchCallback | None = None,
    ) -> list[Generation]:
        """One :class:`Generation` per request, in order; ``on_batch``: see the module docstring."""

    def score(self, context: Request, candidates: Sequence[str]) -> list[float]:
        """Log-probability of each candidate as the continuation of ``context``."""
        return self.score_batch([(context, list(candidates))])[0]

    def score_batch(
        self, items: Sequence[tuple[Request, Sequence[str]]], on_batch: BatchCallback | None = None
    ) -> list[list[float]]:
        raise NotImplementedError(
            f"the {self.backend} backend cannot score continuations; use a local (hf) model "
            "for log-probability judging, or a text-answer judge"
        )

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` for this model (an estimate where the backend has no tokenizer)."""
        return max(1, round(len(text.split()) * 1.3))

    def truncate_text(self, text: str, max_tokens: int) -> tuple[str, int]:
        """Keep the first ``max_tokens`` tokens of ``text``; returns the text and the tokens cut."""
        words = text.split()
        keep = max(0, int(max_tokens / 1.3))
        if len(words) <= keep:
            return text, 0
        return " ".join(words[:keep]), self.count_tokens(" ".join(words[keep:]))

    def close(self) -> None:
        """Release resources (servers, GPU memory)."""
