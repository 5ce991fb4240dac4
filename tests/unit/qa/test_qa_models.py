"""The QA models of the QA-based metrics (isqaflow.qa): windows and helpers, prompted QA and QG,
extractive QA, answers as spans chosen by likelihood.

Model outputs are scripted wherever a value is checked by hand; the tiny random
model only checks that the prompted answerer runs end to end and stays in range.
"""

from __future__ import annotations

import math
import re
from typing import Any

import pytest

from isqaflow.qa.answering import ExtractiveQA, QAResult, QuestionAnswerer, is_no_answer, windows
from isqaflow.qa.generation import QuestionGenerator, valid_question
from isqaflow.models.base import Generation, GenerationParams, LanguageModel
from isqaflow.models.cache import CallCache

NAN = float("nan")


def sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# ----------------------------------------------------------------------------- windows and helpers


class WordModel:
    """count_tokens = number of words."""

    def count_tokens(self, text: str) -> int:
        return len(text.split())


def _sentences_of(window: str) -> list[str]:
    from isqaflow.text.sentences import split_sentences

    return split_sentences(window)


def test_windows_cover_every_sentence_with_one_sentence_overlap():
    from isqaflow.text.sentences import split_sentences

    sizes = [3, 5, 2, 6, 4, 3, 7, 2, 4]
    # sentence i: "Topic<i>" then n - 1 words; Punkt would take a one-letter "w." for an initial
    text = " ".join(
        f"Topic{i} " + " ".join(["data"] * (n - 2) + ["ends."]) if n > 1 else f"Topic{i}."
        for i, n in enumerate(sizes)
    )
    sentences = split_sentences(text)
    assert len(sentences) == len(sizes)
    out = windows(text, WordModel(), max_tokens=12)
    assert len(out) > 1
    for window in out:
        assert WordModel().count_tokens(window) <= 12
    parts = [_sentences_of(w) for w in out]
    for part in parts:  # each window is a run of consecutive sentences
        start = sentences.index(part[0])
        assert part == sentences[start : start + len(part)]
    for prev, nxt in zip(parts, parts[1:]):
        assert nxt[0] == prev[-1]  # overlap by exactly one sentence
        assert nxt[1:] and nxt[1] not in prev
    covered = [s for part in parts for s in part]
    assert set(covered) == set(sentences)
    assert parts[0][0] == sentences[0] and parts[-1][-1] == sentences[-1]


def test_windows_edge_cases():
    model = WordModel()
    assert windows("", model, 10) == []
    assert windows("   \n ", model, 10) == []
    assert windows("One short sentence.", model, 10) == ["One short sentence."]
    # a sentence longer than the budget is a window of its own
    long = "Long " + "data " * 20 + "ends."
    out = windows(f"Start here. {long} End here.", model, 8)
    assert long in out
    assert out[0] == "Start here." and out[-1].endswith("End here.")
    # everything fits: one window
    assert windows("One two. Three four.", model, 100) == ["One two. Three four."]


def test_windows_every_window_adds_a_new_sentence():
    text = "One two three four. Five six seven eight. A b c d e f g h."
    out = windows(text, WordModel(), 10)
    # today: ['One two three four. Five six seven eight.', 'Five six seven eight.', 'A b c d e f g h.']
    for prev, nxt in zip(out, out[1:]):
        assert not set(_sentences_of(nxt)) <= set(_sentences_of(prev))


def test_valid_question():
    assert valid_question("What is it?")
    assert valid_question("  What is it?  ")
    assert not valid_question("What is it")
    assert not valid_question("Why is?")  # two words
    assert not valid_question("?")
    assert not valid_question("")
    assert valid_question("Why is?", min_words=2)


def test_is_no_answer():
    for text in (
        "",
        "  ",
        "Unanswerable",
        "unanswerable.",
        "Unanswerable: the text says nothing",
        "None.",
        "Unknown",
        "No answer",
        "not mentioned",
        "Not stated.",
        "the",
    ):
        assert is_no_answer(text), text
    for text in (
        "1932",
        "the mayor",
        "None of the above is wrong",
        "not mentioned anywhere here",
        "no",
    ):
        assert not is_no_answer(text), text


def test_is_no_answer_recognizes_n_slash_a():
    assert is_no_answer("N/A")


# ----------------------------------------------------------------------------- prompted QA / QG


class ScriptedModel(LanguageModel):
    """A chat model whose QA replies and answerability scores are scripted per (question, context)."""

    backend = "scripted"

    def __init__(self, replies: dict, scores: dict):
        self.replies, self.scores = replies, scores
        self.generate_calls: list[list[Any]] = []
        self.score_calls: list[list[Any]] = []
        self.params: list[GenerationParams] = []

    def identity(self):
        return {"backend": self.backend}

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def generate(self, requests, params):
        self.generate_calls.append(list(requests))
        self.params.append(params)
        out = []
        for request in requests:
            m = re.fullmatch(
                r"Text: (.*)\n\nQuestion: (.*)\nGive a short answer\.", request[-1]["content"], re.S
            )
            text, logprob, n = self.replies.get((m.group(2), m.group(1)), ("Unanswerable", -1.0, 1))
            out.append(Generation(text, n_new_tokens=n, logprob=logprob))
        return out

    def score_batch(self, items):
        self.score_calls.append(list(items))
        out = []
        for request, candidates in items:
            assert request[0]["role"] == "system" and candidates[1] == "unanswerable"
            m = re.fullmatch(r"Text: (.*)\nQuestion: (.*)", request[-1]["content"], re.S)
            out.append(list(self.scores.get((m.group(2), m.group(1)), (-5.0, -1.0))))
        return out


DOC = "Alpha words are here. Beta words are here. Gamma words are here. Delta words are here."
W0, W1, W2 = (
    "Alpha words are here. Beta words are here.",
    "Beta words are here. Gamma words are here.",
    "Gamma words are here. Delta words are here.",
)


def test_answer_long_keeps_the_best_answerable_answer_over_windows():
    assert windows(DOC, WordModel(), 10) == [W0, W1, W2]
    qa_year, qa_who, qa_none = "When was it built?", "Who built it?", "What colour is it?"
    replies = {
        # year: no answer in window 0, "red fox" at -1.0/token in window 1, "blue bird" at -0.3/token in 2
        (qa_year, W0): ("Unanswerable", -0.1, 1),
        (qa_year, W1): ("red fox", -2.0, 2),
        (qa_year, W2): ("blue bird\nsecond line ignored", -0.9, 3),
        # who: the earlier window wins on per-token score
        (qa_who, W0): ("Marta Lind", -0.2, 2),
        (qa_who, W2): ("Someone else", -3.0, 2),
        # qa_none: unanswerable everywhere (the default reply)
    }
    scores = {(qa_year, W2): (-1.0, -2.0), (qa_year, W1): (-3.0, -1.0), (qa_who, W0): (-0.5, -0.5)}
    model = ScriptedModel(replies, scores)
    answerer = QuestionAnswerer(model, "prompted", window_tokens=10, spans="free")
    year, who, none = answerer.answer_long([qa_year, qa_who, qa_none], [DOC, DOC, DOC])

    assert year == QAResult(
        "blue bird", pytest.approx(sigmoid(-1.0 - -2.0)), pytest.approx(-0.3), 2
    )
    assert who == QAResult("Marta Lind", pytest.approx(0.5), pytest.approx(-0.1), 0)
    assert none.answer == "" and none.answerability == 0.0 and none.score == float("-inf")
    # one batched generation and one scoring call for 3 questions x 3 windows
    assert len(model.generate_calls) == 1 and len(model.generate_calls[0]) == 9
    assert len(model.score_calls) == 1 and len(model.score_calls[0]) == 9
    assert model.params[0].return_logprobs is True


def test_answer_without_answerability_skips_scoring():
    model = ScriptedModel({("Who built it?", "Marta built it."): ("Marta", -1.0, 1)}, {})
    answerer = QuestionAnswerer(model, "prompted", spans="free")
    found, missing = answerer.answer(
        [("Who built it?", "Marta built it."), ("Why?", "Marta built it.")], answerability=False
    )
    assert found == QAResult("Marta", 1.0, -1.0)
    assert missing == QAResult("", 0.0, float("-inf"))
    assert model.score_calls == []
    assert answerer.answer([]) == []


def test_answerer_and_generator_reject_unknown_modes():
    with pytest.raises(ValueError):
        QuestionAnswerer(ScriptedModel({}, {}), "generative")
    with pytest.raises(ValueError):
        QuestionGenerator(ScriptedModel({}, {}), "free")


class EchoModel(LanguageModel):
    backend = "echo"

    def __init__(self):
        self.requests = []

    def identity(self):
        return {}

    def generate(self, requests, params):
        self.requests += list(requests)
        return [Generation(f"  Question {i}?\nextra line") for i in range(len(requests))]


def test_question_generator_requests_and_first_line():
    model = EchoModel()
    hl = QuestionGenerator(model, "highlight")
    assert (
        hl.request("The bridge opened in 1932.", "1932")
        == "generate question: The bridge opened in <hl> 1932 <hl>."
    )
    assert (
        hl.request("No match here.", "1932") == "generate question: No match here. <hl> 1932 <hl>"
    )
    assert hl.generate([("The bridge opened in 1932.", "1932"), ("Marta won.", "Marta")]) == [
        "Question 0?",
        "Question 1?",
    ]
    prompted = QuestionGenerator(model, "prompted").request("Marta won.", "Marta")
    assert [m["role"] for m in prompted] == ["user", "assistant", "user", "assistant", "user"]
    assert "Sentence: Marta won.\nAnswer: Marta" in prompted[-1]["content"]


@pytest.fixture(scope="module")
def tiny_qa_model(tiny_causal):
    from isqaflow.models.registry import load_model

    return load_model({"backend": "hf", "model": str(tiny_causal), "batch_size": 4}, threads=1)


def test_prompted_answerer_on_the_tiny_model(tiny_qa_model):
    answerer = QuestionAnswerer(
        tiny_qa_model,
        "prompted",
        GenerationParams(max_new_tokens=6),
        window_tokens=48,
        spans="free",
    )
    items = [
        ("What does the fox jump over?", "The quick brown fox jumps over the lazy dog."),
        (
            "What does the model write?",
            "The model reads a paper and writes a summary of its results.",
        ),
        ("Who helps the summarizer?", "Facts and non-facts help the summarizer."),
    ]
    results = answerer.answer(items)
    assert len(results) == len(items)
    for r in results:
        assert isinstance(r, QAResult)
        assert 0.0 <= r.answerability <= 1.0
        assert (r.answer == "") == (r.score == float("-inf"))
        if r.answer:
            assert not is_no_answer(r.answer) and "\n" not in r.answer
    assert answerer.answer(items) == results  # greedy: deterministic

    doc = " ".join(s for _, s in items) * 3
    long = answerer.answer_long([q for q, _ in items], [doc] * len(items))
    n_windows = len(windows(doc, tiny_qa_model, 48))
    assert n_windows > 1
    assert len(long) == len(items)
    for r in long:
        assert 0.0 <= r.answerability <= 1.0 and 0 <= r.window < n_windows


class FixedReplyModel(LanguageModel):
    """The tiny model's scoring, with a fixed reply (a random model's replies are mostly empty)."""

    backend = "hf"

    def __init__(self, inner):
        self.inner = inner

    def identity(self):
        return self.inner.identity()

    def encode_request(self, request):
        return self.inner.encode_request(request)

    def count_tokens(self, text):
        return self.inner.count_tokens(text)

    def generate(self, requests, params):
        return [Generation("the lazy dog", n_new_tokens=3, logprob=-1.5) for _ in requests]

    def score_batch(self, items):
        return self.inner.score_batch(items)


def test_prompted_answerability_from_the_tiny_models_scores(tiny_qa_model):
    model = FixedReplyModel(tiny_qa_model)
    answerer = QuestionAnswerer(model, "prompted", window_tokens=48, spans="free")
    question, context = (
        "What does the fox jump over?",
        "The quick brown fox jumps over the lazy dog.",
    )
    (result,) = answerer.answer([(question, context)])
    a, u = tiny_qa_model.score_batch(
        [(answerer._answerability_request(question, context), ["the lazy dog", "unanswerable"])]
    )[0]
    assert math.isfinite(a) and math.isfinite(u) and a != u
    assert result.answer == "the lazy dog"
    assert result.answerability == pytest.approx(sigmoid(a - u))
    assert 0.0 < result.answerability < 1.0
    assert result.score == pytest.approx(-0.5)


# ----------------------------------------------------------------------------- extractive QA


def _tiny_extractive_model(path):
    """A tiny random-weight BERT span model with a word-level WordPiece tokenizer."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import BertConfig, BertForQuestionAnswering, PreTrainedTokenizerFast

    words = (
        "the quick brown fox jumps over lazy dog model reads a paper and writes summary of its results "
        "who what when where did is was in 1932 bridge opened by mayor elmford jump ? . ,"
    ).split()
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *sorted(set(words))]
    backend = Tokenizer(models.WordPiece({w: i for i, w in enumerate(vocab)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    backend.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)],
    )
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    BertForQuestionAnswering(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def _no_model(items):
    raise AssertionError("the model ran on a cached call")


@pytest.fixture
def tiny_extractive(tmp_path):
    return _tiny_extractive_model(tmp_path / "tiny-bert-qa")


ITEMS = [
    ("who opened the bridge ?", "the bridge was opened in 1932 by the mayor of elmford ."),
    ("what did the fox jump over ?", "the quick brown fox jumps over the lazy dog ."),
]


def test_extractive_qa_on_a_tiny_random_model(tiny_extractive, tmp_path, monkeypatch):
    qa = ExtractiveQA(
        {"model": str(tiny_extractive)},
        cache=CallCache(tmp_path / "cache.sqlite"),
        max_seq_len=64,
        doc_stride=16,
    )
    assert qa.identity()["backend"] == "hf-qa" and qa.identity()["model"] == "tiny-bert-qa"
    results = qa.answer(ITEMS)
    assert len(results) == 2
    for (_, context), r in zip(ITEMS, results, strict=True):
        assert 0.0 <= r.answerability <= 1.0
        assert (r.answer == "") == (r.score == float("-inf"))
        assert r.answer in context
    monkeypatch.setattr(qa, "_run", _no_model)  # a second call, from a cache that started empty
    assert qa.answer(ITEMS) == results
    again = ExtractiveQA(
        {"model": str(tiny_extractive)},
        cache=CallCache(tmp_path / "cache.sqlite"),
        max_seq_len=64,
        doc_stride=16,
    )
    monkeypatch.setattr(again, "_run", _no_model)  # a rerun on the same cache file
    assert again.answer(ITEMS[::-1]) == results[::-1]


class _Logits:
    def __init__(self, start, end):
        self.start_logits, self.end_logits = start, end


def _peaked_net(qa, start_word: str | None, end_word: str | None):
    """A stand-in for the QA network: the start/end logits peak on the given words (or on [CLS])."""
    import torch

    vocab = qa.tokenizer.get_vocab()

    def net(input_ids, **kwargs):
        start = torch.zeros(input_ids.shape)
        end = torch.zeros(input_ids.shape)
        for row in range(input_ids.shape[0]):
            ids = input_ids[row].tolist()
            s_pos = (
                len(ids) - 1 - ids[::-1].index(vocab[start_word])
                if start_word and vocab[start_word] in ids
                else 0
            )
            e_pos = (
                len(ids) - 1 - ids[::-1].index(vocab[end_word])
                if end_word and vocab[end_word] in ids
                else 0
            )
            start[row, s_pos] = end[row, e_pos] = 12.0
        return _Logits(start, end)

    return net


def test_extractive_span_search_and_null_answer(tiny_extractive):
    qa = ExtractiveQA({"model": str(tiny_extractive)}, max_seq_len=64, doc_stride=16)
    qa.net = _peaked_net(qa, "the", "elmford")
    (result,) = qa.answer(ITEMS[:1])
    assert result.answer == "the mayor of elmford"
    assert result.answerability > 0.99 and result.score > 0.9
    qa.net = _peaked_net(
        qa, "who", "elmford"
    )  # "who" is only in the question: spans stay in the context
    (result,) = qa.answer(ITEMS[:1])
    assert result.answer.endswith("elmford") and result.answer in ITEMS[0][1]
    qa.net = _peaked_net(qa, None, None)  # the null answer ([CLS]) wins
    (result,) = qa.answer(ITEMS[:1])
    assert result.answer == "" and result.answerability < 0.01
    # QuestionAnswerer in extractive mode delegates, also for long documents (the windows stride)
    qa.net = _peaked_net(qa, "lazy", "dog")
    answerer = QuestionAnswerer(qa, "extractive")
    assert answerer.answer(ITEMS[1:])[0].answer == "lazy dog"
    long_context = "the bridge was opened in 1932 . " * 12 + ITEMS[1][1]
    assert answerer.answer_long([ITEMS[1][0]], [long_context])[0].answer == "lazy dog"


# ----------------------------------------------------------------------------- answers as spans


def test_snap_to_span_by_hand():
    from isqaflow.qa.spans import snap_to_span

    context = "The bridge was opened in 1932 by the mayor of Elmford. It crosses the river Lund."
    # reply tokens: bridge was opened by mayor (5; "the" is dropped).  Within 4 words,
    # "bridge was opened" has F1 2 * 3 / (3 + 5) = 0.75 ("by the mayor": 4 / 7); "The bridge
    # was opened" reads the same tokens but is a word longer: ties go to the shortest span
    assert (
        snap_to_span("The bridge was opened by the mayor.", context, max_words=4)
        == "bridge was opened"
    )
    # with room for the whole clause: "bridge was opened in 1932 by the mayor", F1 2 * 5 / (6 + 5)
    assert (
        snap_to_span("The bridge was opened by the mayor.", context)
        == "bridge was opened in 1932 by the mayor"
    )
    assert (
        snap_to_span("mayor of Elmford", context) == "mayor of Elmford"
    )  # the "." after it trimmed
    assert snap_to_span("1932", context) == "1932"
    assert (
        snap_to_span("the", "the cat and the dog") == ""
    )  # articles are no tokens: nothing to match
    assert snap_to_span("dog", "a dog chased another dog") == "dog"  # equal spans: the earliest
    assert snap_to_span("Tokyo", context) == "" and snap_to_span("", context) == ""
    with pytest.raises(ValueError, match="max_words"):
        snap_to_span("x", context, max_words=0)


def test_snap_to_span_is_the_best_token_f1_span():
    from itertools import combinations

    from isqaflow.qa.spans import snap_to_span
    from isqaflow.text.f1 import token_f1

    context = (
        "Marta Lind trained the parser on 3,000 annotated sentences in Oslo, and the parser "
        "was released by the University of Elmford in 2019."
    )
    words = context.split()
    for reply in (
        "The parser was trained by Marta Lind in Oslo.",
        "released in 2019 by Elmford's university",
        "3,000 sentences",
        "the University of Elmford released it",
    ):
        got = snap_to_span(reply, context, max_words=6)
        spans = [
            " ".join(words[i:j]) for i, j in combinations(range(len(words) + 1), 2) if j - i <= 6
        ]
        best = max(token_f1(span, reply) for span in spans)
        assert token_f1(got, reply) == pytest.approx(best), reply
        assert got in context and len(got.split()) <= 6
        # no shorter span reaches the same F1
        assert all(
            len(span.split()) >= len(got.split())
            for span in spans
            if token_f1(span, reply) == pytest.approx(best)
        )


class LikelihoodModel(LanguageModel):
    """Scores replies by a table: (question, candidate) -> log-probability; "first token" = first word."""

    backend = "scripted"

    def __init__(self, table: dict, unanswerable: float = -5.0):
        self.table, self.unanswerable = table, unanswerable
        self.score_calls: list[list[Any]] = []

    def identity(self):
        return {"backend": self.backend}

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def truncate_text(self, text: str, max_tokens: int):
        words = text.split()
        return " ".join(words[:max_tokens]), max(0, len(words) - max_tokens)

    def generate(self, requests, params):
        raise AssertionError("likelihood answers decode nothing")

    def score_batch(self, items):
        self.score_calls.append(list(items))
        out = []
        for request, candidates in items:
            question = re.search(r"\nQuestion: (.*)$", request[-1]["content"]).group(1)
            out.append(
                [
                    self.unanswerable
                    if c == "unanswerable"
                    else self.table.get((question, c), -20.0)
                    for c in candidates
                ]
            )
        return out


def test_likelihood_answers_choose_the_most_likely_candidate(monkeypatch):
    context = "Marta Lind trained the parser in Oslo."
    monkeypatch.setattr(
        "isqaflow.qa.answering.QuestionAnswerer.candidates",
        lambda self, ctx: ["Marta Lind", "parser", "Oslo"] if ctx == context else [],
    )
    table = {
        ("Who trained the parser?", "Marta Lind"): -1.0,
        ("Who trained the parser?", "Oslo"): -3.0,
        ("Where?", "Oslo"): -6.0,
    }  # "unanswerable" (-5) beats every candidate
    model = LikelihoodModel(table)
    answerer = QuestionAnswerer(model, "prompted")  # likelihood is the default
    who, where, empty = answerer.answer(
        [("Who trained the parser?", context), ("Where?", context), ("Who?", "no candidates here")]
    )
    assert who == QAResult("Marta Lind", pytest.approx(sigmoid(4.0)), pytest.approx(4.0))
    assert where.answer == "" and where.answerability == pytest.approx(sigmoid(-1.0))
    assert where.score == float("-inf")
    assert empty == QAResult("", 0.0, float("-inf"))
    # one scoring pass (three candidates <= the shortlist of 4) with "unanswerable" last
    assert len(model.score_calls) == 1
    assert [c for _, c in model.score_calls[0]] == [
        ["Marta Lind", "parser", "Oslo", "unanswerable"]
    ] * 2
    assert model.score_calls[0][0][0][0]["role"] == "system"  # the span-asking prompt


def test_without_answerability_the_likeliest_span_is_the_answer(monkeypatch):
    """QAGS's own questions, asked of the summary they came from: no "unanswerable" on offer."""
    context = "Marta Lind trained the parser in Oslo."
    monkeypatch.setattr(
        "isqaflow.qa.answering.QuestionAnswerer.candidates",
        lambda self, ctx: ["Marta Lind", "parser", "Oslo"] if ctx == context else [],
    )
    model = LikelihoodModel(
        {("Where?", "Oslo"): -6.0, ("Where?", "parser"): -7.0}
    )  # "unanswerable" -5
    (where,) = QuestionAnswerer(model, "prompted").answer(
        [("Where?", context)], answerability=False
    )
    assert where == QAResult("Oslo", 1.0, -6.0)
    assert [c for _, c in model.score_calls[0]] == [["Marta Lind", "parser", "Oslo"]]


def test_likelihood_shortlist_scores_only_the_likeliest_first_tokens(monkeypatch):
    cands = ["Marta Lind", "Marta", "Oslo", "the parser", "German text", "2019"]
    monkeypatch.setattr(
        "isqaflow.qa.answering.QuestionAnswerer.candidates", lambda self, ctx: cands
    )
    q = "Who trained it?"
    # first words: Marta (shared by two candidates), Oslo, the, German, 2019
    table = {
        (q, "Marta"): -0.5,
        (q, "Oslo"): -2.0,
        (q, "the"): -4.0,
        (q, "German"): -9.0,
        (q, "2019"): -8.0,
        (q, "Marta Lind"): -1.0,
        (q, "parser"): -1.0,
    }
    model = LikelihoodModel(table)
    (result,) = QuestionAnswerer(model, "prompted", likelihood_shortlist=2).answer([(q, "ctx")])
    first_pass, second_pass = model.score_calls
    assert first_pass[0][1] == [
        "Marta",
        "Oslo",
        "the",
        "German",
        "2019",
    ]  # distinct first tokens, once
    # the two likeliest first tokens keep every candidate that starts with them
    assert second_pass[0][1] == ["Marta Lind", "Marta", "Oslo", "unanswerable"]
    assert result.answer == "Marta"  # -0.5 beats "Marta Lind" (-1.0)
    # shortlist 0: every candidate in one pass
    model = LikelihoodModel(table)
    QuestionAnswerer(model, "prompted", likelihood_shortlist=0).answer([(q, "ctx")])
    assert len(model.score_calls) == 1 and model.score_calls[0][0][1] == [*cands, "unanswerable"]


def test_snapped_answers_from_a_scripted_model():
    context = "The bridge was opened in 1932 by the mayor of Elmford."
    model = ScriptedModel(
        {
            ("Who opened it?", context): ("It was opened by the mayor of Elmford.", -1.0, 9),
            ("When?", context): ("Not stated.", -1.0, 2),
        },
        {},
    )
    answerer = QuestionAnswerer(model, "prompted", spans="snap", snap_max_words=4)
    who, when = answerer.answer(
        [("Who opened it?", context), ("When?", context)], answerability=False
    )
    assert who.answer == "mayor of Elmford"  # F1 2 * 3 / (3 + 7), the best within 4 words
    assert when == QAResult("", 0.0, float("-inf"))  # a no-answer reply is not snapped


def test_answerer_rejects_bad_span_settings():
    with pytest.raises(ValueError, match="span selection"):
        QuestionAnswerer(ScriptedModel({}, {}), "prompted", spans="beam")
    with pytest.raises(ValueError, match="snap_max_words"):
        QuestionAnswerer(ScriptedModel({}, {}), "prompted", snap_max_words=0)
    with pytest.raises(ValueError, match="likelihood_shortlist"):
        QuestionAnswerer(ScriptedModel({}, {}), "prompted", likelihood_shortlist=-1)


def test_likelihood_answers_on_the_tiny_model(tiny_qa_model):
    answerer = QuestionAnswerer(tiny_qa_model, "prompted", window_tokens=48, likelihood_shortlist=2)
    items = [
        ("What does the fox jump over?", "The quick brown fox jumps over the lazy dog."),
        ("Who helps the summarizer?", "Facts and non-facts help the summarizer."),
    ]
    results = answerer.answer(items)
    for (_, context), r in zip(items, results, strict=True):
        assert 0.0 < r.answerability < 1.0
        assert (r.answer == "") == (r.score == float("-inf"))
        if r.answer:
            assert r.answer in answerer.candidates(context) and r.answer in context
            assert r.score == pytest.approx(
                math.log(r.answerability / (1 - r.answerability)), rel=1e-6
            )
    assert answerer.answer(items) == results
