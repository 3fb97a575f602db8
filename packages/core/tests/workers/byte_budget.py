"""A third-party budget worker as a careless author writes it: stdlib only, silent to ``hello``
(it returns any event it does not know unchanged), no package, no version.

It anchors on real usage when the history's prefix matches, but counts everything else at one
token per UTF-8 byte, whatever usage taught: the estimates i-worker-budget 0.1.0 made. With a
model that packs four bytes into a token, a compacted history at 40% of the bytes is estimated
above the anchored count of the whole, so no real reduction can pass seed 001 §7's check.
"""

import hashlib
import json
import sys


def size(value):
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))


def fingerprint(messages):
    # Top-level "_" metadata of a message is the core's, not the model's (seed 001 §7).
    plain = [{k: v for k, v in m.items() if not k.startswith("_")} for m in messages]
    return hashlib.sha256(json.dumps(plain, sort_keys=True).encode("utf-8", "surrogatepass")).hexdigest()


def budget(data):
    history, tools, usage = data.get("history", []), data.get("tools", []), data.get("usage")
    window = int((data.get("budget") or {}).get("context_window", 8000))
    reserve = int((data.get("budget") or {}).get("output_reserve", data.get("max_tokens") or 0))
    whole = sum(size(m) for m in history) + size(tools)
    estimate, method = whole, "utf8_bytes"
    if isinstance(usage, dict) and isinstance(usage.get("prefix_messages"), int):
        prefix = usage["prefix_messages"]
        if 0 < prefix <= len(history) and usage.get("prefix_fingerprint") == fingerprint(history[:prefix]):
            covered = prefix + 1 if history[prefix:][:1] and history[prefix]["role"] == "assistant" else prefix
            rest = sum(size(m) for m in history[covered:])  # the reply is the anchored output
            estimate, method = usage["input_tokens"] + usage["output_tokens"] + rest, "usage_anchor"
    trigger = min(int(window * 0.8), window - reserve)
    data["budget_result"] = {
        "fits": estimate <= window - reserve,
        "estimate": estimate,
        "comparable_estimate": whole,
        "capacity": window - reserve,
        "recommend_compact": whole > trigger and bool(data.get("compact")),  # by bytes: carelessly early
        "estimate_method": method,
        "reasons": [] if estimate <= window - reserve else [f"estimate {estimate} over {window - reserve}"],
        "anchor": {
            "model": data.get("model"),
            "prefix_messages": len(history),
            "prefix_fingerprint": fingerprint(history),
        },
    }
    return data


for line in sys.stdin:
    frame = json.loads(line)
    data = frame.get("data", {})
    if frame.get("event") == "context_budget":
        data = budget(data)
    sys.stdout.write(json.dumps({"id": frame["id"], "data": data}) + "\n")
    sys.stdout.flush()
