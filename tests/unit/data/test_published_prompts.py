"""The papers' published judge prompts: parsers and the judges' hooks.

The real files are downloaded at paper scale (config/paper.yaml, pinned commits
and checksums); the repository holds no copy.  These tests use stand-ins written
for them, in the same layout as the authors' files (InFoBench's evaluation.py with
SYS_MSG and the turns' f-strings; RAG-QA Arena's system text, ConfigObj template
and examples JSON), with invented text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from isqaflow.data.prompts import (
    PromptFormatError,
    load_arena_prompt,
    load_infobench_prompt,
    parse_infobench_prompt,
)
from isqaflow.io import RecordError
from isqaflow.models.base import Generation, LanguageModel

REPO = Path(__file__).resolve().parents[3]

EVALUATION_PY = """import json
from openai import OpenAI

SYS_MSG ="Judge the Generated Text. Reply YES or NO.\\n\\n- YES: when it fully holds.\\n- NO: otherwise {not a field}."

def run_evaluation(client, in_path):
    for entry in load(in_path):
        input_task = entry['input']
        output = entry['output']
        message = []
        for question in entry['decomposed_questions']:
            if len(message) == 0:
                if input_task:
                    content =  f"{SYS_MSG}\\n\\nInput:\\n\\"{input_task}\\"\\n\\nGenerated Text:\\n\\"{output}\\"\\n\\nQuestion:\\n{question}\\n"
                else:
                    content =  f"{SYS_MSG}\\n\\nGenerated Text:\\n\\"{output}\\"\\n\\nQuestion:\\n{question}\\n"
            else:
                content = f"{question}\\n"
            message.append({"role": "user", "content": content})
"""

SYSTEM_TXT = "Compare two answers to a query.\n\n<rubric>\n- Prefer the truthful one.\n</rubric>"
TEMPLATE_CFG = '''templateStr = """
<query>
{x.question}
</query>

<answer 1>
{x.response1}
</answer 1>

<answer 2>
{x.response2}
</answer 2>

Think in <thinking></thinking> tags, then rate inside <rating></rating> tags: 0, 1 or 2. 
"""'''
EXAMPLES = [
    {
        "query": "how long to boil an egg",
        "response_1": "Six minutes.",
        "response_2": "An hour.",
        "label": "1",
        "thinking": "<answer 1> is right.",
    },
    {
        "query": "what is git stash",
        "response_1": "It saves changes.",
        "response_2": "It saves changes aside.",
        "label": "0",
        "thinking": "Both are the same.",
    },
]


@pytest.fixture
def infobench_file(tmp_path) -> Path:
    path = tmp_path / "evaluation.py"
    path.write_text(EVALUATION_PY)
    return path


@pytest.fixture
def arena_files(tmp_path) -> tuple[Path, Path, Path]:
    paths = (
        tmp_path / "pairwise_lfrqa_system.txt",
        tmp_path / "pairwise_lfrqa.cfg",
        tmp_path / "pairwise_lfrqa_examples.json",
    )
    for path, text in zip(
        paths, (SYSTEM_TXT, TEMPLATE_CFG, json.dumps(EXAMPLES, indent=4)), strict=True
    ):
        path.write_text(text)
    return paths


class Recorder(LanguageModel):
    backend = "fake"

    def __init__(self, reply: str) -> None:
        self.reply, self.requests = reply, []

    def identity(self):
        return {"backend": self.backend}

    def generate(self, requests, params):
        self.requests += list(requests)
        return [Generation(text=self.reply) for _ in requests]


def test_infobench_prompt_turns_are_the_authors_fstrings(infobench_file):
    prompt = load_infobench_prompt(infobench_file)
    system = "Judge the Generated Text. Reply YES or NO.\n\n- YES: when it fully holds.\n- NO: otherwise {not a field}."
    assert prompt.system == system
    assert prompt.first_turn("A reply.", "An email.", "Is it a reply?") == (
        f'{system}\n\nInput:\n"An email."\n\nGenerated Text:\n"A reply."\n\nQuestion:\nIs it a reply?\n'
    )
    assert (
        prompt.first_turn("A poem.", "", "Two lines?")
        == f'{system}\n\nGenerated Text:\n"A poem."\n\nQuestion:\nTwo lines?\n'
    )
    assert prompt.later_turn("Is it polite?") == "Is it polite?\n"


def test_the_drfr_judge_takes_the_published_prompt(infobench_file):
    from isqaflow.drfr.judge import conversation, first_turn, judge

    prompt = load_infobench_prompt(infobench_file)
    assert first_turn("A reply.", "", "Q?", prompt) == prompt.first_turn("A reply.", "", "Q?")
    assert first_turn("A reply.", "", "Q?") != prompt.first_turn(
        "A reply.", "", "Q?"
    )  # ours by default
    assert conversation("A reply.", "In.", ["Q1?", "Q2?"], ["YES"], prompt) == [
        {"role": "user", "content": prompt.first_turn("A reply.", "In.", "Q1?")},
        {"role": "assistant", "content": "YES"},
        {"role": "user", "content": "Q2?\n"},
    ]
    model = Recorder("YES")
    item = {
        "instruction_id": "t1",
        "model": "m",
        "subset": "Easy",
        "category": "c",
        "input": "",
        "response": "A reply.",
        "requirements": [
            {"question": "Q1?", "labels": ["Content"]},
            {"question": "Q2?", "labels": ["Format"]},
        ],
    }
    records = judge(model, [item], "text", prompt=prompt)
    assert [r["answer"] for r in records] == ["YES", "YES"]
    assert model.requests[1][-1] == {"role": "user", "content": "Q2?\n"}
    assert model.requests[0][0]["content"].startswith("Judge the Generated Text.")


@pytest.mark.parametrize(
    ("edit", "error"),
    [
        (
            lambda s: s.replace("SYS_MSG =", "SYSTEM ="),
            r"evaluation\.py: no string constant SYS_MSG",
        ),
        (
            lambda s: s.replace('content = f"{question}\\n"', "content = question"),
            r"no `content = f.*later turn",
        ),
        (
            lambda s: s.replace(
                '{question}\\n"\n                else',
                '{question}{entry}\\n"\n                else',
            ),
            r"line \d+: an f-string field other than",
        ),
        (lambda s: s + "\ndef broken(:\n", r"evaluation\.py: not Python source"),
    ],
)
def test_infobench_file_of_another_layout_fails_naming_it(infobench_file, edit, error):
    infobench_file.write_text(edit(EVALUATION_PY))
    with pytest.raises(PromptFormatError, match=error):
        load_infobench_prompt(infobench_file)


def test_the_parser_never_runs_the_file():
    parse_infobench_prompt(
        EVALUATION_PY.replace("import json", "raise SystemExit('executed')"), "x.py"
    )


def test_arena_prompt_messages_follow_the_authors_processor(arena_files):
    prompt = load_arena_prompt(*arena_files)
    messages = prompt.messages("why do cats purr", "They are content.", "{x.response2} Cats purr.")
    assert [m["role"] for m in messages] == [
        "system",
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert messages[0]["content"] == SYSTEM_TXT
    assert messages[2]["content"] == "<thinking><answer 1> is right.</thinking><rating>1</rating>"
    assert messages[-1]["content"] == (
        "\n<query>\nwhy do cats purr\n</query>\n\n<answer 1>\nThey are content.\n</answer 1>\n\n<answer 2>\n"
        "{x.response2} Cats purr.\n</answer 2>\n\nThink in <thinking></thinking> tags, then rate inside "
        "<rating></rating> tags: 0, 1 or 2. \n"
    )
    assert [m["role"] for m in prompt.messages("q", "a", "b", few_shot=False)] == ["system", "user"]


def test_the_arena_judge_takes_the_published_prompt(arena_files):
    from isqaflow.arena.judging.judge import judge_pairs, pair_request

    prompt = load_arena_prompt(*arena_files)
    assert pair_request("q", "a", "b", prompt=prompt) == prompt.messages("q", "a", "b")
    assert pair_request("q", "a", "b")[0]["content"] != SYSTEM_TXT  # ours by default
    model = Recorder("<thinking>fine</thinking><rating>1</rating>")
    pairs = [
        {
            "pair_id": "p",
            "query": "q",
            "system_a": "x",
            "answer_a": "A.",
            "system_b": "y",
            "answer_b": "B.",
        }
    ]
    (record,) = judge_pairs(model, pairs, mode="text", prompt=prompt)
    assert (record["verdict_ab"], record["verdict_ba"], record["verdict"]) == ("a", "b", "tie")
    assert [r[0]["content"] for r in model.requests] == [SYSTEM_TXT, SYSTEM_TXT]
    assert "<answer 1>\nB.\n</answer 1>" in model.requests[1][-1]["content"]  # the swapped order


@pytest.mark.parametrize(
    ("which", "text", "error"),
    [
        (1, 'templateStr = "one line"', r"pairwise_lfrqa\.cfg: no templateStr"),
        (
            1,
            TEMPLATE_CFG.replace("{x.response2}", "{x.answer2}"),
            r"pairwise_lfrqa\.cfg: templateStr must hold",
        ),
        (
            2,
            json.dumps([{**EXAMPLES[0], "label": "3"}]),
            r"examples\.json: example 0: field label must be 0, 1 or 2",
        ),
        (
            2,
            json.dumps([{"query": "q"}]),
            r"examples\.json: example 0: missing or non-text field\(s\) \['response_1'",
        ),
        (0, "  \n", r"system\.txt: empty system text"),
    ],
)
def test_arena_files_of_another_layout_fail_naming_them(arena_files, which, text, error):
    arena_files[which].write_text(text)
    with pytest.raises(PromptFormatError, match=error):
        load_arena_prompt(*arena_files)


def test_paper_config_pins_the_published_prompt_files():
    downloads = yaml.safe_load((REPO / "config" / "paper.yaml").read_text())["downloads"]
    expected = {
        "infobench_judge_prompt": ("qinyiwei/InfoBench", "evaluation.py"),
        "arena_judge_system": ("awslabs/rag-qa-arena", "templates/pairwise_lfrqa_system.txt"),
        "arena_judge_template": ("awslabs/rag-qa-arena", "templates/pairwise_lfrqa.cfg"),
        "arena_judge_examples": ("awslabs/rag-qa-arena", "templates/pairwise_lfrqa_examples.json"),
    }
    for name, (repo, path) in expected.items():
        url = downloads[name]["url"]
        assert re.fullmatch(
            rf"https://raw\.githubusercontent\.com/{repo}/[0-9a-f]{{40}}/{re.escape(path)}", url
        )
        assert re.fullmatch(r"sha256:[0-9a-f]{64}", downloads[name]["checksum"])


def test_stage_entry_points_load_the_rules_prompt_files(
    infobench_file, arena_files, tmp_path, monkeypatch
):
    """What rules drfr_judge/drfr_summaries and arena_judge/_judge_checks/_summaries pass as prompt_files."""
    from isqaflow.arena.judging.judge import judge_with_model
    from isqaflow.drfr.judge import load_judge_prompt
    from isqaflow.models import registry

    assert load_judge_prompt([]) is None
    assert load_judge_prompt([str(infobench_file)]) == load_infobench_prompt(infobench_file)
    model = Recorder("<rating>2</rating>")
    monkeypatch.setattr(registry, "load_model", lambda *a, **k: model)
    pairs = [
        {
            "pair_id": "p",
            "query": "q",
            "system_a": "x",
            "answer_a": "A.",
            "system_b": "y",
            "answer_b": "B.",
        }
    ]
    records = judge_with_model(
        pairs,
        {},
        "gpt4",
        "text",
        "random",
        0,
        None,
        tmp_path / "c.sqlite",
        1,
        prompt_files=[str(p) for p in arena_files],
    )
    assert model.requests[0][0]["content"] == SYSTEM_TXT and records[0]["judge"] == "gpt4"
    judge_with_model(pairs, {}, "gpt4", "text", "random", 0, None, tmp_path / "c.sqlite", 1)
    assert model.requests[1][0]["content"] != SYSTEM_TXT  # no files: our own prompt


def test_published_prompt_files_are_read_as_every_input(arena_files, infobench_file):
    """Saved by an editor with a byte-order mark: the examples' JSON failed ("Unexpected UTF-8
    BOM"), the system text kept the mark as its first character."""
    for path in (*arena_files, infobench_file):
        path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    prompt = load_arena_prompt(*arena_files)
    assert prompt.messages("q", "a", "b")[0]["content"] == SYSTEM_TXT
    load_infobench_prompt(infobench_file)
    # bytes that are not UTF-8, and a key twice in an example, name the file and the line
    arena_files[0].write_bytes(b"Compare two answers.\n\xe9\n")
    with pytest.raises(RecordError, match=r"system\.txt, line 2: not UTF-8"):
        load_arena_prompt(*arena_files)
