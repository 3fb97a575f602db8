"""Deterministic corpus of long agent transcripts with planted facts (issue 6, quality benchmark).

Each transcript is an internal history (OpenAI chat shape: system, user, assistant with
``tool_calls``, tool results) of a few hundred messages of ordinary agent work (file reads,
pytest logs, greps, narration) with these facts planted at seeded positions:

- ``approval``: staged approvals in structured ``workspace_*`` results (seed 003 shape:
  ``data.status: "pending_approval"``, ``data.approval{id, kind, title, destructive, resume}``),
  with the resume call written in varied producer formatting (compact, indented, reordered keys,
  ``\\u`` escapes, a 2 KB ``workspace_command`` stdin, a 30-action browser batch). Two facts each:
  the ``approval_*`` id and the resume call's raw JSON span, which must survive byte for byte;
- ``tx`` / ``job``: transaction and job ids in structured and plain-text results;
- ``path``: files modified through ``write_file {"path"}``, ``edit_file {"file_path"}`` and
  ``apply_patch`` (a patch naming the file in ``*** Update File:`` / ``*** Add File:`` headers);
- ``request``: the latest real user request before the cut (its words, whitespace-normalised);
- ``error``: the failing test of a pytest log, in the middle of a long log;
- ``secret``: machine-shaped secret values (API key, GitHub token in a remote URL, AWS key,
  a ``"password"`` in a JSON config, a bearer token in a curl command) that must NOT survive.

``generate(seed)`` returns ``Transcript(history, facts)``; each fact records the message index
it was planted in, so the runner only counts facts that lie in the compacted prefix.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

CRITICAL_KINDS = ("approval", "resume", "tx", "job")
"""Protocol-critical fact kinds: the local-mode target is 100% of these."""


@dataclass
class Fact:
    """One planted fact: ``value`` must (or, for ``secret``, must not) appear in the output."""

    kind: str
    value: str
    index: int
    """Index in the history of the message that carries the fact."""


@dataclass
class Transcript:
    """A generated history and its planted facts."""

    seed: int
    history: list[dict[str, Any]]
    facts: list[Fact] = field(default_factory=list)


_WORDS = (
    *("parser", "lexer", "cache", "index", "router", "handler", "schema", "config", "loader", "writer"),
    *("reader", "token", "stream", "buffer", "session", "queue", "worker", "policy", "budget", "summary"),
    *("planner", "resolver", "adapter", "client", "server"),
)
_VERBS = ("Fix", "Refactor", "Speed up", "Document", "Add tests for", "Harden", "Simplify", "Port")


class _Builder:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.seed = seed
        self.history: list[dict[str, Any]] = [
            {"role": "system", "content": "You are i, a coding agent working in /project."}
        ]
        self.facts: list[Fact] = []
        self.calls = 0
        self.requests = 0

    # -- primitives -----------------------------------------------------------------------

    def ident(self, prefix: str) -> str:
        return f"{prefix}_{self.rng.getrandbits(48):012x}"

    def word(self) -> str:
        return self.rng.choice(_WORDS)

    def plant(self, kind: str, value: str, index: int | None = None) -> None:
        self.facts.append(Fact(kind, value, len(self.history) - 1 if index is None else index))

    def user(self, text: str) -> None:
        self.history.append({"role": "user", "content": text})

    def say(self, text: str) -> None:
        self.history.append({"role": "assistant", "content": text})

    def batch(self, name: str, arguments: dict[str, Any] | str, result: str, text: str = "") -> int:
        """One assistant tool call and its result; returns the result's index."""
        self.calls += 1
        call_id = f"call_{self.seed}_{self.calls}"
        args = arguments if isinstance(arguments, str) else json.dumps(arguments)
        self.history.append(
            {
                "role": "assistant",
                "content": text,
                "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": args}}],
            }
        )
        self.history.append({"role": "tool", "tool_call_id": call_id, "content": result})
        return len(self.history) - 1

    def code(self, lines: int) -> str:
        out = []
        for i in range(lines):
            w = self.word()
            out.append(f"def {w}_{i}(value):\n    return normalise_{w}(value, depth={i % 7})\n")
        return "".join(out)

    # -- noise ----------------------------------------------------------------------------

    def noise(self) -> None:
        kind = self.rng.randrange(4)
        module = f"src/{self.word()}/{self.word()}_{self.rng.randrange(100)}.py"
        if kind == 0:
            body = {"path": module, "content": self.code(self.rng.randrange(40, 120)), "truncated": False}
            self.batch("read_file", {"path": module}, json.dumps(body), f"Reading {module}.")
        elif kind == 1:
            lines = [f"tests/test_{self.word()}.py::test_case_{j} PASSED" for j in range(self.rng.randrange(60, 160))]
            self.batch(
                "shell", {"cmd": "pytest -q tests"}, "\n".join([*lines, f"{len(lines)} passed"]), "Running tests."
            )
        elif kind == 2:
            hits = [f"{module}:{j}: {self.word()} = load_{self.word()}()" for j in range(self.rng.randrange(20, 80))]
            self.batch("grep", {"pattern": self.word(), "path": "src"}, "\n".join(hits), "")
        else:
            self.say(
                f"The {self.word()} module delegates to the {self.word()} layer; "
                f"I will look at how the {self.word()} is built next. " * self.rng.randrange(2, 6)
            )

    # -- planted facts --------------------------------------------------------------------

    def request(self) -> None:
        self.requests += 1
        text = (
            f"{self.rng.choice(_VERBS)} the {self.word()} {self.word()} module (request R{self.seed}-{self.requests}); "
            f"keep the public API stable and do not push without asking."
        )
        self.user(text)
        self.plant("request", text)

    def approval(self) -> None:
        tx = self.ident("tx")
        approval = self.ident("approval")
        style = self.rng.randrange(5)
        if style == 3:
            stdin = "".join(f"line {i}: {self.word()} {self.word()}\n" for i in range(90))[:2048]
            resume_value: Any = {
                "tool": "workspace_command",
                "arguments": {"action": "run", "executable": "python", "args": ["-m", "tool"], "stdin": stdin},
            }
            kind, tool, title = "command", "workspace_command", "run the migration script"
        elif style == 4:
            actions = [{"type": "click", "selector": f"#{self.word()}-{i}"} for i in range(30)]
            resume_value = {"tool": "workspace_browser", "arguments": {"action": "batch", "actions": actions}}
            kind, tool, title = "browser", "workspace_browser", "submit the release form"
        else:
            resume_value = {
                "tool": "workspace_edit",
                "arguments": {"action": "commit", "transaction_id": tx, "reason": f"naïve {self.word()} → fix"},
            }
            kind, tool, title = "transaction", "workspace_edit", f"édit {self.word()}.py"
        if style == 1:
            resume_raw = json.dumps(resume_value, indent=2)
        elif style == 2:
            args = resume_value["arguments"]
            resume_raw = '{ "arguments" : ' + json.dumps(args, separators=(" , ", " : ")) + ' , "tool":"' + tool + '" }'
        else:
            resume_raw = json.dumps(resume_value, separators=(",", ":"), ensure_ascii=style == 0)
        markdown = "Plan details. " * self.rng.randrange(200, 500)
        result = (
            '{"ok":true,"data":{"status":"pending_approval","mode":"ask","transaction_id":"' + tx + '",'
            '"approval":{"id":"' + approval + '","kind":"' + kind + '","title":' + json.dumps(title) + ","
            '"destructive":' + ("true" if style == 3 else "false") + ',"resume":' + resume_raw + "},"
            '"markdown":' + json.dumps(markdown) + '},"retention":{"omit_when_summarizing":["data.markdown"]}}'
        )
        index = self.batch(tool, {"action": "stage", "path": f"src/{self.word()}.py"}, result, "Staging the change.")
        self.plant("approval", approval, index)
        self.plant("resume", resume_raw, index)
        self.plant("tx", tx, index)
        self.say(f"The change is staged as {approval}; it needs your /accept before I can commit it.")

    def job(self) -> None:
        job = self.ident("job")
        style = self.rng.randrange(2)
        if style == 0:
            result = json.dumps(
                {"ok": True, "data": {"job_id": job, "status": "running", "executable": "cargo", "startedAt": "t0"}}
            )
        else:
            log = "\n".join(f"[{i:04d}] compiling crate {self.word()}" for i in range(self.rng.randrange(50, 200)))
            result = f"Started background job {job} (pid {self.rng.randrange(1000, 9999)})\n{log}\nstill running"
        index = self.batch("workspace_command", {"action": "start", "cmd": "cargo build --release"}, result)
        self.plant("job", job, index)

    def write(self) -> None:
        style = self.rng.randrange(3)
        path = f"src/{self.word()}/{self.word()}_{self.rng.randrange(1000)}.py"
        if style == 0:
            index = self.batch("write_file", {"path": path, "content": self.code(30)}, "written", "Writing the module.")
        elif style == 1:
            index = self.batch(
                "edit_file", {"file_path": path, "old": "return 1", "new": "return 2"}, "1 replacement", "Editing."
            )
        else:
            patch = f"*** Begin Patch\n*** Update File: {path}\n@@\n-    return 1\n+    return 2\n*** End Patch\n"
            index = self.batch("apply_patch", {"input": patch}, "Done!", "Patching.")
        self.plant("path", path, index - 1)

    def error(self) -> None:
        test = f"tests/test_{self.word()}_{self.rng.randrange(1000)}.py::test_{self.word()}_{self.rng.randrange(100)}"
        before = [f"tests/test_{self.word()}.py::test_ok_{j} PASSED" for j in range(self.rng.randrange(80, 160))]
        after = [f"tests/test_{self.word()}.py::test_more_{j} PASSED" for j in range(self.rng.randrange(80, 160))]
        failure = [
            f"FAILED {test} - AssertionError: expected {self.rng.randrange(9)} tokens",
            "E       assert 2 == 3",
        ]
        log = "\n".join([*before, *failure, *after, "1 failed, 300 passed"])
        index = self.batch("shell", {"cmd": "pytest -q"}, log, "Running the full test suite.")
        self.plant("error", test, index)

    def secret(self) -> None:
        alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

        def token(n: int) -> str:
            return "".join(self.rng.choice(alphabet) for _ in range(n))

        style = self.rng.randrange(5)
        if style == 0:
            value = "sk-proj-" + token(40)
            result = f"HOME=/home/dev\nOPENAI_API_KEY={value}\nPATH=/usr/bin\nLANG=C.UTF-8"
            index = self.batch("shell", {"cmd": "env"}, result)
        elif style == 1:
            value = "ghp_" + token(36)
            result = f"origin\thttps://x-access-token:{value}@github.com/acme/app.git (fetch)"
            index = self.batch("shell", {"cmd": "git remote -v"}, result)
        elif style == 2:
            value = "AKIA" + token(16).upper()
            body = {"path": "config/aws.json", "content": f'{{"aws_access_key_id": "{value}", "region": "eu-west-1"}}'}
            index = self.batch("read_file", {"path": "config/aws.json"}, json.dumps(body))
        elif style == 3:
            value = "pw-" + token(18)
            body = {"database": {"host": "db.internal", "user": "app", "password": value}}
            index = self.batch("read_file", {"path": "config/db.json"}, json.dumps(body))
        else:
            value = "sk-live-" + token(32)
            cmd = f"curl -H 'Authorization: Bearer {value}' https://api.example.com/v1/status"
            index = self.batch("shell", {"cmd": cmd}, '{"status":"ok"}') - 1
        self.plant("secret", value, index)


def generate(seed: int, episodes: int = 40) -> Transcript:
    """A transcript of ``episodes`` user turns with planted facts (deterministic in ``seed``)."""
    b = _Builder(seed)
    plants = [b.approval] * 4 + [b.job] * 4 + [b.write] * 6 + [b.error] * 2 + [b.secret] * 3
    schedule: dict[int, list[Any]] = {}
    for plant in plants:
        schedule.setdefault(b.rng.randrange(episodes), []).append(plant)
    for episode in range(episodes):
        b.request()
        for _ in range(b.rng.randrange(2, 6)):
            b.noise()
        for plant in schedule.get(episode, []):
            plant()
            b.noise()
        b.say(f"Done with step {episode}: the {b.word()} part works now.")
    # The live tail: a final request and one tool batch, which the cut keeps as the suffix.
    b.user(f"Now run the linter and summarise what is left (request R{seed}-final).")
    b.batch("shell", {"cmd": "ruff check ."}, "All checks passed!", "Running the linter.")
    b.say("The linter is clean.")
    return Transcript(seed, b.history, b.facts)
