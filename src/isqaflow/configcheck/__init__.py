"""Cross-references of the workflow config, checked when the workflow is parsed.

The schema (``config/schema.yaml``) checks each value on its own: types, ranges,
misspelled keys (its errors explained one line each by :mod:`.schema`, before Snakemake's
``validate``).  It cannot check that a *name* refers to something: that
``arena.judges.local.model`` is a key of ``models``, that a feedback model's adapter
is a key of ``finetune``, that a local model path exists.  A wrong name used to
surface only inside a job -- a ``KeyError`` traceback from an input function, or a
model load failing after Snakemake had already deleted the old outputs -- or, for a
missing API key, when the first API job started, hours into a cluster run.

:func:`check_config` walks every section that refers to another and returns every
problem at once, each naming its config path, the bad value and the valid choices
(with the closest one, when there is one).  The Snakefile calls
:func:`exit_on_problems` right after the schema check, before any rule is parsed,
so a dry run shows the same errors, no job starts and nothing is deleted.

Checked:

* names: models, adapters (``finetune`` keys), feedback models, question sources,
  summarizers, responders, answerers, retrievers, judges, datasets, domains,
  downloads, ISQA runs' datasets and summarizers, the systems the judges and the
  human evaluation see, ``metrics.main_feedback``, ``isqa.refine.initial_prompt``,
  the arena runs' retrieval depth;
* an adapter is used with the model it was fine-tuned from, and with a local model;
* numbers at their limits (:mod:`.limits`): no NaN or infinity, integers within 64 bits,
  seeds within what numpy and torch take, ``max_new_tokens`` within the model's context;
* a key written twice in one mapping of a config file (:mod:`.files`; YAML keeps the last);
* values of different sections that contradict each other (:mod:`.samples`): the human
  evaluation's shared papers within its sample, sample sizes within a dataset's
  ``max_papers``, retriever options their backend reads;
* every system read from a file (``file:``) names a readable file (:mod:`.systems`): the
  config key, the path as written and the path it resolved to; a folder or a glob only in
  the formats that read one; the human labels one CSV file with at least one row;
* system names (:mod:`.systems`): none takes the name of the arena's reference player or
  the abstract, and one name in several suites is one system (its leaderboard row);
* every local model the run uses exists, or is made by a rule of this run (a
  ``convert:`` entry, which writes ``resources/models/<name>``);
* warned, not failed: a judge that judges systems of its own model family (:mod:`.families`);
* every API model the run uses (``backend: openai`` without ``base_url`` or ``serve``)
  has its key variable (``api_key_env``, default ``OPENAI_API_KEY``; one definition with the
  jobs: :func:`isqaflow.settings.api_key_variable`) set; the message names the model and the
  variable, never a value.  An ``api_key_env`` that is not a variable's name (empty, or a key
  pasted there) is a problem too, and every message of the check goes through
  :func:`isqaflow.settings.mask_secrets`: anything that looks like a key is masked;
* no key in any other field (:mod:`.secrets`), where Snakemake's own listing would print it;
  a model's ``base_url`` may hold one (``?api-key=...``): the rules pass it redacted.

One checker per config section (:mod:`.sections`), sharing the problems found and the models
the run uses (:mod:`.references`).  Ground floor: standard library only (and PyYAML, which
Snakemake loads the config with, for the files), a few milliseconds on the paper-scale config.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from isqaflow.configcheck.families import self_judging_warnings
from isqaflow.configcheck.files import duplicate_keys
from isqaflow.configcheck.limits import check_limits
from isqaflow.configcheck.references import ConfigProblem, References
from isqaflow.configcheck.samples import check_samples
from isqaflow.configcheck.secrets import check_secrets
from isqaflow.configcheck.sections import (
    check_downloads,
    check_finetune,
    check_models,
    check_suites,
)
from isqaflow.configcheck.systems import (
    check_human_labels_file,
    check_system_files,
    check_system_names,
)
from isqaflow.settings import mask_secrets

__all__ = ["ConfigProblem", "check_config", "exit_on_problems", "format_problems"]

ISQA_PROMPTS = ("baseline_1", "baseline_2", "prehoc_1", "prehoc_2", "prehoc_3")
#: The section checkers, in order: check_models last (it checks the models the others use).
SECTIONS = (
    check_limits,
    check_secrets,
    check_downloads,
    check_finetune,
    check_suites,  # isqa, drfr, arena: each registered suite's section (isqaflow.suites)
    check_system_files,
    check_system_names,
    check_human_labels_file,
    check_samples,
    check_models,
)


def check_config(
    config: Mapping[str, Any],
    workdir: str | os.PathLike = ".",
    environ: Mapping[str, str] | None = None,
) -> list[ConfigProblem]:
    """Every cross-reference problem of a schema-valid ``config`` (see the module docstring).

    ``workdir`` is where relative local paths are resolved (Snakemake's working
    directory); ``environ`` defaults to ``os.environ``.
    """
    refs = References(config, Path(workdir), os.environ if environ is None else environ)
    for check in SECTIONS:
        check(refs)
    return refs.problems


def format_problems(problems: Sequence[ConfigProblem], config_files: Sequence[str] = ()) -> str:
    files = f" ({', '.join(map(str, config_files))})" if config_files else ""
    noun = "problem" if len(problems) == 1 else "problems"
    lines = [
        (
            f"isqaflow: {len(problems)} {noun} in the config{files}; no job was started, "
            "no file was changed:"
        )
    ]
    lines += [f"  {p}" for p in problems]
    return mask_secrets("\n".join(lines))  # a key pasted anywhere in the config is never echoed


def exit_on_problems(
    config: Mapping[str, Any],
    config_files: Sequence[str] = (),
    workdir: str | os.PathLike = ".",
    extra: Sequence[tuple[str, str]] = (),
    warn: bool = True,
) -> None:
    """Print every problem of ``config`` to stderr and exit with status 1; return when there is none.

    ``extra``: (path, message) of checks made above this floor (the workflow passes
    isqaflow.models.planning.servecheck's: decoding honoured or refused, served dtypes, the GPU plan).
    Without problems, a judge that judges systems of its own model family is a warning
    (:mod:`.families`), printed when ``warn`` (the workflow: in its main process, not in every
    job), not fatal.
    A plain exit rather than an exception: Snakemake prints an exception raised while
    parsing the Snakefile with a traceback-like location, an exit status quietly.
    """
    problems = (
        duplicate_keys(Path(workdir) / f for f in config_files)
        + check_config(config, workdir)
        + [ConfigProblem(path, message) for path, message in extra]
    )
    if problems:
        print(format_problems(problems, config_files), file=sys.stderr, flush=True)
        sys.exit(1)
    for line in self_judging_warnings(config) if warn else ():
        print(f"isqaflow: warning: {line}", file=sys.stderr, flush=True)
