"""The spend plan (isqaflow.spend) against the calls the stages really make.

The embedded config has no API model, so these tests give its DRFR and arena stages one
(backend openai) pointed at a counting local double (tests/api_double.py), run the stages'
own entry points on the embedded InfoBench data and on small RAG files, and compare the
plan's calls with the double's count and the usage records, and its prompt tokens with the
double's token count (words x 1.3; the plan counts chars/4) within TOKEN_TOLERANCE.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml
from api_double import ApiDouble

from isqaflow import runtime, spend
from isqaflow.data.convert import write_instructions
from isqaflow.models import usage

ROOT = Path(__file__).resolve().parents[3]
TOKEN_TOLERANCE = 0.25  # two estimates of the same texts: chars/4 (plan) vs words x 1.3 (double)
DOMAINS = ["fiqa", "science", "technology"]


def api_config(url: str) -> dict:
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    config = copy.deepcopy(config)
    config["models"]["api"] = {
        "backend": "openai",
        "model": "double",
        "base_url": url,
        "concurrency": 2,
        "max_retries": 0,
        "price": {"input_per_million": 10.0, "output_per_million": 30.0},
    }
    config["drfr"]["responders"] = {"api-a": {"model": "api"}, "api-b": {"model": "api"}}
    config["drfr"]["judges"] = {
        "gpt": {"model": "api", "mode": "text", "rule": "raw", "prompts": "ours"}
    }
    config["arena"]["answerers"] = {
        "api-a": {"model": "api", "cot": True},
        "api-b": {"model": "api", "cot": False},
    }
    config["arena"]["judges"] = {
        "gpt": {"model": "api", "mode": "text", "rule": "raw", "prompts": "ours"}
    }
    config["arena"]["runs"] = [{"retriever": "bm25", "k": 2, "all_pairs_per_domain": 2}]
    config["isqa"]["file_summaries"] = {}
    config["isqa"]["judged_systems"] = ["baseline_2", "generic", "isqa-lora-human"]
    return config


def write_papers_and_summaries(root: Path, config: dict, duplicate: bool = True) -> None:
    """The embedded QASPER papers converted, and a final summary of every system of every summaries
    file of (qasper, smollm2) -- distinct texts, except (``duplicate``) one ISQA summary that repeats
    its paper's baseline_2 summary (one request for the judges, in both orders)."""
    from isqaflow import grid
    from isqaflow.data.convert import write_papers

    papers = root / "results/data/papers/qasper.jsonl"
    papers.parent.mkdir(parents=True, exist_ok=True)
    write_papers(
        [ROOT / "data/embedded/qasper/qasper-embedded-v0.3.json"], "qasper", "qasper", papers
    )
    ids = [json.loads(line)["id"] for line in papers.read_text().splitlines()]
    systems = {"baseline.jsonl": ["baseline_1", "baseline_2"], "generic.jsonl": ["generic"]}
    for path in grid.summary_files(config, "qasper", "smollm2"):
        name = Path(path).name
        rows = []
        for system in systems.get(name, [name.removesuffix(".jsonl")]):
            for pid in ids:
                text = f"The paper {pid} is summarized by {system} in a sentence or two."
                if duplicate and system == "isqa-lora-human" and pid == ids[0]:
                    text = f"The paper {pid} is summarized by baseline_2 in a sentence or two."
                common = {
                    "paper_id": pid,
                    "dataset": "qasper",
                    "summarizer": "smollm2",
                    "system": system,
                }
                if system.startswith("isqa-"):  # an earlier step, not judged
                    rows.append({**common, "step": 1, "final": False, "summary": "an earlier step"})
                rows.append({**common, "final": True, "summary": text})
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("".join(json.dumps(row) + "\n" for row in rows))


def write_rag(root: Path) -> None:
    for domain in DOMAINS:
        base = root / f"results/data/rag/{domain}"
        base.mkdir(parents=True, exist_ok=True)
        queries = [
            {
                "id": f"q{i}",
                "domain": domain,
                "question": f"How does {domain} topic {i} work in practice?",
                "reference": f"It works like this.\nA second line about {domain} {i}.",
                "reference_with_citation": "x [1]",
                "citations": [[1]],
                "gold_doc_ids": ["d0"],
            }
            for i in range(4)
        ]
        passages = [
            {
                "id": f"d{i}-0",
                "doc_id": f"d{i}",
                "domain": domain,
                "text": " ".join(f"word{j}" for j in range(100)),
            }
            for i in range(3)
        ]
        (base / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
        (base / "passages.jsonl").write_text("".join(json.dumps(p) + "\n" for p in passages))
        (root / "results/retrieval").mkdir(parents=True, exist_ok=True)
        (root / f"results/retrieval/{domain}.jsonl").write_text(
            "".join(
                json.dumps(
                    {
                        "domain": domain,
                        "query_id": q["id"],
                        "passages": [{"id": p["id"]} for p in passages],
                    }
                )
                + "\n"
                for q in queries
            )
        )


def run_stages(config: dict, root: Path, double: ApiDouble) -> dict[str, int]:
    """Each API job of the grid run through its stage's entry point; the double's calls per job."""
    from isqaflow import grid
    from isqaflow.arena.answers import AnswersJob, run_answers
    from isqaflow.arena.judging.battles import ArenaJudgeJob, run_arena_judge
    from isqaflow.arena.judging.controls import JudgeChecksJob, run_judge_checks
    from isqaflow.arena.judging.settings import ArenaJudge
    from isqaflow.drfr.judge_responses import run_judge
    from isqaflow.drfr.responses import run_responses
    from isqaflow.models.base import GenerationParams

    spec = {k: v for k, v in config["models"]["api"].items() if k != "price"}

    def judge(orders: str) -> ArenaJudge:
        return ArenaJudge(
            "gpt", spec, "text", orders, config["seed"], None, rule="raw", tie_band=0.0
        )

    instructions = root / "results/data/instructions/infobench.jsonl"
    calls = {}
    double.jobs = {}
    order = [
        "drfr_responses",
        "drfr_judge",
        "rag_answers",
        "arena_judge",
        "arena_judge_checks",
        "drfr_summaries",
        "arena_summaries",
    ]
    jobs = sorted(
        (j for j in grid.jobs(config) if j.rule in order), key=lambda j: order.index(j.rule)
    )
    for job in jobs:
        out = root / job.output
        out.parent.mkdir(parents=True, exist_ok=True)
        cache = str(out) + ".calls.sqlite"
        before = double.calls
        usage.reset()
        if job.rule == "drfr_responses":
            run_responses(
                instructions,
                out,
                spec,
                job.wildcard("responder"),
                config["drfr"]["generation"],
                cache,
            )
        elif job.rule == "drfr_judge":
            responses = sorted((root / "results/drfr/responses/infobench").glob("*.jsonl"))
            run_judge(
                instructions,
                responses,
                out,
                str(out) + ".controls.jsonl",
                spec,
                "gpt",
                "infobench",
                "text",
                None,
                cache,
                controls=config["validity"]["drfr"]["controls"],
                control_instructions=config["validity"]["drfr"]["instructions"],
                seed=config["seed"],
            )
        elif job.rule == "rag_answers":
            entry = config["arena"]["answerers"][job.wildcard("answerer")]
            run_answers(
                [root / f"results/data/rag/{d}/queries.jsonl" for d in DOMAINS],
                [root / f"results/data/rag/{d}/passages.jsonl" for d in DOMAINS],
                [root / f"results/retrieval/{d}.jsonl" for d in DOMAINS],
                out,
                AnswersJob(
                    job.wildcard("answerer"),
                    spec,
                    None,
                    entry["cot"],
                    "bm25",
                    int(job.wildcard("k")),
                    GenerationParams.from_dict(config["arena"]["generation"]),
                ),
                cache,
            )
        elif job.rule == "arena_judge_checks":
            validity = config["validity"]["arena"]
            run_judge_checks(
                [root / f"results/data/rag/{d}/queries.jsonl" for d in DOMAINS],
                root / config["datasets"]["rag"]["human_labels"],
                out,
                str(out) + ".agreement.jsonl",
                JudgeChecksJob(judge("both"), tuple(validity["controls"]), validity["per_domain"]),
                cache,
            )
        elif job.rule in ("drfr_summaries", "arena_summaries"):
            from isqaflow.arena.judging.summaries import SummaryArenaJob, run_summary_arena
            from isqaflow.drfr.summaries import SummaryJudgeJob, run_summary_judge

            d, s = job.wildcard("dataset"), job.wildcard("summarizer")
            files = [root / path for path in grid.summary_files(config, d, s)]
            systems = grid.judged_summary_systems(config, d, s)
            papers = root / f"results/data/papers/{d}.jsonl"
            if job.rule == "drfr_summaries":
                run_summary_judge(
                    papers,
                    files,
                    out,
                    SummaryJudgeJob("gpt", spec, "text", "raw", None, tuple(systems)),
                    cache,
                )
            else:
                baseline = config["isqa"]["refine"]["initial_prompt"]
                run_summary_arena(
                    papers,
                    files,
                    out,
                    SummaryArenaJob(judge(config["arena"]["orders"]), tuple(systems), baseline),
                    cache,
                )
        else:
            run_arena_judge(
                [root / f"results/data/rag/{d}/queries.jsonl" for d in DOMAINS],
                sorted((root / "results/arena/answers/bm25-k2").glob("*.jsonl")),
                out,
                ArenaJudgeJob(judge("both"), all_pairs_per_domain=2, repeats=1),
                cache,
            )
        recorded = usage.write(str(out) + ".usage.json", runtime.Job(job.rule, 1, [str(out)]))[
            "models"
        ]
        calls[job.label] = double.calls - before
        double.jobs[job.label] = double.sent[before:]  # the requests this job sent
        assert recorded[0]["requests"] == calls[job.label]  # the usage record counts the same calls
    return calls


@pytest.fixture()
def embedded_api(tmp_path, monkeypatch):
    monkeypatch.delenv("ISQAFLOW_SPEND", raising=False)
    root = tmp_path
    instructions = root / "results/data/instructions/infobench.jsonl"
    instructions.parent.mkdir(parents=True)
    write_instructions([ROOT / "data/embedded/infobench/InfoBench-embedded.json"], instructions)
    write_rag(root)
    human = yaml.safe_load((ROOT / "config/config.yaml").read_text())["datasets"]["rag"][
        "human_labels"
    ]
    (root / human).parent.mkdir(parents=True)
    (root / human).write_bytes((ROOT / human).read_bytes())  # the workflow's root holds it
    with ApiDouble() as double:
        config = api_config(double.url)
        write_papers_and_summaries(root, config)
        yield config, root, double


def test_the_plans_calls_equal_the_calls_the_stages_make_and_a_resumed_run_plans_none(embedded_api):
    config, root, double = embedded_api
    # planned before the run: the responses and answers do not exist yet (taken at their bound)
    before = {row.job: row for row in spend.plan(config, root)}
    made = run_stages(config, root, double)
    assert set(made) == {job for job, row in before.items() if row.calls is not None}
    assert {job: before[job].calls for job in made} == made
    assert sum(made.values()) == double.calls > 0
    assert {job.split(" ")[0] for job in made} >= {"drfr_summaries", "arena_summaries"}
    # planned after: every call is in the jobs' call caches, nothing is left
    after = {row.job: row for row in spend.plan(config, root)}
    assert {
        job: (after[job].calls, after[job].cached, after[job].left, after[job].left_dollars)
        for job in made
    } == {job: (n, n, 0, 0.0) for job, n in made.items()}


def test_the_summary_judges_calls_before_the_summaries_exist_and_with_a_repeated_summary(
    embedded_api,
):
    """Before the summaries are written, each judged system is taken on every paper at its length
    bound (distinct texts): the count the stages make from distinct summaries.  A summary that repeats
    another (an ISQA run that changed nothing) is one request fewer per turn and order, in the plan as
    in the run."""
    config, root, double = embedded_api
    judges = ("drfr_summaries", "arena_summaries")

    def planned(rows):
        return {row.job: (row.calls, row.basis) for row in rows if row.rule in judges}

    with_dup = planned(spend.plan(config, root))
    for path in (root / "results/summaries").rglob("*.jsonl"):
        path.unlink()
    bound = planned(spend.plan(config, root))
    assert {basis for _, basis in bound.values()} == {"data+bound"}
    write_papers_and_summaries(root, config, duplicate=False)
    distinct = planned(spend.plan(config, root))
    assert {job: calls for job, (calls, _) in distinct.items()} == {
        job: calls for job, (calls, _) in bound.items()
    }
    assert all(
        with_dup[job][0] < distinct[job][0] for job in distinct
    )  # the repeated summary: fewer
    write_papers_and_summaries(root, config, duplicate=True)
    made = {
        job: n for job, n in run_stages(config, root, double).items() if job.split(" ")[0] in judges
    }
    assert made == {job: calls for job, (calls, _) in with_dup.items()} and all(made.values())
    # drfr: 3 systems x the papers' answerable pairs, one call per turn; arena: 3 systems vs the
    # abstract + 2 vs baseline_2 per paper, both orders
    papers = [
        json.loads(line)
        for line in (root / "results/data/papers/qasper.jsonl").read_text().splitlines()
    ]
    answerable = sum(
        any(a["type"] != "none" for a in qa["answers"]) for p in papers for qa in p["qas"]
    )
    job = "drfr_summaries qasper/smollm2.gpt"
    assert distinct[job][0] == 3 * answerable
    assert distinct["arena_summaries qasper/smollm2.gpt"][0] == 2 * 5 * len(papers)


def test_the_isqa_refine_plan_is_a_bound_steps_x_batch_per_paper_plus_the_control():
    """An API feedback model (GPT-3.5 in config/paper.yaml): the plan bounds its calls by steps x
    min(batch, usable pairs) per paper plus the known-answer control's two asks per chosen pair."""
    config = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    rows = {row.job: row for row in spend.plan(config, root="/nonexistent")}
    refine = config["isqa"]["refine"]
    per_paper = config["validity"]["feedback"]["per_paper"]
    human = rows["isqa_refine qasper/vicuna-7b/gpt35-human"]
    papers, qas = 1169, 3598  # spend.items.papers.qasper: 91 papers with 4 pairs, 1,078 with 3
    assert human.model == "gpt35" and human.basis == "declared"
    assert human.calls == refine["steps"] * (
        91 * min(refine["batch_size"], 4) + 1078 * 3
    ) + 2 * papers * min(per_paper, 3)
    assert qas == 91 * 4 + 1078 * 3
    generated = rows["isqa_refine qasper/vicuna-7b/gpt35-generated"]
    assert (
        generated.calls == refine["steps"] * refine["batch_size"] * papers
    )  # no control with generated questions
    assert (
        generated.output_tokens
        == generated.calls * config["isqa"]["feedback_generation"]["max_new_tokens"]
    )
    # the local feedback models' runs hold no API model: no rows
    assert not [job for job in rows if job.startswith("isqa_refine") and "/lora-" in job]


def test_the_manifest_records_planned_vs_spent_per_stage(embedded_api):
    from isqaflow.report.manifest import gather_usage, spend_record

    config, root, double = embedded_api
    planned = [row.record() for row in spend.plan(config, root)]
    made = run_stages(config, root, double)
    stages = {
        s["rule"]: s
        for s in spend_record(planned, gather_usage(root / "results", config["models"]))
    }
    planned_rules = (
        "drfr_responses",
        "drfr_judge",
        "rag_answers",
        "arena_judge",
        "arena_judge_checks",
        "drfr_summaries",
        "arena_summaries",
    )
    assert {rule for rule, s in stages.items() if not s["unplanned_jobs"]} == set(planned_rules)
    for rule in planned_rules:
        stage = stages[rule]
        assert (
            stage["planned_calls"]
            == stage["spent_requests"]
            == sum(n for job, n in made.items() if job.startswith(rule + " "))
        )
        assert (
            stage["spent_dollars"] <= stage["planned_dollars"]
        )  # completions were bounded by max_new_tokens
    assert spend_record(None, {"by_model_and_rule": []}) is None


def test_the_plans_prompt_tokens_are_within_the_tolerance_of_the_recorded_usage(embedded_api):
    config, root, double = embedded_api
    run_stages(config, root, double)
    # with every input written (responses, answers): the plan reads the texts the stages sent
    rows = [row for row in spend.plan(config, root) if row.calls is not None]
    planned = sum(row.input_tokens for row in rows)
    print(
        f"plan {planned} prompt tokens (chars/4), double {double.prompt_tokens} (words x 1.3), {sum(r.calls for r in rows)} calls"
    )
    assert abs(planned - double.prompt_tokens) <= TOKEN_TOLERANCE * double.prompt_tokens, (
        planned,
        double.prompt_tokens,
    )


def test_completion_tokens_are_bounded_by_max_new_tokens_and_dollars_come_from_the_price(
    embedded_api,
):
    config, root, _ = embedded_api
    rows = [row for row in spend.plan(config, root) if row.calls is not None]
    responses = next(r for r in rows if r.rule == "drfr_responses")
    assert (
        responses.output_tokens == responses.calls * config["drfr"]["generation"]["max_new_tokens"]
    )
    assert responses.dollars == pytest.approx(
        (responses.input_tokens * 10 + responses.output_tokens * 30) / 1e6
    )
    table = spend.table(config, rows)
    assert (
        "stage drfr_judge:" in table
        and "model api:" in table
        and "prompt tokens by chars/4 (fallback)" in table
    )


def test_a_fresh_paper_plan_counts_from_the_declared_sizes():
    config = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    rows = spend.plan(config, root="/nonexistent")
    by_job = {row.job: row for row in rows}
    # InfoBench: 500 instructions; 8 responders x 2,250 questions + 2 controls x 100 x 4.5
    assert by_job["drfr_responses infobench/gpt4-1106"].calls == 500
    assert by_job["drfr_judge infobench/gpt4"].calls == 8 * 2250 + 2 * 450
    # the paper's run: 11 answerers x 14,020 queries vs the reference + 100 queries x 6 domains x
    # 55 model pairs, both orders
    assert by_job["arena_judge colbert-k5/gpt4"].calls == 2 * (11 * 14020 + 100 * 6 * 55)
    assert {row.basis for row in rows if row.calls is not None} == {"declared"}
    assert all(row.dollars and row.dollars > 0 for row in rows if row.calls is not None)
    # 3 controls x 50 queries x 6 domains, both orders except a reference against itself (one request)
    assert by_job["arena_judge_checks gpt4"].calls == 2 * 50 * 6 * 2 + 50 * 6
    assert not [
        row.job for row in rows if row.calls is None
    ]  # every API job of the paper grid is planned
    # 3 summarizers x (baseline_2, generic, 5 ISQA runs) vs the abstract + the 6 others vs baseline_2,
    # both orders, on 1,169 QASPER papers
    assert by_job["arena_summaries qasper/vicuna-7b.gpt4"].calls == 2 * 13 * 1169
    # 7 systems x 3,598 QA pairs (declared: every one answerable), one call per turn
    assert by_job["drfr_summaries qasper/vicuna-7b.gpt4"].calls == 7 * 3598


def test_a_judge_that_repeats_its_judgments_is_planned_with_every_repetition():
    """repeats: k makes every arena judge call k times and every DRFR response judgment k times
    (the DRFR controls once): the plan (and so the budget check) counts them."""
    config = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    config["arena"]["judges"]["gpt4"]["repeats"] = 3
    config["drfr"]["judges"]["gpt4"]["repeats"] = 2
    by_job = {row.job: row for row in spend.plan(config, root="/nonexistent")}
    assert by_job["drfr_judge infobench/gpt4"].calls == 2 * 8 * 2250 + 2 * 450
    assert by_job["arena_judge colbert-k5/gpt4"].calls == 3 * 2 * (11 * 14020 + 100 * 6 * 55)
    assert (
        by_job["arena_judge_checks gpt4"].calls == 2 * 50 * 6 * 2 + 50 * 6
    )  # the checks judge once


def test_the_paper_plans_table_prints_gpu_hours_per_stage_beside_the_spend():
    """GPU hours (isqaflow.spend.gpu_hours, the estimator of benchmarks/gpu_hours.py) per stage in
    the dry run's spend table, and their total: the GPU-hours table's."""
    from isqaflow.spend import gpu_hours

    config = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    text = spend.table(config, spend.plan(config, root="/nonexistent"))
    _, totals = gpu_hours.table(config)
    assert text.splitlines()[-1].endswith(
        f"; GPU hours (estimate): ~{totals['low']:,.0f}-{totals['high']:,.0f}"
    )
    per_rule = gpu_hours.by_rule(config)
    # 128 GPUs, + 3 for Arena-Hard-Auto's two open answerers (Llama-3-8B: 1, Mixtral-8x7B: 2)
    assert sum(n for n, _, _ in per_rule.values()) == totals["gpus"] == 131
    for rule, (gpus, low, high) in per_rule.items():
        line = next(line for line in text.splitlines() if line.startswith(f"  stage {rule}:"))
        figure = f"~{low:,.1f}" + ("" if high == low else f"-{high:,.1f}")
        assert line.endswith(
            f"GPUs: {gpus}, GPU hours (estimate, isqaflow.spend.gpu_hours): {figure}"
        )
    api_only = next(line for line in text.splitlines() if line.startswith("  stage arena_judge:"))
    assert api_only.endswith("GPUs (GPU plan): 0")
    # without a gpu_plan section (the embedded default): no GPU hours
    assert gpu_hours.by_rule({**config, "gpu_plan": None}) == {}


# ----------------------------------------------------------------------------- the budget


def test_a_plan_above_the_budget_refuses_to_start_naming_the_stages(tmp_path):
    config = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    ledger = tmp_path / "ledger.json"
    del config["budget"]
    assert (
        spend.start_problems(config, ledger, root="/nonexistent") == []
    )  # no budget: nothing checked
    config["budget"] = {"dollars": 1000.0, "stages": {"drfr_judge": 100.0}}
    problems = spend.start_problems(config, ledger, root="/nonexistent")
    assert problems[0].startswith("budget.stages.drfr_judge: the stage plans $")
    assert (
        problems[1].startswith("budget.dollars: the plan is $") and "arena_judge $" in problems[1]
    )
    assert not any("not planned" in problem for problem in problems)  # every API job is planned
    del config["spend"]["items"]["rag"][
        "writing"
    ]  # a size not declared: rag_answers not planned, said so
    problems = spend.start_problems(config, ledger, root="/nonexistent")
    assert "not planned" in problems[-1] and "rag_answers" in problems[-1]
    config["budget"] = {"dollars": 1e6}
    assert spend.start_problems(config, ledger, root="/nonexistent") == []
    # what was spent counts too
    ledger.write_text(json.dumps({"spent": {"arena_judge": 999_999.0}}))
    assert spend.start_problems(config, ledger, root="/nonexistent")


def test_the_paper_config_has_a_budget_the_plan_keeps_within_and_the_line_says_which():
    config = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    rows = spend.plan(config, root="/nonexistent")
    planned = sum(t["dollars"] or 0.0 for t in spend.totals(rows, "rule").values())
    budget = config["budget"]["dollars"]
    assert planned < budget <= 1.2 * planned  # the plan's figure with a margin, not a blank cheque
    assert spend.over_budget(config, rows) == []
    assert spend.budget_verdict(config, rows) == (
        f"within the budget of ${budget:,.2f} (plan ${planned:,.2f})"
    )
    # the three readings are distinct: none, within, above
    assert spend.budget_verdict({**config, "budget": None}, rows).startswith("no budget set")
    above = spend.budget_verdict({**config, "budget": {"dollars": planned / 2}}, rows)
    assert above.startswith("budget.dollars: the plan is $") and "within" not in above
    stages = spend.budget_verdict(
        {**config, "budget": {"stages": {"drfr_judge": 1e4}}}, rows, {"drfr_judge": 1.0}
    )
    assert stages == (
        "within the stages' budgets (drfr_judge $10,000.00); "
        "no budget for the whole run (budget.dollars)"
    )
    # the docs quote the figures the plan makes now
    docs = (ROOT / "docs/paper-scale.md").read_text()
    assert f"`within the budget of ${budget:,.2f} (plan ${planned:,.2f})`" in docs


def test_a_run_stops_before_the_call_that_crosses_the_budget_and_resumes_without_repeating(
    embedded_api, monkeypatch
):
    from isqaflow.drfr.responses import run_responses
    from isqaflow.models.api import budget

    config, root, double = embedded_api
    spec = {k: v for k, v in config["models"]["api"].items() if k != "price"}
    ledger = root / "results/spend/ledger.json"
    instructions = root / "results/data/instructions/infobench.jsonl"
    out = root / "results/drfr/responses/infobench/api-a.jsonl"
    out.parent.mkdir(parents=True)
    n = len(instructions.read_text().splitlines())

    def run(dollars):
        config["budget"] = {"dollars": dollars}
        monkeypatch.setenv(
            budget.ENV, budget.environment(ledger, config["budget"], config["models"])
        )
        run_responses(
            instructions,
            out,
            spec,
            "api-a",
            config["drfr"]["generation"],
            str(out) + ".calls.sqlite",
        )

    # a call's bound: (prompt estimate + 96 new tokens) x $30 per million, ~$0.005; what a call
    # costs (the double's tokens): ~$0.0007; the 12 instructions together ~$0.008
    with pytest.raises(
        budget.BudgetExceeded, match=r"budget.dollars: the next call of double .* no request"
    ):
        run(0.009)
    stopped = double.calls
    assert 0 < stopped < n and not out.exists()
    spent = budget.spent(ledger)["?"]
    assert 0 < spent <= 0.009
    assert json.loads(ledger.read_text())["reserved"] == {}
    run(1.0)  # raised: the call cache answers what was done, the rest is sent once
    assert double.calls == n
    assert len(out.read_text().splitlines()) == n
    assert budget.spent(ledger)["?"] > spent


def test_a_size_neither_converted_nor_declared_leaves_the_job_unplanned_naming_it():
    config = yaml.safe_load((ROOT / "config/paper.yaml").read_text())
    del config["spend"]["items"]["rag"]["writing"]
    rows = {row.job: row for row in spend.plan(config, root="/nonexistent")}
    answers = rows["rag_answers colbert-k5/gpt4o"]
    assert answers.calls is None and "spend.items.rag.writing.queries" in answers.note
    assert rows["drfr_judge infobench/gpt4"].calls == 18900  # the others are still planned
    table = spend.table(config, list(rows.values()))
    assert "not planned, in no total (spend plan: rag 'writing' is not converted yet" in table
    assert (
        "  GPU hours not estimated: spend.items.rag.writing.queries is not declared"
        in table.splitlines()
    )


def test_the_workflow_prints_the_plan_and_refuses_a_run_above_the_budget_before_any_job(
    tmp_path, monkeypatch
):
    """The embedded config with an API DRFR judge (an endpoint that is never called) and a budget
    far below its plan: the dry run prints the plan and the verdict, the run stops at onstart."""
    from workflow_utils import copy_repo, snakemake

    workdir = copy_repo(tmp_path / "repo")
    config = yaml.safe_load((ROOT / "config/config.yaml").read_text())
    config["models"]["api"] = {
        "backend": "openai",
        "model": "double",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_env": "ISQAFLOW_TEST_KEY",
        "price": {"input_per_million": 10.0, "output_per_million": 30.0},
    }
    config["drfr"]["judges"] = {
        "gpt": {"model": "api", "mode": "text", "rule": "raw", "prompts": "ours"}
    }
    config["spend"] = {
        "items": {
            "instructions": {
                "infobench": {
                    "instructions": 12,
                    "requirements": 40,
                    "prompt_chars": 300,
                    "judge_turn_chars": 800,
                }
            }
        }
    }
    config["budget"] = {"dollars": 0.001}
    (workdir / "config/api.yaml").write_text(yaml.safe_dump(config))
    monkeypatch.setenv(
        "ISQAFLOW_TEST_KEY", "placeholder"
    )  # the config check wants the key variable set
    dry = snakemake(workdir, "-n", "--cores", "1", "--configfile", "config/api.yaml", timeout=600)
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "Spend plan (isqaflow.spend):" in dry.stderr and "stage drfr_judge:" in dry.stderr
    assert "Budget: budget.dollars: the plan is $0.57, above the budget of $0.001" in dry.stderr
    run = snakemake(workdir, "--cores", "1", "--configfile", "config/api.yaml", timeout=600)
    assert run.returncode != 0
    assert "the spend plan is above the budget; no job was started" in run.stderr
    assert "budget.dollars: the plan is $" in run.stderr and "drfr_judge $" in run.stderr
    assert not (workdir / "results").exists()  # no job ran
