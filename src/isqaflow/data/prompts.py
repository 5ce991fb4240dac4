"""The papers' published judge prompts, parsed from the authors' own files.

The repository holds no copy of them: ``config/paper.yaml`` pins the files in the
authors' public repositories (``downloads:``, with SHA-256 checksums) and these
parsers turn them into structured prompts for the judges' request builders
(:func:`isqaflow.drfr.judge.first_turn`, :func:`isqaflow.arena.judging.judge.pair_request`).

* **InFoBench** (``qinyiwei/InfoBench``, ``evaluation.py``): the judge instruction is
  the module constant ``SYS_MSG`` and the turns are f-strings in
  ``run_evaluation``: the first user turn with and without an input, and each later
  question.  The file is read with :mod:`ast` -- never imported or executed -- and
  the three f-strings become templates with the fields ``{system}``, ``{input}``,
  ``{response}`` and ``{question}``; the text is kept verbatim.  ``config/paper.yaml``
  pins commit ``d47415ef`` ("fix the typos in the SYS MSG"): the earlier ``d72abac``
  has OCR-garbled words in ``SYS_MSG`` ("Ouestions", "NOchoice", "Howevernote").
* **RAG-QA Arena** (``awslabs/rag-qa-arena``, ``templates/``): the system text
  (``pairwise_lfrqa_system.txt``, the whole file), the user template
  (``templateStr`` of ``pairwise_lfrqa.cfg``, a ConfigObj triple-quoted value with
  ``{x.question}``, ``{x.response1}``, ``{x.response2}``) and the in-context examples
  (``pairwise_lfrqa_examples.json``: query, response_1, response_2, label,
  thinking).  As in the authors' ``LFRQADataProcessor``, the messages are the system
  turn, each example as a user turn and the reply
  ``<thinking>...</thinking><rating>N</rating>``, then the pair as a user turn.

A file whose layout differs fails with :class:`PromptFormatError` naming the file
and what is missing.
"""

from __future__ import annotations

import ast
import os
import re
from dataclasses import dataclass
from typing import Any

from isqaflow.io import RecordError, loads, read_text

Message = dict[str, str]


class PromptFormatError(ValueError):
    """A published prompt file does not have the layout the parser expects."""


# ----------------------------------------------------------------------------- InFoBench


@dataclass(frozen=True)
class InfoBenchPrompt:
    """The InFoBench judge's turns (``str.format`` templates over system/input/response/question)."""

    system: str
    first_with_input: str
    first_without_input: str
    next_turn: str
    source: str = ""

    def first_turn(self, response: str, input_text: str, question: str) -> str:
        # the authors test `if input_task:`; an input of blanks counts as none here, as in ours
        template = self.first_with_input if input_text.strip() else self.first_without_input
        return template.format(
            system=self.system, input=input_text, response=response, question=question
        )

    def later_turn(self, question: str) -> str:
        return self.next_turn.format(question=question)


_INFOBENCH_FIELDS = {
    "SYS_MSG": "system",
    "input_task": "input",
    "output": "response",
    "question": "question",
}


def _fstring_template(node: ast.JoinedStr, path: str) -> tuple[str, frozenset[str]]:
    parts, fields = [], set()
    for value in node.values:
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            parts.append(value.value.replace("{", "{{").replace("}", "}}"))
        elif (
            isinstance(value, ast.FormattedValue)
            and isinstance(value.value, ast.Name)
            and value.conversion == -1
            and value.format_spec is None
            and value.value.id in _INFOBENCH_FIELDS
        ):
            name = _INFOBENCH_FIELDS[value.value.id]
            parts.append("{" + name + "}")
            fields.add(name)
        else:
            raise PromptFormatError(
                f"{path}: line {node.lineno}: an f-string field other than "
                f"{sorted(_INFOBENCH_FIELDS)} in a judge turn"
            )
    return "".join(parts), frozenset(fields)


def parse_infobench_prompt(source: str, path: str = "<evaluation.py>") -> InfoBenchPrompt:
    """The judge prompt of InFoBench's ``evaluation.py`` (its source text)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as err:
        raise PromptFormatError(f"{path}: not Python source: {err}") from None
    system = None
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["SYS_MSG"]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            system = node.value.value
    if not system:
        raise PromptFormatError(f"{path}: no string constant SYS_MSG (the judge instruction)")
    turns: dict[frozenset[str], str] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["content"]
            and isinstance(node.value, ast.JoinedStr)
        ):
            template, fields = _fstring_template(node.value, path)
            if fields in turns and turns[fields] != template:
                raise PromptFormatError(
                    f"{path}: line {node.lineno}: two different turns with fields {sorted(fields)}"
                )
            turns[fields] = template
    wanted = {
        "first turn with an input": frozenset({"system", "input", "response", "question"}),
        "first turn without an input": frozenset({"system", "response", "question"}),
        "later turn": frozenset({"question"}),
    }
    missing = [label for label, fields in wanted.items() if fields not in turns]
    if missing:
        raise PromptFormatError(
            f'{path}: no `content = f"..."` for the {", ".join(missing)} '
            f"(found turns with fields {[sorted(f) for f in turns]})"
        )
    return InfoBenchPrompt(
        system=system,
        first_with_input=turns[wanted["first turn with an input"]],
        first_without_input=turns[wanted["first turn without an input"]],
        next_turn=turns[wanted["later turn"]],
        source=path,
    )


def load_infobench_prompt(path: str | os.PathLike) -> InfoBenchPrompt:
    return parse_infobench_prompt(read_text(path), str(path))


# ----------------------------------------------------------------------------- RAG-QA Arena


@dataclass(frozen=True)
class ArenaPrompt:
    """RAG-QA Arena's pairwise judge: system text, user template, in-context examples."""

    system: str
    template: str  # with {x.question}, {x.response1}, {x.response2}
    examples: tuple[dict[str, str], ...]
    source: str = ""

    def user_message(self, query: str, answer_1: str, answer_2: str) -> str:
        values = {"x.question": query, "x.response1": answer_1, "x.response2": answer_2}
        return _ARENA_FIELD.sub(lambda m: values[m.group(1)], self.template)

    @staticmethod
    def reply(thinking: str, label: str) -> str:
        return f"<thinking>{thinking}</thinking><rating>{label}</rating>"

    def messages(
        self, query: str, answer_1: str, answer_2: str, few_shot: bool = True
    ) -> list[Message]:
        messages = [{"role": "system", "content": self.system}]
        if few_shot:
            for example in self.examples:
                messages.append(
                    {
                        "role": "user",
                        "content": self.user_message(
                            example["query"], example["response_1"], example["response_2"]
                        ),
                    }
                )
                messages.append(
                    {
                        "role": "assistant",
                        "content": self.reply(example["thinking"], example["label"]),
                    }
                )
        messages.append({"role": "user", "content": self.user_message(query, answer_1, answer_2)})
        return messages


_ARENA_FIELD = re.compile(r"\{(x\.question|x\.response1|x\.response2)\}")
_TRIPLE_QUOTED = re.compile(r'^\s*templateStr\s*=\s*"""(.*?)"""', re.DOTALL | re.MULTILINE)
_EXAMPLE_KEYS = ("query", "response_1", "response_2", "label", "thinking")


def parse_arena_prompt(
    system: str,
    config: str,
    examples: str,
    paths: tuple[str, str, str] = ("system", "cfg", "examples"),
) -> ArenaPrompt:
    """RAG-QA Arena's judge prompt from the texts of its three template files."""
    system_path, config_path, examples_path = paths
    if not system.strip():
        raise PromptFormatError(f"{system_path}: empty system text")
    match = _TRIPLE_QUOTED.search(config)
    if match is None:
        raise PromptFormatError(f'{config_path}: no templateStr = """...""" value')
    template = match.group(1)
    found = set(_ARENA_FIELD.findall(template))
    if found != {"x.question", "x.response1", "x.response2"}:
        raise PromptFormatError(
            f"{config_path}: templateStr must hold {{x.question}}, {{x.response1}} and "
            f"{{x.response2}}; found {sorted(found)}"
        )
    try:  # strictly, as every JSON input (a key twice refused, the line named)
        items: Any = loads(examples_path, examples)
    except RecordError as err:
        raise PromptFormatError(str(err)) from None
    if not isinstance(items, list):
        raise PromptFormatError(f"{examples_path}: a JSON list of examples expected")
    for index, item in enumerate(items):
        missing = [
            key
            for key in _EXAMPLE_KEYS
            if not isinstance(item, dict) or not isinstance(item.get(key), str)
        ]
        if missing:
            raise PromptFormatError(
                f"{examples_path}: example {index}: missing or non-text field(s) {missing}"
            )
        if item["label"] not in ("0", "1", "2"):
            raise PromptFormatError(
                f"{examples_path}: example {index}: field label must be 0, 1 or 2, "
                f"got {item['label']!r}"
            )
    return ArenaPrompt(
        system=system,
        template=template,
        examples=tuple({key: item[key] for key in _EXAMPLE_KEYS} for item in items),
        source=config_path,
    )


def load_arena_prompt(
    system: str | os.PathLike, config: str | os.PathLike, examples: str | os.PathLike
) -> ArenaPrompt:
    paths = (str(system), str(config), str(examples))
    texts = [read_text(p) for p in paths]  # as every input: UTF-8, a byte-order mark dropped
    return parse_arena_prompt(*texts, paths=paths)
