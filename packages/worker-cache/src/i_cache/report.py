"""The cache report: Σ cache-read input / Σ input over known usage, and whether the target is met.

``build_report`` returns the stable ``--json`` schema (``schema: "i-cache-report/1"``);
``render_table`` is the human-readable form.
"""

from __future__ import annotations

from typing import Any

from .fingerprint import CLASSIFICATIONS
from .settings import CacheSettings

SCHEMA = "i-cache-report/1"


def _ratio(read: int, total: int) -> float | None:
    return None if total <= 0 else read / total


def _block(counter: dict[str, Any]) -> dict[str, Any]:
    """One breakdown row: counts, tokens and the observed ratio of that slice."""
    prepared = int(counter.get("prepared", 0))
    observed = int(counter.get("observed", 0))
    return {
        "prepared": prepared,
        "preparations": int(counter.get("preparations", 0)),
        "retries": int(counter.get("retries", 0)),
        "observed": observed,
        "unprepared_observed": int(counter.get("unprepared_observed", 0)),
        "pending": max(0, prepared - observed),
        "known_usage": int(counter.get("known", 0)),
        "unknown_usage": int(counter.get("unknown", 0)),
        "duplicate_responses": int(counter.get("duplicate_responses", 0)),
        "unknown_reasons": dict(sorted(counter.get("unknown_reasons", {}).items())),
        "input_tokens": int(counter.get("input_tokens", 0)),
        "cache_read_tokens": int(counter.get("cache_read_tokens", 0)),
        "cache_creation_tokens": int(counter.get("cache_creation_tokens", 0)),
        "observed_token_hit_ratio": _ratio(
            int(counter.get("cache_read_tokens", 0)), int(counter.get("input_tokens", 0))
        ),
    }


def target_verdict(totals: dict[str, Any], target: float) -> tuple[bool | None, str | None]:
    """``target_met`` and, when it is null, why: unknown usage, unobserved preparations, no data."""
    if totals["unknown_usage"] > 0:
        return None, f"{totals['unknown_usage']} response(s) had unknown usage"
    if totals["pending"] > 0:
        return None, f"{totals['pending']} prepared request(s) have no observed response"
    ratio = totals["observed_token_hit_ratio"]
    if ratio is None:
        return None, "no input tokens observed yet"
    return ratio >= target, None


def requests_observed(totals: dict[str, Any]) -> int:
    """Model responses observed (prepared or not): how much a hit ratio stands on.

    ``target_met`` stays as seed 001 §8 defines it whatever this count is; a reader says how many
    requests a verdict covers (one request has nothing cached to read yet).
    """
    return int(totals["observed"]) + int(totals["unprepared_observed"])


def build_report(
    doc: dict[str, Any] | None,
    settings: CacheSettings,
    *,
    workspace: str,
    workspace_id: str,
    stats_file: str,
) -> dict[str, Any]:
    """The report document for a stats document (None when no stats file exists yet)."""
    from .stats import empty_stats

    source = doc if doc is not None else empty_stats()
    totals = _block(source["totals"])
    met, why = target_verdict(totals, settings.target_hit_ratio)
    by_class = {name: _block(source["by_classification"].get(name, {})) for name in CLASSIFICATIONS}
    for name, counter in sorted(source["by_classification"].items()):
        by_class.setdefault(name, _block(counter))
    return {
        "schema": SCHEMA,
        "workspace": workspace,
        "workspace_id": workspace_id,
        "stats_file": stats_file,
        "stats_exists": doc is not None,
        "enabled": settings.enabled,
        "mode": settings.mode,
        "namespace": settings.namespace,
        "target_hit_ratio": settings.target_hit_ratio,
        "observed_token_hit_ratio": totals["observed_token_hit_ratio"],
        "target_met": met,
        "target_met_null_reason": why,
        "requests": requests_observed(totals),
        "totals": totals,
        "by_classification": by_class,
        "by_protocol": {name: _block(counter) for name, counter in sorted(source["by_protocol"].items())},
        "streams": len(source["streams"]),
        "records": len(source["records"]),
        "summaries": _summaries(source.get("summaries")),
        "created_at": source.get("created_at"),
        "updated_at": source.get("updated_at"),
    }


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.2f}%"


def _summaries(raw: Any) -> dict[str, Any]:
    """The ``summaries`` counts (zeros where a stats file has none)."""
    raw = raw if isinstance(raw, dict) else {}
    out: dict[str, Any] = {}
    for slot in ("ahead", "at_trigger"):
        block = raw.get(slot) if isinstance(raw.get(slot), dict) else {}
        out[slot] = {
            key: int(block.get(key, 0)) if isinstance(block.get(key, 0), int) else 0
            for key in ("requests", "known", "input_tokens", "cache_read_tokens")
        }
    sessions = raw.get("sessions")
    out["sessions"] = len(sessions) if isinstance(sessions, list) else 0
    return out


def render_table(report: dict[str, Any]) -> str:
    """A human-readable report: summary lines then one row per classification and protocol."""
    totals = report["totals"]
    met = report["target_met"]
    verdict = "unknown" if met is None else ("met" if met else "NOT met")
    lines = [
        f"cache report for {report['workspace']} (workspace {report['workspace_id']})",
        f"stats file: {report['stats_file']}" + ("" if report["stats_exists"] else " (not created yet)"),
        f"mode: {report['mode']}  namespace: {report['namespace']}  enabled: {str(report['enabled']).lower()}",
        f"observed token hit ratio: {_pct(report['observed_token_hit_ratio'])}"
        f"  (cache-read {totals['cache_read_tokens']} / input {totals['input_tokens']} tokens)",
        f"target {_pct(report['target_hit_ratio'])}: {verdict}"
        + (f" ({report['target_met_null_reason']})" if met is None else "")
        + f" over {report['requests']} request{'' if report['requests'] == 1 else 's'}",
        f"prepared {totals['prepared']} (+{totals['retries']} retries), observed {totals['observed']}, "
        f"known usage {totals['known_usage']}, unknown usage {totals['unknown_usage']}, pending {totals['pending']}",
        "",
    ]
    header = ("slice", "prepared", "observed", "unknown", "input", "cache read", "creation", "hit ratio")
    rows = [header]
    for group, label in (("by_classification", ""), ("by_protocol", "protocol ")):
        for name, block in report[group].items():
            rows.append(
                (
                    f"{label}{name}",
                    str(block["prepared"]),
                    str(block["observed"] + block["unprepared_observed"]),
                    str(block["unknown_usage"]),
                    str(block["input_tokens"]),
                    str(block["cache_read_tokens"]),
                    str(block["cache_creation_tokens"]),
                    _pct(block["observed_token_hit_ratio"]),
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    for row in rows:
        cells = (cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row))
        lines.append("  ".join(cells).rstrip())
    made = report["summaries"]
    if made["ahead"]["requests"] or made["at_trigger"]["requests"]:
        ahead, trigger = made["ahead"], made["at_trigger"]
        lines.append("")
        lines.append(
            f"compaction summary requests: {ahead['requests']} made ahead of the trigger ({ahead['input_tokens']} "
            f"input tokens), {trigger['requests']} at the trigger ({trigger['input_tokens']} input tokens), "
            f"for {made['sessions']} session(s); used or wasted: the core's run summary says"
        )
    if totals["unknown_reasons"]:
        lines.append("")
        lines.append("unknown usage reasons: " + ", ".join(f"{k} {v}" for k, v in totals["unknown_reasons"].items()))
    return "\n".join(lines) + "\n"
