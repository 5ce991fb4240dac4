"""The schema's own errors (``config/schema.yaml``), each naming its config key in one line.

Snakemake's ``validate`` raises the first error of jsonschema as it comes: for an entry
that may take one of several forms (``oneOf``: a system run from a model or read from a
file, a raw file given as a path or as a download, the QuestEval weighter) that is
"... is not valid under any of the given schemas", the schema of every form and the
instance -- a typo such as ``covrage:`` inside a system entry gave a page of dump.

:func:`schema_problems` checks the config against the same schema first and explains
every error: an unknown key with the closest valid one ("did you mean"), a value not in
an ``enum`` with the valid ones, a missing key, a wrong type; for a ``oneOf`` entry, the
errors of the form the entry is closest to (by its keys), with the keys each form takes.
The Snakefile calls :func:`exit_on_schema_problems` before ``validate`` (which then only
fills in the defaults).  jsonschema is Snakemake's own dependency.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from isqaflow.configcheck.references import ConfigProblem

MAX_VALUE = 60  # characters of a bad value quoted in a message

_TYPES = {
    "object": "a mapping",
    "array": "a list",
    "string": "a string",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def load_schema(path: str | Path) -> dict[str, Any]:
    import yaml

    # libyaml's loader where PyYAML has it (the same safe constructors): the schema is read at
    # every Snakefile parse, and the pure-Python loader took ~0.5 s of each
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(Path(path).read_text(encoding="utf-8"), Loader=loader)  # noqa: S506


def _strict_integer(checker: Any, instance: Any) -> bool:
    """An ``integer`` is an int: jsonschema also takes 13.0 (a float with no fraction), which
    then changes a seeded draw (``random.Random(13.0)`` is not ``Random(13)``) or fails inside
    a job (``range(2.0)``); true/false are not integers either."""
    return isinstance(instance, int) and not isinstance(instance, bool)


def strict_validator(schema: Mapping[str, Any]) -> Any:
    """The schema's validator (draft 2020-12) with strict integers (:func:`_strict_integer`)."""
    from jsonschema import Draft202012Validator, validators

    checker = Draft202012Validator.TYPE_CHECKER.redefine("integer", _strict_integer)
    return validators.extend(Draft202012Validator, type_checker=checker)(schema)


def schema_problems(config: Mapping[str, Any], schema: Mapping[str, Any]) -> list[ConfigProblem]:
    """Every error of ``config`` against ``schema``, explained (see the module docstring).
    Integers are strict: 13.0 where the schema says ``integer`` is an error naming the key."""
    validator = strict_validator(schema)
    explainer = _Explainer(schema)
    problems: list[ConfigProblem] = []
    for error in sorted(
        validator.iter_errors(config), key=lambda e: [str(p) for p in e.absolute_path]
    ):
        problems.extend(explainer.explain(error))
    return list(dict.fromkeys(problems))


def exit_on_schema_problems(
    config: Mapping[str, Any], schema_path: str | Path, config_files: Sequence[str] = ()
) -> None:
    """Print every explained schema error to stderr and exit with status 1; return when there is none."""
    problems = schema_problems(config, load_schema(schema_path))
    if problems:
        from isqaflow.configcheck import format_problems

        print(format_problems(problems, config_files), file=sys.stderr, flush=True)
        sys.exit(1)


def config_path(parts: Iterable[Any]) -> str:
    """``arena.answerers.my-rag`` / ``datasets.papers.qasper.files[0]``; ``(top level)`` for the root."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _quote(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 3] + "..."


def _closest(value: Any, choices: Iterable[Any]) -> str:
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _matches_type(instance: Any, types: Any) -> bool:
    if types is None:
        return True
    checks = {
        "object": lambda v: isinstance(v, Mapping),
        "array": lambda v: isinstance(v, list),
        "string": lambda v: isinstance(v, str),
        "null": lambda v: v is None,
        "boolean": lambda v: isinstance(v, bool),
        "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
        "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    }
    return any(checks[t](instance) for t in ([types] if isinstance(types, str) else types))


class _Explainer:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def resolve(self, schema: Any) -> Any:
        """A subschema with its local ``$ref`` (``#/$defs/...``) followed."""
        while (
            isinstance(schema, Mapping)
            and isinstance(schema.get("$ref"), str)
            and schema["$ref"].startswith("#/")
        ):
            node: Any = self.root
            for part in schema["$ref"][2:].split("/"):
                node = node[part]
            schema = node
        return schema

    def forms(self, alternatives: Sequence[Any]) -> str:
        """ "one with 'model': adapter, cot, model; one with 'file': coverage, file, format"."""
        described = []
        for alt in map(self.resolve, alternatives):
            if not isinstance(alt, Mapping):
                continue
            props = sorted(alt.get("properties") or {})
            required = alt.get("required") or []
            if props:
                key = f"one with {' and '.join(map(repr, required))}" if required else "a mapping"
                described.append(f"{key}: {', '.join(props)}")
            elif alt.get("type"):
                described.append(
                    _TYPES.get(alt["type"], str(alt["type"]))
                    if isinstance(alt["type"], str)
                    else " or ".join(_TYPES.get(t, t) for t in alt["type"])
                )
        return "; or ".join(described)

    def explain(self, error: Any, forms: str = "") -> list[ConfigProblem]:
        path = config_path(error.absolute_path)
        instance, schema, kind = error.instance, error.schema, error.validator
        tail = f" (this entry takes {forms})" if forms else ""
        if kind in ("oneOf", "anyOf"):
            return self.explain_choice(error)
        if kind == "additionalProperties" and isinstance(instance, Mapping):
            props = schema.get("properties") or {}
            valid = (
                f"this entry takes {forms}"
                if forms
                else f"valid keys here: {', '.join(sorted(props)) or 'none'}"
            )
            return [
                ConfigProblem(
                    config_path([*error.absolute_path, key]),
                    f"unknown key{_closest(key, props)}; {valid}",
                )
                for key in instance
                if key not in props
            ]
        if kind == "required" and isinstance(instance, Mapping):
            # a key misspelled is reported as unknown, with this one as its closest: not again
            unknown = [k for k in instance if k not in (schema.get("properties") or {})]
            meant = {
                m
                for k in unknown
                for m in difflib.get_close_matches(str(k), error.validator_value, 1, 0.6)
            }
            return [
                ConfigProblem(path, f"missing key {key!r}{tail}")
                for key in error.validator_value
                if key not in instance and key not in meant
            ]
        if kind == "enum":
            # each choice once as written (an enum may accept "12.8" and 12.8 alike)
            choices = ", ".join(dict.fromkeys(map(str, error.validator_value)))
            return [
                ConfigProblem(
                    path,
                    f"{_quote(instance)} is not a valid value"
                    f"{_closest(instance, error.validator_value)}; one of: {choices}",
                )
            ]
        if kind == "type":
            types = error.validator_value
            wanted = " or ".join(
                _TYPES.get(t, t) for t in ([types] if isinstance(types, str) else types)
            )
            return [ConfigProblem(path, f"expected {wanted}, got {_quote(instance)}{tail}")]
        return [ConfigProblem(path, f"{_quote(instance)}: {error.message[:200]}")]

    def explain_choice(self, error: Any) -> list[ConfigProblem]:
        """A ``oneOf``/``anyOf`` entry: the errors of the form it is closest to."""
        alternatives = error.validator_value
        by_form: dict[int, list[Any]] = {}
        for sub in error.context or []:
            by_form.setdefault(sub.relative_schema_path[0], []).append(sub)
        forms = self.forms(alternatives)
        if not by_form or len(by_form) < len(alternatives):  # valid under several forms
            return [
                ConfigProblem(
                    config_path(error.absolute_path),
                    f"matches more than one form of this entry ({forms}); remove the keys of all but one",
                )
            ]
        best = max(by_form, key=lambda i: self.fit(error.instance, self.resolve(alternatives[i])))
        problems: list[ConfigProblem] = []
        for sub in by_form[best]:
            problems.extend(self.explain(sub, forms))
        return problems

    @staticmethod
    def fit(instance: Any, alt: Any) -> float:
        """How close ``instance`` is to the form ``alt``: its type, then its keys (closest spelling)."""
        if not isinstance(alt, Mapping) or not _matches_type(instance, alt.get("type")):
            return -1.0
        if not isinstance(instance, Mapping):
            return 0.0
        props = list(alt.get("properties") or {})
        score = 0.0
        for key in instance:
            score += max(
                (difflib.SequenceMatcher(None, str(key), p).ratio() for p in props), default=0.0
            )
        return score
