"""Prompt tokens of a request, as the spend plan counts them: OpenAI's own encodings offline where
it can, else characters / 4 (the fallback, named so wherever it is used).

* **Exact** (:class:`Encoded`): an API model whose name OpenAI's encodings cover (gpt-4o, gpt-4.1,
  o1/o3/o4, gpt-5: ``o200k_base``; gpt-4, gpt-3.5-turbo: ``cl100k_base``; the prefixes of
  tiktoken's model table) and the optional package ``bpe-openai`` (GitHub's Rust BPE with the
  encodings bundled in its wheel: no download at first use, unlike tiktoken) installed.  A
  chat request counts as OpenAI's cookbook counts it ("How to count tokens with tiktoken"): 3
  tokens per message, its role's and its content's tokens, and 3 priming the reply.
* **The fallback** (:data:`ESTIMATE`, ``chars/4 (fallback)``): every other model (a served
  model's own tokenizer is not read here), or ``bpe-openai`` not installed: characters / 4 per
  message plus :data:`MESSAGE_TOKENS` (OpenAI's rule of thumb; ~22% above cl100k/o200k on
  InFoBench's prompts, docs/configuration.md).

A text the plan does not know yet (an answer, a response or a summary at its length bound, a
query of a declared mean length) is written as :func:`filler`, which both encodings split into
exactly one token per 4 characters; the exact counter counts each run of it as its characters /
4 without encoding it, so a bound stays the bound in tokens and a plan of long placeholders costs
no encoding time.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator, Mapping
from typing import Any

CHARS_PER_TOKEN = (
    4.0  # OpenAI: "1 token ~= 4 chars in English" (help.openai.com, "What are tokens")
)
MESSAGE_TOKENS = 4  # per chat message (role and separators; OpenAI cookbook, counting chat tokens)
COOKBOOK_MESSAGE_TOKENS = (
    3  # per message besides its role and content (OpenAI cookbook, gpt-4 / gpt-3.5)
)
COOKBOOK_REPLY_TOKENS = 3  # every reply is primed with <|start|>assistant<|message|>
FALLBACK = "chars/4 (fallback)"
FILLER_UNIT = (
    " abc"  # one token in cl100k_base and in o200k_base (tests/unit/spend/test_spend_tokens.py)
)
_FILLER_START = FILLER_UNIT * 4  # a run of filler: at least 4 units (4 tokens)
# model-name prefix -> encoding (tiktoken's MODEL_PREFIX_TO_ENCODING, the chat models); first match wins
ENCODING_PREFIXES = (
    ("gpt-4o", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5-turbo", "cl100k_base"),
    ("gpt-35-turbo", "cl100k_base"),
)


@functools.cache
def bpe_module() -> Any:
    """``bpe_openai`` (pinned in pyproject.toml), or None without it (an older environment: the
    fallback counts, named as such in the plan).  Imported on first use, not with this module:
    importing it builds its encodings' rank tables (~3 s on a 2-core machine), which every
    Snakefile parse paid -- each dry run, and each SLURM job's own Snakemake -- through the
    spend plan's imports."""
    try:
        import bpe_openai
    except ImportError:
        return None
    return bpe_openai


def filler(chars: int, prefix: str = "") -> str:
    """A placeholder of ``chars`` characters (at least the prefix): ``prefix`` then runs of
    :data:`FILLER_UNIT`, one token per 4 characters in OpenAI's encodings and in the fallback."""
    rest = max(0, chars - len(prefix))
    return prefix + (FILLER_UNIT * (rest // len(FILLER_UNIT) + 1))[:rest]


def filler_runs(text: str) -> Iterator[tuple[int, int]]:
    """(start, end) of each run of at least 4 :data:`FILLER_UNIT` in ``text``, left to right, each
    as long as it goes: the matches of the regex ``(?: abc){4,}`` (checked against it in
    tests/unit/spend/test_spend_tokens.py), found ~3x faster.  A paper-scale plan scans ~240
    million characters, most of them in runs, and the regex takes a step per unit; here a run's
    start is found by ``str.find``, and its end by comparing blocks of the text with the run
    found so far: doubling the run while the next block repeats it, then adding the halves that
    still do."""
    unit = len(FILLER_UNIT)
    start = text.find(_FILLER_START)
    while start >= 0:
        end = start + len(_FILLER_START)
        while text.startswith(text[start:end], end):  # the next end - start characters: units
            end += end - start
        # the run ends before end + (end - start), 4 units times a power of 2: add its halves,
        # largest first, down to one unit, where the text still repeats the run
        step = (end - start) // 2
        while step >= unit:
            if text.startswith(text[start : start + step], end):
                end += step
            step //= 2
        yield start, end
        start = text.find(_FILLER_START, end)


def encoding_name(model: str) -> str | None:
    """OpenAI's encoding of a model name (None: not an OpenAI chat model this table knows)."""
    for prefix, name in ENCODING_PREFIXES:
        if (
            model == prefix
            or model.startswith(prefix + "-")
            or (prefix[0] == "o" and model.startswith(prefix))
        ):
            return name
    return None


class Estimate:
    """The fallback: characters / 4 per message plus :data:`MESSAGE_TOKENS`."""

    name = FALLBACK

    def text(self, text: str) -> int:
        return math.ceil(len(text) / CHARS_PER_TOKEN)

    # A request's tokens are ``base`` plus each message's (isqaflow.spend.stages counts a
    # conversation turn by turn from these, as each turn adds messages to the one before).
    base = 0

    def message(self, message: Mapping[str, str]) -> int:
        return self.text(message["content"]) + MESSAGE_TOKENS

    def __call__(self, messages: Any) -> int:
        if isinstance(messages, str):
            return self.text(messages)
        return self.base + sum(self.message(m) for m in messages)


class Encoded:
    """OpenAI's own encoding, offline (``bpe-openai``), with the cookbook's chat overhead."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._encoding = bpe_module().get_encoding(name)
        self.text = functools.lru_cache(maxsize=65536)(
            self._text
        )  # few-shot and system messages repeat
        # The pieces of text between placeholders repeat far more often than the texts do (the
        # tags around a judged pair's texts, the instructions after them): each distinct piece
        # is encoded once, not in each of a paper-scale plan's ~100,000 distinct messages.
        self._piece = functools.lru_cache(maxsize=65536)(self._encoded_length)

    def _encoded_length(self, piece: str) -> int:
        return len(self._encoding.encode(piece))

    def _text(self, text: str) -> int:
        n, start = 0, 0
        for run, end in filler_runs(text):  # a placeholder: its characters / 4, not encoded
            n += self._piece(text[start:run]) if run > start else 0
            n += (end - run) // len(FILLER_UNIT)
            start = end
        return n + (self._piece(text[start:]) if start < len(text) else 0)

    base = COOKBOOK_REPLY_TOKENS  # a request's tokens: base plus each message's (as Estimate)

    def message(self, message: Mapping[str, str]) -> int:
        return COOKBOOK_MESSAGE_TOKENS + self.text(message["role"]) + self.text(message["content"])

    def __call__(self, messages: Any) -> int:
        if isinstance(messages, str):
            return self.text(messages)
        return self.base + sum(self.message(m) for m in messages)


ESTIMATE = Estimate()


@functools.cache
def _encoded(name: str) -> Encoded:
    return Encoded(name)


def counter_for(entry: Mapping[str, Any]) -> Estimate | Encoded:
    """The counter of a config's model entry: exact for an OpenAI chat model with ``bpe-openai``
    installed, else :data:`ESTIMATE`."""
    name = encoding_name(str(entry.get("model", "")))
    if name is None or bpe_module() is None:
        return ESTIMATE
    return _encoded(name)


def chat_tokens(messages: Any) -> int:
    """Prompt tokens of a request by the fallback (characters / 4)."""
    return ESTIMATE(messages)
