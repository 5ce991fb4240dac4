"""Input functions of the validity table (rules/validity.smk)."""


def validity_control_files():
    """Every control file of the run: those of each registered suite's judges and metrics,
    from the input functions its descriptor names (isqaflow.suites: validity_functions; a
    misspelt name is an error)."""
    return collect_suites("validity_functions", globals())
