"""i-scripted-model: a scripted OpenAI- (Chat and Responses) and Anthropic-compatible model server.

A dev-only test double for the i runtime's tests, benches and the main job's stand-in; never a
runtime dependency. It is no kinder than reality: usage is counted from the content
(``tokens``), requests are checked like a real provider would (``wire``), and a context window is
enforced with the bodies real servers send (``overflow``, ``capacity``).

Modules: ``script`` (steps), ``server`` (the HTTP server), ``tokens``, ``wire``, ``overflow``,
``capacity``, ``replies``/``openai_replies``/``responses_replies``/``anthropic_replies`` (answers), ``cli``
(``python -m i_scripted``).
"""

from i_scripted.__about__ import __version__
from i_scripted.overflow import CONTEXT_STYLES, context_error
from i_scripted.script import STEP_KEYS, ScriptError, Step, check_step, load_script
from i_scripted.server import (
    ANTHROPIC_PATH,
    OPENAI_PATH,
    RESPONSES_PATH,
    SECRET_HEADERS,
    RecordedRequest,
    ScriptedModel,
)
from i_scripted.tokens import IMAGE_TOKENS, prompt_tokens, reference_tokens, requested_output_tokens

__all__ = [
    "ANTHROPIC_PATH",
    "CONTEXT_STYLES",
    "IMAGE_TOKENS",
    "OPENAI_PATH",
    "RESPONSES_PATH",
    "SECRET_HEADERS",
    "STEP_KEYS",
    "RecordedRequest",
    "ScriptError",
    "ScriptedModel",
    "Step",
    "__version__",
    "check_step",
    "context_error",
    "load_script",
    "prompt_tokens",
    "reference_tokens",
    "requested_output_tokens",
]
