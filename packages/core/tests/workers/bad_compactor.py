"""A compactor that breaks one rule of the contract, chosen by its argument (for test_check.py):

- ``cut_in_batch``: compact_plan returns the index of a tool result (a cut inside a tool batch);
- ``drops_field``: compact_plan answers a patch (cut and state only), dropping every other field;
- ``banner``: prints a banner on stdout before serving.

Otherwise it is a correct local compactor, so only the named check fails.
"""

import sys

from i_protocol import Worker

MODE = sys.argv.pop(1)
worker = Worker("compact", "0.0.1", dist_name="bad-compactor")


@worker.hook("compact_plan")
def compact_plan(data, request):
    history = data["history"]
    users = [i for i, m in enumerate(history) if i >= 2 and m["role"] == "user" and history[i - 1]["role"] != "tool"]
    cut = users[-1] if users else None
    if MODE == "cut_in_batch":
        cut = max(i for i, m in enumerate(history) if m["role"] == "tool")
    if MODE == "drops_field":
        return {"cut": cut, "state": {}}
    return {**data, "cut": cut, "state": {"mode": MODE}}


@worker.hook("before_compact")
def before_compact(data, request):
    return {**data, "summary": f"{len(data['messages'])} earlier messages."}


@worker.hook("after_compact")
def after_compact(data, request):
    return data


if __name__ == "__main__":
    if MODE == "banner":
        print("bad-compactor 0.0.1 ready", flush=True)
    sys.exit(worker.main())
