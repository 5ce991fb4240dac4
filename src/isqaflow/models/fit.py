"""Fit a document into a model's input budget, cutting the document and never the instructions.

Prompts are built around a document (a paper, a summary, retrieved passages).  When
the whole request exceeds ``max_input_tokens``, the document's tail is cut -- not the
template's instructions nor the question after it -- and the number of tokens cut is
returned so the caller can log it and record it.
"""

from __future__ import annotations

from collections.abc import Callable

from isqaflow.models.base import LanguageModel, Request, flatten_messages


def request_tokens(model: LanguageModel, request: Request) -> int:
    """Tokens of a whole request as the model reads it (estimated for API backends)."""
    if hasattr(model, "encode_request"):
        return len(model.encode_request(request))
    text = request if isinstance(request, str) else flatten_messages(request)
    return model.count_tokens(text)


def fit_document(
    model: LanguageModel,
    build: Callable[[str], Request],
    document: str,
    max_input_tokens: int | None,
) -> tuple[Request, int]:
    """``build(document)``, with ``document`` shortened so the request fits; returns (request, tokens cut)."""
    request = build(document)
    if not max_input_tokens:
        return request, 0
    overflow = request_tokens(model, request) - max_input_tokens
    if overflow <= 0:
        return request, 0
    doc_tokens = model.count_tokens(document)
    budget = max(0, doc_tokens - overflow)
    for _ in range(4):  # token counts of a cut text can shift by a token or two at the boundary
        cut_text, _ = model.truncate_text(document, budget)
        request = build(cut_text)
        excess = request_tokens(model, request) - max_input_tokens
        if excess <= 0 or budget == 0:
            break
        budget = max(0, budget - excess)
    return request, doc_tokens - model.count_tokens(cut_text)
