"""Settings dataclasses from config mappings: an unknown key is an error that names it; and
the definitions of config keys that the config check and the jobs both read (one each), and
the masking of secrets in every message that quotes a config value."""

from __future__ import annotations

import dataclasses
import hashlib
import re
from collections.abc import Iterator, Mapping
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

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


#: How a redacted value starts in a job's params (:func:`redact_secrets`).
REDACTED = "<redacted "


def _redacted(value: str, shown: str) -> str:
    digest = hashlib.sha256(value.encode()).hexdigest()[:16]
    return f"{REDACTED}{shown} sha256:{digest}>"


def redact_url(url: str) -> str:
    """``url`` with its query string and password masked, or ``url`` itself when it has
    neither: an endpoint's key often rides in the query (``?api-key=...``, Azure's a 32-digit
    hex string that no key pattern recognises), so every query value counts as a secret."""
    parts = urlsplit(url)
    if not parts.query and parts.password is None and not looks_like_secret(url):
        return url
    netloc = parts.netloc
    if parts.password is not None:
        netloc = netloc.replace(f":{parts.password}@", f":{MASK}@", 1)
    query = "&".join(
        f"{item.split('=', 1)[0]}={MASK}" if "=" in item else MASK
        for item in parts.query.split("&")
        if item
    )
    shown = mask_secrets(urlunsplit((parts.scheme, netloc, parts.path, query, "")))
    return _redacted(url, shown)


def redact_secrets(value: Any, *, url_keys: tuple[str, ...] = ("base_url",)) -> Any:
    """``value`` (a config entry: mappings, lists, strings) with every secret replaced by a
    redacted form that keeps its hash -- what a rule passes in ``params``, which Snakemake prints
    ("Params have changed", ``--list-changes``) and stores in its metadata.  A changed secret
    still changes the params (the hash); the job reads the value itself at run time
    (:func:`restore_secrets`, from the config).  The values of ``url_keys`` are URLs
    (:func:`redact_url`); any other string is redacted when it looks like a key."""
    if isinstance(value, Mapping):
        return {
            k: redact_url(v)
            if k in url_keys and isinstance(v, str)
            else redact_secrets(v, url_keys=url_keys)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return type(value)(redact_secrets(v, url_keys=url_keys) for v in value)
    if isinstance(value, str) and looks_like_secret(value):
        return _redacted(value, mask_secrets(value))
    return value


def _config_strings(value: Any) -> Iterator[str]:
    if isinstance(value, Mapping):
        for v in value.values():
            yield from _config_strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from _config_strings(v)
    elif isinstance(value, str):
        yield value


def restore_secrets(value: Any, config: Mapping[str, Any]) -> Any:
    """``value`` with every redacted form (:func:`redact_secrets`) replaced by the config's
    value it stands for; a redacted form the config does not hold (the config changed since the
    job was planned) is a ``ValueError`` that never shows a secret."""
    if isinstance(value, str):
        if not value.startswith(REDACTED):
            return value
        known = {}
        for s in _config_strings(config):
            known[redact_url(s)] = s
            known[_redacted(s, mask_secrets(s))] = s
        if value not in known:
            raise ValueError(
                f"the job's params hold {value}, which no value of the config has: "
                "the config changed after the job was planned; rerun the workflow"
            )
        return known[value]
    if isinstance(value, Mapping):
        return {k: restore_secrets(v, config) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(restore_secrets(v, config) for v in value)
    return value


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
