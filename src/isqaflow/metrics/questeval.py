"""QuestEval (Scialom et al. 2021), without the trained query weighter (every question weighs 1).

* precision: the summary's questions (after the "?"/length/duplicate filters),
  answered on the source; mean token F1 against the summary's answer (the candidate);
* recall: questions generated from the source, answered on the summary; mean
  answerability;
* QuestEval = the harmonic mean of precision and recall, as in the paper;
* ``questeval_v024``: the public v0.2.4 code instead averages arithmetically over
  both directions and its answer scores (F1, answerability and BERTScore; BERTScore
  is not computed here), reported under its own name for comparability.
"""

from __future__ import annotations

from statistics import fmean

import numpy as np

from isqaflow.text.f1 import token_f1

NAN = float("nan")


def _mean(values) -> float:
    return fmean(values) if values else NAN


def harmonic(p: float, r: float) -> float:
    if np.isnan(p) or np.isnan(r):
        return NAN
    return 0.0 if p + r == 0 else 2 * p * r / (p + r)


def questeval_scores(summary_questions, source_questions) -> dict[str, float]:
    """``summary_questions``: usable questions of the summary, answered on the source;
    ``source_questions``: the source's questions, answered on the summary."""
    precision = _mean([token_f1(q.on_source.answer, q.candidate) for q in summary_questions])
    precision_answ = _mean([q.on_source.answerability for q in summary_questions])
    recall = _mean([q.on_summary.answerability for q in source_questions])
    recall_f1 = _mean([token_f1(q.on_summary.answer, q.candidate) for q in source_questions])
    parts = [x for x in (precision, precision_answ, recall, recall_f1) if not np.isnan(x)]
    return {
        "questeval": harmonic(precision, recall),
        "questeval_precision": precision,
        "questeval_recall": recall,
        "questeval_v024": fmean(parts) if parts else NAN,
        "precision_answerability": precision_answ,
        "recall_f1": recall_f1,
    }
