"""Numbers at their limits: what the schema's ranges cannot say.

JSON Schema's ``minimum``/``exclusiveMinimum`` compare with ``<=``, which is false for NaN, so
``temperature: .nan`` passes ``exclusiveMinimum: 0``; an integer has no upper bound, so a seed
of 2**70 passes and the LoRA job dies in ``torch.manual_seed`` ("Overflow when unpacking long
long") after the DAG has started.  This checker walks the whole config once:

* every number is finite (no NaN, no infinity), whatever its key;
* every integer fits the 64-bit integers numpy and torch take;
* every ``seed`` lies in ``[0, 2**32 - 1]``: what ``numpy.random.seed`` takes and what torch
  takes with room for the per-batch offsets the generators add;
* a ``generation.max_new_tokens`` beside a ``model`` whose entry says its ``gpu.context`` (its
  longest sequence) is within that context.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

from isqaflow.configcheck.references import References

#: The largest integer numpy's and torch's 64-bit integers hold.
INT64_MAX = 2**63 - 1
#: The largest seed: numpy.random.seed's upper bound (torch takes more; the generators add
#: small offsets per batch to the seed).
SEED_MAX = 2**32 - 1


def _leaves(node: Any, path: str) -> Iterator[tuple[str, str, Any]]:
    """(path, key, value) of every number in ``node``, depth first."""
    if isinstance(node, Mapping):
        for key, value in node.items():
            child = f"{path}.{key}" if path else str(key)
            if isinstance(value, Mapping | list):
                yield from _leaves(value, child)
            else:
                yield child, str(key), value
    elif isinstance(node, list):
        for i, value in enumerate(node):
            child = f"{path}[{i}]"
            if isinstance(value, Mapping | list):
                yield from _leaves(value, child)
            else:
                yield child, path.rsplit(".", 1)[-1], value


def _mappings(node: Any, path: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    if isinstance(node, Mapping):
        yield path, node
        for key, value in node.items():
            yield from _mappings(value, f"{path}.{key}" if path else str(key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _mappings(value, f"{path}[{i}]")


def check_limits(refs: References) -> None:
    for path, key, value in _leaves(refs.config, ""):
        if isinstance(value, bool):
            continue
        if isinstance(value, float) and not math.isfinite(value):
            refs.problem(path, f"{value!r} is not a finite number (NaN and infinity are refused)")
        elif isinstance(value, int):
            if key == "seed" and not 0 <= value <= SEED_MAX:
                refs.problem(
                    path,
                    f"seed {value} is outside [0, 2**32 - 1], the seeds numpy and torch take",
                )
            elif abs(value) > INT64_MAX:
                refs.problem(
                    path,
                    f"{value} does not fit a 64-bit integer (|n| <= 2**63 - 1), what numpy "
                    "and torch take",
                )
    models = refs.section("models")
    for path, node in _mappings(refs.config, ""):
        name, generation = node.get("model"), node.get("generation")
        if not isinstance(name, str) or not isinstance(generation, Mapping):
            continue
        entry = models.get(name) if isinstance(models, Mapping) else None
        gpu = entry.get("gpu") if isinstance(entry, Mapping) else None
        context = gpu.get("context") if isinstance(gpu, Mapping) else None
        tokens = generation.get("max_new_tokens")
        if (
            isinstance(context, int)
            and isinstance(tokens, int)
            and not isinstance(tokens, bool)
            and tokens > context
        ):
            refs.problem(
                f"{path}.generation.max_new_tokens",
                f"{tokens} new tokens do not fit model {name!r}'s context of {context} tokens "
                f"(models.{name}.gpu.context)",
            )
