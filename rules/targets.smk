"""The targets of the run and of the manifest -- every stage's outputs, from the config (no rules)."""


def data_targets():
    targets = [papers_file(d) for d in config["datasets"]["papers"]]
    targets += [
        qa_file(d, s) for d in config["datasets"]["qa_train"] for s in ("train", "dev")
    ]
    targets += [instructions_file(d) for d in config["datasets"]["instructions"]]
    targets += [
        f for d in config["datasets"]["rag"]["domains"] for f in rag_files(d).values()
    ]
    return targets


def finetune_targets():
    return [
        f"results/finetune/{a}/{f}"
        for a in config["finetune"]
        for f in ("train_log.csv", "eval.json")
    ]


def summary_targets():
    return [f for d, s in isqa_pairs() for f in summary_files(d, s)]


def metrics_targets():
    targets = suite("isqa").table_files
    targets += metric_validity_files()
    for d, s in isqa_pairs():
        targets.append(f"results/human_eval/{d}/{s}/assignment.json")
        if human_eval_filled(d, s):
            targets.append(f"results/human_eval/{d}/{s}/factuality.csv")
    return targets


def drfr_targets():
    return suite("drfr").table_files


def arena_targets():
    return suite("arena").table_files + arena_validity_files()


def suite_targets():
    """Every registered suite's targets, suite by suite (isqaflow.suites)."""
    return collect_suites("target_functions", globals())


def result_targets():
    return (
        data_targets()
        + finetune_targets()
        + suite_targets()
        + validity_targets()
        + [LEADERBOARD[0]]
        + JUDGE_AUDIT
        + systems_targets()
    )


def all_targets():
    # the browsers, the readable tables and the paired tests: not inputs of the manifest
    return (
        result_targets()
        + ["results/manifest.json"]
        + browser_targets()
        + readable_table_targets()
        + ["results/tables/paired_tests.csv"]
    )
