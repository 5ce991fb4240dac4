"""Wall time and peak memory of every CPU stage on synthetic inputs of the papers' sizes.

Run from the repository root:

    PYTHONPATH=src .venv/bin/python benchmarks/cpu_stages.py [--scale 1.0] [--fractions 0.25 0.5 1]
        [--stages convert_papers ...] [--workdir /tmp/isqaflow-cpu-bench] [--rounds 1000]

Each stage runs the workflow's own entry point (the function its script calls) in a fresh
Python process on inputs built here, at each fraction of ``--scale`` x the papers' sizes, so
the growth is visible; that process's peak resident memory (``VmHWM``) is its stage's.
Full size (scale 1):

* ``convert_papers``: QASPER train + dev, 1,169 papers (~3,500 words, ~3 questions each);
* ``convert_qa_train``: HotpotQA train, 90,447 examples with 10 paragraphs each (~0.5 GB JSON);
* ``convert_instructions``: InFoBench, 500 instructions, 2,250 questions;
* ``convert_rag`` and ``retrieve_bm25`` (BM25 index + top 10 per query): the largest
  per-domain job: 2,694 queries (LFRQA writing) over 1.7 million 100-word passages
  (LoTTE science's collection); the six domains' 14k queries are six such jobs;
* ``arena_ratings``: battles from judged pairs and Elo + Bradley-Terry ratings with
  1,000 bootstrap rounds (``isqaflow.arena.tables.ratings_table``), the largest setting
  (bm25-k5): 5 answerers x 14,020 reference pairs + 100 all-pairs per domain, six players;
* ``arena_tables``: the win-rate and ratings tables written (``win_rate_table``,
  ``write_table``) over all three settings' 168k judged pairs.

The judges' verdicts are synthetic (seeded draws standing in for a model): no stage
benchmarked here runs a model.  Times are for one CPU thread (the stages are
single-threaded; BM25 uses numpy).  On a small machine run a ``--scale`` below 1 and
extrapolate; the printout says which sizes were run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

FULL = {
    "papers": 1169,
    "words_per_paper": 3500,
    "questions_per_paper": 3,
    "hotpot": 90447,
    "instructions": 500,
    "questions_per_instruction": 4.5,
    "rag_queries": 2694,
    "passages": 1_700_000,
    "answerers": 5,
    "reference_pairs_per_answerer": 14020,
    "all_pairs_per_domain": 100,
    "domains": 6,
    "judged_pairs_all_settings": 168_240,
}
STAGES = [
    "convert_papers",
    "convert_qa_train",
    "convert_instructions",
    "convert_rag",
    "retrieve_bm25",
    "arena_ratings",
    "arena_tables",
]
VOCAB = 50_000


class Words:
    """Zipf-distributed pseudo-words (a text-like vocabulary for BM25), seeded."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
        lengths = self.rng.integers(3, 10, VOCAB)
        self.vocab = np.array(["".join(self.rng.choice(letters, n)) for n in lengths])
        weights = 1.0 / np.arange(1, VOCAB + 1)
        self.cdf = np.cumsum(weights / weights.sum())

    def _draw(self, n: int) -> np.ndarray:
        return self.vocab[np.minimum(np.searchsorted(self.cdf, self.rng.random(n)), VOCAB - 1)]

    def text(self, n: int) -> str:
        return " ".join(self._draw(n))

    def texts(self, count: int, n: int) -> list[str]:
        return [" ".join(row) for row in self._draw(count * n).reshape(count, n)]


def _write_jsonl(path: Path, rows) -> None:
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


# ------------------------------------------------------------------ synthetic inputs
def make_qasper(folder: Path, n: int, words: Words) -> list[Path]:
    papers = {}
    paragraph_words = 110
    per_paper = FULL["words_per_paper"] // paragraph_words
    for i in range(n):
        paragraphs = words.texts(per_paper, paragraph_words)
        sections = [
            {"section_name": f"Section {s}", "paragraphs": paragraphs[s * 4 : (s + 1) * 4]}
            for s in range((per_paper + 3) // 4)
        ]
        qas = [
            {
                "question": words.text(10) + "?",
                "question_id": f"p{i}q{q}",
                "answers": [
                    {
                        "answer": {
                            "unanswerable": False,
                            "extractive_spans": [paragraphs[q][:40]],
                            "yes_no": None,
                            "free_form_answer": "",
                            "evidence": [paragraphs[q]],
                            "highlighted_evidence": [paragraphs[q]],
                        }
                    }
                ],
            }
            for q in range(FULL["questions_per_paper"])
        ]
        papers[f"{2000 + i // 1000}.{i:05d}"] = {
            "title": words.text(8),
            "abstract": words.text(180),
            "full_text": sections,
            "qas": qas,
        }
    path = folder / "qasper.json"
    path.write_text(json.dumps(papers), encoding="utf-8")
    return [path]


def make_hotpot(folder: Path, n: int, words: Words) -> list[Path]:
    path = folder / "hotpot_train.json"
    with path.open("w", encoding="utf-8") as f:
        f.write("[")
        for i in range(n):
            sentences = words.texts(40, 20)
            context = [
                [
                    f"Title {i} {t}",
                    [sentences[4 * t]] + [" " + s for s in sentences[4 * t + 1 : 4 * t + 4]],
                ]
                for t in range(10)
            ]
            record = {
                "_id": f"h{i:06d}",
                "question": words.text(16) + "?",
                "answer": words.text(2),
                "supporting_facts": [[context[0][0], 0], [context[1][0], 1]],
                "context": context,
                "type": "bridge",
                "level": "medium",
            }
            f.write(("," if i else "") + json.dumps(record))
        f.write("]")
    return [path]


def make_infobench(folder: Path, n: int, words: Words) -> list[Path]:
    rows = []
    for i in range(n):
        k = 3 if i % 2 else 6  # 4.5 questions per instruction on average
        rows.append(
            {
                "id": f"{'user' if i % 2 else 'domain'}_oriented_task_{i}",
                "input": words.text(40),
                "category": "synthetic",
                "instruction": words.text(30),
                "decomposed_questions": [words.text(12) + "?" for _ in range(k)],
                "subset": "Easy_set" if i % 2 else "Hard_set",
                "question_label": [["Content"] for _ in range(k)],
            }
        )
    path = folder / "InfoBench.json"
    _write_jsonl(path, rows)
    return [path]


def make_lfrqa(folder: Path, queries: int, passages: int, words: Words) -> tuple[Path, Path]:
    corpus = folder / "collection.tsv"
    chunk = 20_000
    with corpus.open("w", encoding="utf-8") as f:
        for start in range(0, passages, chunk):
            texts = words.texts(min(chunk, passages - start), 100)
            f.write("".join(f"{start + j}\t{t}\n" for j, t in enumerate(texts)))
    rng = np.random.default_rng(1)
    rows = []
    for i in range(queries):
        gold = sorted(int(x) for x in rng.choice(passages, 2, replace=False))
        claims = words.texts(4, 20)
        rows.append(
            {
                "qid": f"science-search-test-{i}",
                "question": words.text(10) + "?",
                "answer": " \n".join(claims),
                "citation_numbers": [[1], [1], [2], [2]],
                "faithful_answer_w_citation": " ".join(
                    f"{c} [{1 + j // 2}]" for j, c in enumerate(claims)
                ),
                "gold_doc_ids": gold,
            }
        )
    annotations = folder / "annotations_science_with_citation.jsonl"
    _write_jsonl(annotations, rows)
    return annotations, corpus


def make_judged(folder: Path, fraction: float, seed: int) -> tuple[Path, Path]:
    """Judged pairs of the largest setting (reference + all pairs) and of all settings."""
    rng = np.random.default_rng(seed)
    answerers = [f"model{i}" for i in range(FULL["answerers"])]
    verdicts = np.array(["1", "2", "tie", None], dtype=object)  # None: no valid verdict

    def rows(setting: str, n_ref: int, players: list[str], all_pairs: int):
        out = []
        draws = rng.choice(4, n_ref * len(players) + all_pairs, p=[0.35, 0.45, 0.17, 0.03])
        k = 0
        for m in players:
            for q in range(n_ref):
                out.append(
                    {
                        "setting": setting,
                        "kind": "reference",
                        "domain": f"d{q % 6}",
                        "qid": f"q{q}",
                        "system_a": m,
                        "system_b": "lfrqa",
                        "verdict": verdicts[draws[k]],
                        "rule": "raw",
                        "position_consistent": bool(draws[k] < 2),
                    }
                )
                k += 1
        for j in range(all_pairs):
            a, b = rng.choice(len(players), 2, replace=False)
            out.append(
                {
                    "setting": setting,
                    "kind": "all_pairs",
                    "domain": f"d{j % 6}",
                    "qid": f"q{j}",
                    "system_a": players[a],
                    "system_b": players[b],
                    "verdict": verdicts[draws[k]],
                    "rule": "raw",
                    "position_consistent": bool(draws[k] < 2),
                }
            )
            k += 1
        return out

    n_ref = max(10, int(FULL["reference_pairs_per_answerer"] * fraction))
    n_all = max(6, int(FULL["all_pairs_per_domain"] * FULL["domains"] * 10 * fraction))
    largest = rows("bm25-k5", n_ref, answerers, n_all)
    everything = (
        largest + rows("bm25-k10", n_ref, answerers[:2], 0) + rows("dense-k5", n_ref, answerers, 0)
    )
    paths = folder / "judged_largest.jsonl", folder / "judged_all.jsonl"
    _write_jsonl(paths[0], largest)
    _write_jsonl(paths[1], everything)
    return paths


def build_inputs(stage: str, folder: Path, fraction: float, seed: int) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    words = Words(seed)
    size = lambda n: max(2, int(round(n * fraction)))  # noqa: E731
    if stage == "convert_papers":
        return {
            "paths": [str(p) for p in make_qasper(folder, size(FULL["papers"]), words)],
            "n": size(FULL["papers"]),
        }
    if stage == "convert_qa_train":
        return {
            "paths": [str(p) for p in make_hotpot(folder, size(FULL["hotpot"]), words)],
            "n": size(FULL["hotpot"]),
        }
    if stage == "convert_instructions":
        n = size(FULL["instructions"])
        return {"paths": [str(p) for p in make_infobench(folder, n, words)], "n": n}
    if stage in ("convert_rag", "retrieve_bm25"):
        annotations, corpus = make_lfrqa(
            folder, size(FULL["rag_queries"]), size(FULL["passages"]), words
        )
        return {"annotations": str(annotations), "corpus": str(corpus), "n": size(FULL["passages"])}
    if stage in ("arena_ratings", "arena_tables"):
        largest, everything = make_judged(folder, fraction, seed)
        return {"largest": str(largest), "all": str(everything)}
    raise ValueError(stage)


# ------------------------------------------------------------------ the stages (child process)
def run_stage(stage: str, inputs: dict, folder: Path, rounds: int, seed: int) -> dict:
    out = folder / "out"
    out.mkdir(exist_ok=True)
    if stage == "convert_papers":
        from isqaflow.data.convert import write_papers

        write_papers(inputs["paths"], fmt="qasper", dataset="qasper", out=out / "papers.jsonl")
        return {"items": inputs["n"], "unit": "papers"}
    if stage == "convert_qa_train":
        from isqaflow.data.convert import write_qa_examples

        write_qa_examples(inputs["paths"], out / "qa.jsonl")
        return {
            "items": inputs["n"],
            "unit": "examples",
            "input_mb": round(sum(os.path.getsize(p) for p in inputs["paths"]) / 1e6),
        }
    if stage == "convert_instructions":
        from isqaflow.data.convert import write_instructions

        write_instructions(inputs["paths"], out / "instructions.jsonl")
        return {"items": inputs["n"], "unit": "instructions"}
    if stage in ("convert_rag", "retrieve_bm25"):
        from isqaflow.data.convert import write_rag

        queries, passages = folder / "queries.jsonl", folder / "passages.jsonl"
        if stage == "convert_rag" or not passages.exists():
            t0 = time.perf_counter()
            write_rag(
                "science",
                [inputs["annotations"]],
                inputs["corpus"],
                corpus_format="lotte_tsv",
                passage_words=100,
                queries_out=queries,
                passages_out=passages,
            )
            if stage == "convert_rag":
                return {"items": inputs["n"], "unit": "passages"}
            raise RuntimeError(
                f"retrieve_bm25 needs convert_rag's output first ({time.perf_counter() - t0:.0f}s)"
            )
        from isqaflow.arena.retrieval.bm25_dense import run_retrieval

        shutil.rmtree(folder / "index", ignore_errors=True)
        run_retrieval(
            queries,
            passages,
            out / "hits.jsonl",
            out / "recall.json",
            backend="bm25",
            ks=[5, 10],
            options={},
            cache_dir=folder / "index",
            domain="science",
        )
        return {"items": inputs["n"], "unit": "passages"}
    import pandas as pd

    from isqaflow.arena.tables import ratings_table, win_rate_table

    elo = {"k": 4, "base": 10, "scale": 400, "initial": 1000}
    if stage == "arena_ratings":
        judged = pd.read_json(inputs["largest"], lines=True, dtype={"verdict": str})
        table, _ = ratings_table(judged, elo, rounds, seed, ["reference", "all_pairs"])
        return {"items": len(judged), "unit": "battles", "rounds": rounds}
    if stage == "arena_tables":
        from isqaflow.report.tables import table_paths, write_table

        judged = pd.read_json(inputs["all"], lines=True, dtype={"verdict": str})
        write_table(
            win_rate_table(judged, "lfrqa"),
            table_paths(out / "arena_win_rates"),
            digits=1,
            caption="x",
        )
        parts = []
        for setting, df in judged.groupby("setting"):
            table, _ = ratings_table(df, elo, rounds, seed, ["reference"])
            table.insert(0, ("setting", ""), setting)
            parts.append(table)
        write_table(pd.concat(parts), table_paths(out / "arena_ratings"), digits=1, caption="x")
        return {"items": len(judged), "unit": "judged pairs", "rounds": rounds}
    raise ValueError(stage)


def peak_rss_mb() -> float:
    """This process's peak resident memory since it started (VmHWM: reset by exec, unlike
    ru_maxrss, which keeps the peak of the process it was forked from)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(args) -> None:
    inputs = json.loads(args.inputs)
    start = time.perf_counter()
    info = run_stage(args.child, inputs, Path(args.folder), args.rounds, args.seed)
    info["wall_s"] = time.perf_counter() - start
    info["peak_mb"] = peak_rss_mb()
    print("RESULT " + json.dumps(info))


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--scale", type=float, default=1.0, help="x the papers' sizes (the largest size run)"
    )
    parser.add_argument(
        "--fractions",
        type=float,
        nargs="+",
        default=[0.25, 0.5, 1.0],
        help="of --scale: the sizes run, to show the growth",
    )
    parser.add_argument("--stages", nargs="+", default=STAGES, choices=STAGES)
    parser.add_argument("--rounds", type=int, default=1000, help="bootstrap rounds of the ratings")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--workdir", default="/tmp/isqaflow-cpu-bench")
    parser.add_argument("--json", help="also write the rows here")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--inputs", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return child(args)

    print(f"CPU: {cpu_model()} ({os.cpu_count()} CPUs visible); python {platform.python_version()}")
    print(f"{'stage':<22}{'size':>8}{'items':>12}  {'unit':<14}{'wall s':>9}{'peak MB':>9}")
    rows = []
    for stage in args.stages:
        for fraction in args.fractions:
            size = args.scale * fraction
            folder = Path(args.workdir) / f"{stage}-{size:g}"
            shutil.rmtree(folder, ignore_errors=True)
            inputs = build_inputs(stage, folder, size, args.seed)
            if stage == "retrieve_bm25":  # its input is convert_rag's output (not timed here)
                subprocess.run(
                    [
                        sys.executable,
                        __file__,
                        "--child",
                        "convert_rag",
                        "--inputs",
                        json.dumps(inputs),
                        "--folder",
                        str(folder),
                    ],
                    check=True,
                    capture_output=True,
                    text=True,
                )
            result = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--child",
                    stage,
                    "--inputs",
                    json.dumps(inputs),
                    "--folder",
                    str(folder),
                    "--rounds",
                    str(args.rounds),
                    "--seed",
                    str(args.seed),
                ],
                capture_output=True,
                text=True,
            )
            if result.returncode != 0:
                sys.exit(f"{stage} at {size:g} failed:\n{result.stderr[-3000:]}")
            info = json.loads(result.stdout.split("RESULT ", 1)[1])
            row = {"stage": stage, "size": size, **info}
            rows.append(row)
            print(
                f"{stage:<22}{size:>8g}{info['items']:>12}  {info['unit']:<14}{info['wall_s']:>9.1f}"
                f"{info['peak_mb']:>9.0f}",
                flush=True,
            )
            shutil.rmtree(folder, ignore_errors=True)
    if args.json:
        Path(args.json).write_text(json.dumps({"cpu": cpu_model(), "rows": rows}, indent=1) + "\n")


if __name__ == "__main__":
    main()
