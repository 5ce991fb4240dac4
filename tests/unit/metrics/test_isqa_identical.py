"""ISQA variants whose final summaries are identical, and steps without feedback (issue 30, item 6):
Tables 1-4 say so in their captions, the feedback statistics count the steps."""

from __future__ import annotations

import pytest
from test_isqa_tables import ROUNDS, SEED, score_rows

from isqaflow.io import write_jsonl
from isqaflow.metrics.identical import feedback_use, identical_pairs, identity_note
from isqaflow.metrics.tables import build_isqa_tables, feedback_statistics


def step(t, summary, facts=(), non_facts=(), decisions=(), skipped=False):
    record = {
        "step": t,
        "summary": summary,
        "facts": list(facts),
        "non_facts": list(non_facts),
        "input_tokens": 1,
        "new_tokens": 1,
        "paper_tokens_cut": 0,
        "feedback": [{"decision": d} for d in decisions],
    }
    return {**record, "skipped": True} if skipped else record


def record(paper, system, steps, dataset="qasper", summarizer="smollm2"):
    return {
        "paper_id": paper,
        "dataset": dataset,
        "summarizer": summarizer,
        "system": system,
        "n_qas": 4,
        "note": None,
        "final_summary": steps[-1]["summary"],
        "final_step": steps[-1]["step"],
        "facts": [],
        "non_facts": [],
        "counts": {},
        "steps": steps,
    }


def no_feedback_run(system, papers=("p0", "p1", "p2")):
    """Two steps, the feedback model finds nothing: s_2 comes from the empty act-on-feedback prompt
    (the same text for every variant, as a deterministic summarizer makes it)."""
    return [
        record(
            p,
            system,
            [
                step(1, f"s1 {p}", decisions=("unparsed", "unanswerable")),
                step(2, f"empty-prompt {p}", decisions=("unparsed",)),
            ],
        )
        for p in papers
    ]


def feedback_run(system, papers=("p0", "p1", "p2")):
    """Feedback on p0 and p1 (a fact, a new summary); none on p2, whose s_2 is the empty prompt's."""
    runs = []
    for p in papers:
        if p == "p2":
            runs.append(
                record(
                    p,
                    system,
                    [
                        step(1, f"s1 {p}", decisions=("unparsed",)),
                        step(2, f"empty-prompt {p}", decisions=("unparsed",)),
                    ],
                )
            )
        else:
            runs.append(
                record(
                    p,
                    system,
                    [
                        step(1, f"s1 {p}", decisions=("fact", "unparsed")),
                        step(2, f"{system} refined {p}", facts=["f"], decisions=("non_fact",)),
                    ],
                )
            )
    return runs


def test_identical_pairs_counts_papers_with_the_same_final_text():
    records = (
        no_feedback_run("isqa-base-human")
        + no_feedback_run("isqa-lora-human")
        + feedback_run("isqa-lora-generated")
    )
    pairs = identical_pairs(records).set_index(["a", "b"])
    assert tuple(pairs.loc[("isqa-base-human", "isqa-lora-human"), ["identical", "papers"]]) == (
        3,
        3,
    )
    # the variant with feedback on two papers shares only p2's empty-prompt summary
    assert tuple(
        pairs.loc[("isqa-base-human", "isqa-lora-generated"), ["identical", "papers"]]
    ) == (1, 3)
    assert tuple(pairs.loc[("isqa-base-human", "s_1"), ["identical", "papers"]]) == (0, 3)


def test_final_summary_equal_to_s1_is_counted():
    records = [
        record(
            "p0",
            "isqa-lora-human",
            [
                step(1, "same", decisions=("unparsed",)),
                step(2, "other", skipped=True),
                step(3, "same"),
            ],
        )
    ]
    records[0]["final_summary"] = "same"
    pairs = identical_pairs(records)
    assert pairs.to_dict("records") == [
        {
            "dataset": "qasper",
            "summarizer": "smollm2",
            "a": "isqa-lora-human",
            "b": "s_1",
            "identical": 1,
            "papers": 1,
        }
    ]


def test_feedback_use_counts_empty_steps_and_empty_prompt_summaries():
    use = feedback_use(no_feedback_run("isqa-base-human") + feedback_run("isqa-lora-human"))
    base = use.loc[("qasper", "smollm2", "isqa-base-human")]
    assert (
        base["feedback_steps"],
        base["steps_without_feedback"],
        base["empty_prompt_summaries"],
    ) == (6, 6, 3)
    lora = use.loc[("qasper", "smollm2", "isqa-lora-human")]
    # p2's two steps gave nothing; p2's s_2 came from the empty prompt; p0/p1's s_2 had a fact
    assert (
        lora["feedback_steps"],
        lora["steps_without_feedback"],
        lora["empty_prompt_summaries"],
    ) == (6, 2, 1)
    # a skipped step (empty_step: skip) generated nothing
    skipped = feedback_use(
        [
            record(
                "p0",
                "x",
                [
                    step(1, "a", decisions=("unparsed",)),
                    step(2, "a", decisions=("unparsed",), skipped=True),
                ],
            )
        ]
    )
    assert skipped.loc[("qasper", "smollm2", "x"), "empty_prompt_summaries"] == 0


def test_identity_note_names_identical_variants_and_runs_without_feedback():
    records = no_feedback_run("isqa-base-human") + no_feedback_run("isqa-lora-human")
    note = identity_note(
        records, {"isqa-base-human": "ISQA (base)", "isqa-lora-human": "ISQA (lora)"}
    )
    assert (
        "Identical final summaries: qasper/smollm2: ISQA (base) = ISQA (lora) on 3 of 3 papers."
        in note
    )
    assert "No feedback at all (no fact and no non-fact on any step): " in note
    assert (
        "qasper/smollm2 ISQA (base) (6 steps; 3 summaries from the act-on-feedback prompt with empty lists: "
        "a prompt change, not feedback)"
    ) in note
    assert "qasper/smollm2 ISQA (lora) (6 steps; 3 summaries" in note
    # a table showing one of them: no pair, still the missing feedback
    one = identity_note(records, {"isqa-lora-human": "w/ ISQA"})
    assert "Identical" not in one and "w/ ISQA (6 steps; 3 summaries" in one
    # one step per paper (refine.steps: 1): no summary from an empty prompt, the final one is s_1
    single = [
        record(p, "isqa-lora-human", [step(1, f"s1 {p}", decisions=("unparsed",))])
        for p in ("p0", "p1")
    ]
    assert identity_note(single, {"isqa-lora-human": "w/ ISQA"}) == (
        " Identical final summaries: qasper/smollm2: w/ ISQA = its first summary s_1 (the initial prompt's, "
        "w/o ISQA) on 2 of 2 papers. No feedback at all (no fact and no non-fact on any step): qasper/smollm2 "
        "w/ ISQA (2 steps)."
    )
    # distinct texts with feedback on every step: nothing to say
    assert (
        identity_note(
            feedback_run("isqa-lora-human", papers=("p0", "p1")), {"isqa-lora-human": "w/ ISQA"}
        )
        == ""
    )
    partial = identity_note(feedback_run("isqa-lora-human"), {"isqa-lora-human": "w/ ISQA"})
    assert partial == " Steps without feedback: qasper/smollm2 w/ ISQA 2 of 6."


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    root = tmp_path_factory.mktemp("identical")
    scores = root / "scores.jsonl"
    write_jsonl(
        scores,
        [r for r in score_rows() if (r["dataset"], r["summarizer"]) == ("qasper", "smollm2")],
    )
    steps = []
    for system, records in (
        ("isqa-lora-human", no_feedback_run("isqa-lora-human")),
        ("isqa-base-human", no_feedback_run("isqa-base-human")),
        ("isqa-lora-generated", feedback_run("isqa-lora-generated")),
    ):
        path = root / f"{system}.steps.jsonl"
        write_jsonl(path, records)
        steps.append(path)
    out = root / "tables"
    out.mkdir()
    build_isqa_tables(
        [scores],
        steps,
        out,
        root / "figures",
        main_feedback="lora",
        feedback_models=["lora", "base"],
        datasets=["qasper"],
        rounds=ROUNDS,
        seed=SEED,
    )
    return out, steps


def caption(out, table):
    return (out / f"isqa_{table}.md").read_text().split("\n\n", 1)[0]


def test_tables_flag_identical_variants_and_missing_feedback(built):
    out, _ = built
    table3 = caption(out, "table3")
    assert (
        "Identical final summaries: qasper/smollm2: ISQA (base) = ISQA (lora) on 3 of 3 papers."
        in table3
    )
    assert "No feedback at all" in table3
    table4 = caption(out, "table4")
    assert "ISQA (model-generated) = ISQA (human-annotated) on 1 of 3 papers" in table4
    assert "Steps without feedback: qasper/smollm2 ISQA (model-generated) 2 of 6." in table4
    for table in ("table1", "table2"):
        assert "No feedback at all" in caption(out, table)
    assert "No feedback at all" in (out / "isqa_table3.tex").read_text().splitlines()[0]


def test_feedback_statistics_count_steps_without_feedback(built):
    _, steps = built
    stats = feedback_statistics(steps)
    lora = stats.loc[("qasper", "smollm2", "isqa-lora-human")]
    assert (
        lora["feedback_steps"],
        lora["steps_without_feedback"],
        lora["empty_prompt_summaries"],
    ) == (6, 6, 3)
    generated = stats.loc[("qasper", "smollm2", "isqa-lora-generated")]
    assert (generated["steps_without_feedback"], generated["empty_prompt_summaries"]) == (2, 1)
    assert all(dtype.kind == "i" for dtype in stats.dtypes)
