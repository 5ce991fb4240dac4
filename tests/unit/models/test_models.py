"""The model layer on tiny random-weight models: generation, scoring, cache, adapters."""

from __future__ import annotations

import math
import multiprocessing as mp

import pytest

from isqaflow.models.base import GenerationParams
from isqaflow.models.cache import CachedModel, CallCache, call_key
from isqaflow.models.registry import load_model

GREEDY = GenerationParams(max_new_tokens=8)


@pytest.fixture(scope="module")
def causal(tiny_causal):
    return load_model({"backend": "hf", "model": str(tiny_causal), "batch_size": 3}, threads=1)


@pytest.fixture(scope="module")
def seq2seq(tiny_seq2seq):
    return load_model({"backend": "hf", "model": str(tiny_seq2seq), "batch_size": 2}, threads=1)


REQUESTS = [
    [{"role": "user", "content": "The quick brown fox"}],
    "Question: the lazy dog",
    [
        {"role": "system", "content": "Answer YES or NO."},
        {"role": "user", "content": "Is the fox quick?"},
    ],
    [
        {
            "role": "user",
            "content": "A much longer request about the model that reads a paper and writes",
        }
    ],
]


def test_batched_generation_equals_one_at_a_time(causal):
    batched = causal.generate(REQUESTS, GREEDY)
    single = [causal.generate([r], GREEDY)[0] for r in REQUESTS]
    assert [g.text for g in batched] == [g.text for g in single]
    assert all(g.n_new_tokens <= 8 for g in batched)
    assert all(g.n_input_tokens > 0 for g in batched)


def test_chat_template_is_applied(causal):
    text, templated = causal.render([{"role": "user", "content": "hi"}])
    assert templated and text == "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    assert causal.render("plain prompt") == ("plain prompt", False)


def test_min_new_tokens_and_beams(causal):
    params = GenerationParams(
        max_new_tokens=6, min_new_tokens=6, num_beams=2, no_repeat_ngram_size=3
    )
    out = causal.generate(REQUESTS[:2], params)
    assert all(g.n_new_tokens == 6 for g in out)


def test_score_matches_greedy_generation_logprob(causal):
    import torch

    gen = causal.generate([REQUESTS[0]], GenerationParams(max_new_tokens=5, return_logprobs=True))[
        0
    ]
    ids = causal.encode_request(REQUESTS[0])
    full = causal.net.generate(input_ids=torch.tensor([ids]), max_new_tokens=5, do_sample=False)
    new_text = causal.tokenizer.decode(full[0, len(ids) :])
    # score() of the greedy continuation reproduces the generation's log-probability
    (score,) = causal.score(REQUESTS[0], [new_text])
    assert score == pytest.approx(gen.logprob, abs=1e-3)


def test_score_single_and_multi_token_candidates_agree(causal):
    ctx = REQUESTS[2]
    both = causal.score(ctx, ["YES", "NO"])
    assert len(both) == 2 and all(s < 0 for s in both)
    # a multi-token candidate forces the per-candidate path; its first-token part agrees
    multi = causal.score(ctx, ["YES", "YES NO"])
    assert multi[0] == pytest.approx(both[0], abs=1e-4)
    assert multi[1] < multi[0]
    probs = [math.exp(s) for s in causal.score(ctx, ["YES", "NO", "1", "2", "3"])]
    assert 0 < sum(probs) <= 1.0


def test_truncation_keeps_the_head_and_counts(causal):
    text = "The quick brown fox jumps over the lazy dog. " * 5
    n = causal.count_tokens(text)
    cut, removed = causal.truncate_text(text, 10)
    assert causal.count_tokens(cut) == 10 and removed == n - 10
    assert text.startswith(cut)
    assert causal.truncate_text(text, 10_000) == (text, 0)


def test_max_input_tokens_safeguard_cuts_from_the_left(causal):
    long = [{"role": "user", "content": "fox " * 200}]
    out = causal.generate([long], GenerationParams(max_new_tokens=2, max_input_tokens=32))[0]
    assert out.truncated_tokens > 0 and out.n_input_tokens == 32


def test_seq2seq_generation_and_score(seq2seq):
    assert seq2seq.is_seq2seq and not seq2seq.has_chat_template
    out = seq2seq.generate(
        ["The quick brown fox", [{"role": "user", "content": "Is the fox quick?"}]], GREEDY
    )
    assert len(out) == 2 and all(isinstance(g.text, str) for g in out)
    batched = seq2seq.generate(["The quick brown fox", "Question: lazy dog"], GREEDY)
    single = [
        seq2seq.generate([r], GREEDY)[0] for r in ["The quick brown fox", "Question: lazy dog"]
    ]
    assert [g.text for g in batched] == [g.text for g in single]
    scores = seq2seq.score("Is the fox quick?", ["YES", "NO", "YES NO"])
    assert len(scores) == 3 and all(s < 0 for s in scores)


def test_cache_skips_finished_calls(tiny_causal, tmp_path):
    cache = CallCache(tmp_path / "calls.sqlite")
    model = CachedModel(load_model({"backend": "hf", "model": str(tiny_causal)}, threads=1), cache)
    first = model.generate(REQUESTS + REQUESTS[:1], GREEDY)  # a duplicate is computed once
    assert model.calls_made == len(REQUESTS)
    second = model.generate(REQUESTS, GREEDY)
    assert model.calls_made == len(REQUESTS)
    assert [g.text for g in second] == [g.text for g in first[: len(REQUESTS)]]
    other = model.generate(REQUESTS[:1], GREEDY.replace(max_new_tokens=3))  # new params: new call
    assert model.calls_made == len(REQUESTS) + 1 and other[0].n_new_tokens <= 3
    model.score_batch([(REQUESTS[0], ["YES", "NO"])])
    model.score_batch([(REQUESTS[0], ["YES", "NO"])])
    assert model.calls_made == len(REQUESTS) + 2


class _Dies:
    """A backend that fails after ``n`` requests, like a job killed mid-way."""

    backend = "fake"
    batch_size = 1

    def __init__(self, n: int) -> None:
        self.n, self.seen = n, 0

    def identity(self):
        return {"backend": "fake"}

    def generate(self, requests, params):
        from isqaflow.models.base import Generation

        out = []
        for r in requests:
            if self.seen >= self.n:
                raise KeyboardInterrupt("killed")
            self.seen += 1
            out.append(Generation(text=f"answer to {r}"))
        return out


def test_killed_job_resumes_from_cache(tmp_path):
    path = tmp_path / "calls.sqlite"
    requests = [f"q{i}" for i in range(40)]
    dying = _Dies(20)
    model = CachedModel(dying, CallCache(path), flush_every=4)
    with pytest.raises(KeyboardInterrupt):
        model.generate(requests, GREEDY)
    assert len(CallCache(path)) == 20  # every finished chunk was committed
    rerun = _Dies(10_000)
    out = CachedModel(rerun, CallCache(path), flush_every=4).generate(requests, GREEDY)
    assert rerun.seen == 20  # only the unfinished half is computed again
    assert [g.text for g in out] == [f"answer to q{i}" for i in range(40)]


# ----------------------------------------------------------------------------- commits per batch
def _collect(reports: list):
    def on_batch(done):
        reports.append(list(done))

    return on_batch


@pytest.mark.parametrize("prefix_sharing", [True, False])
def test_generation_reports_every_batch_as_it_finishes(tiny_causal, prefix_sharing):
    model = load_model(
        {
            "backend": "hf",
            "model": str(tiny_causal),
            "batch_size": 2,
            "prefix_sharing": prefix_sharing,
        },
        threads=1,
    )
    requests = _prefix_requests() + REQUESTS
    params = GenerationParams(max_new_tokens=4, max_input_tokens=48)  # the long ones are cut
    reports: list = []
    out = model.generate(requests, params, on_batch=_collect(reports))
    assert all(1 <= len(batch) <= 2 for batch in reports)  # one report per batch of <= batch_size
    assert sorted(i for batch in reports for i, _ in batch) == list(range(len(requests)))
    for batch in reports:
        for i, g in batch:
            assert g is out[i]  # the final result, truncation count included, when reported
    assert any(g.truncated_tokens > 0 for g in out)


@pytest.mark.parametrize("prefix_sharing", [True, False])
def test_scoring_reports_each_item_once_all_its_candidates_are_scored(tiny_causal, prefix_sharing):
    model = load_model(
        {
            "backend": "hf",
            "model": str(tiny_causal),
            "score_batch_tokens": 64,
            "prefix_sharing": prefix_sharing,
        },
        threads=1,
    )
    # multi-token candidates that differ early need one sequence each, spread over batches
    items = [(r, ["YES", "NO"]) for r in _prefix_requests()] + [
        (REQUESTS[0], ["lazy dog", "quick brown fox"])
    ]
    reports: list = []
    out = model.score_batch(items, on_batch=_collect(reports))
    assert len(reports) > 1
    assert sorted(i for batch in reports for i, _ in batch) == list(range(len(items)))
    assert {i: scores for batch in reports for i, scores in batch} == dict(enumerate(out))


def test_seq2seq_scoring_reports_every_item(seq2seq):
    reports: list = []
    out = seq2seq.score_batch(
        [("Is the fox quick?", ["YES", "NO"]), ("lazy dog", ["YES NO"])], on_batch=_collect(reports)
    )
    assert reports == [[(0, out[0])], [(1, out[1])]]


class _ReportsThenDies:
    """A backend that reports its batches through on_batch and is killed in batch ``die_in``."""

    backend = "fake"
    batch_size = 4

    def __init__(self, die_in: int | None) -> None:
        self.die_in, self.computed = die_in, 0

    def identity(self):
        return {"backend": "fake"}

    def generate(self, requests, params, on_batch=None):
        from isqaflow.models.base import Generation

        out = []
        for b in range(0, len(requests), self.batch_size):
            if b // self.batch_size == self.die_in:
                raise KeyboardInterrupt("killed")
            batch = [
                (b + k, Generation(text=f"answer to {r}"))
                for k, r in enumerate(requests[b : b + 4])
            ]
            self.computed += len(batch)
            out += [g for _, g in batch]
            on_batch(batch)
        return out


def test_every_reported_batch_is_committed_before_the_call_returns(tmp_path):
    path = tmp_path / "calls.sqlite"
    requests = [f"q{i}" for i in range(40)]
    dying = _ReportsThenDies(die_in=3)
    model = CachedModel(
        dying, CallCache(path)
    )  # flush_every (16) does not apply: batches are reported
    with pytest.raises(KeyboardInterrupt):
        model.generate(requests, GREEDY)
    assert len(CallCache(path)) == 12 == dying.computed  # three batches of four, none lost
    rerun = _ReportsThenDies(die_in=None)
    cached = CachedModel(rerun, CallCache(path))
    out = cached.generate(requests, GREEDY)
    assert rerun.computed == cached.calls_made == 28
    assert [g.text for g in out] == [f"answer to q{i}" for i in range(40)]


def test_a_reply_of_the_api_backend_is_committed_even_when_another_fails(tmp_path, monkeypatch):
    from isqaflow.models.base import Generation
    from isqaflow.models.api.openai import OpenAIModel

    monkeypatch.setenv("ISQAFLOW_TEST_KEY", "sk-test")
    api = OpenAIModel(
        "fake-model",
        base_url="http://127.0.0.1:9/v1",
        api_key_env="ISQAFLOW_TEST_KEY",
        concurrency=2,
    )

    def call(request, params):
        if request == "q3":
            raise RuntimeError("model fake-model: request failed after 3 attempts: APITimeoutError")
        return Generation(text=f"answer to {request}")

    monkeypatch.setattr(api, "_call", call)
    model = CachedModel(api, CallCache(tmp_path / "calls.sqlite"))
    with pytest.raises(RuntimeError, match="APITimeoutError"):
        model.generate([f"q{i}" for i in range(8)], GREEDY)
    kept = CallCache(tmp_path / "calls.sqlite")
    assert len(kept) >= 3  # the replies that arrived before the failure (in any order) were kept
    keys = [call_key("generate", api.identity(), f"q{i}", GREEDY.as_dict()) for i in range(3)]
    assert len(kept.get_many(keys)) == 3  # q0-q2 were submitted (and answered) before q3


KILL_SCRIPT = """
import json, sys
from isqaflow.models.inprocess import generation
from isqaflow.models.base import GenerationParams
from isqaflow.models.registry import load_model

model_path, cache_path, progress_path, prefix_sharing = sys.argv[1:5]
update = generation.Progress.update

def recorded(self, outs):  # each batch the backend finishes, before the cache hears of it
    update(self, outs)
    with open(progress_path, "a") as handle:
        handle.write(f"{len(outs)}\\n")

generation.Progress.update = recorded
model = load_model({"backend": "hf", "model": model_path, "batch_size": 4,
                    "prefix_sharing": prefix_sharing == "1"}, cache=cache_path, threads=1)
shared = "The model reads a paper and writes a summary of its results. " * 6
requests = [f"{shared}Question {i}: what does the quick brown fox do?" for i in range(40)]
model.generate(requests, GenerationParams(max_new_tokens=24, min_new_tokens=24))
print(json.dumps({"calls_made": model.calls_made}))
"""


@pytest.mark.parametrize("prefix_sharing", ["1", "0"], ids=["prefix-groups", "plain-batches"])
def test_a_job_killed_mid_stage_recomputes_at_most_one_batch(tiny_causal, tmp_path, prefix_sharing):
    """SIGKILL a generation job after a few batches; its rerun recomputes at most one batch
    of the calls the killed job had finished (the one it was committing, if any)."""
    import json
    import os
    import signal
    import subprocess
    import sys
    import time

    from workflow_utils import REPO

    script, cache, progress = (
        tmp_path / "job.py",
        tmp_path / "calls.sqlite",
        tmp_path / "progress.txt",
    )
    script.write_text(KILL_SCRIPT)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")]),
    }
    command = [
        sys.executable,
        str(script),
        str(tiny_causal),
        str(cache),
        str(progress),
        prefix_sharing,
    ]

    def finished() -> int:
        return sum(int(n) for n in progress.read_text().split()) if progress.exists() else 0

    job = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 300
    while finished() < 12 and job.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    job.send_signal(signal.SIGKILL)
    job.communicate(timeout=60)
    done_before_kill = finished()
    assert 12 <= done_before_kill < 40, done_before_kill  # killed mid-stage
    rerun = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    recomputed = json.loads(rerun.stdout.strip().splitlines()[-1])["calls_made"] - (
        40 - done_before_kill
    )
    assert 0 <= recomputed <= 4, (done_before_kill, recomputed)


def _writer(path: str, start: int) -> None:
    cache = CallCache(path)
    for i in range(start, start + 60):
        cache.put_many([(f"k{i}", "generate", {"m": 1}, f"r{i}", {}, {"text": str(i)})])


def test_cache_is_safe_for_parallel_writers(tmp_path):
    path = str(tmp_path / "shared.sqlite")
    CallCache(path)
    procs = [mp.get_context("spawn").Process(target=_writer, args=(path, k * 60)) for k in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    cache = CallCache(path)
    assert len(cache) == 240
    assert cache.get_many(["k0", "k239"]) == {"k0": {"text": "0"}, "k239": {"text": "239"}}


def test_adapter_changes_identity_and_outputs(tiny_causal, tmp_path):
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    base = AutoModelForCausalLM.from_pretrained(tiny_causal)
    peft_model = get_peft_model(
        base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"])
    )
    with torch.no_grad():  # LoRA's B starts at zero; make the adapter do something
        for name, param in peft_model.named_parameters():
            if "lora_B" in name:
                param.normal_(0, 0.5)
    peft_model.save_pretrained(tmp_path / "adapter")
    plain = load_model({"backend": "hf", "model": str(tiny_causal)}, threads=1)
    adapted = load_model(
        {"backend": "hf", "model": str(tiny_causal)}, adapter=str(tmp_path / "adapter"), threads=1
    )
    assert plain.identity()["adapter"] is None
    assert len(adapted.identity()["adapter"]) == 64
    assert plain.identity()["weights"] == adapted.identity()["weights"]
    assert plain.score(REQUESTS[0], ["YES"]) != adapted.score(REQUESTS[0], ["YES"])


def test_generation_params_reject_unknown_keys():
    with pytest.raises(ValueError, match="unknown generation setting"):
        GenerationParams.from_dict({"max_new_token": 3})
    with pytest.raises(ValueError):
        GenerationParams(max_new_tokens=4, min_new_tokens=5)


LONG_CONTEXT = "The model reads a paper and writes a summary of its results. " * 6


def _prefix_requests():
    # Many requests that share a long beginning (a source window), then differ.
    return [
        [{"role": "user", "content": f"Text: {LONG_CONTEXT}\nQuestion: {q}"}]
        for q in ("Is the fox quick?", "What does the model read?", "Answer YES or NO.", "lazy dog")
    ] + [[{"role": "user", "content": "A short unrelated request"}]]


def test_shared_prefix_generation_equals_plain_generation(tiny_causal):
    shared = load_model({"backend": "hf", "model": str(tiny_causal), "batch_size": 2}, threads=1)
    plain = load_model(
        {"backend": "hf", "model": str(tiny_causal), "prefix_sharing": False}, threads=1
    )
    from isqaflow.models.inprocess.prefix_groups import prefix_groups

    groups, singles = prefix_groups([shared.encode_request(r) for r in _prefix_requests()], 32)
    assert groups and len(groups[0][1]) == 4 and singles == [4]  # the path under test is taken
    params = GenerationParams(max_new_tokens=6, min_new_tokens=2, return_logprobs=True)
    a, b = shared.generate(_prefix_requests(), params), plain.generate(_prefix_requests(), params)
    assert [g.text for g in a] == [g.text for g in b]
    assert [g.n_new_tokens for g in a] == [g.n_new_tokens for g in b]
    for x, y in zip(a, b, strict=True):
        assert x.logprob == pytest.approx(y.logprob, abs=1e-3)


def test_shared_prefix_scores_equal_plain_scores(tiny_causal):
    shared = load_model({"backend": "hf", "model": str(tiny_causal)}, threads=1)
    plain = load_model(
        {"backend": "hf", "model": str(tiny_causal), "prefix_sharing": False}, threads=1
    )
    items = [(r, ["YES", "NO"]) for r in _prefix_requests()] + [
        (_prefix_requests()[0], ["YES NO", "lazy dog"])
    ]
    a, b = shared.score_batch(items), plain.score_batch(items)
    for x, y in zip(a, b, strict=True):
        assert x == pytest.approx(y, abs=1e-3)


def test_prefix_groups_split_where_it_saves_tokens():
    from isqaflow.models.inprocess.prefix_groups import prefix_groups

    head = list(range(100))
    seqs = [head + [1000 + i] for i in range(5)]
    seqs += [head[:20] + [2000, 2001] + list(range(50)) + [i] for i in range(3)]
    seqs += [[7, 8, 9]]
    groups, singles = prefix_groups(seqs, min_prefix=16)
    assert sorted(groups) == [(72, [5, 6, 7]), (100, [0, 1, 2, 3, 4])]
    assert singles == [8]
    # the last token always stays outside the prefix
    groups, _ = prefix_groups([head, head], min_prefix=16)
    assert groups == [(99, [0, 1])]


def test_cached_generations_from_another_version_still_load():
    from isqaflow.models.base import Generation

    stored = {"text": "hi", "n_input_tokens": 3, "n_new_tokens": 1, "extra": {}, "future_field": 1}
    assert Generation.from_dict(stored) == Generation(text="hi", n_input_tokens=3, n_new_tokens=1)


def test_batches_that_mix_prefix_groups_equal_plain_generation(tiny_causal):
    # two groups with different shared prefixes and a single, all in one batch
    other = "Facts and non-facts help the summarizer. " * 6
    requests = _prefix_requests() + [
        [{"role": "user", "content": f"Text: {other}\nQuestion: {q}"}]
        for q in ("YES or NO?", "Unanswerable 1 2 3")
    ]
    shared = load_model({"backend": "hf", "model": str(tiny_causal), "batch_size": 8}, threads=1)
    plain = load_model(
        {"backend": "hf", "model": str(tiny_causal), "prefix_sharing": False}, threads=1
    )
    from isqaflow.models.inprocess.prefix_groups import prefix_groups

    groups, singles = prefix_groups([shared.encode_request(r) for r in requests], 32, group_cost=16)
    assert len(groups) == 2 and singles  # one batch holds two prefixes and a row without one
    params = GenerationParams(max_new_tokens=6, min_new_tokens=2, return_logprobs=True)
    a, b = shared.generate(requests, params), plain.generate(requests, params)
    assert [g.text for g in a] == [g.text for g in b]
    assert [g.n_input_tokens for g in a] == [g.n_input_tokens for g in b]
    for x, y in zip(a, b, strict=True):
        assert x.logprob == pytest.approx(y.logprob, abs=1e-3)


@pytest.mark.parametrize("beams", [2, 3])
def test_beam_search_computes_the_prompt_once_and_decodes_the_same(tiny_causal, monkeypatch, beams):
    from isqaflow.models.inprocess import hf

    model = load_model({"backend": "hf", "model": str(tiny_causal), "batch_size": 4}, threads=1)
    requests = _prefix_requests()
    params = GenerationParams(
        max_new_tokens=6,
        min_new_tokens=3,
        num_beams=beams,
        no_repeat_ngram_size=2,
        return_logprobs=True,
    )
    prefilled_rows = []
    original = hf.HFModel._beam_prefill

    def counting(self, input_ids, mask, num_beams):
        prefilled_rows.append(input_ids.shape[0])
        return original(self, input_ids, mask, num_beams)

    monkeypatch.setattr(hf.HFModel, "_beam_prefill", counting)
    shared = model.generate(requests, params)
    assert sum(prefilled_rows) == len(requests)  # one prompt pass per request, not per beam
    monkeypatch.setattr(hf.HFModel, "_beam_prefill", lambda self, input_ids, mask, num_beams: None)
    plain = model.generate(requests, params)
    assert [g.text for g in shared] == [g.text for g in plain]
    assert [g.n_new_tokens for g in shared] == [g.n_new_tokens for g in plain]
    for x, y in zip(shared, plain, strict=True):
        assert x.logprob == pytest.approx(y.logprob, abs=1e-3)


def test_later_turns_of_a_conversation_reuse_the_earlier_turns(tiny_causal):
    """Multi-turn judging (InFoBench): each turn's context starts with the turn before; the
    prefix store serves that part and the scores equal a model that recomputes everything."""
    from isqaflow.drfr.judge import judge

    items = [
        {
            "instruction_id": f"i{n}",
            "model": "m",
            "subset": "Easy",
            "category": "c",
            "input": "",
            "response": LONG_CONTEXT + f" Response number {n}.",
            "requirements": [
                {"question": q, "labels": ["Content"]}
                for q in ("Is the fox quick?", "Does it read a paper?", "Answer YES or NO.")
            ],
        }
        for n in range(3)
    ]
    stored = load_model({"backend": "hf", "model": str(tiny_causal), "batch_size": 4}, threads=1)
    plain = load_model(
        {"backend": "hf", "model": str(tiny_causal), "prefix_sharing": False}, threads=1
    )
    a, b = judge(stored, items, "logprob"), judge(plain, items, "logprob")
    assert (
        stored.store.hits
        > 3 * 2 * len(stored.encode_request([{"role": "user", "content": LONG_CONTEXT}])) // 2
    )
    assert [r["answer"] for r in a] == [r["answer"] for r in b]
    for x, y in zip(a, b, strict=True):
        assert x["logprob_yes"] == pytest.approx(y["logprob_yes"], abs=1e-4)
        assert x["logprob_no"] == pytest.approx(y["logprob_no"], abs=1e-4)


def test_generation_after_scoring_reuses_the_stored_context(tiny_causal):
    requests = _prefix_requests()[:1]
    stored = load_model({"backend": "hf", "model": str(tiny_causal)}, threads=1)
    plain = load_model(
        {"backend": "hf", "model": str(tiny_causal), "prefix_sharing": False}, threads=1
    )
    stored.score_batch([(requests[0], ["YES", "NO"])])
    hits = stored.store.hits
    params = GenerationParams(max_new_tokens=5, return_logprobs=True)
    a, b = stored.generate(requests, params), plain.generate(requests, params)
    assert stored.store.hits > hits
    assert [g.text for g in a] == [g.text for g in b]
    assert a[0].logprob == pytest.approx(b[0].logprob, abs=1e-4)


def test_the_prefix_store_keeps_the_most_recent_within_its_budget():
    from isqaflow.models.inprocess.prefix_groups import PrefixStore

    store = PrefixStore(budget_bytes=100)
    store.put([1, 2, 3, 4], "a", 60)
    store.put([1, 2, 9], "b", 30)
    assert store.lookup([1, 2, 3, 4, 5]) == (4, "a")
    assert store.lookup([1, 2, 3, 4, 5], limit=3) == (3, "a")
    assert store.lookup([1, 2, 9, 9]) == (3, "b")
    assert store.lookup([7]) == (0, None)
    store.put(
        [5, 5], "c", 30
    )  # over budget: the least recently used ("a"... was looked up last but one)
    assert store.size <= 100 and len(store.entries) == 2
    store.put([6], "too big", 101)
    assert store.lookup([6]) == (0, None)


def test_a_stored_sequence_is_replaced_by_its_extension():
    from isqaflow.models.inprocess.prefix_groups import PrefixStore

    store = PrefixStore(budget_bytes=1000)
    store.put([1, 2, 3], "turn 1", 10)
    store.put([1, 2, 4], "other", 10)
    store.put([1, 2, 3, 7, 8], "turn 2", 20)
    assert [payload for _, payload, _ in store.entries.values()] == ["other", "turn 2"]
    assert store.size == 30


def test_length_batches_keep_padding_small():
    from isqaflow.models.inprocess.hf import PAD_FILL, length_batches

    lengths = [100, 98, 90, 60, 59, 10, 9]
    order = list(range(len(lengths)))
    assert PAD_FILL == 0.85
    assert length_batches(order, lengths) == [[0, 1, 2], [3, 4], [5, 6]]
    assert length_batches(order, lengths, max_rows=2) == [[0, 1], [2], [3, 4], [5, 6]]
    assert length_batches(order, lengths, max_tokens=200) == [[0, 1], [2], [3, 4], [5, 6]]
    # a longer row after shorter ones (the next group's) starts a batch of its own
    assert length_batches([0, 1, 2], [50, 48, 100]) == [[0, 1], [2]]
    # generation: padding within a budget of tokens
    assert length_batches(order, lengths, max_waste=60) == [[0, 1, 2, 3], [4, 5], [6]]


# ----------------------------------------------------------------------------- chat templates

CONVERSATION = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "Is the fox quick?"},
    {"role": "assistant", "content": "YES"},
    {"role": "user", "content": "Is the dog lazy?"},
]
VICUNA_SYSTEM = (
    "A chat between a curious user and an artificial intelligence assistant. The assistant gives "
    "helpful, detailed, and polite answers to the user's questions."
)
# Expected texts written out from the formats' definitions: FastChat's "vicuna_v1.1"
# conversation (ADD_COLON_TWO, sep " ", sep2 "</s>", BOS from the tokenizer) and the
# template of meta-llama/Llama-2-7b-chat-hf.
RENDERED = {
    "vicuna_v1.1": (
        "<s>Answer briefly. USER: Is the fox quick? ASSISTANT: YES</s>USER: Is the dog lazy? ASSISTANT:",
        f"<s>{VICUNA_SYSTEM} USER: Is the dog lazy? ASSISTANT:",
    ),
    "llama-2": (
        "<s>[INST] <<SYS>>\nAnswer briefly.\n<</SYS>>\n\nIs the fox quick? [/INST] YES </s><s>[INST] Is the dog "
        "lazy? [/INST]",
        "<s>[INST] Is the dog lazy? [/INST]",
    ),
}


@pytest.fixture(scope="module")
def llama_style_tokenizer(tiny_causal):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_causal, bos_token="<s>", eos_token="</s>")


@pytest.mark.parametrize("name", sorted(RENDERED))
def test_shipped_templates_render_a_fixed_conversation(llama_style_tokenizer, name):
    from isqaflow.models.templates import NAMED, resolve_chat_template

    assert set(NAMED) == set(RENDERED)
    template = resolve_chat_template(name, "m")
    assert template.source == f"named:{name}" and len(template.sha256) == 64
    with_system, without = RENDERED[name]
    render = lambda conv: llama_style_tokenizer.apply_chat_template(  # noqa: E731
        conv, chat_template=template.text, tokenize=False, add_generation_prompt=True
    )
    assert render(CONVERSATION) == with_system
    assert render(CONVERSATION[-1:]) == without
    with pytest.raises(Exception, match="alternate"):
        render([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])


def template_free_copy(src, dst, *, break_weights=False):
    """A copy of a model directory whose tokenizer has no chat template."""
    import json
    import shutil

    shutil.copytree(src, dst)
    (dst / "chat_template.jinja").unlink(missing_ok=True)
    config_path = dst / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config.pop("chat_template", None)
    config_path.write_text(json.dumps(config))
    if (
        break_weights
    ):  # reading them would fail: an error about the template proves they were not read
        for weights in dst.glob("*.safetensors"):
            weights.write_bytes(b"not weights")
    return dst


def test_causal_model_without_template_fails_at_load_naming_it(tiny_causal, tmp_path):
    from isqaflow.models.templates import MissingChatTemplate

    bare = template_free_copy(tiny_causal, tmp_path / "bare", break_weights=True)
    with pytest.raises(
        MissingChatTemplate,
        match=r"model vicuna-ish: a causal model without a chat template.*"
        r"models\.vicuna-ish\.chat_template",
    ):
        load_model({"backend": "hf", "model": str(bare)}, name="vicuna-ish", threads=1)


def test_chat_template_none_a_shipped_name_and_a_file(tiny_causal, tmp_path):
    from isqaflow.models.base import flatten_messages

    bare = template_free_copy(tiny_causal, tmp_path / "bare")
    spec = {"backend": "hf", "model": str(bare)}
    plain = load_model({**spec, "chat_template": "none"}, name="plain", threads=1)
    assert plain.render(CONVERSATION) == (flatten_messages(CONVERSATION), False)
    assert plain.chat_template.record() == {"source": "none", "sha256": None}
    assert plain.identity()["chat_template"] == "none"

    vicuna = load_model({**spec, "chat_template": "vicuna_v1.1"}, name="vicuna", threads=1)
    text, templated = vicuna.render(CONVERSATION[-1:])
    assert templated and text == f"<|bos|>{VICUNA_SYSTEM} USER: Is the dog lazy? ASSISTANT:"
    assert vicuna.identity()["chat_template"] == vicuna.chat_template.sha256
    # the same text comes out of the generation path (it encodes what render returns)
    assert (
        vicuna.encode_request(CONVERSATION[-1:])
        == vicuna.tokenizer(text, add_special_tokens=False)["input_ids"]
    )

    custom = tmp_path / "qa.jinja"
    custom.write_text(
        "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}[assistant]{% endif %}"
    )
    own = load_model({**spec, "chat_template": str(custom)}, name="own", threads=1)
    assert own.render(CONVERSATION[-1:]) == ("[user] Is the dog lazy?\n[assistant]", True)
    assert own.chat_template.source == f"file:{custom}"
    # a configured template changes the cache identity; an unconfigured model keeps its old one
    assert (
        "chat_template" not in load_model(spec | {"model": str(tiny_causal)}, threads=1).identity()
    )

    with pytest.raises(
        ValueError,
        match=r"model typo: chat_template 'vicuna' is neither a shipped template "
        r"\(llama-2, vicuna_v1.1\), 'none', nor an existing Jinja file",
    ):
        load_model({**spec, "chat_template": "vicuna"}, name="typo", threads=1)


def test_seq2seq_without_template_is_prompted_with_plain_text(seq2seq):
    from isqaflow.models.base import flatten_messages

    assert seq2seq.chat_template.source == "plain:seq2seq"
    assert seq2seq.render(CONVERSATION) == (flatten_messages(CONVERSATION), False)


def test_candidates_read_as_a_prefix_tree_score_as_each_alone(tiny_causal):
    """An item's candidates go into one row as a prefix tree (shared starts read once); each
    candidate's log-probability equals scoring it on its own, without any sharing."""
    tree = load_model({"backend": "hf", "model": str(tiny_causal)}, threads=1)
    plain = load_model(
        {"backend": "hf", "model": str(tiny_causal), "prefix_sharing": False}, threads=1
    )
    candidates = ["the lazy dog", "the lazy fox", "the quick brown fox", "YES", "NO NO", "lazy"]
    items = [(r, candidates) for r in _prefix_requests()]
    together = tree.score_batch(items)
    for (request, cands), scores in zip(items, together, strict=True):
        alone = [plain.score_batch([(request, [c])])[0][0] for c in cands]
        assert scores == pytest.approx(alone, abs=1e-4)


def test_every_model_entry_of_the_configs_loads_with_its_workflow_keys(tiny_causal):
    """The config's entries reach load_model as they are (rules/common.smk: model_spec drops only
    convert and price): family (the self-preference check) is a workflow key, not a backend option."""
    import yaml

    from pathlib import Path

    repo = Path(__file__).resolve().parents[3]
    for config in ("config.yaml", "paper.yaml"):
        for name, entry in yaml.safe_load((repo / "config" / config).read_text())["models"].items():
            if entry.get("backend", "hf") != "hf" or entry.get("serve"):
                continue
            spec = {k: v for k, v in entry.items() if k not in ("convert", "price")}
            model = load_model(
                {
                    **spec,
                    "model": str(tiny_causal),
                    "chat_template": None,
                    "dtype": "float32",
                    "device": "cpu",
                },
                name=name,
            )
            assert model.name == name
