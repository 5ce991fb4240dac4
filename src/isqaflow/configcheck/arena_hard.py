"""The checker of Arena-Hard-Auto's config section (its descriptor's ``config_check``:
isqaflow.suites.arena_hard), in a module of its own as a new suite's would be."""

from __future__ import annotations

from isqaflow.backends import backend_of
from isqaflow.configcheck.references import References


def check_arena_hard(refs: References) -> None:
    """``arena_hard`` (optional): its answerers' models and adapters, its judges' models, and
    style control's tokenizer: a local model (an API model lends no tokenizer)."""
    for name, entry in refs.section("arena_hard", "answerers").items():
        refs.system_ref(f"arena_hard.answerers.{name}", entry)
    for name, entry in refs.section("arena_hard", "judges").items():
        refs.model_ref(f"arena_hard.judges.{name}.model", entry.get("model"))
    tokenizer = refs.section("arena_hard", "style_control").get("tokenizer")
    path = "arena_hard.style_control.tokenizer"
    if tokenizer is not None and refs.model_ref(path, tokenizer):
        entry = refs.section("models")[tokenizer]
        if not backend_of(entry, tokenizer).local:
            refs.problem(
                path,
                f"model {tokenizer!r} is behind an API (backend {entry.get('backend')!r}) and "
                "lends no tokenizer; name a local model, or null to turn style control off",
            )
