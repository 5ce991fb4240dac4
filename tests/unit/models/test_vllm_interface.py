"""What the project sends to vLLM, checked against vLLM 0.33.0's own interface (the fixture
tests/fixtures/vllm-0.33.0-interface.json, read statically from its wheel by tools/vllm_interface.py).

vLLM accepts a request field it does not know and ignores it (a log line only), so a field that
vLLM renamed or dropped would decode differently without an error: every field and flag is
checked here, and the test double (tests/openai_double.py) refuses the ones the fixture lacks.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

from isqaflow.models import usage
from isqaflow.models.base import GenerationParams
from isqaflow.models.planning.gpu_plan import plan_grid
from isqaflow.models.served.model import ServedModel, ServeSettings

REPO = Path(__file__).resolve().parents[3]
FIXTURE_PATH = REPO / "tests/fixtures/vllm-0.33.0-interface.json"
FIXTURE = json.loads(FIXTURE_PATH.read_text())
FLAGS = set(FIXTURE["cli_flags"])
PAPER = yaml.safe_load((REPO / "config/paper.yaml").read_text())


def vllm_flags(command: str) -> list[str]:
    """The options after ``vllm serve`` in a command line (placeholders left as they are)."""
    argv = shlex.split(command)
    start = next(i for i in range(len(argv) - 1) if argv[i : i + 2] == ["vllm", "serve"])
    return [a.split("=", 1)[0] for a in argv[start + 2 :] if a.startswith("-")]


def test_the_fixture_is_vllm_0_33_0():
    wheel = FIXTURE["wheel"]
    assert wheel["version"] == "0.33.0" and wheel["requires_torch"] == ["torch==2.14.0"]
    assert wheel["links_cudart"] == ["libcudart.so.13"]
    assert FIXTURE["defaults"] == {
        "gpu_memory_utilization": 0.92,
        "logprob_floor": -9999.0,
        "max_logprobs": 20,
    }
    assert {"min_tokens", "stop", "repetition_penalty"}.isdisjoint(FIXTURE["beam_search_params"])


@pytest.mark.parametrize("fixture", ["vllm-0.33.0-interface.json", "vllm-0.11.0-interface.json"])
def test_every_flag_of_the_paper_serve_commands_exists(fixture):
    FLAGS = set(json.loads((REPO / "tests/fixtures" / fixture).read_text())["cli_flags"])  # noqa: N806
    served = {
        name: entry
        for name, entry in PAPER["models"].items()
        if (entry.get("serve") or {}).get("engine") == "vllm"
    }
    # every local decoder of the papers' grid (InFoBench responders, arena answerers, ISQA)
    assert set(served) == {
        "command-r",
        "command-r-plus",
        "llama2-70b-chat",
        "llama2-7b-chat",
        "llama3-70b",
        "llama3-8b",
        "mixtral-8x22b",
        "mixtral-8x7b",
        "qwen15-110b",
        "qwen15-32b",
        "vicuna-13b",
        "vicuna-7b",
    }
    for name, entry in served.items():
        serve = entry["serve"]
        flags = vllm_flags(serve["command"]) + [
            a for a in shlex.split(serve.get("lora_args", "")) if a.startswith("-")
        ]
        flags += [a for a in serve.get("extra_args", []) if a.startswith("-")]
        assert flags and set(flags) <= FLAGS, (name, sorted(set(flags) - FLAGS))


def test_every_flag_of_the_gpu_plan_exists():
    servers = [s for plan in plan_grid(PAPER).values() for s in plan.servers]
    assert servers
    for server in servers:
        assert {a for a in server.args() if a.startswith("--")} <= FLAGS


def bare_served_model(unsupported: str = "drop") -> ServedModel:
    """A ServedModel's request side without a server or a tokenizer (only its request building is used)."""
    model = object.__new__(ServedModel)
    model.name = "m"
    model.settings = ServeSettings.from_config(
        {
            "engine": "vllm",
            "command": "vllm serve {model} --port {port}",
            "unsupported_decoding": unsupported,
        },
        "m",
    )
    model.usage = usage.ModelUsage("m", "served", "m")
    model._noted_decoding = set()
    model.server_plan = {}
    return model


PARAMS = [
    GenerationParams(),
    GenerationParams(
        max_new_tokens=200,
        min_new_tokens=100,
        repetition_penalty=1.1,
        max_input_tokens=2048,
        stop=("\n\n",),
        do_sample=True,
        temperature=0.7,
        top_p=0.9,
        seed=3,
    ),
    GenerationParams(
        max_new_tokens=100,
        num_beams=2,
        max_input_tokens=512,
        no_repeat_ngram_size=3,
        min_new_tokens=10,
    ),
]


@pytest.mark.parametrize("fixture", ["vllm-0.33.0-interface.json", "vllm-0.11.0-interface.json"])
@pytest.mark.parametrize("params", PARAMS, ids=["greedy", "sampling", "table5"])
def test_every_request_field_the_client_sends_exists(params, fixture):
    """In vLLM 0.33.0 (envs/serving.yaml) and 0.11.0 (the CUDA-12 alternative, envs/serving-cuda12.yaml)."""
    FIXTURE = json.loads((REPO / "tests/fixtures" / fixture).read_text())  # noqa: N806
    model = bare_served_model()
    kwargs = model._sampling(params)
    extra = kwargs.pop("extra_body", {})
    sent = set(kwargs) | set(extra) | {"model", "logprobs", "top_logprobs"}
    chat = set(FIXTURE["requests"]["ChatCompletionRequest"]["fields"])
    completion = set(FIXTURE["requests"]["CompletionRequest"]["fields"])
    assert sent | {"messages"} <= chat, sorted(sent - chat)
    # the completions endpoint takes logprobs as a count (no top_logprobs); scoring sends token ids there
    assert (sent - {"top_logprobs"}) | {"prompt", "prompt_logprobs"} <= completion
    if params.num_beams > 1:  # nothing the beam search would ignore is sent with it
        ignored = set(FIXTURE["requests"]["ChatCompletionRequest"]["fields"]) - set(
            FIXTURE["requests"]["ChatCompletionRequest"]["beam_search_reads"]
        )
        assert not ({"min_tokens", "stop", "repetition_penalty"} & (set(kwargs) | set(extra)))
        assert {"min_tokens", "stop", "repetition_penalty"} <= ignored
        assert any(
            "min_new_tokens=10 (ignored by vLLM's beam search)" == d
            for d in model.usage.dropped_decoding
        )
    (record,) = model.usage.decoding
    assert record["settings"]["num_beams"] == params.num_beams


def test_beam_search_with_min_tokens_is_refused_by_default():
    model = bare_served_model(unsupported="error")
    with pytest.raises(
        ValueError, match=r"cannot apply min_new_tokens=10 \(ignored by vLLM's beam search\)"
    ):
        model._sampling(PARAMS[2])


def test_the_double_refuses_flags_vllm_lacks(tiny_causal):
    double = REPO / "tests/openai_double.py"
    run = subprocess.run(
        [
            sys.executable,
            str(double),
            "serve",
            str(tiny_causal),
            "--port",
            "9",
            "--lora",
            "x=y",
            "--exit-after-start",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2 and "unrecognized arguments: --lora" in run.stderr
    run = subprocess.run(
        [
            sys.executable,
            str(double),
            "serve",
            str(tiny_causal),
            "--port",
            "9",
            "--dtype",
            "bfloat16",
            "--tensor-parallel-size",
            "1",
            "--gpu-memory-utilization",
            "0.45",
            "--max-model-len",
            "2248",
            "--enable-lora",
            "--lora-modules",
            "a=b",
            "--exit-after-start",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 3  # accepted every flag, then exited as asked


def test_the_tool_reads_a_wheel(tmp_path):
    """tools/vllm_interface.py on a minimal wheel with the files it parses."""
    sources = {
        "vllm/engine/arg_utils.py": "def add(p):\n    p.add_argument('--dtype')\n    p.add_argument('--tensor-parallel-size', '-tp')\n",
        "vllm/entrypoints/common/cli_args.py": (
            "class BaseFrontendArgs:\n    lora_modules: list | None = None\n    enable_x: bool = False\n"
            "class FrontendArgs(BaseFrontendArgs):\n    port: int = 8000\n"
        ),
        "vllm/entrypoints/openai/chat_completion/protocol.py": (
            "class ChatCompletionRequest:\n    n: int = 1\n    min_tokens: int = 0\n    _private: int = 0\n"
            "    def to_beam_search_params(self, max_tokens, d):\n        return dict(beam_width=self.n)\n"
            "X = -9999.0\n"
        ),
        "vllm/entrypoints/openai/completion/protocol.py": (
            "class CompletionRequest:\n    prompt: str\n    n: int = 1\n"
            "    def to_beam_search_params(self, max_tokens, d):\n        return self.n\n"
        ),
        "vllm/sampling_params.py": "class BeamSearchParams:\n    beam_width: int\n    max_tokens: int\n",
        "vllm/config/cache.py": "class CacheConfig:\n    gpu_memory_utilization: float = Field(default=0.92, gt=0)\n",
        "vllm/config/model.py": "class ModelConfig:\n    max_logprobs: int = 20\n",
        "vllm-0.0.1.dist-info/METADATA": "Name: vllm\nVersion: 0.0.1\nRequires-Dist: torch==9.9.9\n",
        "vllm/_C.abi3.so": "\0libcudart.so.13\0",
    }
    wheel = tmp_path / "vllm-0.0.1-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in sources.items():
            archive.writestr(name, text)
    out = tmp_path / "interface.json"
    subprocess.run(
        [sys.executable, str(REPO / "tools/vllm_interface.py"), str(wheel), "--out", str(out)],
        check=True,
        capture_output=True,
        timeout=60,
    )
    read = json.loads(out.read_text())
    assert read["cli_flags"] == [
        "--dtype",
        "--enable-x",
        "--lora-modules",
        "--port",
        "--tensor-parallel-size",
        "-tp",
    ]
    assert read["boolean_fields"] == ["--enable-x"]
    assert read["requests"]["ChatCompletionRequest"] == {
        "fields": ["min_tokens", "n"],
        "beam_search_reads": ["n"],
    }
    assert read["beam_search_params"] == ["beam_width", "max_tokens"]
    assert read["defaults"] == {
        "gpu_memory_utilization": 0.92,
        "max_logprobs": 20,
        "logprob_floor": -9999.0,
    }
    assert read["wheel"]["requires_torch"] == ["torch==9.9.9"] and read["wheel"][
        "links_cudart"
    ] == ["libcudart.so.13"]
