"""Feedback-model fine-tuning (Appendix C): training items, target format, LoRA training and resume, scoring."""

from __future__ import annotations

import csv
import json
import logging
import math

import pytest

import isqaflow.finetune.lora as lora
from isqaflow.data.schema import UNANSWERABLE, ContextParagraph, QAExample
from isqaflow.finetune.evaluate import score_outputs
from isqaflow.finetune.formats import ParsedFeedback, example_request, format_target, parse_feedback
from isqaflow.finetune.lora import (
    LOG_FIELDS,
    LoraSettings,
    canonical_adapter_config,
    train,
    training_items,
)
from isqaflow.io import write_jsonl
from isqaflow.finetune.formats import feedback_request
from isqaflow.models.base import GenerationParams
from isqaflow.models.identity import adapter_fingerprint
from isqaflow.models.registry import load_model
from isqaflow.text.f1 import token_f1


@pytest.fixture(scope="module")
def causal(tiny_causal):
    return load_model({"backend": "hf", "model": str(tiny_causal)}, threads=1)


@pytest.fixture(scope="module")
def t5(tiny_seq2seq):
    return load_model({"backend": "hf", "model": str(tiny_seq2seq)}, threads=1)


def example(i: int = 0) -> QAExample:
    return QAExample(
        id=f"ex{i}",
        question=f"Who jumps over dog {i}?",
        context=[
            ContextParagraph(
                title="D", sentences=["The model reads a paper.", "It writes a summary."]
            ),
            ContextParagraph(
                title="G",
                sentences=[
                    f"The quick brown fox {i} jumps over the lazy dog.",
                    "The fox is quick.",
                ],
            ),
        ],
        answer=f"fox {i}",
        evidence=[f"The quick brown fox {i} jumps over the lazy dog."],
    )


def long_example() -> QAExample:
    """Two gold paragraphs among six distractors, gold in the middle and near the end."""
    distractors = [
        ContextParagraph(
            title=f"D{i}",
            sentences=[
                f"The model {i} reads a paper and writes a summary of it.",
                "Facts and non-facts help the summarizer.",
            ],
        )
        for i in range(6)
    ]
    gold1 = ContextParagraph(
        title="G1", sentences=["The quick brown fox jumps over the lazy dog.", "The fox is quick."]
    )
    gold2 = ContextParagraph(title="G2", sentences=["The lazy dog sleeps.", "The dog is brown."])
    return QAExample(
        id="long",
        question="Who jumps over the dog?",
        context=distractors[:2] + [gold1] + distractors[2:4] + [gold2] + distractors[4:],
        answer="The quick brown fox",
        evidence=["The quick brown fox jumps over the lazy dog.", "The dog is brown."],
    )


def paragraph_text(p: ContextParagraph) -> str:
    return " ".join(p.sentences)


def target_part(item) -> list[int]:
    n = sum(1 for t in item["labels"] if t == -100)
    return item["input_ids"][n:]


# ================================================================ training items
def test_training_items_mask_the_prompt(causal):
    ex = example(3)
    (item,) = training_items(causal, [ex], LoraSettings(max_input_tokens=2048))
    prompt = feedback_request(ex.question, "\n".join(paragraph_text(p) for p in ex.context))
    prompt_ids = causal.encode_request(prompt)
    n = len(prompt_ids)
    assert item["id"] == "ex3"
    assert item["input_ids"][:n] == prompt_ids
    assert item["labels"][:n] == [-100] * n  # every prompt token is out of the loss
    assert item["labels"][n:] == item["input_ids"][n:]  # every target token is in it
    assert -100 not in item["labels"][n:]
    assert len(item["labels"]) == len(item["input_ids"])

    # the target is the assistant reply as the chat template writes it, through the end-of-turn token
    target = format_target(ex.answer, ex.evidence)
    assert target == "1. Answer: fox 3\n2. Evidence: The quick brown fox 3 jumps over the lazy dog."
    eos = causal.tokenizer.eos_token_id
    assert causal.tokenizer.convert_ids_to_tokens(eos) == "<|im_end|>"
    reply = causal.tokenizer(target, add_special_tokens=False)["input_ids"] + [eos]
    assert target_part(item)[: len(reply)] == reply
    templated = causal.tokenizer.apply_chat_template(
        [*prompt, {"role": "assistant", "content": target}], tokenize=False
    )
    assert causal.tokenizer.decode(item["input_ids"]).startswith(templated.rstrip())


def test_training_target_has_one_end_of_turn_token(causal):
    (item,) = training_items(causal, [example(3)], LoraSettings(max_input_tokens=2048))
    target = target_part(item)
    eos = causal.tokenizer.eos_token_id
    first = target.index(eos)
    assert target.count(eos) == 1
    assert (
        causal.tokenizer.decode(target[first + 1 :]).strip() == ""
    )  # at most the template's whitespace


def test_training_items_truncate_target_to_max_target_tokens(causal):
    (item,) = training_items(
        causal, [example(1)], LoraSettings(max_input_tokens=2048, max_target_tokens=5)
    )
    assert len(target_part(item)) == 5
    target = causal.tokenizer(
        format_target("fox 1", example(1).evidence), add_special_tokens=False
    )["input_ids"]
    assert target_part(item) == target[:5]


def test_long_example_keeps_gold_paragraphs_and_drops_distractors_first(causal):
    ex = long_example()
    gold_only = causal.encode_request(
        feedback_request(
            ex.question, "\n".join(paragraph_text(p) for p in ex.context if p.title.startswith("G"))
        )
    )
    full = causal.encode_request(feedback_request(ex.question, ex.context_text()))
    budget = len(gold_only) + 60  # room for about two of the six distractors
    assert budget < len(full)

    request, cut = example_request(causal, ex, budget)
    text = request[-1]["content"]
    assert cut == 0
    assert len(causal.encode_request(request)) <= budget
    for sentence in ex.evidence:
        assert sentence in text
    kept = [p.title for p in ex.context if paragraph_text(p) in text]
    assert {"G1", "G2"} <= set(kept)
    assert 0 < len(kept) - 2 < 6  # some distractors fit, not all
    # the kept paragraphs keep their original order
    positions = [text.index(paragraph_text(p)) for p in ex.context if p.title in kept]
    assert positions == sorted(positions)

    # the same through training_items: the prompt part fits the budget and holds the evidence
    (item,) = training_items(causal, [ex], LoraSettings(max_input_tokens=budget))
    n_prompt = sum(1 for t in item["labels"] if t == -100)
    assert n_prompt <= budget
    prompt_text = causal.tokenizer.decode(item["input_ids"][:n_prompt])
    assert all(sentence in prompt_text for sentence in ex.evidence)
    assert causal.tokenizer.decode(target_part(item)).startswith(
        format_target(ex.answer, ex.evidence)
    )


def test_dropped_distractor_contained_in_a_gold_paragraph_stays_dropped(causal):
    gold = ContextParagraph(
        title="G", sentences=["The quick brown fox jumps over the lazy dog.", "The fox is quick."]
    )
    distractor = ContextParagraph(title="D", sentences=["The fox is quick."])
    ex = QAExample(
        id="sub",
        question="Who jumps over the dog?",
        context=[distractor, gold],
        answer="fox",
        evidence=["The quick brown fox jumps over the lazy dog."],
    )
    gold_only = feedback_request(ex.question, paragraph_text(gold))
    budget = len(causal.encode_request(gold_only))  # room for the gold paragraph only
    request, cut = example_request(causal, ex, budget)
    assert cut == 0
    assert len(causal.encode_request(request)) <= budget
    assert request == gold_only


def test_without_a_budget_the_whole_context_is_kept(causal):
    ex = long_example()
    request, cut = example_request(causal, ex, None)
    assert cut == 0 and request == feedback_request(ex.question, ex.context_text())


def test_unanswerable_fraction_removes_the_gold_paragraphs(causal):
    ex = long_example()
    items = training_items(
        causal, [ex, example(2)], LoraSettings(max_input_tokens=2048, unanswerable_fraction=1.0)
    )
    eos = causal.tokenizer.eos_token_id
    for item, source in zip(items, [ex, example(2)], strict=True):
        n = sum(1 for t in item["labels"] if t == -100)
        prompt_text = causal.tokenizer.decode(item["input_ids"][:n])
        for sentence in source.evidence:
            assert sentence not in prompt_text
        for p in source.context:
            gold = any(s in source.evidence for s in p.sentences)
            assert (paragraph_text(p) in prompt_text) != gold
        reply = causal.tokenizer(UNANSWERABLE, add_special_tokens=False)["input_ids"] + [eos]
        assert target_part(item)[: len(reply)] == reply
    # fraction 0 (the default): nothing is made unanswerable
    items = training_items(causal, [ex], LoraSettings(max_input_tokens=2048))
    assert causal.tokenizer.decode(target_part(items[0])).startswith(
        "1. Answer: The quick brown fox"
    )


def test_seq2seq_training_items(t5):
    ex = example(4)
    (item,) = training_items(t5, [ex], LoraSettings(max_input_tokens=4096))
    assert -100 not in item["labels"]  # encoder input and decoder labels are separate
    assert item["input_ids"] == t5.encode_request(feedback_request(ex.question, ex.context_text()))
    assert item["labels"] == t5.tokenizer(format_target(ex.answer, ex.evidence))["input_ids"]
    assert item["labels"][-1] == t5.tokenizer.eos_token_id


# ============================================================ format round trip
@pytest.mark.parametrize(
    ("answer", "evidence"),
    [
        (
            "Arthur Ignatius Conan Doyle",
            ["Sir Arthur Ignatius Conan Doyle KStJ, DL was a British writer."],
        ),
        ("2", ["There are 2 layers.", "Each layer has 3 heads."]),
        ("yes", ["It is."]),
        ("1990", ["1. It began in 1990."]),
        ("Evidence-based medicine", ["EBM is evidence-based medicine."]),
        ("  padded answer ", [" Padded evidence. "]),
    ],
)
def test_format_target_parse_feedback_round_trip(answer, evidence):
    target = format_target(answer, evidence)
    assert (
        target
        == f"1. Answer: {answer.strip()}\n2. Evidence: {' '.join(e.strip() for e in evidence)}"
    )
    parsed = parse_feedback(target)
    assert parsed == ParsedFeedback(
        "ok", answer=answer.strip(), evidence=" ".join(e.strip() for e in evidence), raw=target
    )
    assert format_target(answer, " ".join(evidence)) == format_target(answer, [" ".join(evidence)])


def test_format_target_unanswerable_round_trip():
    assert format_target("anything", ["x"], unanswerable=True) == "Unanswerable"
    assert (
        parse_feedback(format_target("anything", ["x"], unanswerable=True)).status == "unanswerable"
    )


def test_round_trip_answer_starting_with_unanswerable():
    target = format_target(
        "Unanswerable questions", ["About 10% of the questions are unanswerable."]
    )
    assert parse_feedback(target).status == "ok"
    assert parse_feedback(target).answer == "Unanswerable questions"


# ====================================================================== training
@pytest.fixture(scope="module")
def train_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("ft") / "train.jsonl"
    assert write_jsonl(path, [example(i) for i in range(20)]) == 20
    return path


def base_spec(path) -> dict:
    return {"backend": "hf", "model": str(path)}


def read_log(path) -> list[dict]:
    with open(path, newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert rows and list(rows[0]) == list(LOG_FIELDS)
    return rows


def run_train(tmp_path, base, train_file, tag, **kw):
    values = {"epochs": 1, "batch_size": 4, "max_input_tokens": 512, "checkpoint_every": 2} | kw
    out = {
        "adapter": tmp_path / tag / "adapter",
        "log": tmp_path / tag / "log.csv",
        "ckpt": tmp_path / tag / "ckpt",
    }
    summary = train(
        base, train_file, out["adapter"], out["log"], LoraSettings(**values), out["ckpt"], threads=1
    )
    return summary, out


def adapter_tensors(adapter_dir):
    from safetensors.torch import load_file

    return load_file(adapter_dir / "adapter_model.safetensors")


def test_train_writes_adapter_and_log(tiny_causal, train_file, tmp_path):
    summary, out = run_train(tmp_path, base_spec(tiny_causal), train_file, "a")
    assert (out["adapter"] / "adapter_model.safetensors").is_file()
    config = json.loads((out["adapter"] / "adapter_config.json").read_text())
    assert config["r"] == 8 and config["lora_alpha"] == 16  # Table 6
    assert config["target_modules"] == ["q_proj", "v_proj"] and config["task_type"] == "CAUSAL_LM"
    assert (
        json.loads((out["adapter"] / "training_settings.json").read_text())["learning_rate"] == 3e-4
    )
    assert not out["ckpt"].exists()  # checkpoints are removed once the adapter is written
    assert not (tmp_path / "a" / "adapter.partial").exists()

    rows = read_log(out["log"])
    assert [int(r["step"]) for r in rows] == [1, 2, 3, 4, 5]  # 20 examples / batch 4, one epoch
    assert [float(r["epoch"]) for r in rows] == pytest.approx([0.2, 0.4, 0.6, 0.8, 1.0])
    assert all(math.isfinite(float(r["loss"])) and float(r["loss"]) > 0 for r in rows)
    assert all(int(r["target_tokens"]) > 0 for r in rows)
    assert float(rows[-1]["learning_rate"]) == 0.0  # linear decay to zero
    assert summary["steps"] == 5 and summary["examples"] == 20
    assert summary["first_loss"] == pytest.approx(float(rows[0]["loss"]))
    assert summary["last_loss"] == pytest.approx(float(rows[-1]["loss"]))

    tensors = adapter_tensors(out["adapter"])
    assert tensors and all("lora_A" in k or "lora_B" in k for k in tensors)
    assert any(
        float(t.abs().max()) > 0 for k, t in tensors.items() if "lora_B" in k
    )  # B moved from zero

    # the adapter loads onto the base model and generates
    model = load_model(base_spec(tiny_causal), adapter=str(out["adapter"]), threads=1)
    (gen,) = model.generate(
        [feedback_request("Who?", "The fox.")], GenerationParams(max_new_tokens=3)
    )
    assert gen.n_new_tokens <= 3 and model.identity()["adapter"] is not None


def test_adapter_config_is_the_same_file_whatever_the_set_order(tmp_path):
    """peft writes target_modules in a set's order, which follows PYTHONHASHSEED: sorted, the
    files of bitwise-equal trainings are equal, and so are their fingerprints (cache keys)."""
    dirs = []
    for name, modules in (("a", ["v_proj", "q_proj"]), ("b", ["q_proj", "v_proj"])):
        adapter = tmp_path / name
        adapter.mkdir()
        (adapter / "adapter_model.safetensors").write_bytes(b"same weights")
        (adapter / "adapter_config.json").write_text(
            json.dumps({"r": 8, "target_modules": modules})
        )
        canonical_adapter_config(adapter / "adapter_config.json")
        dirs.append(adapter)
    a, b = ((d / "adapter_config.json").read_text() for d in dirs)
    assert a == b and json.loads(a) == {"r": 8, "target_modules": ["q_proj", "v_proj"]}
    assert adapter_fingerprint(dirs[0]) == adapter_fingerprint(dirs[1])


def test_train_loss_decreases_with_a_higher_learning_rate(tiny_causal, train_file, tmp_path):
    summary, out = run_train(
        tmp_path,
        base_spec(tiny_causal),
        train_file,
        "lr",
        epochs=4,
        learning_rate=1e-2,
        dropout=0.0,
    )
    rows = read_log(out["log"])
    assert len(rows) == 20
    losses = [float(r["loss"]) for r in rows]
    assert all(math.isfinite(x) for x in losses)
    assert losses[-1] < losses[0]
    assert summary["last_loss"] < summary["first_loss"]


def test_train_max_steps_and_grad_accum(tiny_causal, train_file, tmp_path):
    summary, out = run_train(
        tmp_path, base_spec(tiny_causal), train_file, "ms", epochs=3, grad_accum=2, max_steps=4
    )
    # 5 micro-batches per epoch -> 3 optimizer steps per epoch (the last one is short); capped at 4
    assert [int(r["step"]) for r in read_log(out["log"])] == [1, 2, 3, 4]
    assert summary["steps"] == 4


class Boom(RuntimeError):
    pass


def failing_collate(monkeypatch, fail_on_call: int):
    """Make lora._collate raise once, on its ``fail_on_call``-th call (after that many - 1 steps)."""
    original = lora._collate
    calls = {"n": 0}

    def collate(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == fail_on_call:
            raise Boom("simulated crash")
        return original(*args, **kwargs)

    monkeypatch.setattr(lora, "_collate", collate)
    return calls


def counting_collate(monkeypatch):
    original = lora._collate
    calls = {"n": 0}

    def collate(*args, **kwargs):
        calls["n"] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(lora, "_collate", collate)
    return calls


def interrupted_then_resumed(tmp_path, base, train_file, monkeypatch, caplog, **kw):
    failing_collate(monkeypatch, fail_on_call=4)  # steps 1-3 done, checkpoint at step 2
    with pytest.raises(Boom):
        run_train(tmp_path, base, train_file, "resumed", **kw)
    ckpt = tmp_path / "resumed" / "ckpt" / "state.pt"
    assert ckpt.is_file() and not (tmp_path / "resumed" / "adapter").exists()
    import torch

    assert torch.load(ckpt, weights_only=False)["step"] == 2

    calls = counting_collate(monkeypatch)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="isqaflow.finetune.lora"):
        summary, out = run_train(tmp_path, base, train_file, "resumed", **kw)
    return summary, out, calls["n"], [r.getMessage() for r in caplog.records]


def test_train_resumes_from_its_checkpoint(tiny_causal, train_file, tmp_path, monkeypatch, caplog):
    base = base_spec(tiny_causal)
    kw = {"epochs": 2, "learning_rate": 1e-2, "dropout": 0.0}
    _, straight = run_train(tmp_path, base, train_file, "straight", **kw)
    summary, out, collated, messages = interrupted_then_resumed(
        tmp_path, base, train_file, monkeypatch, caplog, **kw
    )

    assert any("resumed from checkpoint at step 2/10" in m for m in messages), messages
    assert collated == 8  # steps 3..10 only: no finished step is repeated
    rows = read_log(out["log"])
    assert [int(r["step"]) for r in rows] == list(range(1, 11))
    assert summary["steps"] == 10
    ref_rows = read_log(straight["log"])
    assert [float(r["loss"]) for r in rows] == pytest.approx(
        [float(r["loss"]) for r in ref_rows], rel=1e-5
    )
    a, b = adapter_tensors(straight["adapter"]), adapter_tensors(out["adapter"])
    assert set(a) == set(b)
    for key in a:
        assert b[key].numpy() == pytest.approx(a[key].numpy(), abs=1e-6), key


def test_train_resume_matches_uninterrupted_run_with_default_dropout(
    tiny_causal, train_file, tmp_path, monkeypatch, caplog
):
    base = base_spec(tiny_causal)
    kw = {"epochs": 2, "learning_rate": 1e-2}
    assert LoraSettings().dropout == 0.05
    _, straight = run_train(tmp_path, base, train_file, "straight", **kw)
    _, out, _, messages = interrupted_then_resumed(
        tmp_path, base, train_file, monkeypatch, caplog, **kw
    )
    assert any("resumed from checkpoint" in m for m in messages)
    a, b = adapter_tensors(straight["adapter"]), adapter_tensors(out["adapter"])
    for key in a:
        assert b[key].numpy() == pytest.approx(a[key].numpy(), abs=1e-5), key


def test_train_ignores_a_checkpoint_of_other_settings(
    tiny_causal, train_file, tmp_path, monkeypatch, caplog
):
    base = base_spec(tiny_causal)
    failing_collate(monkeypatch, fail_on_call=4)
    with pytest.raises(Boom):
        run_train(tmp_path, base, train_file, "other", learning_rate=1e-3)
    calls = counting_collate(monkeypatch)
    with caplog.at_level(logging.INFO, logger="isqaflow.finetune.lora"):
        run_train(tmp_path, base, train_file, "other", learning_rate=2e-3)
    assert any("ignoring a checkpoint" in r.getMessage() for r in caplog.records)
    assert calls["n"] == 5
    assert [int(r["step"]) for r in read_log(tmp_path / "other" / "log.csv")] == [1, 2, 3, 4, 5]


def test_train_seq2seq_lora(tiny_seq2seq, train_file, tmp_path):
    summary, out = run_train(
        tmp_path,
        base_spec(tiny_seq2seq),
        train_file,
        "t5",
        target_modules=("q", "v"),
        max_input_tokens=1024,
    )
    config = json.loads((out["adapter"] / "adapter_config.json").read_text())
    assert set(config["target_modules"]) == {"q", "v"} and config["task_type"] == "SEQ_2_SEQ_LM"
    tensors = adapter_tensors(out["adapter"])
    assert any(".q.lora_A" in k for k in tensors) and any(".v.lora_B" in k for k in tensors)
    rows = read_log(out["log"])
    assert [int(r["step"]) for r in rows] == [1, 2, 3, 4, 5]
    assert all(math.isfinite(float(r["loss"])) for r in rows)
    assert summary["steps"] == 5


def test_lora_settings_from_dict():
    s = LoraSettings.from_dict({"r": 4, "target_modules": ["q", "v"]})
    assert s.r == 4 and s.target_modules == ("q", "v")
    d = LoraSettings()
    assert (d.r, d.alpha, d.learning_rate, d.epochs, d.max_input_tokens) == (
        8,
        16,
        3e-4,
        10,
        512,
    )  # Table 6
    with pytest.raises(ValueError, match="unknown fine-tuning setting"):
        LoraSettings.from_dict({"rank": 4})


# ====================================================================== scoring
def rouge_mean(pred: str, ref: str) -> float:
    from rouge_score import rouge_scorer

    scores = rouge_scorer.RougeScorer(["rouge1", "rouge2", "rougeL"], use_stemmer=True).score(
        ref, pred
    )
    return (scores["rouge1"].fmeasure + scores["rouge2"].fmeasure + scores["rougeL"].fmeasure) / 3


def test_score_outputs():
    examples = [example(i) for i in range(4)]
    texts = [
        "1. Answer: the fox 0\n2. Evidence: The quick brown fox 0 jumps over the dog.",
        "Unanswerable",
        "I think the fox jumps.",
        "Answer: brown foxes jumping\nEvidence: Foxes are jumping over lazy dogs.",
    ]
    summary, rows = score_outputs(examples, texts)
    assert [r["status"] for r in rows] == ["ok", "unanswerable", "unparsed", "ok"]
    assert [r["id"] for r in rows] == ["ex0", "ex1", "ex2", "ex3"]
    assert [r["raw"] for r in rows] == texts

    # ROUGE numbers as rouge-score computes them (mean of R-1/2/L F, stemmed)
    assert rows[0]["answer_rouge"] == pytest.approx(rouge_mean("the fox 0", "fox 0"))
    assert rows[0]["evidence_rouge"] == pytest.approx(
        rouge_mean(
            "The quick brown fox 0 jumps over the dog.",
            "The quick brown fox 0 jumps over the lazy dog.",
        )
    )
    assert rows[3]["answer_rouge"] == pytest.approx(rouge_mean("brown foxes jumping", "fox 3"))
    assert rows[3]["evidence_rouge"] == pytest.approx(
        rouge_mean(
            "Foxes are jumping over lazy dogs.", "The quick brown fox 3 jumps over the lazy dog."
        )
    )
    assert 0 < rows[3]["evidence_rouge"] < rows[0]["evidence_rouge"] < 1
    assert (
        rows[0]["answer_f1"] == 1.0
        and rows[3]["answer_f1"] == token_f1("brown foxes jumping", "fox 3") == 0.0
    )
    # unanswerable and unparsed outputs score 0
    for r in rows[1:3]:
        assert (r["answer_rouge"], r["evidence_rouge"], r["answer_f1"]) == (0.0, 0.0, 0.0)

    assert summary["n"] == 4
    assert summary["consistency"] == 0.75  # ok and unanswerable are consistent
    assert summary["unanswerable"] == 1 and summary["unparsed"] == 1
    assert summary["answer_rouge"] == pytest.approx(
        (rows[0]["answer_rouge"] + rows[3]["answer_rouge"]) / 4
    )
    assert summary["evidence_rouge"] == pytest.approx(
        (rows[0]["evidence_rouge"] + rows[3]["evidence_rouge"]) / 4
    )
    assert summary["answer_f1"] == 0.25


def test_score_outputs_empty_and_mismatched():
    summary, rows = score_outputs([], [])
    assert rows == [] and summary["n"] == 0 and math.isnan(summary["consistency"])
    with pytest.raises(ValueError):
        score_outputs([example(0)], [])
