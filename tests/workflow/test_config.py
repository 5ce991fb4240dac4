"""The config is validated at start: a misspelled key or a wrong type fails at once, naming the key;
a name that refers to nothing, a missing local model or an unset API key variable fails before any
job, naming the config path (isqaflow.configcheck, called by the Snakefile)."""

from __future__ import annotations

import pytest
import yaml
from workflow_utils import REPO, copy_repo, snakemake


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return copy_repo(tmp_path_factory.mktemp("config"))


def dry_run_with(workdir, change, *args):
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    change(config)
    (workdir / "config/broken.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(
        workdir, "-n", "--cores", "1", "--configfile", "config/broken.yaml", *args, timeout=120
    )
    return result.returncode, result.stdout + result.stderr


def test_the_shipped_configs_validate(workdir, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "placeholder-for-a-dry-run")  # paper.yaml's API models
    stub = workdir / "resources/local/scimrc/scimrc_train_dev.json"  # the one file no rule fetches
    stub.parent.mkdir(parents=True, exist_ok=True)
    stub.write_text("[]\n")
    for name in ("config/config.yaml", "config/paper.yaml"):
        result = snakemake(workdir, "-n", "--cores", "1", "--configfile", name, timeout=300)
        output = result.stdout + result.stderr
        assert result.returncode == 0 and "problem" not in output, output[-2000:]


def test_misspelled_key_fails_naming_the_key(workdir):
    code, output = dry_run_with(workdir, lambda c: c["isqa"]["refine"].update(stepz=3))
    assert code != 0
    assert "isqa.refine.stepz: unknown key (did you mean 'steps'?)" in output
    assert "Failed validating" not in output  # one line per problem, not jsonschema's dump


def test_wrong_type_fails_naming_the_key(workdir):
    code, output = dry_run_with(workdir, lambda c: c["isqa"]["refine"].update(epsilon="half"))
    assert code != 0
    assert "isqa.refine.epsilon: expected a number, got 'half'" in output


def test_misspelled_top_level_section_fails(workdir):
    code, output = dry_run_with(workdir, lambda c: c.update(metricz=c.pop("metrics")))
    assert code != 0
    assert "metricz: unknown key (did you mean 'metrics'?)" in output
    assert "(top level): missing key 'metrics'" not in output  # the misspelling says it


# ----------------------------------------------------------------------------- cross-references
def misspell_every_reference(config):
    """A misspelled name in every section that refers to a model, adapter, dataset, ..."""
    config["isqa"]["summarizers"] = ["smolm2"]
    config["isqa"]["feedback_models"]["lora"].update(model="smolm2", adapter="smollm2-hotpot")
    config["isqa"]["questions"]["generated"]["model"] = "smolm2"
    config["isqa"]["runs"][1]["feedback"] = "bsae"
    config["isqa"]["judged_systems"] = ["baseline_2", "isqa-lora-humn"]
    config["human_eval"]["systems"] = ["baselin_2"]
    config["metrics"]["qg"]["model"] = "smolm2"
    config["metrics"]["qa"]["model"] = "smolm2"
    config["metrics"]["main_feedback"] = "lroa"
    config["finetune"]["smollm2-hotpotqa"].update(base="smolm2", data="hotpot")
    config["drfr"]["datasets"] = ["infobnech"]
    config["drfr"]["responders"]["smollm2"]["model"] = "smolm2"
    config["drfr"]["responders"]["smollm2-feedback"]["adapter"] = "smollm2-hotpot"
    config["drfr"]["judges"]["local"]["model"] = "smolm2"
    config["arena"]["domains"] = ["fiqa", "sceince"]
    config["arena"]["answerers"]["smollm2"]["model"] = "smolm2"
    config["arena"]["runs"][0].update(retriever="bm52", answerers=["smollm2", "smollm2-nocto"])
    config["arena"]["judges"]["local"]["model"] = "smolm2"


EVERY_REFERENCE = [
    "isqa.summarizers[0]",
    "isqa.feedback_models.lora.model",
    "isqa.feedback_models.lora.adapter",
    "isqa.questions.generated.model",
    "isqa.runs[1].feedback",
    "isqa.judged_systems[1]",
    "human_eval.systems[0]",
    "metrics.qg.model",
    "metrics.qa.model",
    "metrics.main_feedback",
    "finetune.smollm2-hotpotqa.base",
    "finetune.smollm2-hotpotqa.data",
    "drfr.datasets[0]",
    "drfr.responders.smollm2.model",
    "drfr.responders.smollm2-feedback.adapter",
    "drfr.judges.local.model",
    "arena.domains[1]",
    "arena.answerers.smollm2.model",
    "arena.runs[0].retriever",
    "arena.runs[0].answerers[1]",
    "arena.judges.local.model",
]


def assert_clean_failure(code, output):
    """Exit status 1, one message, no traceback, and Snakemake never got to plan a job."""
    assert code == 1, output[-3000:]
    assert "Traceback" not in output and "Exception" not in output and 'File "' not in output, (
        output[-3000:]
    )
    assert "Building DAG" not in output and "Job stats" not in output, output[-3000:]


def test_a_misspelled_name_in_every_section_fails_the_dry_run_naming_each(workdir):
    code, output = dry_run_with(workdir, misspell_every_reference)
    assert_clean_failure(code, output)
    for path in EVERY_REFERENCE:
        assert f"  {path}: " in output, path
    assert f"isqaflow: {len(EVERY_REFERENCE)} problems in the config" in output
    assert "no model 'smolm2' in models (did you mean 'smollm2'?); choices: smollm2" in output
    assert "no adapter 'smollm2-hotpot' in finetune (did you mean 'smollm2-hotpotqa'?)" in output


def test_a_missing_local_model_path_fails_the_dry_run(workdir):
    def change(config):
        config["models"]["smollm2"].pop("convert")
        config["models"]["smollm2"]["model"] = "resources/models/not-converted"

    code, output = dry_run_with(workdir, change)
    assert_clean_failure(code, output)
    assert (
        "models.smollm2.model: local model path 'resources/models/not-converted' does not exist"
        in output
    )


def test_an_unset_api_key_variable_fails_the_dry_run_naming_model_and_variable(
    workdir, monkeypatch
):
    monkeypatch.delenv("ISQAFLOW_TEST_JUDGE_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-this-one")

    def change(config):
        config["models"]["gpt4"] = {
            "backend": "openai",
            "model": "gpt-4-0314",
            "api_key_env": "ISQAFLOW_TEST_JUDGE_KEY",
        }
        config["arena"]["judges"]["gpt4"] = {"model": "gpt4", "mode": "text"}

    code, output = dry_run_with(workdir, change)
    assert_clean_failure(code, output)
    assert (
        "models.gpt4.api_key_env: model 'gpt4' is an API model the run uses (arena.judges.gpt4.model), "
        "but the environment variable ISQAFLOW_TEST_JUDGE_KEY that holds its key is not set"
    ) in output
    assert "sk-not-this-one" not in output
    monkeypatch.setenv("ISQAFLOW_TEST_JUDGE_KEY", "sk-set")
    code, output = dry_run_with(workdir, change)
    assert code == 0, output[-3000:]


def test_a_broken_reference_deletes_nothing_and_starts_no_job(workdir):
    """Today's failure mode: a misspelled adapter used to delete the ISQA outputs, then fail."""
    done = workdir / "results/summaries/qasper/smollm2/isqa-lora-human.jsonl"
    done.parent.mkdir(parents=True, exist_ok=True)
    done.write_text("{}\n")
    config = yaml.safe_load((REPO / "config/config.yaml").read_text())
    config["isqa"]["feedback_models"]["lora"]["adapter"] = "smollm2-hotpot"
    (workdir / "config/broken.yaml").write_text(yaml.safe_dump(config))
    result = snakemake(workdir, "--cores", "1", "--configfile", "config/broken.yaml", timeout=120)
    assert_clean_failure(result.returncode, result.stdout + result.stderr)
    assert done.read_text() == "{}\n"
    assert not (workdir / "logs").exists()  # no job ran


# ----------------------------------------------------------------------------- CUDA
def test_a_conda_cuda_override_of_another_major_version_stops_the_run(workdir, monkeypatch):
    """conda would build the GPU environments for CUDA 12 while the rules pick the CUDA-13 files
    (isqaflow.cuda): the dry run stops naming the setting; with cuda: "12.8" it is the same CUDA."""
    monkeypatch.setenv("CONDA_OVERRIDE_CUDA", "12.4")
    result = snakemake(workdir, "-n", "--cores", "1", timeout=120)
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "cuda: '13.0', but the environment sets CONDA_OVERRIDE_CUDA=12.4" in output
    assert "no job was started" in output
    result = snakemake(workdir, "-n", "--cores", "1", "--config", "cuda=12.8", timeout=120)
    assert result.returncode == 0, (result.stdout + result.stderr)[-2000:]
