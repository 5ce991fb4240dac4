"""Input functions of the manifest (rules/report.smk)."""


def stage_code_versions():
    """Each rule's name -> the version of the library code it runs (its code param,
    isqaflow.codehash), for every rule with a code param. Those params are the one list
    of the modules each rule runs (tests/workflow/test_rule_code.py checks them against
    the scripts' imports)."""
    return {
        each.name: each.params.code
        for each in workflow.rules
        if "code" in each.params.keys()
    }


def raw_dataset_files():
    """dataset label -> its raw files, for the manifest's checksums."""
    datasets = config["datasets"]
    files = {
        f"papers/{d}": raw_paths(e["files"]) for d, e in datasets["papers"].items()
    }
    for d, e in datasets["qa_train"].items():
        files[f"qa_train/{d}"] = raw_paths(e["train"]) + raw_paths(e["dev"])
    for d, e in datasets["instructions"].items():
        files[f"instructions/{d}"] = raw_paths(e["files"])
    for d, e in datasets["rag"]["domains"].items():
        files[f"rag/{d}"] = raw_paths(e["annotations"]) + (
            [raw_path(e["corpus"])] if "corpus" in e else []
        )
    if datasets["rag"].get("human_labels"):
        files["rag/human_labels"] = [datasets["rag"]["human_labels"]]
    for d in datasets["instructions"]:
        if instruction_labels(d):
            files[f"instructions/{d}/human_labels"] = list(
                instruction_labels(d).values()
            )
    files.update(system_files())  # one's own systems' outputs files (rules/systems.smk)
    return files


# ----------------------------------------------------------------- browsers and readable tables
def drfr_browser_files():
    """dataset -> the files the DRFR browser reads: instructions, every responder's responses,
    every judge's judgments and control records (the drfr_judge jobs' inputs and outputs).
    """
    drfr = config["drfr"]
    return {
        d: {
            "instructions": instructions_file(d),
            "responses": [
                f"results/drfr/responses/{d}/{r}.jsonl" for r in drfr["responders"]
            ],
            "judgments": [
                f"results/drfr/judgments/{d}/{j}.jsonl" for j in drfr["judges"]
            ],
            "controls": [
                f"results/validity/drfr/{d}/{j}.jsonl" for j in drfr["judges"]
            ],
        }
        for d in drfr["datasets"]
    }


def drfr_summary_browser_files():
    """Per drfr_summaries job: its judgments, the papers file and the summaries it judged."""
    sets = []
    for job in model_jobs("drfr_summaries"):
        dataset, summarizer = job.wildcard("dataset"), job.wildcard("summarizer")
        sets.append(
            {
                "judgments": job.output,
                "papers": papers_file(dataset),
                "summaries": summary_files(dataset, summarizer),
            }
        )
    return sets


def drfr_summary_browser_inputs():
    files = []
    for s in drfr_summary_browser_files():
        files += [s["judgments"], s["papers"], *s["summaries"]]
    return sorted(set(files))


def drfr_browser_inputs(kind):
    files = drfr_browser_files().values()
    if kind == "instructions":
        return [f["instructions"] for f in files]
    return [p for f in files for p in f[kind]]


def drfr_judged_files():
    """Label "<dataset>.<judge>" -> that judge's judgments file, for the paired tests."""
    return {
        f"{d}.{j}": judgments
        for d, files in drfr_browser_files().items()
        for j, judgments in zip(config["drfr"]["judges"], files["judgments"])
    }


def browser_targets():
    """The judgment browser of every registered suite in the run that has one (isqaflow.suites:
    browser)."""
    return [
        entry.browser
        for entry in SUITES
        if entry.browser and collect_suites("target_functions", globals(), [entry])
    ]


def table_names():
    """Every table of the run with a Markdown file (results/tables/<name>.md)."""
    return (
        [t for entry in SUITES for t in entry.table_names]  # isqaflow.suites
        + ["leaderboard", "validity", "paired_tests", "paired_matrix"]
        + [f"judges_{t}" for t in JUDGE_TABLES]
    )


def table_suite(table):
    """The report's subcategory of a readable table: the part of its name before "_"."""
    return table.split("_", 1)[0]


def readable_table_targets():
    return [f"results/tables/{t}.html" for t in table_names()]


def readable_table_sources():
    """Each readable table's Markdown, by the name of its page (rule table_html's input)."""
    return {t: f"results/tables/{t}.md" for t in table_names()}
