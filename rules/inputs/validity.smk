"""Input functions of the validity table (rules/validity.smk)."""

# Each judge or metric stage adds its control-file function to this section.
VALIDITY_FILE_FUNCTIONS = [
    "drfr_validity_files",
    "arena_validity_files",
    "metric_validity_files",
    "feedback_validity_files",
]


def validity_control_files():
    """Every control file of the run: the concatenation of the functions above that exist."""
    files = []
    for name in VALIDITY_FILE_FUNCTIONS:
        function = globals().get(name)
        if function is not None:
            files += function()
    return files
