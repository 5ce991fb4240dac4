"""Request text and token counts from a model's own tokenizer and chat template.

Shared by the in-process backend (:class:`~.hf.HFModel`) and served local models
(:class:`~.serve.ServedModel`), so a stage that fits a document to a token budget,
and the prompt a model reads, are the same whichever runs the model.  The class
using it sets ``tokenizer`` and ``has_chat_template``.
"""

from __future__ import annotations

from typing import Any

from isqaflow.models.base import Request, flatten_messages


class TokenizedText:
    tokenizer: Any
    has_chat_template: bool

    def render(self, request: Request, add_generation_prompt: bool = True) -> tuple[str, bool]:
        """The exact text the model reads for a request, and whether a chat template made it."""
        if isinstance(request, str):
            return request, False
        if self.has_chat_template:
            text = self.tokenizer.apply_chat_template(
                list(request), tokenize=False, add_generation_prompt=add_generation_prompt
            )
            return text, True
        return flatten_messages(request), False

    def _encode(self, text: str, templated: bool) -> list[int]:
        # A chat template already writes the special tokens; plain prompts get the
        # tokenizer's own (BOS for Llama, </s> for T5).
        return self.tokenizer(text, add_special_tokens=not templated)["input_ids"]

    def encode_request(self, request: Request) -> list[int]:
        return self._encode(*self.render(request))

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def truncate_text(self, text: str, max_tokens: int) -> tuple[str, int]:
        enc = self.tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        ids = enc["input_ids"]
        if len(ids) <= max_tokens:
            return text, 0
        if max_tokens <= 0:
            return "", len(ids)
        end = enc["offset_mapping"][max_tokens - 1][1]
        return text[:end], len(ids) - max_tokens
