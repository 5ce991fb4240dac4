"""The shared state of the config checks: the problems found, the models the run uses, name lookups."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from isqaflow.backends import backend_of


@dataclass(frozen=True)
class ConfigProblem:
    """One problem: the config path (``arena.judges.local.model``) and what is wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class References:
    """What the section checkers share: the config, the problems found so far, and the models
    the run uses (each with the config paths that make it use them)."""

    def __init__(
        self, config: Mapping[str, Any], workdir: Path, environ: Mapping[str, str]
    ) -> None:
        self.config = config
        self.workdir = workdir
        self.environ = environ
        self.problems: list[ConfigProblem] = []
        # model key -> the config paths that make the run use it
        self.used_models: dict[str, list[str]] = {}

    def section(self, *keys: str) -> Any:
        node: Any = self.config
        for key in keys:
            if not isinstance(node, Mapping):
                return {}
            node = node.get(key)
        return {} if node is None else node

    def problem(self, path: str, message: str) -> None:
        self.problems.append(ConfigProblem(path, message))

    def ref(self, path: str, value: Any, choices: Iterable[str], what: str, where: str) -> bool:
        """``value`` must be one of ``choices`` (``what``: "model"; ``where``: "models")."""
        choices = sorted(str(c) for c in choices)
        if str(value) in choices:
            return True
        close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        listed = ", ".join(choices) if choices else "none"
        self.problem(path, f"no {what} {value!r} in {where}{hint}; choices: {listed}")
        return False

    def model_ref(self, path: str, name: Any, used: bool = True) -> bool:
        ok = self.ref(path, name, self.section("models"), "model", "models")
        if ok and used:
            self.use(name, path)
        return ok

    def system_ref(self, path: str, entry: Mapping[str, Any], used: bool = True) -> None:
        """A system entry at ``path`` (a summarizer, responder or answerer): its ``model`` and,
        where it names one, its ``adapter`` fine-tuned from that model."""
        self.model_ref(f"{path}.model", entry.get("model"), used=used)
        if entry.get("adapter") is not None:
            self.adapter_ref(f"{path}.adapter", entry["adapter"], entry.get("model"))

    def use(self, name: Any, path: str) -> None:
        """The run uses model ``name`` (checked elsewhere) through the entry at ``path``."""
        if name in self.section("models"):
            self.used_models.setdefault(str(name), []).append(path)

    def adapter_ref(self, path: str, adapter: Any, model: Any) -> None:
        """An adapter is a finetune key, fine-tuned from the same local checkpoint as ``model``."""
        finetune = self.section("finetune")
        if not self.ref(path, adapter, finetune, "adapter", "finetune"):
            return
        models = self.section("models")
        if model not in models:
            return  # reported by model_ref
        entry = models[model]
        if not backend_of(entry, model).local:
            self.problem(
                path,
                f"adapter {adapter!r} needs a local (hf) model; model {model!r} is "
                f"backend {entry.get('backend')!r}",
            )
            return
        base = finetune[adapter].get("base")
        if base in models and _checkpoint(models[base]) != _checkpoint(entry):
            self.problem(
                path,
                f"adapter {adapter!r} was fine-tuned from {base!r} "
                f"({models[base].get('model')}), not from {model!r} ({entry.get('model')})",
            )
        elif base in models and models[base].get("dtype", "auto") != entry.get("dtype", "auto"):
            # checked here for every use, in process or served (the serving check only sees vLLM's)
            trained, used = models[base].get("dtype", "auto"), entry.get("dtype", "auto")
            self.problem(
                path,
                f"adapter {adapter!r} was fine-tuned in dtype {trained} (models.{base}.dtype) but "
                f"is used with {model!r} in dtype {used}: an adapter runs in the dtype it was "
                f"trained in; set models.{model}.dtype: {trained}",
            )

    def names(
        self, path: str, values: Any, choices: Iterable[str], what: str, where: str
    ) -> list[str]:
        """Check a list of names; returns the valid ones."""
        good = []
        for i, value in enumerate(values or []):
            if self.ref(f"{path}[{i}]", value, choices, what, where):
                good.append(str(value))
        return good


def _checkpoint(entry: Mapping[str, Any]) -> tuple[Any, Any]:
    return entry.get("model"), entry.get("revision")
