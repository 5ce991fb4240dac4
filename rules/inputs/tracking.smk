# Input functions of rules/tracking.smk (snakemake --lint refuses functions beside rules).


def tracking_enabled():
    return bool(config["tracking"]["enabled"])


def tracking_targets():
    """The tracker's record of the run, when tracking is on (nothing otherwise: the DAG of a
    run without tracking is the same as before the key existed)."""
    return ["results/tracking/mlflow_run.json"] if tracking_enabled() else []


def tracked_files():
    """What the tracker logs (isqaflow.report.tracking picks the tables and the figures): every
    target of the run and the other outputs of the jobs that make them (a table job's figures
    and long tables are not targets themselves); no rule the run does not already run.
    """
    targets = all_targets()
    wanted = set(targets)
    siblings = [
        str(f)
        for r in workflow.rules
        if not r.has_wildcards() and wanted.intersection(map(str, r.output))
        for f in r.output
    ]
    return list(dict.fromkeys(targets + siblings))


def exit_if_tracker_missing():
    """Tracking on and MLflow absent: one line naming the key and the install command, before
    any job (the job itself refuses the same way). With --sdm conda the job runs in
    envs/tracking.yaml, which has it: no check here."""
    in_conda = any(
        m.name == "CONDA" for m in workflow.deployment_settings.deployment_method
    )
    problem = missing_tracker() if tracking_enabled() and not in_conda else None
    if problem:
        print(
            format_problems(
                [ConfigProblem("tracking.enabled", f"true, but {problem}")]
            ),
            file=sys.stderr,
        )
        sys.exit(1)
