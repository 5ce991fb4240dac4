"""Loading of the hf backend: device, dtype, chat template, tokenizer, weights and adapter."""

from __future__ import annotations

from typing import Any

from isqaflow.models.templates import (
    SEQ2SEQ_PLAIN,
    ChatTemplate,
    missing_template_error,
    resolve_chat_template,
    tokenizer_template,
)
from isqaflow.runtime import job_device


def resolve_device(device: str = "auto", name: str = "model", key: str | None = None) -> str:
    """``auto``: CUDA when torch sees a device, else the CPU; in a job given GPUs that sees none,
    :class:`isqaflow.devices.NoGPUError` naming the job and ``name`` (see :func:`isqaflow.runtime.job_device`)."""
    return job_device(device, model=name, key=key)


def resolve_dtype(dtype: str, device: str):
    import torch

    if dtype == "auto":
        if device.startswith("cuda"):
            return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
        return torch.float32
    try:
        return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}[
            dtype
        ]
    except KeyError:
        raise ValueError(
            f"unknown dtype {dtype!r}; expected auto, float32, bfloat16 or float16"
        ) from None


def chat_template_for(
    tokenizer: Any, configured: str | None, name: str, is_seq2seq: bool
) -> ChatTemplate:
    """The template chat requests of this model use (see :mod:`.templates`).

    A configured template replaces the tokenizer's (``tokenizer.chat_template`` is set
    to it, so ``apply_chat_template`` renders it); ``none`` keeps plain text.  Raises
    :class:`~.templates.MissingChatTemplate` for a causal model with no template at all.
    """
    template = resolve_chat_template(configured, name)
    if template is not None:
        if template.text is not None:
            tokenizer.chat_template = template.text
        return template
    own = tokenizer_template(tokenizer)
    if own is not None:
        return own
    if is_seq2seq:
        return ChatTemplate(SEQ2SEQ_PLAIN, None)
    raise missing_template_error(name)


def load_pretrained(
    model: str,
    *,
    revision: str | None,
    adapter: str | None,
    torch_dtype: Any,
    device: str,
    trust_remote_code: bool,
    chat_template: str | None,
    name: str,
) -> tuple[Any, Any, ChatTemplate, Any]:
    """``(config, tokenizer, chat template, network)`` of a causal or seq2seq model: the
    tokenizer padded for its kind, the template checked before the weights are read, a LoRA
    adapter merged, the network on ``device`` in eval mode."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoModelForSeq2SeqLM, AutoTokenizer

    config = AutoConfig.from_pretrained(
        model, revision=revision, trust_remote_code=trust_remote_code
    )
    is_seq2seq = bool(getattr(config, "is_encoder_decoder", False))
    tokenizer = AutoTokenizer.from_pretrained(
        model, revision=revision, trust_remote_code=trust_remote_code
    )
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right" if is_seq2seq else "left"
    # Checked before the weights are read: a missing template fails in seconds.
    template = chat_template_for(tokenizer, chat_template, name, is_seq2seq)
    auto = AutoModelForSeq2SeqLM if is_seq2seq else AutoModelForCausalLM
    net = auto.from_pretrained(
        model, revision=revision, dtype=torch_dtype, trust_remote_code=trust_remote_code
    )
    if adapter:
        from peft import PeftModel

        # Merged into the weights: inference then costs what the base model costs.
        net = PeftModel.from_pretrained(net, adapter).merge_and_unload()
    return config, tokenizer, template, net.to(device).eval()
