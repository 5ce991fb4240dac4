"""SQuAD's answer normalization and token F1 (isqaflow.text.f1), as ISQA's feedback decisions use them."""

from __future__ import annotations

import pytest

from isqaflow.models.base import GenerationParams
from isqaflow.text.f1 import max_f1, normalize_answer, token_f1

PAPER = "BODY OF THE PAPER"
QUESTION = "What do the authors propose?"
CONTEXT = "A generated summary."

SUMMARY_PARAMS = GenerationParams(max_new_tokens=8)
FEEDBACK_PARAMS = GenerationParams(max_new_tokens=8)


# ============================================================================ F1
@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("The Cat sat.", "cat sat"),
        ("a cat  sat", "cat sat"),
        ("  An apple, THE pear; a plum!  ", "apple pear plum"),
        ("U.S.A.", "usa"),
        ("state-of-the-art", "stateoftheart"),  # SQuAD removes punctuation without a space
        ("anthem theory", "anthem theory"),  # articles only as whole words
        ("the", ""),
        ("", ""),
    ],
)
def test_normalize_answer_squad(text, normalized):
    assert normalize_answer(text) == normalized


@pytest.mark.parametrize(
    ("pred", "gold", "f1"),
    [
        ("The Cat sat.", "a cat  sat", 1.0),
        ("cat sat on mat", "cat sat", 2 / 3),  # P 2/4, R 2/2
        ("the cat sat on the mat", "a cat on a mat", 6 / 7),  # 4 vs 3 tokens, 3 shared: P 3/4, R 1
        ("cat dog", "cat bird", 0.5),  # P 1/2, R 1/2
        ("cat cat cat", "cat", 0.5),  # shared counts are clipped: P 1/3, R 1
        ("cat", "dog", 0.0),
        ("", "", 1.0),  # empty vs empty
        ("the", "a", 1.0),  # both normalize to nothing
        ("", "cat", 0.0),
        ("cat", "", 0.0),
        ("...", "the cat", 0.0),
    ],
)
def test_token_f1_golden(pred, gold, f1):
    assert token_f1(pred, gold) == pytest.approx(f1, abs=1e-12)


def test_max_f1_takes_the_best_gold_answer():
    # 0 vs "dog"; 0.8 vs "cat sat down" (P 1, R 2/3); 2/3 vs "cat" (P 1/2, R 1)
    assert max_f1("cat sat", ["dog", "cat sat down", "cat"]) == pytest.approx(0.8)
    assert max_f1("cat sat", ["Cat sat!"]) == 1.0
    assert max_f1("cat sat", []) == 0.0
