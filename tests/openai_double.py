"""A test double of a vLLM 0.33.0 OpenAI-compatible server, started through ``serve:`` by the tests.

``transformers serve`` returns no log-probabilities, and the real vLLM engine (its CPU build,
tests/engines/test_vllm_real.py) takes a minute to start, so the fast tests of the client's
log-probability parsing use this double: it answers ``/v1/models``, ``/v1/completions``
and ``/v1/chat/completions`` in vLLM's response format, with log-probabilities computed by the given model in
this process (greedy, one request at a time), including vLLM's extensions
``prompt_logprobs``, token-id prompts and ``continue_final_message``.

It takes vLLM's own command line -- ``openai_double.py serve MODEL --host H --port P
[vLLM flags]`` -- and refuses, as vLLM's argument parser would, any flag that vLLM
0.33.0 does not have (``tests/fixtures/vllm-0.33.0-interface.json``, read from its
wheel); ``--lora-modules NAME=PATH`` serves NAME too (answered with the base model).
It is stricter than vLLM about requests: a body field that vLLM's
``ChatCompletionRequest`` / ``CompletionRequest`` lacks is answered 400 (vLLM would
accept and ignore it).  It mimics what matters of vLLM's semantics: ``min_tokens``
holds off the end of sequence; with ``use_beam_search`` the fields vLLM's beam search
does not read (``min_tokens``, ``stop``, ``repetition_penalty``, ...) are ignored, ``n``
choices come back and ``usage.completion_tokens`` adds them all up, as vLLM's does;
``return_token_ids`` returns each choice's ids; ``-inf`` log-probabilities come back as
-9999.0; ``--chat-template FILE`` replaces the tokenizer's template;
``truncate_prompt_tokens`` keeps the prompt's last tokens; with ``--max-model-len N``
a longer prompt is answered 400 with vLLM's own message and ``max_tokens`` is cut to what is
left of N (vLLM 0.32.0 as run on the CPU: tests/engines/test_vllm_real.py).  Double-only options:
``--log FILE`` (every request body appended, JSON Lines),
``--child`` (a sleeping child in the server's process group, as vLLM starts its engine
process), ``--exit-after-start`` (exit with status 3 after printing a line).
"""

from __future__ import annotations

import http.server
import json
import math
import subprocess
import sys
import threading
import types
from pathlib import Path

FIXTURE = json.loads(
    (Path(__file__).resolve().parent / "fixtures" / "vllm-0.33.0-interface.json").read_text()
)
VLLM_FLAGS = set(FIXTURE["cli_flags"]) | {"--no-" + f[2:] for f in FIXTURE["boolean_fields"]}
DOUBLE_FLAGS = {
    "--log": True,
    "--child": False,
    "--exit-after-start": False,
}  # flag -> takes a value
FLOOR = FIXTURE["defaults"]["logprob_floor"]
REQUEST_FIELDS = {
    "/v1/chat/completions": "ChatCompletionRequest",
    "/v1/completions": "CompletionRequest",
}


def parse_command_line(argv: list[str]) -> types.SimpleNamespace:
    """``serve MODEL [--flag [value ...]] ...`` as vLLM reads it; unknown flags exit with status 2."""
    if len(argv) < 2 or argv[0] != "serve" or argv[1].startswith("-"):
        sys.exit("usage: openai_double.py serve MODEL [vLLM flags]")
    options: dict[str, list[str]] = {}
    i = 2
    while i < len(argv):
        flag, _, inline = argv[i].partition("=")
        if flag not in VLLM_FLAGS and flag not in DOUBLE_FLAGS:
            print(
                f"vllm serve: error: unrecognized arguments: {argv[i]}", file=sys.stderr, flush=True
            )
            sys.exit(2)
        values = [inline] if inline else []
        i += 1
        while (
            not inline
            and i < len(argv)
            and not argv[i].startswith("--")
            and DOUBLE_FLAGS.get(flag, True)
        ):
            values.append(argv[i])
            i += 1
        options.setdefault(flag, []).extend(values)
    return types.SimpleNamespace(
        model=argv[1],
        host=(options.get("--host") or ["127.0.0.1"])[0],
        port=int(options["--port"][0]),
        log=(options.get("--log") or [None])[0],
        lora=options.get("--lora-modules", []),
        child="--child" in options,
        exit_after_start="--exit-after-start" in options,
        served_names=options.get("--served-model-name", []),
        options=options,
        chat_template=Path(options["--chat-template"][0]).read_text()
        if options.get("--chat-template")
        else None,
        max_model_len=int(options["--max-model-len"][0])
        if options.get("--max-model-len")
        else None,
    )


def main() -> None:
    args = parse_command_line(sys.argv[1:])
    print(f"double: serving {args.model} on port {args.port}", flush=True)
    if args.exit_after_start:
        print("double: fatal: no GPU found", flush=True)
        sys.exit(3)
    if args.child:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    lm = LocalModel(args.model, args.chat_template)
    names = {*(args.served_names or [args.model]), *(spec.split("=", 1)[0] for spec in args.lora)}
    lock = threading.Lock()

    class Handler(http.server.BaseHTTPRequestHandler):
        def _answer(self, status: int, body: object) -> None:
            payload = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self):  # noqa: N802
            if self.path == "/v1/models":
                self._answer(
                    200,
                    {
                        "object": "list",
                        "data": [{"id": n, "object": "model"} for n in sorted(names)],
                    },
                )
            else:
                self._answer(404, {"error": {"message": "not found"}})

        def do_POST(self):  # noqa: N802
            body = json.loads(
                self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}"
            )
            if args.log:
                with lock, open(args.log, "a", encoding="utf-8") as log:
                    log.write(json.dumps({"path": self.path, "body": body}) + "\n")
            if body.get("model") not in names:
                self._answer(
                    404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}}
                )
                return
            known = (
                set(FIXTURE["requests"][REQUEST_FIELDS[self.path]]["fields"])
                if self.path in REQUEST_FIELDS
                else set()
            )
            unknown = sorted(set(body) - known)
            if unknown:
                self._answer(
                    400,
                    {
                        "error": {
                            "message": f"double: {unknown} are not fields of vLLM 0.33.0's "
                            f"{REQUEST_FIELDS.get(self.path, self.path)}"
                        }
                    },
                )
                return
            with lock:
                try:
                    if self.path == "/v1/completions":
                        self._answer(200, completion(lm, body, args.max_model_len))
                    elif self.path == "/v1/chat/completions":
                        self._answer(200, chat(lm, body, args.max_model_len))
                    else:
                        self._answer(404, {"error": {"message": "not found"}})
                except TooLong as err:
                    self._answer(
                        400,
                        {
                            "error": {
                                "message": str(err),
                                "type": "BadRequestError",
                                "param": "input_tokens",
                                "code": 400,
                            }
                        },
                    )

        def log_message(self, fmt, *a):
            print("double:", fmt % a, flush=True)

    http.server.ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


class LocalModel:
    def __init__(self, path: str, chat_template: str | None = None) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(path)
        if chat_template is not None:  # --chat-template FILE, as vLLM applies it
            self.tok.chat_template = chat_template
        self.net = AutoModelForCausalLM.from_pretrained(path).eval()

    def logprobs(self, ids: list[int]):
        import torch

        with torch.inference_mode():
            logits = self.net(input_ids=torch.tensor([ids])).logits[0].float()
        return torch.log_softmax(logits, dim=-1)

    def greedy(self, ids: list[int], n: int, min_tokens: int = 0) -> list[tuple[int, object]]:
        out = []
        for step in range(n):
            table = self.logprobs(ids)[-1]
            if (
                step < min_tokens and self.tok.eos_token_id is not None
            ):  # vLLM's min_tokens: no end yet
                table = table.clone()
                table[self.tok.eos_token_id] = -math.inf
            token = int(table.argmax())
            out.append((token, table))
            ids = ids + [token]
            if token == self.tok.eos_token_id:
                break
        return out

    def top(self, table, k: int) -> list[tuple[str, float]]:
        values, indices = table.topk(k)
        return [(self.tok.decode([int(i)]), float(v)) for v, i in zip(values, indices)]


class TooLong(ValueError):
    """A prompt beyond --max-model-len (vLLM answers 400)."""


def fit_prompt(ids: list[int], body: dict, max_model_len: int | None) -> tuple[list[int], dict]:
    """vLLM's prompt checks: truncate_prompt_tokens keeps the last tokens; a prompt beyond
    --max-model-len is refused (vllm/renderers/params.py); max_tokens is cut to what is left."""
    keep = body.get("truncate_prompt_tokens")
    if keep is not None and keep > 0 and len(ids) > keep:
        ids = ids[-keep:]
    if max_model_len is None:
        return ids, body
    if len(ids) > max_model_len:
        raise TooLong(
            f"This model's maximum context length is {max_model_len} tokens. However, your prompt "
            f"contains {len(ids)} input tokens, which exceeds this limit even without any output "
            f"tokens. Please reduce the length of the input prompt."
        )
    max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
    return ids, {**body, "max_tokens": min(max_tokens, max_model_len - len(ids))}


def usage(n_in: int, n_out: int) -> dict:
    return {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}


def clamp(value: float) -> float:
    return max(float(value), FLOOR)  # vLLM: -inf comes back as -9999.0


def decode_steps(lm: LocalModel, ids: list[int], body: dict, endpoint: str) -> tuple[list, int]:
    """The generated steps and the number of choices, with vLLM's beam-search semantics: fields
    its beam search does not read are ignored (here: min_tokens), n choices are returned."""
    max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or 16)
    if body.get("use_beam_search"):
        reads = set(FIXTURE["requests"][endpoint]["beam_search_reads"])
        ignored = sorted(
            k
            for k in ("min_tokens", "stop", "repetition_penalty", "seed", "top_p")
            if k in body and k not in reads
        )
        if ignored:
            print(f"double: beam search ignores {ignored}", flush=True)
        return lm.greedy(ids, max_tokens), int(body.get("n") or 1)
    return lm.greedy(ids, max_tokens, int(body.get("min_tokens") or 0)), 1


def completion(lm: LocalModel, body: dict, max_model_len: int | None = None) -> dict:
    prompt = body["prompt"]
    ids = list(prompt) if isinstance(prompt, list) else lm.tok(prompt)["input_ids"]
    ids, body = fit_prompt(ids, body, max_model_len)
    steps, n = decode_steps(lm, ids, body, "CompletionRequest")
    choice = {
        "index": 0,
        "text": lm.tok.decode([t for t, _ in steps]),
        "finish_reason": "length",
        "logprobs": None,
    }
    if body.get("return_token_ids"):
        choice["token_ids"] = [t for t, _ in steps]
    if body.get("logprobs") is not None:
        k = int(body["logprobs"])
        choice["logprobs"] = {
            "tokens": [lm.tok.decode([t]) for t, _ in steps],
            "token_logprobs": [float(table[t]) for t, table in steps],
            "top_logprobs": [dict(lm.top(table, k)) for _, table in steps],
            "text_offset": [0] * len(steps),
        }
    if body.get("prompt_logprobs") is not None:
        table = lm.logprobs(ids)
        choice["prompt_logprobs"] = [None] + [
            {
                str(ids[i]): {
                    "logprob": clamp(table[i - 1, ids[i]]),
                    "rank": 1,
                    "decoded_token": lm.tok.decode([ids[i]]),
                }
            }
            for i in range(1, len(ids))
        ]
    choices = [{**choice, "index": i} for i in range(n)]
    return {
        "id": "cmpl-0",
        "object": "text_completion",
        "created": 0,
        "model": body["model"],
        "choices": choices,
        "usage": usage(len(ids), n * len(steps)),
    }


def chat(lm: LocalModel, body: dict, max_model_len: int | None = None) -> dict:
    messages = body["messages"]
    if body.get("continue_final_message"):
        text = lm.tok.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=False, continue_final_message=True
        )
    else:
        text = lm.tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = lm.tok(text, add_special_tokens=False)["input_ids"]
    ids, body = fit_prompt(ids, body, max_model_len)
    steps, n = decode_steps(lm, ids, body, "ChatCompletionRequest")
    logprobs = None
    if body.get("logprobs"):
        k = int(body.get("top_logprobs") or 0)
        logprobs = {
            "content": [
                {
                    "token": lm.tok.decode([t]),
                    "logprob": clamp(table[t]),
                    "bytes": None,
                    "top_logprobs": [
                        {"token": s, "logprob": clamp(v), "bytes": None}
                        for s, v in lm.top(table, k)
                    ],
                }
                for t, table in steps
            ]
        }
    choice = {
        "message": {"role": "assistant", "content": lm.tok.decode([t for t, _ in steps])},
        "finish_reason": "length",
        "logprobs": logprobs,
    }
    if body.get("return_token_ids"):
        choice["token_ids"] = [t for t, _ in steps]
    return {
        "id": "chatcmpl-0",
        "object": "chat.completion",
        "created": 0,
        "model": body["model"],
        "choices": [{"index": i, **choice} for i in range(n)],
        "usage": usage(len(ids), n * len(steps)),
    }


if __name__ == "__main__":
    main()
