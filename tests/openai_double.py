"""A test double of a vLLM OpenAI-compatible server, started through ``serve:`` by the tests.

vLLM does not run on the test machines' CPUs, and ``transformers serve`` returns no
log-probabilities, so the client's log-probability parsing is tested against this
double: it answers ``/v1/models``, ``/v1/completions`` and ``/v1/chat/completions``
in vLLM's response format, with log-probabilities computed by the given model in
this process (greedy, one request at a time), including vLLM's extensions
``prompt_logprobs``, token-id prompts and ``continue_final_message``.  Every request
body is appended to ``--log`` (JSON Lines).  ``--lora NAME=PATH`` serves NAME too
(as vLLM's ``--lora-modules``; the double answers it with the base model);
``--child`` starts a sleeping child in the server's process group, as vLLM starts
its engine process; ``--exit-after-start`` exits with status 3 after printing a
line (a server that dies).
"""

from __future__ import annotations

import argparse
import http.server
import json
import subprocess
import sys
import threading


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--log")
    parser.add_argument("--lora", action="append", default=[])
    parser.add_argument("--child", action="store_true")
    parser.add_argument("--exit-after-start", action="store_true")
    args = parser.parse_args()
    print(f"double: serving {args.model} on port {args.port}", flush=True)
    if args.exit_after_start:
        print("double: fatal: no GPU found", flush=True)
        sys.exit(3)
    if args.child:
        subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    lm = LocalModel(args.model)
    names = {args.model, *(spec.split("=", 1)[0] for spec in args.lora)}
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
                self._answer(200, {"object": "list", "data": [{"id": n, "object": "model"} for n in sorted(names)]})
            else:
                self._answer(404, {"error": {"message": "not found"}})

        def do_POST(self):  # noqa: N802
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if args.log:
                with lock, open(args.log, "a", encoding="utf-8") as log:
                    log.write(json.dumps({"path": self.path, "body": body}) + "\n")
            if body.get("model") not in names:
                self._answer(404, {"error": {"message": f"The model `{body.get('model')}` does not exist."}})
                return
            with lock:
                if self.path == "/v1/completions":
                    self._answer(200, completion(lm, body))
                elif self.path == "/v1/chat/completions":
                    self._answer(200, chat(lm, body))
                else:
                    self._answer(404, {"error": {"message": "not found"}})

        def log_message(self, fmt, *a):
            print("double:", fmt % a, flush=True)

    http.server.ThreadingHTTPServer((args.host, args.port), Handler).serve_forever()


class LocalModel:
    def __init__(self, path: str) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(path)
        self.net = AutoModelForCausalLM.from_pretrained(path).eval()

    def logprobs(self, ids: list[int]):
        import torch

        with torch.inference_mode():
            logits = self.net(input_ids=torch.tensor([ids])).logits[0].float()
        return torch.log_softmax(logits, dim=-1)

    def greedy(self, ids: list[int], n: int) -> list[tuple[int, object]]:
        out = []
        for _ in range(n):
            table = self.logprobs(ids)[-1]
            token = int(table.argmax())
            out.append((token, table))
            ids = ids + [token]
            if token == self.tok.eos_token_id:
                break
        return out

    def top(self, table, k: int) -> list[tuple[str, float]]:
        values, indices = table.topk(k)
        return [(self.tok.decode([int(i)]), float(v)) for v, i in zip(values, indices)]


def usage(n_in: int, n_out: int) -> dict:
    return {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}


def completion(lm: LocalModel, body: dict) -> dict:
    prompt = body["prompt"]
    ids = list(prompt) if isinstance(prompt, list) else lm.tok(prompt)["input_ids"]
    steps = lm.greedy(ids, int(body.get("max_tokens") or 16))
    choice = {"index": 0, "text": lm.tok.decode([t for t, _ in steps]), "finish_reason": "length",
              "logprobs": None}
    if body.get("logprobs") is not None:
        k = int(body["logprobs"])
        choice["logprobs"] = {"tokens": [lm.tok.decode([t]) for t, _ in steps],
                              "token_logprobs": [float(table[t]) for t, table in steps],
                              "top_logprobs": [dict(lm.top(table, k)) for _, table in steps],
                              "text_offset": [0] * len(steps)}
    if body.get("prompt_logprobs") is not None:
        table = lm.logprobs(ids)
        choice["prompt_logprobs"] = [None] + [
            {str(ids[i]): {"logprob": float(table[i - 1, ids[i]]), "rank": 1, "decoded_token": lm.tok.decode([ids[i]])}}
            for i in range(1, len(ids))]
    return {"id": "cmpl-0", "object": "text_completion", "created": 0, "model": body["model"],
            "choices": [choice], "usage": usage(len(ids), len(steps))}


def chat(lm: LocalModel, body: dict) -> dict:
    messages = body["messages"]
    if body.get("continue_final_message"):
        text = lm.tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=False,
                                          continue_final_message=True)
    else:
        text = lm.tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = lm.tok(text, add_special_tokens=False)["input_ids"]
    steps = lm.greedy(ids, int(body.get("max_tokens") or 16))
    logprobs = None
    if body.get("logprobs"):
        k = int(body.get("top_logprobs") or 0)
        logprobs = {"content": [{"token": lm.tok.decode([t]), "logprob": float(table[t]), "bytes": None,
                                 "top_logprobs": [{"token": s, "logprob": v, "bytes": None} for s, v in lm.top(table, k)]}
                                for t, table in steps]}
    return {"id": "chatcmpl-0", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": {"role": "assistant", "content": lm.tok.decode([t for t, _ in steps])},
                         "finish_reason": "length", "logprobs": logprobs}],
            "usage": usage(len(ids), len(steps))}


if __name__ == "__main__":
    main()
