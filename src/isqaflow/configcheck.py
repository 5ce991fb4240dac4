"""Cross-references of the workflow config, checked when the workflow is parsed.

The schema (``config/schema.yaml``) checks each value on its own: types, ranges,
misspelled keys.  It cannot check that a *name* refers to something: that
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
* every local model the run uses exists, or is made by a rule of this run (a
  ``convert:`` entry, which writes ``resources/models/<name>``);
* every API model the run uses (``backend: openai`` without ``base_url`` or ``serve``)
  has its key variable (``api_key_env``, default ``OPENAI_API_KEY``) set; the message
  names the model and the variable, never a value.

Ground floor: standard library only, a few milliseconds on the paper-scale config.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["ConfigProblem", "check_config", "format_problems", "exit_on_problems"]

#: Where ``convert:`` entries put their checkpoint (rule convert_gguf_model).
CONVERTED_MODELS = "resources/models"
DEFAULT_KEY_ENV = "OPENAI_API_KEY"  # isqaflow.models.openai.OpenAIModel's default
ISQA_PROMPTS = ("baseline_1", "baseline_2", "prehoc_1", "prehoc_2", "prehoc_3")
DEFAULT_INITIAL_PROMPT = "baseline_2"
# A Hugging Face Hub id: "name" or "owner/name" (huggingface_hub's repo-id rules).
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")


@dataclass(frozen=True)
class ConfigProblem:
    """One problem: the config path (``arena.judges.local.model``) and what is wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class _Checker:
    def __init__(self, config: Mapping[str, Any], workdir: Path, environ: Mapping[str, str]) -> None:
        self.config = config
        self.workdir = workdir
        self.environ = environ
        self.problems: list[ConfigProblem] = []
        # model key -> the config paths that make the run use it
        self.used_models: dict[str, list[str]] = {}

    # ------------------------------------------------------------------ helpers
    def section(self, *keys: str) -> Any:
        node: Any = self.config
        for key in keys:
            if not isinstance(node, Mapping):
                return {}
            node = node.get(key)
        return {} if node is None else node

    def problem(self, path: str, message: str) -> None:
        self.problems.append(ConfigProblem(path, message))

    def ref(self, path: str, value: Any, choices: Iterable[str], what: str, where: str) -> bool:
        """``value`` must be one of ``choices`` (``what``: "model"; ``where``: "models")."""
        choices = sorted(str(c) for c in choices)
        if str(value) in choices:
            return True
        close = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.6)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        listed = ", ".join(choices) if choices else "none"
        self.problem(path, f"no {what} {value!r} in {where}{hint}; choices: {listed}")
        return False

    def model_ref(self, path: str, name: Any, used: bool = True) -> bool:
        ok = self.ref(path, name, self.section("models"), "model", "models")
        if ok and used:
            self.use(name, path)
        return ok

    def use(self, name: Any, path: str) -> None:
        """The run uses model ``name`` (checked elsewhere) through the entry at ``path``."""
        if name in self.section("models"):
            self.used_models.setdefault(str(name), []).append(path)

    def adapter_ref(self, path: str, adapter: Any, model: Any) -> None:
        """An adapter is a finetune key, fine-tuned from the same local checkpoint as ``model``."""
        finetune = self.section("finetune")
        if not self.ref(path, adapter, finetune, "adapter", "finetune"):
            return
        models = self.section("models")
        if model not in models:
            return  # reported by model_ref
        entry = models[model]
        if entry.get("backend", "hf") != "hf":
            self.problem(path, f"adapter {adapter!r} needs a local (hf) model; model {model!r} is "
                               f"backend {entry.get('backend')!r}")
            return
        base = finetune[adapter].get("base")
        if base in models and _checkpoint(models[base]) != _checkpoint(entry):
            self.problem(path, f"adapter {adapter!r} was fine-tuned from {base!r} "
                               f"({models[base].get('model')}), not from {model!r} ({entry.get('model')})")

    def names(self, path: str, values: Any, choices: Iterable[str], what: str, where: str) -> list[str]:
        """Check a list of names; returns the valid ones."""
        good = []
        for i, value in enumerate(values or []):
            if self.ref(f"{path}[{i}]", value, choices, what, where):
                good.append(str(value))
        return good

    # ------------------------------------------------------------------ sections
    def downloads(self) -> None:
        downloads = self.section("downloads")

        def raw(path: str, spec: Any) -> None:
            if isinstance(spec, Mapping) and "download" in spec:
                self.ref(f"{path}.download", spec["download"], downloads, "download", "downloads")

        def raw_list(path: str, specs: Any) -> None:
            for i, spec in enumerate(specs or []):
                raw(f"{path}[{i}]", spec)

        for name, entry in self.section("datasets", "papers").items():
            raw_list(f"datasets.papers.{name}.files", entry.get("files"))
        for name, entry in self.section("datasets", "qa_train").items():
            raw_list(f"datasets.qa_train.{name}.train", entry.get("train"))
            raw_list(f"datasets.qa_train.{name}.dev", entry.get("dev"))
        for name, entry in self.section("datasets", "instructions").items():
            raw_list(f"datasets.instructions.{name}.files", entry.get("files"))
        for name, entry in self.section("datasets", "rag", "domains").items():
            raw_list(f"datasets.rag.domains.{name}.annotations", entry.get("annotations"))
            raw(f"datasets.rag.domains.{name}.corpus", entry.get("corpus"))

    def finetune(self) -> None:
        models = self.section("models")
        for name, entry in self.section("finetune").items():
            base = entry.get("base")
            if self.model_ref(f"finetune.{name}.base", base) and models[base].get("backend", "hf") != "hf":
                self.problem(f"finetune.{name}.base", f"model {base!r} is behind an API "
                                                      f"(backend {models[base].get('backend')!r}); "
                                                      "LoRA fine-tuning needs a local (hf) model")
            self.ref(f"finetune.{name}.data", entry.get("data"), self.section("datasets", "qa_train"),
                     "QA training set", "datasets.qa_train")

    def isqa(self) -> None:
        isqa = self.section("isqa")
        self.names("isqa.datasets", isqa.get("datasets"), self.section("datasets", "papers"),
                   "paper dataset", "datasets.papers")
        for i, name in enumerate(isqa.get("summarizers") or []):
            self.model_ref(f"isqa.summarizers[{i}]", name)
        # The names as written (a wrong one is reported above, not again through its systems).
        datasets = [str(d) for d in isqa.get("datasets") or []]
        summarizers = [str(s) for s in isqa.get("summarizers") or []]
        feedback_models = self.section("isqa", "feedback_models")
        for name, entry in feedback_models.items():
            self.model_ref(f"isqa.feedback_models.{name}.model", entry.get("model"), used=False)
            if entry.get("adapter") is not None:
                self.adapter_ref(f"isqa.feedback_models.{name}.adapter", entry["adapter"], entry.get("model"))
        generated = self.section("isqa", "questions", "generated")
        runs = isqa.get("runs") or []
        uses_generated = any(run.get("questions") == "generated" for run in runs)
        if generated:
            self.model_ref("isqa.questions.generated.model", generated.get("model"), used=uses_generated)
        prompts = list(isqa.get("prompts") or [])
        initial = self.section("isqa", "refine").get("initial_prompt", DEFAULT_INITIAL_PROMPT)
        if prompts and initial not in prompts:
            self.problem("isqa.refine.initial_prompt",
                         f"{initial!r} is not one of isqa.prompts ({', '.join(prompts)}): "
                         "the refinement starts from that prompt's baseline summary")
        # (dataset, summarizer) -> systems with summaries
        systems = {(d, s): [*prompts, "generic"] for d in datasets for s in summarizers}
        for i, run in enumerate(runs):
            path = f"isqa.runs[{i}]"
            feedback = run.get("feedback")
            if self.ref(f"{path}.feedback", feedback, feedback_models, "feedback model", "isqa.feedback_models"):
                self.use(feedback_models[feedback].get("model"), f"isqa.feedback_models.{feedback}.model")
            if run.get("questions") == "generated" and not generated:
                self.problem(f"{path}.questions", "'generated' needs isqa.questions.generated "
                                                  "(the model that writes the questions)")
            # a run restricted to a wrong name counts as unrestricted (reported once, here)
            run_datasets = run.get("datasets")
            if run_datasets is None or self.names(f"{path}.datasets", run_datasets, datasets, "dataset",
                                                  "isqa.datasets") != run_datasets:
                run_datasets = datasets
            run_summarizers = run.get("summarizers")
            if run_summarizers is None or self.names(f"{path}.summarizers", run_summarizers, summarizers,
                                                     "summarizer", "isqa.summarizers") != run_summarizers:
                run_summarizers = summarizers
            for pair in systems:
                if pair[0] in run_datasets and pair[1] in run_summarizers:
                    systems[pair].append(f"isqa-{feedback}-{run.get('questions')}")
        self._systems("isqa.judged_systems", isqa.get("judged_systems"), systems)
        self._systems("human_eval.systems", self.section("human_eval").get("systems"), systems)
        for key in self.section("human_eval", "filled"):
            self.ref(f"human_eval.filled.{key}", key, [f"{d}/{s}" for d, s in systems],
                     "dataset/summarizer pair", "isqa.datasets x isqa.summarizers")
        main = self.section("metrics").get("main_feedback")
        if main is not None and self.ref("metrics.main_feedback", main, feedback_models, "feedback model",
                                         "isqa.feedback_models"):
            if not any(run.get("feedback") == main and run.get("questions") == "human" for run in runs):
                self.problem("metrics.main_feedback", f"feedback model {main!r} has no run with human "
                                                      f"questions in isqa.runs (the headline result, "
                                                      f"isqa-{main}-human)")
        for role in ("qg", "qa"):  # used when there are summaries to score
            self.model_ref(f"metrics.{role}.model", self.section("metrics", role).get("model"), used=bool(systems))

    def _systems(self, path: str, wanted: Any, systems: dict[tuple[str, str], list[str]]) -> None:
        """Every wanted system must have summaries for every (dataset, summarizer) pair."""
        every = sorted({s for names in systems.values() for s in names})
        for i, system in enumerate(wanted or []):
            if not self.ref(f"{path}[{i}]", system, every, "system", "the run's summaries"):
                continue
            lacking = [f"{d}/{s}" for (d, s), names in systems.items() if system not in names]
            if lacking:
                self.problem(f"{path}[{i}]", f"system {system!r} has no summaries for {', '.join(lacking)} "
                                             "(its ISQA run is restricted to other datasets or summarizers)")

    def drfr(self) -> None:
        drfr = self.section("drfr")
        self.names("drfr.datasets", drfr.get("datasets"), self.section("datasets", "instructions"),
                   "instruction dataset", "datasets.instructions")
        for name, entry in self.section("drfr", "responders").items():
            self.model_ref(f"drfr.responders.{name}.model", entry.get("model"))
            if entry.get("adapter") is not None:
                self.adapter_ref(f"drfr.responders.{name}.adapter", entry["adapter"], entry.get("model"))
        for name, entry in self.section("drfr", "judges").items():
            self.model_ref(f"drfr.judges.{name}.model", entry.get("model"))

    def arena(self) -> None:
        arena = self.section("arena")
        self.names("arena.domains", arena.get("domains"), self.section("datasets", "rag", "domains"),
                   "domain", "datasets.rag.domains")
        answerers = self.section("arena", "answerers")
        for name, entry in answerers.items():
            self.model_ref(f"arena.answerers.{name}.model", entry.get("model"), used=False)
            if entry.get("adapter") is not None:
                self.adapter_ref(f"arena.answerers.{name}.adapter", entry["adapter"], entry.get("model"))
        depths = list(arena.get("k") or [])
        for i, run in enumerate(arena.get("runs") or []):
            path = f"arena.runs[{i}]"
            self.ref(f"{path}.retriever", run.get("retriever"), self.section("arena", "retrievers"),
                     "retriever", "arena.retrievers")
            if depths and run.get("k") not in depths:
                self.problem(f"{path}.k", f"{run.get('k')!r} is not one of arena.k "
                                          f"({', '.join(map(str, depths))}), the depths retrieved and reported")
            used = run.get("answerers")
            used = self.names(f"{path}.answerers", used, answerers, "answerer", "arena.answerers") \
                if used is not None else list(answerers)
            for name in used:
                self.use(answerers[name].get("model"), f"arena.answerers.{name}.model")
        for name, entry in self.section("arena", "judges").items():
            self.model_ref(f"arena.judges.{name}.model", entry.get("model"))

    # ------------------------------------------------------------------ the models the run uses
    def models(self) -> None:
        models = self.section("models")
        for name, entry in models.items():
            convert = entry.get("convert")
            target = entry.get("model")
            if convert and Path(str(target)).parent != Path(CONVERTED_MODELS):
                self.problem(f"models.{name}.model", f"{target!r}: a model with convert: is written to "
                                                     f"{CONVERTED_MODELS}/<folder> by rule convert_gguf_model, "
                                                     f"so its model path must be {CONVERTED_MODELS}/<folder>")
        for name, paths in sorted(self.used_models.items()):
            entry = models[name]
            backend = entry.get("backend", "hf")
            used_by = ", ".join(dict.fromkeys(paths))
            if backend == "openai":
                variable = entry.get("api_key_env") or DEFAULT_KEY_ENV
                # a local server (base_url, or one the job starts itself: serve) takes any key
                local_server = entry.get("base_url") is not None or entry.get("serve") is not None
                if not local_server and not self.environ.get(variable):
                    self.problem(f"models.{name}.api_key_env",
                                 f"model {name!r} is an API model the run uses ({used_by}), but the "
                                 f"environment variable {variable} that holds its key is not set")
            elif backend == "hf" and not entry.get("convert"):
                target = str(entry.get("model"))
                if not self._looks_local(target):
                    continue  # a hub id: loaded through the Hugging Face cache
                path = Path(target).expanduser()
                path = path if path.is_absolute() else self.workdir / path
                if not path.exists():
                    self.problem(f"models.{name}.model",
                                 f"local model path {target!r} does not exist, and no rule of this run makes "
                                 f"it (only models with convert: are made, in {CONVERTED_MODELS}/); "
                                 f"used by {used_by}")
                elif path.is_dir() and not (path / "config.json").exists():
                    self.problem(f"models.{name}.model",
                                 f"local model folder {target!r} has no config.json (an incomplete copy?); "
                                 f"used by {used_by}")

    def _looks_local(self, target: str) -> bool:
        """A local path rather than a hub id: absolute, ./ ../ ~, more than one slash, present
        on disk, or its first folder exists here (``resources/x`` is not an owner on the Hub)."""
        if target.startswith(("/", "./", "../", "~")) or not _HUB_ID.match(target):
            return True
        first = target.split("/", 1)[0]
        return (self.workdir / target).exists() or ("/" in target and (self.workdir / first).is_dir())


def _checkpoint(entry: Mapping[str, Any]) -> tuple[Any, Any]:
    return entry.get("model"), entry.get("revision")


def check_config(config: Mapping[str, Any], workdir: str | os.PathLike = ".",
                 environ: Mapping[str, str] | None = None) -> list[ConfigProblem]:
    """Every cross-reference problem of a schema-valid ``config`` (see the module docstring).

    ``workdir`` is where relative local paths are resolved (Snakemake's working
    directory); ``environ`` defaults to ``os.environ``.
    """
    checker = _Checker(config, Path(workdir), os.environ if environ is None else environ)
    checker.downloads()
    checker.finetune()
    checker.isqa()
    checker.drfr()
    checker.arena()
    checker.models()
    # how each stage's models run: decoding honoured or refused, served dtypes, the GPU plan
    from isqaflow.models.servecheck import check_serving

    return checker.problems + [ConfigProblem(path, message) for path, message in check_serving(config)]


def format_problems(problems: Sequence[ConfigProblem], config_files: Sequence[str] = ()) -> str:
    files = f" ({', '.join(map(str, config_files))})" if config_files else ""
    noun = "problem" if len(problems) == 1 else "problems"
    lines = [f"isqaflow: {len(problems)} {noun} in the config{files}; no job was started, "
             "no file was changed:"]
    lines += [f"  {p}" for p in problems]
    return "\n".join(lines)


def exit_on_problems(config: Mapping[str, Any], config_files: Sequence[str] = (),
                     workdir: str | os.PathLike = ".") -> None:
    """Print every problem of ``config`` to stderr and exit with status 1; return when there is none.

    A plain exit rather than an exception: Snakemake prints an exception raised while
    parsing the Snakefile with a traceback-like location, an exit status quietly.
    """
    problems = check_config(config, workdir)
    if problems:
        print(format_problems(problems, config_files), file=sys.stderr, flush=True)
        sys.exit(1)
