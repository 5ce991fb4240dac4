"""Each arena rule's ``code`` parameter hashes exactly the library code its job runs.

A rule reruns when the hash of its ``code("isqaflow....")`` modules changes, so a rule
must name the module its script calls, and that module must not pull in code the job
never runs (editing the model layer must not rerun BM25).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from isqaflow.codehash import dependencies

REPO = Path(__file__).resolve().parents[3]
RULES = REPO / "rules" / "arena" / "arena.smk"


def arena_rules() -> dict[str, dict]:
    """rule name -> {"code": modules of its code(...) param, "script": path of its script}."""
    text = RULES.read_text()
    rules = {}
    for block in re.split(r"^rule ", text, flags=re.MULTILINE)[1:]:
        name = block.split(":", 1)[0].strip()
        code = re.search(r"code=code\(([^)]*)\)", block)
        script = re.search(r'script:\s*"(?:\.\./)+(scripts/[^"]+)"', block)
        modules = [m for m in re.findall(r'"([\w.]+)"', code.group(1))] if code else []
        rules[name] = {"code": modules, "script": REPO / script.group(1)}
    return rules


def script_modules(path: Path) -> set[str]:
    """The isqaflow modules a script imports (isqaflow.runtime, in every hash, left out)."""
    tree = ast.parse(path.read_text())
    found = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    found |= {
        alias.name
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        for alias in node.names
    }
    return {m for m in found if m.startswith("isqaflow.") and m != "isqaflow.runtime"}


RULE_NAMES = sorted(arena_rules())


@pytest.mark.parametrize("rule", RULE_NAMES)
def test_rule_hashes_the_module_its_script_runs(rule):
    entry = arena_rules()[rule]
    assert entry["code"], f"rule {rule} has no code param"
    assert set(entry["code"]) == script_modules(entry["script"]), rule


# What each rule's job must not depend on: code it never runs.
NOT_RUN = {
    "retrieve": (
        "isqaflow.models",
        "isqaflow.arena.answers",
        "isqaflow.arena.judging.judge",
        "isqaflow.arena.retrieval.colbert",
    ),
    "colbert_index": (
        "isqaflow.models",
        "isqaflow.arena.answers",
        "isqaflow.arena.judging.judge",
        "isqaflow.text.embeddings",
    ),
    "retrieve_colbert": (
        "isqaflow.models",
        "isqaflow.arena.answers",
        "isqaflow.arena.judging.judge",
        "isqaflow.text.embeddings",
    ),
    "rag_answers": (
        "isqaflow.arena.retrieval.bm25_dense",
        "isqaflow.arena.judging.judge",
        "isqaflow.text.embeddings",
    ),
    "arena_judge": (
        "isqaflow.arena.judging.summaries",
        "isqaflow.arena.judging.controls",
        "isqaflow.arena.answers",
        "isqaflow.arena.retrieval.bm25_dense",
        "isqaflow.arena.judging.agreement",
        "isqaflow.arena.tables",
    ),
    "arena_summaries": (
        "isqaflow.arena.judging.battles",
        "isqaflow.arena.judging.controls",
        "isqaflow.arena.answers",
        "isqaflow.arena.retrieval.bm25_dense",
    ),
    "arena_tables": (
        "isqaflow.models",
        "isqaflow.arena.judging.judge",
        "isqaflow.arena.judging.battles",
        "isqaflow.arena.answers",
        "isqaflow.arena.retrieval.bm25_dense",
    ),
    "arena_judge_checks": (
        "isqaflow.arena.judging.battles",
        "isqaflow.arena.judging.summaries",
        "isqaflow.arena.answers",
        "isqaflow.arena.retrieval.bm25_dense",
        "isqaflow.arena.tables",
    ),
}


@pytest.mark.parametrize("rule", RULE_NAMES)
def test_rule_code_leaves_out_what_the_job_never_runs(rule):
    entry = arena_rules()[rule]
    deps = {d for module in entry["code"] for d in dependencies(module)}
    assert rule in NOT_RUN, f"no expectation for rule {rule}"
    for prefix in NOT_RUN[rule]:
        hits = sorted(d for d in deps if d == prefix or d.startswith(prefix + "."))
        assert not hits, f"rule {rule} hashes {hits}, which its job never runs"


def test_every_arena_rule_is_covered():
    assert set(RULE_NAMES) == set(NOT_RUN)
