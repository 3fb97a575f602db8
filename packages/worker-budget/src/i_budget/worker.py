"""The budget worker: its handlers registered on one i_protocol.Worker."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from i_protocol import Paths, ProtocolError, Worker, WorkerConfig
from i_protocol.config import read_json_object
from i_protocol.errors import SettingsError

from .__about__ import __version__
from .density import Rates, merged, observation_scales, rates_from_scales
from .errors import BudgetError
from .estimate import Observation, estimate_budget
from .observations import FileStore, MemoryStore, density_path, entry_key
from .policy import Policy, parse_policy

if TYPE_CHECKING:
    from i_protocol import Request

worker = Worker("budget", __version__, dist_name="i-worker-budget")
# Declared in `hello` (SPEC §3.4); set as an attribute so an older i-protocol only ignores it.
worker.extensions = ("cut_estimates", "exact_count", "rejection", "tool_output_budget")


def check_config(config: WorkerConfig, paths: Paths) -> str:
    """The config check of ``i-budget --check-config``: the policy this worker is sent is config.json's
    ``budget`` (with its ``max_tokens``), checked as at every request, naming config.json."""
    path = os.path.join(paths.config_dir, "config.json")
    if not os.path.isfile(path):
        return f"{path} absent (the core reports it)"
    data = read_json_object(path)
    # Without max_tokens in the file the core sends its own default, which is not this worker's to
    # know: the reserve is then taken as 0 here, and what depends on it is left to the first request.
    max_tokens = data.get("max_tokens", 0)
    try:
        parse_policy(data.get("budget"), max_tokens)
    except ProtocolError as exc:
        raise SettingsError(f"{path}: {exc}") from None
    return path


# Not at each request: the policy arrives in every request and is checked there.
if hasattr(worker, "config_check"):  # an older i-protocol has no config checks
    worker.config_check(at_request=False)(check_config)
_memory = MemoryStore()
"""What this process learned when a request names no workspace to keep it in."""


@worker.hook("context_budget")
def context_budget(data: dict[str, Any], request: Request | None) -> dict[str, Any]:
    """Answer ``context_budget``: the complete input data plus ``budget_result`` (checked as the
    core reads it: ``i_protocol.events``)."""
    from i_protocol.events import to_json  # the event types: at the first request, not at start

    policy = parse_policy(data.get("budget"), data.get("max_tokens"))
    if policy.byte_estimator:
        outcome = estimate_budget(data, policy=policy)
        outcome.result["density"] = {"rule": "utf8_bytes", "detail": "budget.tokenizer is 'utf8_bytes'"}
        outcome.result["provisional"] = False  # the byte estimate is what was asked for
        return to_json("context_budget", {**data, "budget_result": outcome.result}, data)
    return to_json("context_budget", {**data, "budget_result": _learning(data, request, policy)}, data)


def _learning(data: dict[str, Any], request: Request | None, policy: Policy) -> dict[str, Any]:
    origin = data.get("origin", "")
    if not isinstance(origin, str):
        raise BudgetError(f"origin must be a string (the model server's scheme://host:port), got {origin!r}")
    model = data.get("model")
    key = entry_key(origin, model if isinstance(model, str) else "")
    store: FileStore | MemoryStore = _memory
    detail: str | None = None
    if request is not None:
        try:
            store = FileStore(density_path(request.state_dir()))
        except ProtocolError as exc:
            detail = f"no workspace state ({exc}); densities are kept in this process only"
    learned = store.load(key)
    recorded: list[str] = []

    def learn(observations: list[Observation]) -> Rates:
        scales = learned.scales
        for observation in observations:
            shares = observation_scales(observation.classes, observation.tokens)
            if all(share is None for share in shares):
                recorded.append(f"{observation.source}: not learned (too small or implausible)")
                continue
            status = store.record(key, observation.key + ":" + observation.source, shares)
            recorded.append(f"{observation.source}: {status}")
            if status.startswith("recorded"):
                scales = merged(scales, shares)
        learned.scales = scales
        return rates_from_scales(scales)

    outcome = estimate_budget(data, policy=policy, learn=learn)
    density = rates_from_scales(learned.scales).describe()
    density.update(observed=recorded, detail=detail or learned.detail)
    outcome.result["density"] = density
    return outcome.result
