"""Synthetic agent transcripts and a synthetic reference token counter for the budget benches.

There is no real model in this sandbox, so "real usage" is SYNTHETIC: ``reference_tokens`` is the
scripted model server's own counter (``i_scripted.reference_tokens``, documented there: GPT-2
style split: optional leading space + a letter run, digit runs of up to 3, single punctuation,
whitespace runs; letter runs longer than 7 cost one token per started 7 letters; every non-ASCII
character costs one token), and ``request_tokens`` is its ``prompt_tokens`` of the same request on
the OpenAI wire, so the benches measure against the numbers the end-to-end tests see. On English
prose it gives ~4.5 bytes/token, on code ~3 and on CJK ~3, which is the shape of real BPE
tokenizers, but it is not any provider's tokenizer.
"""

from __future__ import annotations

import random
from typing import Any

import orjson

from i_scripted import prompt_tokens
from i_scripted import reference_tokens as reference_tokens  # re-exported: the benches import it from here

WORDS = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "that",
    "for",
    "it",
    "as",
    "with",
    "was",
    "on",
    "be",
    "by",
    "this",
    "are",
    "from",
    "or",
    "have",
    "an",
    "they",
    "which",
    "one",
    "you",
    "were",
    "her",
    "all",
    "she",
    "there",
    "would",
    "their",
    "we",
    "him",
    "been",
    "has",
    "when",
    "who",
    "will",
    "more",
    "no",
    "if",
    "out",
    "so",
    "said",
    "what",
    "up",
    "its",
    "about",
    "into",
    "than",
    "them",
    "can",
    "only",
    "other",
    "new",
    "some",
    "could",
    "time",
    "these",
    "two",
    "may",
    "then",
    "do",
    "first",
    "any",
    "my",
    "now",
    "such",
    "like",
    "our",
    "over",
    "man",
    "me",
    "even",
    "most",
    "made",
    "after",
    "also",
    "did",
    "many",
    "before",
    "must",
    "through",
    "back",
    "years",
    "where",
    "much",
    "your",
    "way",
    "well",
    "down",
    "should",
    "because",
    "each",
    "just",
    "those",
    "people",
    "how",
    "too",
    "little",
    "state",
    "good",
    "very",
    "make",
    "world",
    "still",
    "own",
    "see",
    "men",
    "work",
    "long",
    "get",
    "here",
    "between",
    "both",
    "life",
    "being",
    "under",
    "never",
    "day",
    "same",
    "another",
    "know",
    "while",
    "function",
    "return",
    "value",
    "context",
    "budget",
    "worker",
    "request",
    "estimate",
    "history",
    "message",
    "compaction",
    "session",
]
CJK = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下以生会自着去之过家学对可里后"
CODE_LINES = (
    "def {name}(self, value: int) -> int:",
    "    if value is None:",
    '        raise ValueError(f"bad value: {{value!r}}")',
    "    return self._cache.get(value, 0) + {num}",
    "for index, item in enumerate(items):",
    "    total += item.size * {num}",
    "class {Name}Error(Exception):",
    '    """Raised when {name} fails."""',
    "import os, sys  # {name}",
    'result = {{"{name}": {num}, "ok": True}}',
)


def request_tokens(history: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """Synthetic "real usage" input tokens of a chat request (chat-ML-like framing included)."""
    wire_tools = [{"type": "function", "function": tool} for tool in tools]
    return prompt_tokens("openai", {"messages": history, "tools": wire_tools})


def _prose(rng: random.Random, words: int) -> str:
    out = []
    for n in range(words):
        word = rng.choice(WORDS)
        out.append(word.capitalize() if n % 14 == 0 else word)
        if n % 14 == 13:
            out[-1] += "."
    return " ".join(out)


def _code(rng: random.Random, lines: int) -> str:
    names = ["load", "save", "parse", "render", "budget", "fetch", "merge"]
    return "\n".join(
        rng.choice(CODE_LINES).format(
            name=rng.choice(names), Name=rng.choice(names).capitalize(), num=rng.randint(0, 9999)
        )
        for _ in range(lines)
    )


def _cjk(rng: random.Random, chars: int) -> str:
    return "".join(rng.choice(CJK) for _ in range(chars))


def _json_output(rng: random.Random, rows: int) -> str:
    return orjson.dumps(
        [
            {
                "id": rng.randint(1, 10**6),
                "path": f"src/{rng.choice(WORDS)}/{rng.choice(WORDS)}.py",
                "size": rng.randint(10, 99999),
                "ok": rng.random() > 0.5,
            }
            for _ in range(rows)
        ],
        option=orjson.OPT_INDENT_2,
    ).decode()


TOOLS = [
    {
        "name": "read",
        "description": "Read a text file of the workspace.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {
        "name": "shell",
        "description": "Run a shell command and return its output.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
    {
        "name": "search",
        "description": "Search files by pattern.",
        "parameters": {"type": "object", "properties": {"pattern": {"type": "string"}, "regex": {"type": "boolean"}}},
    },
]


def transcript(kind: str, turns: int, seed: int = 7, scale: int = 1) -> list[dict[str, Any]]:
    """An agent transcript: system, then per turn user -> assistant tool call -> tool result -> answer.

    ``kind`` is ``prose``, ``code``, ``json``, ``cjk`` or ``mixed`` (the content of tool results).
    """
    rng = random.Random(f"{kind}-{seed}")
    history: list[dict[str, Any]] = [{"role": "system", "content": _prose(rng, 250)}]
    for turn in range(turns):
        flavour = rng.choice(["prose", "code", "json", "cjk"]) if kind == "mixed" else kind
        user = _cjk(rng, 60) if flavour == "cjk" else _prose(rng, 40)
        history.append({"role": "user", "content": user})
        call_id = f"call_{turn}"
        args = orjson.dumps({"path": f"src/{rng.choice(WORDS)}.py"}).decode()
        history.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "read", "arguments": args}}],
            }
        )
        if flavour == "code":
            output = _code(rng, 60 * scale)
        elif flavour == "json":
            output = _json_output(rng, 25 * scale)
        elif flavour == "cjk":
            output = _cjk(rng, 600 * scale)
        else:
            output = _prose(rng, 400 * scale)
        history.append({"role": "tool", "tool_call_id": call_id, "content": output})
        answer = _cjk(rng, 80) if flavour == "cjk" else _prose(rng, 60)
        history.append({"role": "assistant", "content": answer, "_saved_at": "2026-11-30T07:00:00Z"})
    return history


def history_of_bytes(target_bytes: int, seed: int = 1) -> list[dict[str, Any]]:
    """A mixed transcript of about ``target_bytes`` wire bytes (≈ target/4 tokens of English-ish text)."""
    history = transcript("mixed", 1, seed=seed)
    size = len(orjson.dumps(history))
    turn = 1
    while size < target_bytes:
        chunk = transcript("mixed", 8, seed=seed * 1000 + turn)[1:]
        history.extend(chunk)
        size += len(orjson.dumps(chunk))
        turn += 1
    return history
