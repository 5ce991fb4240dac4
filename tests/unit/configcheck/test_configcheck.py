"""isqaflow.configcheck: every cross-reference of the config, checked directly (milliseconds).

The same checks through ``snakemake -n`` on a copy of the repository are in test_config.py.
"""

from __future__ import annotations

import copy
import shutil
from pathlib import Path

import pytest
import yaml
from workflow_utils import REPO

from isqaflow.configcheck import check_config, format_problems

EMBEDDED = yaml.safe_load((REPO / "config/config.yaml").read_text())
PAPER = yaml.safe_load((REPO / "config/paper.yaml").read_text())
KEY = {"OPENAI_API_KEY": "sk-test-value-never-printed"}


def problems_of(change, base=EMBEDDED, environ=None, workdir=REPO):
    config = copy.deepcopy(base)
    change(config)
    if workdir != REPO:  # the embedded systems' files are read relative to the workdir
        shutil.copytree(
            REPO / "data/embedded/systems",
            Path(workdir) / "data/embedded/systems",
            dirs_exist_ok=True,
        )
    return check_config(config, workdir, {} if environ is None else environ)


def test_the_shipped_configs_have_no_problems():
    assert check_config(EMBEDDED, REPO, {}) == []
    assert check_config(PAPER, REPO, KEY) == []


# (what is changed, the config path that must be named, the bad value, the valid choice offered)
MISSPELLINGS = [
    (
        lambda c: c["isqa"].update(summarizers=["smolm2"]),
        "isqa.summarizers[0]",
        "smolm2",
        "smollm2",
    ),
    (
        lambda c: c["isqa"]["feedback_models"]["lora"].update(model="smolm2"),
        "isqa.feedback_models.lora.model",
        "smolm2",
        "smollm2",
    ),
    (
        lambda c: c["isqa"]["feedback_models"]["lora"].update(adapter="smollm2-hotpot"),
        "isqa.feedback_models.lora.adapter",
        "smollm2-hotpot",
        "smollm2-hotpotqa",
    ),
    (
        lambda c: c["isqa"]["questions"]["generated"].update(model="smolm2"),
        "isqa.questions.generated.model",
        "smolm2",
        "smollm2",
    ),
    (
        lambda c: c["isqa"]["runs"][1].update(feedback="bsae"),
        "isqa.runs[1].feedback",
        "bsae",
        "base",
    ),
    (
        lambda c: c["isqa"]["runs"][0].update(datasets=["qaspr"]),
        "isqa.runs[0].datasets[0]",
        "qaspr",
        "qasper",
    ),
    (
        lambda c: c["isqa"]["runs"][0].update(summarizers=["smolm2"]),
        "isqa.runs[0].summarizers[0]",
        "smolm2",
        "smollm2",
    ),
    (lambda c: c["isqa"].update(datasets=["qaspr"]), "isqa.datasets[0]", "qaspr", "qasper"),
    (
        lambda c: c["isqa"].update(judged_systems=["baseline_2", "isqa-lora-humn"]),
        "isqa.judged_systems[1]",
        "isqa-lora-humn",
        "isqa-lora-human",
    ),
    (
        lambda c: c["human_eval"].update(systems=["baselin_2"]),
        "human_eval.systems[0]",
        "baselin_2",
        "baseline_2",
    ),
    (
        lambda c: c["human_eval"].update(filled={"qasper/smolm2": {"a": "x.csv"}}),
        "human_eval.filled.qasper/smolm2",
        "qasper/smolm2",
        "qasper/smollm2",
    ),
    (lambda c: c["metrics"]["qg"].update(model="smolm2"), "metrics.qg.model", "smolm2", "smollm2"),
    (lambda c: c["metrics"]["qa"].update(model="smolm2"), "metrics.qa.model", "smolm2", "smollm2"),
    (lambda c: c["metrics"].update(main_feedback="lroa"), "metrics.main_feedback", "lroa", "lora"),
    (
        lambda c: c["finetune"]["smollm2-hotpotqa"].update(base="smolm2"),
        "finetune.smollm2-hotpotqa.base",
        "smolm2",
        "smollm2",
    ),
    (
        lambda c: c["finetune"]["smollm2-hotpotqa"].update(data="hotpot"),
        "finetune.smollm2-hotpotqa.data",
        "hotpot",
        "hotpotqa",
    ),
    (
        lambda c: c["drfr"].update(datasets=["infobnech"]),
        "drfr.datasets[0]",
        "infobnech",
        "infobench",
    ),
    (
        lambda c: c["drfr"]["responders"]["smollm2"].update(model="smolm2"),
        "drfr.responders.smollm2.model",
        "smolm2",
        "smollm2",
    ),
    (
        lambda c: c["drfr"]["responders"]["smollm2-feedback"].update(adapter="smollm2-hotpot"),
        "drfr.responders.smollm2-feedback.adapter",
        "smollm2-hotpot",
        "smollm2-hotpotqa",
    ),
    (
        lambda c: c["drfr"]["judges"]["local"].update(model="smolm2"),
        "drfr.judges.local.model",
        "smolm2",
        "smollm2",
    ),
    (
        lambda c: c["arena"].update(domains=["fiqa", "sceince"]),
        "arena.domains[1]",
        "sceince",
        "science",
    ),
    (
        lambda c: c["arena"]["answerers"]["smollm2"].update(model="smolm2"),
        "arena.answerers.smollm2.model",
        "smolm2",
        "smollm2",
    ),
    (
        lambda c: c["arena"]["runs"][0].update(retriever="bm52"),
        "arena.runs[0].retriever",
        "bm52",
        "bm25",
    ),
    (
        lambda c: c["arena"]["runs"][0].update(answerers=["smollm2-nocto"]),
        "arena.runs[0].answerers[0]",
        "smollm2-nocto",
        "smollm2-nocot",
    ),
    (
        lambda c: c["arena"]["judges"]["local"].update(model="smolm2"),
        "arena.judges.local.model",
        "smolm2",
        "smollm2",
    ),
    (
        lambda c: (
            c["isqa"]["refine"].update(initial_prompt="prehoc_3")
            or c["isqa"].update(prompts=["baseline_2"])
        ),
        "isqa.refine.initial_prompt",
        "prehoc_3",
        "baseline_2",
    ),
    (  # people's DRFR labels of a responder the pool does not have (issue 40)
        lambda c: c["datasets"]["instructions"]["infobench"].update(
            human_labels={"handwriten": "data/embedded/infobench/human-labels-handwritten.jsonl"}
        ),
        "datasets.instructions.infobench.human_labels.handwriten",
        "handwriten",
        "handwritten",
    ),
]


@pytest.mark.parametrize(
    "change, path, bad, choice", MISSPELLINGS, ids=[m[1] for m in MISSPELLINGS]
)
def test_a_misspelled_name_is_named_with_its_path_and_the_valid_choice(change, path, bad, choice):
    problems = problems_of(change)
    assert [p.path for p in problems] == [path], problems
    assert repr(bad) in problems[0].message and choice in problems[0].message


def test_a_misspelled_download_is_named():
    def change(c):
        c["datasets"]["papers"]["qasper"]["files"] = [
            {"download": "qasper_train_dvv", "member": "x.json"}
        ]

    problems = problems_of(change, base=PAPER, environ=KEY)
    assert [p.path for p in problems] == ["datasets.papers.qasper.files[0].download"]
    assert "did you mean 'qasper_train_dev'" in problems[0].message


def test_every_problem_is_reported_at_once_with_close_matches():
    def change(c):
        for mutate, *_ in MISSPELLINGS:
            mutate(c)

    problems = problems_of(change)
    found = {p.path for p in problems}
    # the runs' datasets and summarizers are checked against isqa.datasets/summarizers,
    # misspelled the same way here
    expected = {path for _, path, _, _ in MISSPELLINGS} - {
        "isqa.runs[0].datasets[0]",
        "isqa.runs[0].summarizers[0]",
    }
    assert expected <= found
    text = format_problems(problems, ["config/broken.yaml"])
    assert text.startswith(f"isqaflow: {len(problems)} problems in the config (config/broken.yaml)")
    assert "did you mean 'smollm2'?" in text


def test_a_missing_local_model_path_is_an_error(tmp_path):
    (tmp_path / "resources").mkdir()

    def missing(path):
        def change(c):
            c["models"]["local"] = {"backend": "hf", "model": path}
            c["drfr"]["judges"]["local"]["model"] = "local"

        return change

    for path in (
        "resources/models/not-there",
        "./not-there",
        str(tmp_path / "absent"),
        "resources/not-there",
    ):
        problems = problems_of(missing(path), workdir=tmp_path)
        assert [p.path for p in problems] == ["models.local.model"], (path, problems)
        assert repr(path) in problems[0].message and "does not exist" in problems[0].message
        assert "drfr.judges.local.model" in problems[0].message  # says who uses it
    # a folder without config.json is not a model either
    (tmp_path / "resources/half").mkdir()
    problems = problems_of(missing("resources/half"), workdir=tmp_path)
    assert "no config.json" in problems[0].message
    (tmp_path / "resources/half/config.json").write_text("{}")
    assert problems_of(missing("resources/half"), workdir=tmp_path) == []
    # a hub id is loaded through the Hugging Face cache: not a local path
    assert problems_of(missing("HuggingFaceTB/SmolLM2-135M-Instruct"), workdir=tmp_path) == []


def test_a_converted_model_is_made_by_the_run_but_only_into_resources_models(tmp_path):
    # resources/models/smollm2-135m-instruct does not exist in tmp_path: convert: makes it
    assert problems_of(lambda c: None, workdir=tmp_path) == []
    problems = problems_of(
        lambda c: c["models"]["smollm2"].update(model="models/smollm2"), workdir=tmp_path
    )
    assert [p.path for p in problems] == ["models.smollm2.model"]
    assert "resources/models/<folder>" in problems[0].message


def api_judge(env: str | None = None, base_url: str | None = None):
    def change(c):
        c["models"]["gpt4"] = {"backend": "openai", "model": "gpt-4-0314", "base_url": base_url}
        if env is not None:
            c["models"]["gpt4"]["api_key_env"] = env
        c["drfr"]["judges"]["gpt4"] = {"model": "gpt4", "mode": "text"}

    return change


def test_an_unset_api_key_variable_names_the_model_and_the_variable():
    problems = problems_of(api_judge("MY_JUDGE_KEY"), environ={"OPENAI_API_KEY": "sk-other"})
    assert [p.path for p in problems] == ["models.gpt4.api_key_env"]
    message = problems[0].message
    assert "'gpt4'" in message and "MY_JUDGE_KEY" in message and "drfr.judges.gpt4.model" in message
    assert "sk-other" not in message
    # the default variable, and an empty value, count as unset
    assert "OPENAI_API_KEY" in problems_of(api_judge(), environ={"OPENAI_API_KEY": ""})[0].message
    assert problems_of(api_judge("MY_JUDGE_KEY"), environ={"MY_JUDGE_KEY": "sk-x"}) == []
    # a local OpenAI-compatible server needs no key (the backend sends a placeholder), nor
    # does one the job starts itself (a serve: entry)
    assert problems_of(api_judge(base_url="http://127.0.0.1:8000/v1")) == []

    def served(c):
        api_judge()(c)
        c["models"]["gpt4"]["serve"] = {"command": "vllm serve {model} --port {port}"}

    assert problems_of(served) == []


def test_the_paper_config_without_its_key_names_every_api_model_it_uses():
    problems = check_config(PAPER, REPO, {})
    # the paper's API models: ISQA's GPT-3.5, InFoBench's two responders and GPT-4 judge, the
    # arena's three GPT-4 answerers (one of them its judge)
    assert {p.path for p in problems} == {
        f"models.{m}.api_key_env"
        for m in (
            "gpt35",
            "gpt4o",
            "gpt4-0314",
            "gpt4-0125",
            "gpt35-1106",
            "gpt4-1106",
            "gpt4-turbo",
        )
    }
    assert all("OPENAI_API_KEY" in p.message for p in problems)


def test_a_model_the_run_does_not_use_needs_no_key_and_no_path():
    def change(c):
        c["models"]["spare"] = {"backend": "openai", "model": "gpt-4o"}
        c["models"]["old"] = {"backend": "hf", "model": "resources/models/deleted"}
        c["isqa"]["feedback_models"]["spare"] = {"model": "spare"}  # in no run
        c["arena"]["answerers"]["old"] = {"model": "old", "cot": True}  # in no arena run
        c["arena"]["runs"][0]["answerers"] = ["smollm2"]

    assert problems_of(change) == []


def test_an_adapter_belongs_to_its_base_model_and_to_a_local_model():
    def other_base(c):
        c["models"]["bigger"] = {"backend": "hf", "model": "HuggingFaceTB/SmolLM2-360M-Instruct"}
        c["drfr"]["responders"]["smollm2-feedback"]["model"] = "bigger"

    problems = problems_of(other_base)
    assert [p.path for p in problems] == ["drfr.responders.smollm2-feedback.adapter"]
    assert "fine-tuned from 'smollm2'" in problems[0].message

    # another entry for the same checkpoint (say, another batch size) is the same base
    def same_checkpoint(c):
        c["models"]["smollm2-b4"] = {**c["models"]["smollm2"], "batch_size": 4}
        c["drfr"]["responders"]["smollm2-feedback"]["model"] = "smollm2-b4"

    assert problems_of(same_checkpoint) == []

    def api_with_adapter(c):
        api_judge("K")(c)
        c["arena"]["answerers"]["smollm2"].update(model="gpt4", adapter="smollm2-hotpotqa")

    paths = [p.path for p in problems_of(api_with_adapter, environ={"K": "x"})]
    # (and the answerer smollm2 is now another system than the responder smollm2: one name, two rows)
    assert paths == ["arena.answerers.smollm2.adapter", "drfr.responders.smollm2"]

    def api_base(c):
        api_judge("K")(c)
        c["finetune"]["smollm2-hotpotqa"]["base"] = "gpt4"

    problems = problems_of(api_base, environ={"K": "x"})
    assert "finetune.smollm2-hotpotqa.base" in [p.path for p in problems]
    assert any("needs a local (hf) model" in p.message for p in problems)


def test_generated_questions_need_their_source():
    problems = problems_of(lambda c: c["isqa"]["questions"].pop("generated"))
    assert [p.path for p in problems] == ["isqa.runs[2].questions"]
    assert "isqa.questions.generated" in problems[0].message


def test_judged_systems_must_exist_for_every_dataset_and_summarizer():
    def change(c):
        c["models"]["other"] = dict(c["models"]["smollm2"], batch_size=2)
        c["isqa"]["summarizers"] = ["smollm2", "other"]
        c["isqa"]["runs"][0]["summarizers"] = ["smollm2"]  # isqa-lora-human for smollm2 only

    problems = problems_of(change)
    assert [p.path for p in problems] == ["isqa.judged_systems[1]", "human_eval.systems[1]"]
    assert "no summaries for qasper/other" in problems[0].message


def test_the_main_feedback_model_needs_a_run_with_human_questions():
    problems = problems_of(
        lambda c: c["metrics"].update(main_feedback="base") or c["isqa"]["runs"].pop(1)
    )
    assert [p.path for p in problems] == ["metrics.main_feedback"]
    assert "no run with human questions" in problems[0].message


def test_an_arena_run_answers_from_a_retrieved_depth():
    problems = problems_of(lambda c: c["arena"]["runs"][0].update(k=20))
    assert [p.path for p in problems] == ["arena.runs[0].k"]
    assert "20 is not one of arena.k (5, 10)" in problems[0].message


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("local-raw", "'local-raw' is this judge itself"),
        ("lokal", "no judge 'lokal' in arena.judges (did you mean 'local'?)"),
    ],
)
def test_a_judge_reuses_the_calls_of_another_judge_of_its_suite(source, message):
    problems = problems_of(lambda c: c["arena"]["judges"]["local-raw"].update(reuse_calls=source))
    assert [p.path for p in problems] == ["arena.judges.local-raw.reuse_calls"]
    assert message in problems[0].message


def test_reuse_calls_names_the_judge_that_makes_the_calls_on_the_same_model():
    def chain(c):
        c["arena"]["judges"]["third"] = {
            "model": "smollm2",
            "mode": "logprob",
            "reuse_calls": "local-raw",
        }

    problems = problems_of(chain)
    assert [p.path for p in problems] == ["arena.judges.third.reuse_calls"]
    assert "name the judge that makes the calls" in problems[0].message

    def other_model(c):
        c["models"]["other"] = dict(c["models"]["smollm2"])
        c["arena"]["judges"]["local-raw"]["model"] = "other"

    problems = problems_of(other_model)
    assert [p.path for p in problems] == ["arena.judges.local-raw.reuse_calls"]
    assert "no call of one is a call of the other" in problems[0].message
    problems = problems_of(lambda c: c["drfr"]["judges"]["local"].update(reuse_calls="local"))
    assert [p.path for p in problems] == ["drfr.judges.local.reuse_calls"]


# --------------------------------------------- api_key_env: one definition, no secret echoed
# Realistic shapes (made up): OpenAI's legacy and project keys, a service-account key,
# Anthropic's, a Hugging Face token.
PASTED_KEYS = [
    "sk-abc123def456ghi789jkl012mno345pqr678stu901vwx2",
    "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb3dEf6hI-j9kLm2nOp5qRs8tUv1wXy4z",
    "sk-svcacct-Zz9Yy8Xx7Ww6Vv5Uu4Tt3Ss2Rr1Qq0Pp",
    "sk-ant-api03-Qw3rTy6uIo9pAs2dFg5hJk8lZx1cVb4nM7-Qw3rTy6uIo9pAAA",
    "hf_AbCdEfGhIjKlMnOpQrStUvWxYzAbCdEfGh",
]


@pytest.mark.parametrize("key", PASTED_KEYS)
def test_a_key_pasted_as_api_key_env_is_refused_and_never_printed(key, capsys):
    """The check used to print "the environment variable sk-proj-... that holds its key is not
    set": the key itself, in the terminal and the log."""
    problems = problems_of(api_judge(key), environ=KEY)
    assert [p.path for p in problems] == ["models.gpt4.api_key_env"]
    assert (
        "looks like an API key" in problems[0].message
        and "NAME of the environment variable" in problems[0].message
    )
    printed = format_problems(problems)
    secret = key.split("-")[-1] if key.startswith("sk-") else key[3:]
    assert key not in printed and secret not in printed and secret[:12] not in printed

    # a model the run does not use, too (the key would sit in the config copy of the manifest)
    def unused(c):
        c["models"]["spare"] = {"backend": "openai", "model": "gpt-4o", "api_key_env": key}

    assert [p.path for p in problems_of(unused, environ=KEY)] == ["models.spare.api_key_env"]


@pytest.mark.parametrize("key", PASTED_KEYS)
def test_every_config_check_message_masks_a_key_wherever_it_was_pasted(key, capsys):
    """One masking function for every message: a key pasted as a model name, a judge's model,
    a dataset name is quoted by the reference checks; format_problems masks it."""

    def pasted(c):
        c["arena"]["judges"]["local"]["model"] = key
        c["isqa"]["datasets"] = [key]

    problems = problems_of(pasted)
    assert problems and any(key in p.message for p in problems)  # the raw problems quote it ...
    printed = format_problems(problems)
    assert key not in printed and key[3:15] not in printed  # ... the printed text never does
    assert key[:3] in printed and "***" in printed


def test_an_empty_api_key_env_is_one_problem_for_the_check_and_the_job():
    """The check read an empty api_key_env as OPENAI_API_KEY (and passed when it was set); the job
    looked up the variable "" (and, with a base_url, sent no key at all)."""
    from isqaflow.models.registry import build_model

    problems = problems_of(api_judge(""), environ=KEY)
    assert [p.path for p in problems] == ["models.gpt4.api_key_env"]
    assert "'' is not an environment variable's name" in problems[0].message
    spec = {
        "backend": "openai",
        "model": "gpt-4o",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "",
    }
    with pytest.raises(
        ValueError, match="model judge: api_key_env '' is not an environment variable's name"
    ):
        build_model(spec, name="judge")
    for name in (" ", "MY KEY", "1KEY"):
        assert [p.path for p in problems_of(api_judge(name), environ=KEY)] == [
            "models.gpt4.api_key_env"
        ]
    assert problems_of(api_judge("MY_JUDGE_KEY_2"), environ={"MY_JUDGE_KEY_2": "x"}) == []


def test_the_masking_leaves_names_paths_and_digests_alone():
    from isqaflow.settings import mask_secrets

    text = (
        "models.gpt4.api_key_env OPENAI_API_KEY resources/models/smollm2-135m-instruct task-force "
        "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 "
        "HuggingFaceTB/SmolLM2-135M-Instruct 0123456789abcdef0123456789abcdef01234567"
    )
    assert mask_secrets(text) == text
    assert mask_secrets("Bearer AbC123xyz789QQQ") == "Bearer ***"
    assert mask_secrets("token ghp_16C7e42F292c6912E7710c838347Ae178B4a") == "token ghp_***"


# ------------------------------------------------------------------ system names
@pytest.mark.parametrize("name", ["lfrqa", "abstract", "LFRQA"])
@pytest.mark.parametrize(
    "section", [("arena", "answerers"), ("drfr", "responders"), ("isqa", "file_summaries")]
)
def test_a_system_may_not_take_a_reference_players_name(name, section):
    """An answerer named lfrqa would merge its battles and ratings with LFRQA's reference answers
    (a file summarizer named abstract with the abstracts of the summaries' arena)."""

    def change(c):
        entries = c[section[0]][section[1]]
        entries[name] = entries.pop("handwritten")
        if section == ("isqa", "file_summaries"):
            c["isqa"]["judged_systems"] = [
                s for s in c["isqa"]["judged_systems"] if s != "handwritten"
            ]

    problems = problems_of(change)
    assert [p.path for p in problems] == [f"{section[0]}.{section[1]}.{name}"]
    assert "the arena's player for" in problems[0].message and "another name" in problems[0].message


def test_one_name_in_two_suites_must_be_one_system():
    """Its numbers share one leaderboard row: a model in one suite and a file (or another
    model) in another under the same name is refused; the same model in both is one system."""

    def model_and_file(c):
        c["arena"]["answerers"]["smollm2-feedback"] = {
            "file": "data/embedded/systems/answers-handwritten.jsonl"
        }

    problems = problems_of(model_and_file)
    assert [p.path for p in problems] == ["drfr.responders.smollm2-feedback"]
    assert (
        "also a system read from a file in arena.answerers.smollm2-feedback" in problems[0].message
    )
    assert (
        "model 'resources/models/smollm2-135m-instruct' with adapter 'smollm2-hotpotqa'"
        in problems[0].message
    )

    def other_adapter(c):
        c["arena"]["answerers"]["smollm2-feedback"] = {"model": "smollm2", "cot": True}

    assert [p.path for p in problems_of(other_adapter)] == ["drfr.responders.smollm2-feedback"]

    def same_model(c):
        c["arena"]["answerers"]["smollm2-feedback"] = {
            "model": "smollm2",
            "cot": True,
            "adapter": "smollm2-hotpotqa",
        }

    assert problems_of(same_model) == []


def test_an_adapter_is_used_in_the_dtype_it_was_trained_in():
    """Checked for every use at config check; only a vLLM-served model's dtype was checked, when served."""

    def other_dtype(c):
        c["models"]["smollm2-fp16"] = {**c["models"]["smollm2"], "dtype": "float16"}
        c["drfr"]["responders"]["smollm2-feedback"]["model"] = "smollm2-fp16"

    problems = problems_of(other_dtype)
    assert [p.path for p in problems] == ["drfr.responders.smollm2-feedback.adapter"]
    assert (
        "adapter 'smollm2-hotpotqa' was fine-tuned in dtype auto (models.smollm2.dtype) but is used with "
        "'smollm2-fp16' in dtype float16"
    ) in problems[0].message

    def same_dtype(c):
        c["models"]["smollm2-b4"] = {**c["models"]["smollm2"], "batch_size": 4}
        c["drfr"]["responders"]["smollm2-feedback"]["model"] = "smollm2-b4"

    assert problems_of(same_dtype) == []
