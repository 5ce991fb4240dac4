"""The models behind QAGS and QuestEval, built from the config: question generator,
question answerer and QuestEval's optional query weighter (one model is loaded once
when several roles use it).  Used by the scoring job and by the metric controls."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from isqaflow.metrics.qa_metrics import QAMetricSettings
from isqaflow.models.base import GenerationParams
from isqaflow.models.cache import CallCache
from isqaflow.qa.answering import DEFAULT_SPACY_PIPELINE, ExtractiveQA, QuestionAnswerer
from isqaflow.qa.generation import QuestionGenerator


def build_scorers(
    qg: dict[str, Any],
    qa: dict[str, Any],
    cache: CallCache,
    threads: int | None,
    spacy_pipeline: str = DEFAULT_SPACY_PIPELINE,
):
    """The QG and QA models of the config (one model is loaded once when both use it).

    ``qa`` holds ``model``, ``mode`` and optionally ``window_tokens``, ``generation``,
    ``spans``, ``snap_max_words`` and ``likelihood_shortlist`` (see
    :class:`QuestionAnswerer`); the answer
    candidates of ``spans: likelihood`` come from ``spacy_pipeline``.
    """
    from isqaflow.models.registry import load_model

    qg_model = load_model(qg["model"], cache=cache, name="question-generator", threads=threads)
    generator = QuestionGenerator(
        qg_model, qg["mode"], GenerationParams.from_dict(qg.get("generation"))
    )
    if qa["mode"] == "extractive":
        qa_backend: Any = ExtractiveQA(qa["model"], cache=cache, threads=threads)
    elif qa["model"] == qg["model"]:
        qa_backend = qg_model
    else:
        qa_backend = load_model(qa["model"], cache=cache, name="question-answerer", threads=threads)
    answerer = QuestionAnswerer(
        qa_backend,
        qa["mode"],
        GenerationParams.from_dict(qa.get("generation")),
        window_tokens=qa.get("window_tokens", 384),
        spans=qa.get("spans", "likelihood"),
        snap_max_words=qa.get("snap_max_words", 10),
        spacy_pipeline=spacy_pipeline,
        likelihood_shortlist=qa.get("likelihood_shortlist", 4),
    )
    return generator, answerer


def build_weighter(
    weighter: dict[str, Any] | None,
    qg: dict[str, Any],
    qg_model: Any,
    cache: CallCache,
    threads: int | None,
):
    """QuestEval's query weighter of the config, or None (off); the QG model is reused when it is the same."""
    if not weighter:
        return None
    from isqaflow.metrics.questeval import QueryWeighter
    from isqaflow.models.registry import load_model

    model = (
        qg_model
        if weighter["model"] == qg["model"]
        else load_model(weighter["model"], cache=cache, name="query-weighter", threads=threads)
    )
    return QueryWeighter(
        model, weighter.get("mode", "prompted"), weighter.get("max_input_tokens", 512)
    )


@dataclass(frozen=True)
class MetricModels:
    """QAGS's and QuestEval's models and settings from the config's ``metrics`` section: the
    ``qg`` and ``qa`` model entries, the metric ``settings`` and QuestEval's query ``weighter``
    (``{model, mode, max_input_tokens}`` or None).  The settings object of the jobs that score
    (score_summaries, metric_controls)."""

    qg: Mapping[str, Any] | None = None
    qa: Mapping[str, Any] | None = None
    settings: QAMetricSettings = field(default_factory=QAMetricSettings)
    weighter: Mapping[str, Any] | None = None

    @classmethod
    def from_rule(cls, params: Any) -> MetricModels:
        """From a rule's params ``qg``, ``qa``, ``settings`` and ``weighter``."""
        return cls(
            qg=params.qg,
            qa=params.qa,
            settings=QAMetricSettings.from_dict(params.settings),
            weighter=params.weighter,
        )

    def build(self, cache: CallCache, threads: int | None):
        """(question generator, question answerer, query weighter or None), each model loaded once."""
        generator, answerer = build_scorers(
            self.qg, self.qa, cache, threads, self.settings.spacy_pipeline
        )
        return (
            generator,
            answerer,
            build_weighter(self.weighter, self.qg, generator.model, cache, threads),
        )
