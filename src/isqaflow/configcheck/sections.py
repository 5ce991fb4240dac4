"""One checker per config section: names each section refers to, and the models the run uses."""

from __future__ import annotations

import difflib

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from isqaflow.backends import backend_of
from isqaflow.configcheck.references import References
from isqaflow.settings import api_key_variable, reads_file
from isqaflow.suites import SUITES
from isqaflow.suites.base import resolve_function

#: Where ``convert:`` entries put their checkpoint (rule convert_gguf_model).
CONVERTED_MODELS = "resources/models"
DEFAULT_INITIAL_PROMPT = "baseline_2"
# A Hugging Face Hub id: "name" or "owner/name" (huggingface_hub's repo-id rules).
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*(/[A-Za-z0-9][A-Za-z0-9_.-]*)?$")


def check_downloads(refs: References) -> None:
    """Every ``download:`` a dataset file names is a key of ``downloads``."""
    downloads = refs.section("downloads")

    def raw(path: str, spec: Any) -> None:
        if isinstance(spec, Mapping) and "download" in spec:
            refs.ref(f"{path}.download", spec["download"], downloads, "download", "downloads")

    def raw_list(path: str, specs: Any) -> None:
        for i, spec in enumerate(specs or []):
            raw(f"{path}[{i}]", spec)

    for name, entry in refs.section("datasets", "papers").items():
        raw_list(f"datasets.papers.{name}.files", entry.get("files"))
    for name, entry in refs.section("datasets", "qa_train").items():
        raw_list(f"datasets.qa_train.{name}.train", entry.get("train"))
        raw_list(f"datasets.qa_train.{name}.dev", entry.get("dev"))
    for name, entry in refs.section("datasets", "instructions").items():
        raw_list(f"datasets.instructions.{name}.files", entry.get("files"))
    for name, entry in refs.section("datasets", "rag", "domains").items():
        raw_list(f"datasets.rag.domains.{name}.annotations", entry.get("annotations"))
        raw(f"datasets.rag.domains.{name}.corpus", entry.get("corpus"))


def check_finetune(refs: References) -> None:
    """``finetune``: each adapter's base is a local model, its data a QA training set."""
    models = refs.section("models")
    for name, entry in refs.section("finetune").items():
        base = entry.get("base")
        if (
            refs.model_ref(f"finetune.{name}.base", base)
            and not backend_of(models[base], base).local
        ):
            refs.problem(
                f"finetune.{name}.base",
                f"model {base!r} is behind an API "
                f"(backend {models[base].get('backend')!r}); "
                "LoRA fine-tuning needs a local (hf) model",
            )
        refs.ref(
            f"finetune.{name}.data",
            entry.get("data"),
            refs.section("datasets", "qa_train"),
            "QA training set",
            "datasets.qa_train",
        )


def check_isqa(refs: References) -> None:
    """``isqa``, ``human_eval`` and ``metrics``: datasets, summarizers, feedback models, runs, systems."""
    isqa = refs.section("isqa")
    refs.names(
        "isqa.datasets",
        isqa.get("datasets"),
        refs.section("datasets", "papers"),
        "paper dataset",
        "datasets.papers",
    )
    for i, name in enumerate(isqa.get("summarizers") or []):
        refs.model_ref(f"isqa.summarizers[{i}]", name)
    # The names as written (a wrong one is reported above, not again through its systems).
    datasets = [str(d) for d in isqa.get("datasets") or []]
    summarizers = [str(s) for s in isqa.get("summarizers") or []]
    feedback_models = refs.section("isqa", "feedback_models")
    for name, entry in feedback_models.items():
        refs.system_ref(f"isqa.feedback_models.{name}", entry, used=False)
    generated = refs.section("isqa", "questions", "generated")
    runs = isqa.get("runs") or []
    uses_generated = any(run.get("questions") == "generated" for run in runs)
    if generated:
        refs.model_ref(
            "isqa.questions.generated.model", generated.get("model"), used=uses_generated
        )
    prompts = list(isqa.get("prompts") or [])
    initial = refs.section("isqa", "refine").get("initial_prompt", DEFAULT_INITIAL_PROMPT)
    if prompts and initial not in prompts:
        refs.problem(
            "isqa.refine.initial_prompt",
            f"{initial!r} is not one of isqa.prompts ({', '.join(prompts)}): "
            "the refinement starts from that prompt's baseline summary",
        )
    # (dataset, summarizer) -> systems with summaries
    systems = {(d, s): [*prompts, "generic"] for d in datasets for s in summarizers}
    for i, run in enumerate(runs):
        path = f"isqa.runs[{i}]"
        feedback = run.get("feedback")
        if refs.ref(
            f"{path}.feedback", feedback, feedback_models, "feedback model", "isqa.feedback_models"
        ):
            refs.use(
                feedback_models[feedback].get("model"), f"isqa.feedback_models.{feedback}.model"
            )
        if run.get("questions") == "generated" and not generated:
            refs.problem(
                f"{path}.questions",
                "'generated' needs isqa.questions.generated (the model that writes the questions)",
            )
        # a run restricted to a wrong name counts as unrestricted (reported once, here)
        run_datasets = run.get("datasets")
        if (
            run_datasets is None
            or refs.names(f"{path}.datasets", run_datasets, datasets, "dataset", "isqa.datasets")
            != run_datasets
        ):
            run_datasets = datasets
        run_summarizers = run.get("summarizers")
        if (
            run_summarizers is None
            or refs.names(
                f"{path}.summarizers",
                run_summarizers,
                summarizers,
                "summarizer",
                "isqa.summarizers",
            )
            != run_summarizers
        ):
            run_summarizers = summarizers
        for pair, names in systems.items():
            if pair[0] in run_datasets and pair[1] in run_summarizers:
                names.append(f"isqa-{feedback}-{run.get('questions')}")
    files = _file_summaries(refs, isqa, summarizers)
    _systems(refs, "isqa.judged_systems", isqa.get("judged_systems"), systems, files)
    _systems(refs, "human_eval.systems", refs.section("human_eval").get("systems"), systems)
    for key in refs.section("human_eval", "filled"):
        refs.ref(
            f"human_eval.filled.{key}",
            key,
            [f"{d}/{s}" for d, s in systems],
            "dataset/summarizer pair",
            "isqa.datasets x isqa.summarizers",
        )
    main = refs.section("metrics").get("main_feedback")
    if (
        main is not None
        and refs.ref(
            "metrics.main_feedback", main, feedback_models, "feedback model", "isqa.feedback_models"
        )
        and not any(run.get("feedback") == main and run.get("questions") == "human" for run in runs)
    ):
        refs.problem(
            "metrics.main_feedback",
            f"feedback model {main!r} has no run with human "
            f"questions in isqa.runs (the headline result, "
            f"isqa-{main}-human)",
        )
    for role in ("qg", "qa"):  # used when there are summaries to score
        refs.model_ref(
            f"metrics.{role}.model", refs.section("metrics", role).get("model"), used=bool(systems)
        )


def _systems(
    refs: References,
    path: str,
    wanted: Any,
    systems: dict[tuple[str, str], list[str]],
    files: Sequence[str] = (),
) -> None:
    """Every wanted system must have summaries for every (dataset, summarizer) pair; a
    summarizer read from a file (``files``, isqa.file_summaries) has its own dataset."""
    every = sorted({s for names in systems.values() for s in names} | set(files))
    for i, system in enumerate(wanted or []):
        if not refs.ref(f"{path}[{i}]", system, every, "system", "the run's summaries"):
            continue
        if system in files:
            continue
        lacking = [f"{d}/{s}" for (d, s), names in systems.items() if system not in names]
        if lacking:
            refs.problem(
                f"{path}[{i}]",
                f"system {system!r} has no summaries for {', '.join(lacking)} "
                "(its ISQA run is restricted to other datasets or summarizers)",
            )


def _file_summaries(
    refs: References, isqa: Mapping[str, Any], summarizers: Sequence[str]
) -> list[str]:
    """isqa.file_summaries: its dataset is a paper dataset, its name is its own (its file: .systems)."""
    entries = isqa.get("file_summaries") or {}
    for name, entry in entries.items():
        path = f"isqa.file_summaries.{name}"
        refs.ref(
            f"{path}.dataset",
            entry.get("dataset"),
            refs.section("datasets", "papers"),
            "paper dataset",
            "datasets.papers",
        )
        if name in summarizers:
            refs.problem(
                path,
                f"{name!r} is also in isqa.summarizers; a summarizer read from a file "
                "needs a name of its own",
            )
    return list(entries)


def check_drfr(refs: References) -> None:
    """``drfr``: datasets, responders (and their adapters), judges."""
    drfr = refs.section("drfr")
    refs.names(
        "drfr.datasets",
        drfr.get("datasets"),
        refs.section("datasets", "instructions"),
        "instruction dataset",
        "datasets.instructions",
    )
    for name, entry in refs.section("drfr", "responders").items():
        if reads_file(entry):
            continue
        refs.system_ref(f"drfr.responders.{name}", entry)
    for name, entry in refs.section("drfr", "judges").items():
        refs.model_ref(f"drfr.judges.{name}.model", entry.get("model"))
        if entry.get("reuse_calls") is not None:
            refs.problem(
                f"drfr.judges.{name}.reuse_calls",
                f"{entry['reuse_calls']!r}: a judge reuses "
                "another's calls in the arena only; leave it out",
            )
        if entry.get("tie_band") is not None:
            # an option no stage reads is refused, not ignored: ignored, it would still be a
            # param of the judge's jobs and rerun them when edited
            refs.problem(
                f"drfr.judges.{name}.tie_band",
                "the arena's calibrated rule reads a tie band; a DRFR verdict is YES or NO, "
                "no DRFR stage reads it: leave it out",
            )
    # people's labels of a responder the pool does not have are not read (an overlay may remove
    # the default's handwritten responder); a name close to a responder's is a misspelling
    responders = sorted(refs.section("drfr", "responders"))
    for dataset, entry in refs.section("datasets", "instructions").items():
        for responder in (entry or {}).get("human_labels") or {}:
            close = difflib.get_close_matches(str(responder), responders, n=1, cutoff=0.8)
            if responder not in responders and close:
                refs.problem(
                    f"datasets.instructions.{dataset}.human_labels.{responder}",
                    f"no DRFR responder {responder!r} in drfr.responders (did you mean "
                    f"{close[0]!r}?); the labels of a responder the pool does not have are "
                    "not read",
                )


def check_arena(refs: References) -> None:
    """``arena``: domains, answerers (and their adapters), runs, retrievers, depths, judges."""
    arena = refs.section("arena")
    refs.names(
        "arena.domains",
        arena.get("domains"),
        refs.section("datasets", "rag", "domains"),
        "domain",
        "datasets.rag.domains",
    )
    answerers = refs.section("arena", "answerers")
    for name, entry in answerers.items():
        if reads_file(entry):
            continue
        refs.system_ref(f"arena.answerers.{name}", entry, used=False)
    depths = list(arena.get("k") or [])
    for i, run in enumerate(arena.get("runs") or []):
        path = f"arena.runs[{i}]"
        refs.ref(
            f"{path}.retriever",
            run.get("retriever"),
            refs.section("arena", "retrievers"),
            "retriever",
            "arena.retrievers",
        )
        if depths and run.get("k") not in depths:
            refs.problem(
                f"{path}.k",
                f"{run.get('k')!r} is not one of arena.k "
                f"({', '.join(map(str, depths))}), the depths retrieved and reported",
            )
        used = run.get("answerers")
        used = (
            refs.names(f"{path}.answerers", used, answerers, "answerer", "arena.answerers")
            if used is not None
            else list(answerers)
        )
        domains = refs.section("datasets", "rag", "domains")
        without_corpus = [
            d for d in arena.get("domains") or [] if d in domains and "corpus" not in domains[d]
        ]
        for name in used:
            refs.use(answerers[name].get("model"), f"arena.answerers.{name}.model")
            if without_corpus and name in answerers and not reads_file(answerers[name]):
                refs.problem(
                    f"{path}.answerers",
                    f"answerer {name!r} answers from retrieved passages, but domain "
                    f"{without_corpus[0]!r} has no corpus (datasets.rag.domains."
                    f"{without_corpus[0]}.corpus): give it one, or judge only answerers read "
                    "from files in this run",
                )
    judges = refs.section("arena", "judges")
    for name, entry in judges.items():
        refs.model_ref(f"arena.judges.{name}.model", entry.get("model"))
        check_reuse_calls(refs, "arena.judges", name, judges)
        if entry.get("tie_band") is not None and entry.get("rule", "raw") != "calibrated":
            refs.problem(
                f"arena.judges.{name}.tie_band",
                f"read by the calibrated rule only; this judge's rule is "
                f"{entry.get('rule', 'raw')!r} (a tie when the two orders disagree): leave it "
                "out, or set rule: calibrated",
            )


def check_suites(refs: References) -> None:
    """Every registered suite's section, in the registry's order (isqaflow.suites), by the
    checker its descriptor names (``config_check``); a KeyError for a suite that names none
    (its names would go unchecked), an ImportError for one that does not resolve."""
    for entry in SUITES:
        if not entry.config_check:
            raise KeyError(
                f"suite {entry.name!r} names no checker of its config section "
                f"(isqaflow.suites.{entry.name}: config_check)"
            )
        check = resolve_function(
            entry.name, "config_check", entry.config_check, within="isqaflow.configcheck."
        )
        check(refs)


def check_reuse_calls(refs: References, where: str, name: str, judges: Mapping[str, Any]) -> None:
    """``reuse_calls``: another judge of the suite, on the same model, that reuses none itself
    (no chains, no cycles); its jobs' calls are copied into this judge's (only identical calls
    are ever served: isqaflow.models.cache.copy_calls)."""
    source = judges[name].get("reuse_calls")
    if source is None:
        return
    path = f"{where}.{name}.reuse_calls"
    if source == name:
        refs.problem(path, f"{source!r} is this judge itself; name another judge of {where}")
    elif refs.ref(path, source, judges, "judge", where):
        if judges[source].get("reuse_calls") is not None:
            refs.problem(
                path,
                f"{source!r} reuses the calls of {judges[source]['reuse_calls']!r} itself; "
                "name the judge that makes the calls",
            )
        elif judges[source].get("model") != judges[name].get("model") and {
            judges[source].get("model"),
            judges[name].get("model"),
        } <= set(refs.section("models")):
            refs.problem(
                path,
                f"{source!r} runs model {judges[source].get('model')!r}, this judge "
                f"{judges[name].get('model')!r}: no call of one is a call of the other",
            )


def check_models(refs: References) -> None:
    """``models``: every model the run uses has its local files or its API key (run last)."""
    models = refs.section("models")
    for name, entry in models.items():
        convert = entry.get("convert")
        target = entry.get("model")
        if convert and Path(str(target)).parent != Path(CONVERTED_MODELS):
            refs.problem(
                f"models.{name}.model",
                f"{target!r}: a model with convert: is written to "
                f"{CONVERTED_MODELS}/<folder> by rule convert_gguf_model, "
                f"so its model path must be {CONVERTED_MODELS}/<folder>",
            )
    bad_key_env = set()
    for name, entry in models.items():  # used or not: a key pasted there would sit in the manifest
        try:  # the jobs read the same definition (isqaflow.models.registry, isqaflow.models.api.model_lists)
            api_key_variable(entry)
        except ValueError as err:
            refs.problem(f"models.{name}.api_key_env", f"model {name!r}: {err}")
            bad_key_env.add(name)
    for name, paths in sorted(refs.used_models.items()):
        entry = models[name]
        backend = backend_of(entry, name)
        used_by = ", ".join(dict.fromkeys(paths))
        if backend.api_key:
            if name in bad_key_env:
                continue
            variable = api_key_variable(entry)
            # a local server (base_url, or one the job starts itself: serve) takes any key
            local_server = entry.get("base_url") is not None or entry.get("serve") is not None
            if not local_server and not refs.environ.get(variable):
                refs.problem(
                    f"models.{name}.api_key_env",
                    f"model {name!r} is an API model the run uses ({used_by}), but the "
                    f"environment variable {variable} that holds its key is not set",
                )
        elif backend.local and not entry.get("convert"):
            target = str(entry.get("model"))
            if not _looks_local(refs, target):
                continue  # a hub id: loaded through the Hugging Face cache
            path = Path(target).expanduser()
            path = path if path.is_absolute() else refs.workdir / path
            if not path.exists():
                refs.problem(
                    f"models.{name}.model",
                    f"local model path {target!r} does not exist, and no rule of this run makes "
                    f"it (only models with convert: are made, in {CONVERTED_MODELS}/); "
                    f"used by {used_by}",
                )
            elif path.is_dir() and not (path / "config.json").exists():
                refs.problem(
                    f"models.{name}.model",
                    f"local model folder {target!r} has no config.json (an incomplete copy?); "
                    f"used by {used_by}",
                )


def _looks_local(refs: References, target: str) -> bool:
    """A local path rather than a hub id: absolute, ./ ../ ~, more than one slash, present
    on disk, or its first folder exists here (``resources/x`` is not an owner on the Hub)."""
    if target.startswith(("/", "./", "../", "~")) or not _HUB_ID.match(target):
        return True
    first = target.split("/", 1)[0]
    return (refs.workdir / target).exists() or ("/" in target and (refs.workdir / first).is_dir())
