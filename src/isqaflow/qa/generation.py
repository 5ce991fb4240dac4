"""Question generation: a question whose answer is a given span of a sentence.

Two kinds, chosen in the config: ``prompted`` -- a chat model asked, with two worked
examples, for a question whose answer is the candidate (the embedded default:
SmolLM2); ``highlight`` -- a seq2seq model in the ``lmqg`` format, ``generate
question: ... <hl> answer <hl> ...`` (paper scale: ``lmqg/t5-large-squad-qg``).

Used by QAGS and QuestEval (metrics) and by ISQA's model-generated questions, so it
sits below both.  Every model call goes through the call cache.
"""

from __future__ import annotations

from collections.abc import Sequence

from isqaflow.models.base import GenerationParams, LanguageModel

# Two invented worked examples for prompted question generation.
QG_EXAMPLES = (
    (
        "The bridge was opened in 1932 by the mayor of Elmford.",
        "1932",
        "When was the bridge opened?",
    ),
    (
        "Marta Lind trained the parser on 3,000 annotated sentences.",
        "Marta Lind",
        "Who trained the parser?",
    ),
)
QG_INSTRUCTION = (
    "Sentence: {sentence}\nAnswer: {answer}\nWrite a question whose answer is the Answer."
)


class QuestionGenerator:
    def __init__(
        self, model: LanguageModel, mode: str = "prompted", params: GenerationParams | None = None
    ) -> None:
        if mode not in ("prompted", "highlight"):
            raise ValueError(
                f"unknown question-generation mode {mode!r}; expected prompted or highlight"
            )
        self.model, self.mode = model, mode
        self.params = params or GenerationParams(max_new_tokens=32)

    def request(self, sentence: str, answer: str):
        if self.mode == "highlight":
            start = sentence.find(answer)
            marked = (
                f"{sentence[:start]}<hl> {answer} <hl>{sentence[start + len(answer) :]}"
                if start >= 0
                else f"{sentence} <hl> {answer} <hl>"
            )
            return f"generate question: {marked}"
        messages = []
        for ex_sentence, ex_answer, ex_question in QG_EXAMPLES:
            messages += [
                {
                    "role": "user",
                    "content": QG_INSTRUCTION.format(sentence=ex_sentence, answer=ex_answer),
                },
                {"role": "assistant", "content": ex_question},
            ]
        messages.append(
            {"role": "user", "content": QG_INSTRUCTION.format(sentence=sentence, answer=answer)}
        )
        return messages

    def generate(self, items: Sequence[tuple[str, str]]) -> list[str]:
        """A question for each ``(sentence, answer)``: the first line of the model's reply."""
        outs = self.model.generate([self.request(s, a) for s, a in items], self.params)
        return [(o.text.strip().splitlines() or [""])[0].strip() for o in outs]

    def generate_scored(self, items: Sequence[tuple[str, str]]) -> list[tuple[str, float]]:
        """A question and the generator's mean token log-probability of its reply for each
        ``(sentence, answer)`` (QAGS orders its questions by the generator's probability)."""
        outs = self.model.generate(
            [self.request(s, a) for s, a in items], self.params.replace(return_logprobs=True)
        )
        return [
            (
                (o.text.strip().splitlines() or [""])[0].strip(),
                (o.logprob or 0.0) / max(o.n_new_tokens, 1),
            )
            for o in outs
        ]


def valid_question(question: str, min_words: int = 3) -> bool:
    """QAGS's filters on a generated question: a question mark and at least three words."""
    return question.strip().endswith("?") and len(question.split()) >= min_words
