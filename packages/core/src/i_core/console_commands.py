"""The console's commands (``/help`` lists them from one registry, ``commands``): what each does to
the agent and what it says on the screen.

A handler gets the text after its name and returns ``None`` (done: back to the prompt), ``EXIT``,
or a request to send (a custom command's text). Failures are one line (``i: /NAME: …``); nothing a
command does reaches the model except a custom command's request.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from .commands import Command, Registry
from .compaction import describe
from .custom_commands import command_folders, load_commands
from .errors import CoreError
from .screen import context_used, status_line
from .session import open_session, session_files, session_folders, session_info
from .settings import PROTOCOLS, ApiConfig
from .undo import undo_command
from .usage_totals import UsageTotals

if TYPE_CHECKING:
    from .agent import Agent
    from .screen import Screen

EXIT = object()
"""A handler's answer: leave the console."""
MAX_FOCUS = 2000
"""``/compact FOCUS``: at most this many characters."""
PICKER_ROWS = 20


@dataclass
class ConsoleState:
    """What the commands work on: the agent (its session may change), the screen, how to ask the
    user a line, the config the console started with (``models`` for ``/model``) and the totals."""

    agent: Agent
    screen: Screen
    ask: Callable[[str], str]
    root: ApiConfig
    totals: UsageTotals
    listed: list[Path] = field(default_factory=list)
    """The sessions the last ``/sessions`` numbered (``/resume N``)."""


def console_registry(state: ConsoleState) -> Registry:
    """The built-in commands and the custom ones (``custom_commands``); a file left out is said once."""
    registry = Registry()
    _add_builtins(state, registry)
    runtime = state.agent.runtime
    folders = command_folders(runtime.workspace, runtime.paths.config_dir)
    custom, problems = load_commands(folders, set(registry.names()))
    for problem in problems:
        state.screen.failure(f"i: warning: {problem}")
    for item in custom:
        usage = f"/{item.name}" + (f" {item.argument_hint}" if item.argument_hint else "")
        registry.add(Command(item.name, usage, item.description, item.expand, origin=item.origin))
    return registry


def _add_builtins(state: ConsoleState, registry: Registry) -> None:
    def add(name: str, usage: str, summary: str, run: Callable[[str], object], *aliases: str) -> None:
        registry.add(Command(name, usage, summary, run, aliases=aliases))

    add("help", "/help", "list the commands", lambda _a: _help(state, registry))
    add("exit", "/exit", "leave the console (Ctrl-D too)", lambda _a: EXIT, "quit")
    add(
        "compact",
        "/compact [FOCUS]",
        "compact the conversation now, keeping FOCUS in view",
        lambda a: _compact(state, a),
    )
    add(
        "model",
        "/model [NAME [PROTOCOL]]",
        "show or switch the model for the rest of the session",
        lambda a: _model(state, a),
    )
    add("status", "/status", "tokens, context, cache share, compactions and cost", lambda _a: _status(state))
    add("sessions", "/sessions", "list this project's sessions", lambda _a: _sessions(state))
    add("resume", "/resume [NAME|N]", "continue another session (a picker without NAME)", lambda a: _resume(state, a))
    add("new", "/new", "start a new session (this one stays saved)", lambda _a: _new(state))
    add("undo", "/undo [N]", "undo the last turn (or turn N): files and conversation", lambda a: _undo(state, a))
    add(
        "plan", "/plan", "plan mode: read and search only; the model answers with a plan", lambda _a: _plan(state, True)
    )
    add("act", "/act", "leave plan mode and carry out the plan", lambda _a: _plan(state, False))
    add("more", "/more [N]", "show the newest (or Nth newest) folded tool result whole", lambda a: _more(state, a))


def _help(state: ConsoleState, registry: Registry) -> None:
    screen = state.screen
    screen.note("[i] commands (a line that starts with // is sent with one /):")
    for line in registry.help_lines():
        screen.note(line)
    screen.note(
        "[i] input: end a line with \\ to go on, or Alt-Enter for a new line; a paste is one request; "
        "while a turn runs, a typed line is queued for it; Ctrl-C cancels the turn",
        dim=True,
    )


def _more(state: ConsoleState, args: str) -> None:
    activity = state.screen.activity
    state.screen.note(activity.more(args) if activity else "[i] no tool activity is shown (--quiet)")


def _fail(state: ConsoleState, command: str, problem: object) -> None:
    state.screen.failure(f"i: /{command}: {problem}")


# -- /compact ------------------------------------------------------------------------------------


def _compact(state: ConsoleState, focus: str) -> None:
    agent = state.agent
    if len(focus) > MAX_FOCUS:
        _fail(state, "compact", f"the focus is {len(focus)} characters; at most {MAX_FOCUS}")
        return
    if not agent.hooks.has("compact_plan"):
        _fail(state, "compact", "no compactor is installed: enable the compact module in plugins.json")
        return
    try:
        outcome = agent.compact(agent.history, force=True, focus=focus or None)
    except CoreError as exc:
        _fail(state, "compact", exc)
        return
    state.screen.note(describe(outcome))
    if focus and outcome.committed and not outcome.focus_used:
        state.screen.note(
            "[i] the compactor ignored the focus: it did not report using it (a compactor without the "
            "focus extension, such as an older or third-party one, summarises as usual)",
            dim=True,
        )


# -- /model --------------------------------------------------------------------------------------


def _model(state: ConsoleState, args: str) -> None:
    agent, screen = state.agent, state.screen
    words = args.split()
    if not words:
        screen.note(f"[i] {_describe_model(agent.config)}")
        if state.root.models:
            screen.note(f"[i] configured (config.json models): {', '.join(state.root.models)}", dim=True)
        return
    if len(words) > 2 or (len(words) == 2 and words[1] not in PROTOCOLS):
        _fail(state, "model", f"usage: /model [NAME [PROTOCOL]]; PROTOCOL is one of {', '.join(PROTOCOLS)}")
        return
    config = chosen_config(state.root, agent.config, words[0], words[1] if len(words) == 2 else None)
    if config == agent.config:
        screen.note(f"[i] already: {_describe_model(config)}")
        return
    try:
        agent.use_config(config)
    except CoreError as exc:
        _fail(state, "model", f"{exc}; still {agent.config.model} ({agent.config.protocol})")
        return
    screen.note(f"[i] now {_describe_model(config)} for the rest of this session; the history is kept")
    _measure(state, "the new window")


def chosen_config(root: ApiConfig, current: ApiConfig, name: str, protocol: str | None) -> ApiConfig:
    """The config ``/model NAME [PROTOCOL]`` switches to: config.json's ``models`` entry NAME, the
    top level when NAME is its model, else the current config with that model (and protocol): the
    same server, window and key; another model's prices are not known."""
    if name in root.models:
        config = root.models[name]
    elif name == root.model:
        config = dataclasses.replace(root, models={})
    else:
        same = name == current.model
        config = dataclasses.replace(current, model=name, prices=current.prices if same else None, models={})
    return config if protocol is None else dataclasses.replace(config, protocol=protocol)


def _describe_model(config: ApiConfig) -> str:
    window = config.budget.get("context_window")
    size = f"window {window:,} tokens" if isinstance(window, int) else "no context window configured"
    return f"model {config.model} (protocol {config.protocol}, {config.base_url}, {size})"


def _measure(state: ConsoleState, where: str) -> None:
    """The budget of the history as it stands (after ``/model``, ``/new``, ``/resume``): said now, acted
    on before the next request (a compaction first when it does not fit)."""
    agent, screen = state.agent, state.screen
    if not agent.history or not agent.budget.enabled:
        return
    try:
        check = agent.budget.check(agent.history, agent.tool_schemas)
    except CoreError as exc:
        state.screen.failure(f"i: the budget could not measure the history: {exc}")
        return
    if check is None:
        return
    agent.stats.last_budget = check.verdict.raw
    verdict = check.verdict
    size = f"estimated at {verdict.estimate:,} tokens" if verdict.estimate is not None else "measured"
    if not verdict.fits:
        screen.note(f"[i] the history does not fit {where} ({verdict.explain()}): the next request compacts first")
    elif verdict.recommend_compact and agent.hooks.has("compact_plan"):
        screen.note(
            f"[i] the history is {size}, over the compaction trigger in {where}: the next request compacts first"
        )
    else:
        screen.note(f"[i] the history is {size} in {where}", dim=True)


# -- /status -------------------------------------------------------------------------------------


def _status(state: ConsoleState) -> None:
    agent, screen, totals = state.agent, state.screen, state.totals
    screen.note(f"[i] {_describe_model(agent.config)}")
    screen.note(f"[i] session {agent.session.path} ({len(agent.history)} messages)")
    tokens = totals.tokens
    if totals.requests:
        line = (
            f"[i] this console: {totals.requests} model request(s), tokens in {tokens.get('input_tokens', 0):,} "
            f"/ out {tokens.get('output_tokens', 0):,}"
        )
        read = tokens.get("cache_read_tokens")
        if read is not None and tokens.get("input_tokens"):
            line += f", cache read {round(100 * read / tokens['input_tokens'])}% of the input"
        screen.note(line)
    else:
        screen.note("[i] this console: no model request yet")
    budget = agent.stats.last_budget or {}
    used, window = context_used(agent.model.last_usage or {}, budget), agent.config.budget.get("context_window")
    if used is not None and isinstance(window, int) and window > 0:
        screen.note(f"[i] context {used:,} of {window:,} tokens ({round(100 * used / window)}%)")
    stats = agent.stats
    screen.note(f"[i] {stats.compactions} compaction(s) of {stats.compact_attempts} attempt(s); {totals.cost_line()}")
    screen.note(status_line(agent), dim=True)


# -- sessions ------------------------------------------------------------------------------------


def _session_paths(state: ConsoleState) -> list[Path]:
    runtime = state.agent.runtime
    return session_files(session_folders(runtime.workspace, runtime.state_dir))


def _sessions(state: ConsoleState) -> None:
    screen, agent = state.screen, state.agent
    paths = _session_paths(state)[:PICKER_ROWS]
    state.listed = paths
    if not paths:
        screen.note("[i] no saved sessions in this project yet")
        return
    runtime = agent.runtime
    current = agent.session.path
    for number, path in enumerate(paths, 1):
        info = session_info(path, runtime.workspace, runtime.workspace_id)
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(info.updated))
        what = f"({info.problem})" if info.problem else f"{info.messages} messages  {info.title or '-'}"
        mark = "*" if path == current else " "
        screen.note(f"{mark}{number:>3}  {info.name}  {when}  {what}")
    screen.note("[i] /resume N or /resume NAME continues one (* is this session)", dim=True)


def _resume(state: ConsoleState, args: str) -> None:
    target = args.strip()
    if not target:
        _sessions(state)
        if not state.listed:
            return
        try:
            target = state.ask("[i] resume which? number or name (Enter cancels): ").strip()
        except (EOFError, KeyboardInterrupt):
            target = ""
        if not target:
            state.screen.note("[i] nothing resumed", dim=True)
            return
    path = _find_session(state, target)
    if path is None:
        _fail(state, "resume", f"no session {target!r} in this project (/sessions lists them)")
        return
    if path == state.agent.session.path:
        state.screen.note("[i] that is this session already")
        return
    _switch(state, path, private=False, verb="continuing")


def _find_session(state: ConsoleState, target: str) -> Path | None:
    if target.isdigit() and state.listed and 1 <= int(target) <= len(state.listed):
        return state.listed[int(target) - 1]
    for path in _session_paths(state):
        if path.name.removesuffix(".json") == target:
            return path
    return None


def _new(state: ConsoleState) -> None:
    runtime = state.agent.runtime
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
    folder = runtime.state_dir / "sessions"
    path, number = folder / f"{stamp}-{os.getpid()}.json", 1
    while path.exists() or path == state.agent.session.path:
        number += 1
        path = folder / f"{stamp}-{os.getpid()}-{number}.json"
    _switch(state, path, private=True, verb="new session")


def _switch(state: ConsoleState, path: Path, *, private: bool, verb: str) -> None:
    agent, runtime = state.agent, state.agent.runtime
    old = agent.session
    try:
        session = open_session(path, runtime.workspace, runtime.workspace_id, private=private)
    except CoreError as exc:
        _fail(state, "resume" if not private else "new", exc)
        return
    try:
        agent.use_session(session)
    except CoreError as exc:
        session.close()
        agent.use_session(old)
        _fail(state, "resume" if not private else "new", f"{exc}; still in {old.path}")
        return
    old.close()
    count = len(agent.history)
    state.screen.note(
        f"[i] {verb}: {session.path} ({count} message{'s' if count != 1 else ''}); the last one stays saved"
    )
    _measure(state, "the window")


# -- the commands that were here before ----------------------------------------------------------


def _undo(state: ConsoleState, args: str) -> None:
    def yes(question: str) -> bool:
        try:
            return state.ask(f"[i] {question} [y/N]: ").strip().lower() in ("y", "yes")
        except (EOFError, KeyboardInterrupt):
            return False

    try:
        undo_command(state.agent, args, state.screen.note, yes)
    except CoreError as exc:
        state.screen.failure(f"i: {exc}")


def _plan(state: ConsoleState, plan: bool) -> None:
    state.agent.set_plan(plan)
    state.screen.note(
        "[i] plan mode: read and search only; the model is asked for a plan; /act carries it out"
        if plan
        else "[i] normal mode: write, edit and shell are available again, with your approval",
        dim=True,
    )
