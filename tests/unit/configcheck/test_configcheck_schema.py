"""isqaflow.configcheck.schema: the schema's errors explained in one line each, naming the
config key; for an entry with several forms (oneOf), the errors of the form it is closest to,
never jsonschema's dump of every form (the Snakefile runs this before validate)."""

from __future__ import annotations

import copy

import pytest
import yaml
from workflow_utils import REPO, copy_repo, snakemake

from isqaflow.configcheck.schema import load_schema, schema_problems

SCHEMA = load_schema(REPO / "config/schema.yaml")
EMBEDDED = yaml.safe_load((REPO / "config/config.yaml").read_text())
PAPER = yaml.safe_load((REPO / "config/paper.yaml").read_text())


def problems_of(change):
    config = copy.deepcopy(EMBEDDED)
    change(config)
    return [str(p) for p in schema_problems(config, SCHEMA)]


def test_the_shipped_configs_have_no_schema_problems():
    assert schema_problems(EMBEDDED, SCHEMA) == []
    assert schema_problems(PAPER, SCHEMA) == []


SYSTEM_FORMS = (
    "this entry takes one with 'model' and 'cot': adapter, cot, model; "
    "or one with 'file': coverage, family, file, format, process_response"
)


def answerer(**change):
    return lambda c: c["arena"]["answerers"]["handwritten"].update(change)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            answerer(covrage="partial"),
            [
                f"arena.answerers.handwritten.covrage: unknown key (did you mean 'coverage'?); {SYSTEM_FORMS}"
            ],
        ),
        (
            answerer(format="rag_qa_arena"),
            [
                (
                    "arena.answerers.handwritten.format: 'rag_qa_arena' is not a valid value (did you mean 'ragqa_arena'?); "
                    "one of: auto, jsonl, alpaca_eval, arena_hard, ragqa_arena"
                )
            ],
        ),
        (
            lambda c: c["arena"]["answerers"]["handwritten"].update(
                fiel=c["arena"]["answerers"]["handwritten"].pop("file")
            ),
            # the misspelled key, not also "missing key 'file'"
            [
                f"arena.answerers.handwritten.fiel: unknown key (did you mean 'file'?); {SYSTEM_FORMS}"
            ],
        ),
        (
            lambda c: c["drfr"]["responders"]["handwritten"].update(fromat="jsonl"),
            [
                (
                    "drfr.responders.handwritten.fromat: unknown key (did you mean 'format'?); this entry takes one with "
                    "'model': adapter, model; or one with 'file': coverage, family, file, format, process_response"
                )
            ],
        ),
        (
            lambda c: c["isqa"]["file_summaries"]["handwritten"].update(covrage="partial"),
            [
                (
                    "isqa.file_summaries.handwritten.covrage: unknown key (did you mean 'coverage'?); "
                    "valid keys here: coverage, dataset, family, file, format"
                )
            ],
        ),
        (
            lambda c: c["arena"]["answerers"]["smollm2"].update(modl="x"),
            [f"arena.answerers.smollm2.modl: unknown key (did you mean 'model'?); {SYSTEM_FORMS}"],
        ),
    ],
)
def test_system_entries_name_the_key(change, expected):
    assert problems_of(change) == expected


def test_every_oneof_section_is_explained():
    """Each oneOf of the schema (raw files, the QuestEval weighter, responders, answerers)."""

    def walk(node, where):
        if isinstance(node, dict):
            if "oneOf" in node:
                yield where
            for key, value in node.items():
                yield from walk(value, f"{where}/{key}")
        elif isinstance(node, list):
            for i, value in enumerate(node):
                yield from walk(value, f"{where}/{i}")

    assert sorted(walk(SCHEMA, "")) == [
        "/$defs/raw_file",
        "/properties/arena/properties/answerers/additionalProperties",
        "/properties/drfr/properties/responders/additionalProperties",
        "/properties/metrics/properties/questeval/properties/weighter",
    ]  # a new oneOf: add its case below
    raw = "this entry takes a string; or one with 'download': download, member"
    assert problems_of(
        lambda c: c["datasets"]["papers"]["qasper"].update(files=[{"downlod": "x"}])
    ) == [f"datasets.papers.qasper.files[0].downlod: unknown key (did you mean 'download'?); {raw}"]
    assert problems_of(lambda c: c["datasets"]["papers"]["qasper"].update(files=[5])) == [
        f"datasets.papers.qasper.files[0]: expected a string, got 5 ({raw})"
    ]
    assert problems_of(
        lambda c: c["metrics"]["questeval"].update(weighter={"model": "x", "mode": "questeval_v25"})
    ) == [
        (
            "metrics.questeval.weighter.mode: 'questeval_v25' is not a valid value (did you mean 'questeval_v024'?); "
            "one of: questeval_v024, questeval_v011, prompted"
        )
    ]
    assert problems_of(lambda c: c["metrics"]["questeval"].update(weighter="prompted")) == [
        (
            "metrics.questeval.weighter: expected null, got 'prompted' (this entry takes null; or one with 'model' "
            "and 'mode': max_input_tokens, mode, model)"
        )
    ]
    # both forms' keys: read as the closer form, the other form's key named
    assert problems_of(
        lambda c: c["drfr"]["responders"].update(both={"file": "x", "model": "smollm2"})
    ) == [
        (
            "drfr.responders.both.model: unknown key; this entry takes one with 'model': adapter, model; "
            "or one with 'file': coverage, family, file, format, process_response"
        )
    ]


def test_other_errors_name_their_key():
    assert problems_of(lambda c: c.update(arenaa=c.pop("arena"))) == [
        (
            "arenaa: unknown key (did you mean 'arena'?); valid keys here: arena, arena_hard, budget, cuda, datasets, downloads, drfr, "
            "finetune, gpu_plan, human_eval, isqa, metrics, models, peers, power, published_prompts, resources, seed, spend, tracking, validity, "
            "weights"
        )
    ]
    # (not also "missing key 'arena'": the misspelling says it)


def test_the_dry_run_prints_one_line_per_problem_not_a_schema_dump(tmp_path):
    repo = copy_repo(tmp_path / "repo")
    config = copy.deepcopy(EMBEDDED)
    config["arena"]["answerers"]["handwritten"].update(covrage="partial", format="rag_qa_arena")
    config["drfr"]["responders"]["handwritten"]["fromat"] = config["drfr"]["responders"][
        "handwritten"
    ].pop("format")
    (repo / "config/typos.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(
        repo, "-n", "--profile", "profiles/local", "--configfile", "config/typos.yaml", timeout=120
    )
    text = result.stdout + result.stderr
    assert result.returncode == 1
    assert (
        "isqaflow: 3 problems in the config (" in text and "typos.yaml); no job was started" in text
    )
    for key in (
        "arena.answerers.handwritten.covrage: unknown key (did you mean 'coverage'?)",
        "arena.answerers.handwritten.format: 'rag_qa_arena' is not a valid value (did you mean 'ragqa_arena'?)",
        "drfr.responders.handwritten.fromat: unknown key (did you mean 'format'?)",
    ):
        assert key in text
    for dump in ("ValidationError", "Failed validating", "oneOf", "Traceback"):
        assert dump not in text


def test_an_entry_valid_under_several_forms():
    schema = {
        "type": "object",
        "properties": {"x": {"oneOf": [{"type": "object"}, {"type": "object"}]}},
    }
    assert [str(p) for p in schema_problems({"x": {}}, schema)] == [
        "x: matches more than one form of this entry (a mapping; or a mapping); remove the keys of all but one"
    ]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda c: c.update(seed=13.0), "seed"),
        (lambda c: c["arena"].update(k=[5.0]), "arena.k[0]"),
        (lambda c: c["arena"]["runs"][0].update(k=5.0), "arena.runs[0].k"),
    ],
)
def test_an_integer_key_refuses_a_float_even_without_a_fraction(change, path):
    """jsonschema's integer takes 13.0 (a float that is integral): a seed of 13.0 then changes
    every seeded draw, a depth of 5.0 fails inside a job.  Refused, naming the key."""
    problems = problems_of(change)
    assert len(problems) == 1 and problems[0].startswith(f"{path}: expected an integer, got"), (
        problems
    )
    assert problems_of(lambda c: c.update(seed=True)) == ["seed: expected an integer, got True"]
    assert problems_of(lambda c: c.update(seed=13)) == []
