"""Input functions of the InFoBench DRFR rules (rules/drfr/drfr.smk)."""


def responder_entry(responder):
    return config["drfr"]["responders"][responder]


def judge_entry(judge):
    return config["drfr"]["judges"][judge]


def drfr_judge_rule(judge):
    """How a DRFR judge's verdict is read (raw by default); calibrated needs log-probabilities."""
    entry = judge_entry(judge)
    reading = entry["rule"]
    if (reading, entry["mode"]) == ("calibrated", "text"):
        raise ValueError(
            f"drfr.judges.{judge}: rule 'calibrated' needs mode 'logprob' (it compares "
            f"YES/NO log-probabilities), got mode {entry['mode']!r}; use rule 'raw'"
        )
    return reading


def drfr_judgment_files():
    return [job.output for job in model_jobs("drfr_judge")]


def drfr_summary_judgment_files():
    return [job.output for job in model_jobs("drfr_summaries")]


def drfr_ppi_params():
    """dataset -> the PPI table's inputs (isqaflow.drfr.ppi_table): every judge's judgments,
    each labelled responder's human labels and responses, how the labels were sampled.
    """
    drfr = config["drfr"]
    return {
        d: {
            "judgments": [
                f"results/drfr/judgments/{d}/{j}.jsonl" for j in drfr["judges"]
            ],
            "labels": instruction_labels(d),
            "responses": {
                r: f"results/drfr/responses/{d}/{r}.jsonl"
                for r in instruction_labels(d)
            },
            "sample": config["datasets"]["instructions"][d]["human_sample"],
        }
        for d in drfr["datasets"]
    }


def drfr_human_inputs():
    """The human labels' files, their checks and the labelled responders' responses."""
    return [
        p
        for d, entry in drfr_ppi_params().items()
        for p in [
            *entry["labels"].values(),
            *entry["responses"].values(),
            *instruction_labels_checked(d),
        ]
    ]
