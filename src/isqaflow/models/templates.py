"""Chat templates: how a conversation becomes the text a causal model reads.

A model entry's ``chat_template`` key says which template its chat requests use:

* absent -- the tokenizer's own template (``tokenizer_config.json`` /
  ``chat_template.jinja`` of the checkpoint);
* a name of a template this project ships (:data:`NAMED`):

  - ``vicuna_v1.1`` -- FastChat's Vicuna v1.1 conversation
    (``"<s>SYSTEM USER: q ASSISTANT: a</s>USER: q2 ASSISTANT:"``; the default
    system message when the conversation has none).  Vicuna v1.5 is trained on it
    and its release ships no template.
  - ``llama-2`` -- Meta's Llama-2-chat format (``"<s>[INST] <<SYS>>\\n...\\n<</SYS>>\\n\\nq
    [/INST] a </s><s>[INST] q2 [/INST]"``), as in ``meta-llama/Llama-2-7b-chat-hf``;

* a path to a Jinja file (the Hugging Face chat-template dialect: ``messages``,
  ``bos_token``, ``eos_token``, ``add_generation_prompt``, ``raise_exception``);
* ``none`` -- no template on purpose: the turns' contents are sent as plain text
  (:func:`isqaflow.models.base.flatten_messages`).

A causal model with neither its own template nor this key fails when it is loaded
(:class:`MissingChatTemplate`), naming the model, instead of silently reading
flattened text it was never trained on.  Seq2seq models (Flan-T5) are prompted with
plain text by design and need no template.

Which template a model used (its source and the SHA-256 of its text) goes into the
model's cache identity when the key is set, into the job's usage record and into
the provenance manifest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TEMPLATE_DIR = Path(__file__).with_name("chat_templates")
NAMED = {"vicuna_v1.1": "vicuna_v1.1.jinja", "llama-2": "llama-2.jinja"}
NONE = "none"
SEQ2SEQ_PLAIN = "plain:seq2seq"


class MissingChatTemplate(ValueError):
    """A causal model would get chat requests but has no chat template."""


@dataclass(frozen=True)
class ChatTemplate:
    """A resolved ``chat_template`` setting.

    ``source`` is ``"named:<name>"``, ``"file:<path>"``, ``"tokenizer"`` (the
    checkpoint's own), ``"none"`` (plain text on purpose) or ``"plain:seq2seq"`` (a
    seq2seq model without a template: plain text by design); ``text`` is the Jinja
    source (None for plain text).
    """

    source: str
    text: str | None

    @property
    def sha256(self) -> str | None:
        return (
            hashlib.sha256(self.text.encode("utf-8")).hexdigest() if self.text is not None else None
        )

    @property
    def plain_text(self) -> bool:
        """True when chat requests are sent as flattened plain text (``none``, or a seq2seq model)."""
        return self.text is None

    def record(self) -> dict[str, Any]:
        """What the usage record and the manifest keep: where it came from and its hash."""
        return {"source": self.source, "sha256": self.sha256}


def named_template_text(name: str) -> str:
    return (TEMPLATE_DIR / NAMED[name]).read_text(encoding="utf-8")


def resolve_chat_template(value: str | None, model_name: str) -> ChatTemplate | None:
    """The template a ``chat_template`` config value names; None when the value is absent.

    Raises :class:`ValueError` naming the model for a value that is none of a shipped
    name, ``none`` or an existing file.
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError(
            f"model {model_name}: chat_template must be a template name, a Jinja file or 'none', "
            f"got {value!r}"
        )
    if value == NONE:
        return ChatTemplate(NONE, None)
    if value in NAMED:
        return ChatTemplate(f"named:{value}", named_template_text(value))
    path = Path(value)
    if path.is_file():
        text = path.read_text(encoding="utf-8")
        if not text.strip():
            raise ValueError(f"model {model_name}: chat_template file {value} is empty")
        return ChatTemplate(f"file:{value}", text)
    raise ValueError(
        f"model {model_name}: chat_template {value!r} is neither a shipped template "
        f"({', '.join(sorted(NAMED))}), 'none', nor an existing Jinja file"
    )


def missing_template_error(model_name: str) -> MissingChatTemplate:
    return MissingChatTemplate(
        f"model {model_name}: a causal model without a chat template would get chat requests as "
        f"flattened plain text; set models.{model_name}.chat_template to a shipped template "
        f"({', '.join(sorted(NAMED))}), a Jinja file, or 'none' to send plain text on purpose"
    )


def tokenizer_template(tokenizer: Any) -> ChatTemplate | None:
    """The checkpoint's own template, or None when its tokenizer has none."""
    text = getattr(tokenizer, "chat_template", None)
    if isinstance(text, dict):  # several named templates: the default one chats
        text = text.get("default")
    return ChatTemplate("tokenizer", text) if text else None
