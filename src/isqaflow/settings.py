"""Settings dataclasses from config mappings: an unknown key is an error that names it; and
the definitions of config keys that the config check and the jobs both read (one each), and
the masking of secrets in every message that quotes a config value."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any, TypeVar

from isqaflow.backends import BACKENDS, key_env_of

T = TypeVar("T")

#: The arena's players that are not systems (isqaflow.arena.players, the leaderboard): LFRQA's
#: long-form reference answer of a query, and a paper's own abstract (the reference of the
#: summaries' arena).  No system may take their names (the config check refuses it).
REFERENCE_PLAYER = "lfrqa"
ABSTRACT_PLAYER = "abstract"

#: The environment variable of an API model's key when neither its entry (``api_key_env``) nor
#: its backend's record (:mod:`isqaflow.backends`) names one.
DEFAULT_KEY_ENV = str(BACKENDS["openai"].key_env)
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# What API keys and tokens look like (OpenAI sk-/sk-proj-, Anthropic sk-ant-, Hugging Face hf_,
# GitHub ghp_/gho_/github_pat_, Slack xox?-, Google AIza, AWS AKIA, Bearer tokens): the
# prefix is kept, the rest masked.
_SECRET = re.compile(
    r"(?P<prefix>\b(?:sk-(?:proj-|ant-|svcacct-|admin-)?|hf_|ghp_|gho_|ghu_|ghs_|github_pat_|xox[abprs]-|"
    r"AIza|AKIA|Bearer\s+))(?P<secret>[A-Za-z0-9_\-./+=]{6,})"
)
# A long unbroken run of upper- and lower-case letters and digits (32+ characters): a token of
# an unknown provider (a hex digest or a commit id, lower case only, is left alone).
_TOKEN = re.compile(r"\b(?=\w*\d)(?=\w*[a-z])(?=\w*[A-Z])[A-Za-z0-9_]{32,}\b")
MASK = "***"


def mask_secrets(text: str) -> str:
    """``text`` with anything that looks like an API key or token masked (its known prefix kept:
    ``sk-proj-***``).  Every message of the config check goes through it: a key pasted where
    its variable's name belongs must never reach a terminal or a log."""
    text = _SECRET.sub(lambda m: m.group("prefix") + MASK, text)
    return _TOKEN.sub(MASK, text)


def looks_like_secret(value: Any) -> bool:
    return isinstance(value, str) and mask_secrets(value) != value


def api_key_variable(entry: Mapping[str, Any]) -> str:
    """The environment variable that holds an API model's key: ``api_key_env``, or its backend's
    (:attr:`isqaflow.backends.Backend.key_env`, else :data:`DEFAULT_KEY_ENV`) when the entry
    has none (or null).  Read by the config check and by
    the jobs alike.  Anything that is not a variable's name -- empty, white space, a key
    pasted there -- is a ``ValueError`` whose message never quotes a value that looks like a key.
    """
    value = entry.get("api_key_env")
    if value is None:
        return key_env_of(entry) or DEFAULT_KEY_ENV
    if looks_like_secret(value):  # before the name's rule: hf_... tokens are valid names
        raise ValueError(
            "api_key_env holds what looks like an API key itself (not shown): it takes the "
            "NAME of the environment variable that holds the key; export the key as, e.g., "
            f"{DEFAULT_KEY_ENV} and write that name here (and revoke the key if this file "
            "was shared)"
        )
    if isinstance(value, str) and _ENV_NAME.match(value):
        return value
    shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
    raise ValueError(
        f"api_key_env {shown} is not an environment variable's name (letters, digits and _, "
        f"not starting with a digit); leave it out for {DEFAULT_KEY_ENV}"
    )


def reads_file(entry: Mapping[str, Any]) -> bool:
    """Whether a system entry (an answerer, responder or summarizer) is read from a file of
    its outputs (``file:``) rather than run from a model (``model:``): such a system
    generates nothing, needs no model, no GPU and no serving check."""
    return "file" in entry


def from_mapping(cls: type[T], values: Mapping[str, Any] | None, what: str) -> T:
    values = dict(values or {})
    known = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"unknown {what} setting(s) {unknown}; known: {sorted(known)}")
    return cls(**values)
