"""The budget worker: its handlers registered on one i_protocol.Worker."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from i_protocol import ProtocolError, Worker

from .__about__ import __version__
from .estimate import estimate_budget
from .policy import parse_policy

if TYPE_CHECKING:
    from i_protocol import Request

worker = Worker("budget", __version__, dist_name="i-worker-budget")


@worker.hook("context_budget")
def context_budget(data: dict[str, Any], request: Request) -> dict[str, Any]:
    """Answer ``context_budget``: the complete input data plus ``budget_result``."""
    policy = parse_policy(data.get("budget"), data.get("max_tokens"))
    if not policy.calibrate:
        outcome = estimate_budget(data, policy=policy)
        outcome.result["calibration"] = {"enabled": False, "status": "off"}
        return {**data, "budget_result": outcome.result}
    return {**data, "budget_result": _calibrated(data, request, policy)}


def _calibrated(data: dict[str, Any], request: Request, policy: Any) -> dict[str, Any]:
    from .calibration import calibration_path, load_calibration, record_observation

    model = data.get("model")
    try:
        path = calibration_path(request.state_dir())
    except ProtocolError as exc:
        # Without a workspace there is nowhere to learn: plain estimate, and the result says so.
        outcome = estimate_budget(data, policy=policy)
        outcome.result["calibration"] = {"enabled": True, "status": "unavailable", "detail": str(exc)}
        return outcome.result
    learned = load_calibration(path, model) if isinstance(model, str) else None
    ratio = learned.ratio if learned is not None and learned.ratio is not None else 1.0
    outcome = estimate_budget(data, policy=policy, bytes_per_token=ratio, observe=True)
    info: dict[str, Any] = {
        "enabled": True,
        "status": "active" if ratio != 1.0 else "learning",
        "samples": 0 if learned is None else learned.samples,
        "bytes_per_token": None if ratio == 1.0 else ratio,
        "detail": None if learned is None else learned.detail,
        "observation": None,
    }
    if outcome.observation is not None:
        info["observation"] = record_observation(path, outcome.observation)
    outcome.result["calibration"] = info
    return outcome.result
