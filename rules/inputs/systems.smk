"""Input functions of the rules of systems from files (rules/systems.smk)."""

import re

from isqaflow.configcheck.systems import system_files as files_named_by
from isqaflow.settings import reads_file as is_file_system


def file_answerers():
    return [a for a, e in config["arena"]["answerers"].items() if is_file_system(e)]


def model_answerers():
    return [a for a, e in config["arena"]["answerers"].items() if not is_file_system(e)]


def model_responders():
    return [r for r, e in config["drfr"]["responders"].items() if not is_file_system(e)]


def file_responders():
    return [r for r, e in config["drfr"]["responders"].items() if is_file_system(e)]


def file_summary_entries():
    """name -> {file, dataset, format, coverage} of isqa.file_summaries."""
    return config["isqa"].get("file_summaries") or {}


def file_summary_pairs():
    """(dataset, system) of every file-based summaries system (isqaflow.grid)."""
    return grid.file_summary_pairs(config)


def judged_file_summary_pairs():
    """The file-based summaries the DRFR and arena judges see (isqaflow.grid)."""
    return grid.judged_file_summary_pairs(config)


def names_pattern(names):
    """A wildcard constraint matching exactly ``names`` (nothing when there are none)."""
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


def system_file_options(entry):
    return {
        "file": entry["file"],
        "format": entry.get("format", "auto"),
        "coverage": entry.get("coverage", "full"),
        "process_response": entry.get("process_response", True),
    }


def system_inputs(entry):
    """The files of a system's file: (a folder or a glob: RAG-QA Arena's per-domain files)."""
    return files_named_by(entry["file"])


def system_check_files():
    """The check record of every file-based system (one per file it is written to)."""
    files = [
        f"results/systems/arena/{run['retriever']}-k{run['k']}/{a}.json"
        for run in arena_runs()
        for a in run["answerers"]
        if a in file_answerers()
    ]
    files += [
        f"results/systems/drfr/{d}/{r}.json"
        for d in config["drfr"]["datasets"]
        for r in file_responders()
    ]
    files += [f"results/systems/isqa/{d}/{s}.json" for d, s in file_summary_pairs()]
    return files


SYSTEMS_CHECKED = "results/systems/checked.json"


def systems_targets():
    return ([SYSTEMS_CHECKED] if system_check_files() else []) + human_labels_checked()


def system_files():
    """label -> the outputs file of each file-based system, for the manifest's checksums."""
    files = {
        f"systems/arena/{a}": system_inputs(config["arena"]["answerers"][a])
        for a in file_answerers()
    }
    files.update(
        {
            f"systems/drfr/{r}": system_inputs(config["drfr"]["responders"][r])
            for r in file_responders()
        }
    )
    files.update(
        {
            f"systems/isqa/{s}": system_inputs(e)
            for s, e in file_summary_entries().items()
        }
    )
    return files
