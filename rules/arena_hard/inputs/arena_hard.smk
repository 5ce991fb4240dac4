"""Input functions of the Arena-Hard-Auto rules (rules/arena_hard/arena_hard.smk)."""


def arena_hard_answerer(answerer):
    return config["arena_hard"]["answerers"][answerer]


def arena_hard_judge_entry(judge):
    return config["arena_hard"]["judges"][judge]


def arena_hard_questions():
    return raw_path(config["arena_hard"]["questions"])


def arena_hard_baseline():
    return raw_path(config["arena_hard"]["baseline"])


def arena_hard_style_tokenizer():
    """The model whose tokenizer counts the answers' tokens for style control, or None (off)."""
    return (config["arena_hard"].get("style_control") or {}).get("tokenizer")


def arena_hard_style_counts_files():
    """Rule arena_hard_style_counts' file, or none with style control off."""
    return (
        ["results/arena_hard/style_counts.jsonl"]
        if arena_hard_style_tokenizer()
        else []
    )


def arena_hard_answer_files():
    return [job.output for job in model_jobs("arena_hard_answers")]


def arena_hard_judgment_files():
    return [job.output for job in model_jobs("arena_hard_judge")]


def arena_hard_validity_files():
    """The judges' known-answer control records (written by arena_hard_judge beside its
    judgments); none without the suite's section."""
    return [
        f"results/validity/arena_hard/{job.wildcard('judge')}.jsonl"
        for job in model_jobs("arena_hard_judge")
    ]


def arena_hard_targets():
    """The suite's tables and control files; none without its config section (isqaflow.grid)."""
    if not model_jobs("arena_hard_judge"):
        return []
    return suite("arena_hard").table_files + arena_hard_validity_files()
