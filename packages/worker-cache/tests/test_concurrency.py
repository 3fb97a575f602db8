"""Eight real worker processes updating one stats file at once lose no count."""

from __future__ import annotations

import threading

from i_protocol.testing import scaled

from .conftest import Env, chat_body, request_data

PROCESSES = 8
ROUNDS = 6


def test_eight_processes_share_one_stats_file_without_lost_counts(env: Env) -> None:
    workers = [env.spawn() for _ in range(PROCESSES)]
    barrier = threading.Barrier(PROCESSES)
    failures: list[BaseException] = []

    def drive(index: int) -> None:
        worker = workers[index]
        try:
            barrier.wait(timeout=scaled(30))
            for round_ in range(ROUNDS):
                meta = env.call(worker, "before_request", request_data(chat_body(round_)))["request_meta"]
                env.call(worker, "request_retry", {"request_meta": meta, "attempt": 2, "reason": "503"})
                usage = {"prompt_tokens": 100, "prompt_tokens_details": {"cached_tokens": 50}}
                env.call(
                    worker, "after_response", {"protocol": "openai", "response": {"usage": usage}, "request_meta": meta}
                )
        except BaseException as exc:  # reported below, with the thread's index
            failures.append(exc)

    threads = [threading.Thread(target=drive, args=(i,)) for i in range(PROCESSES)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=scaled(120))
    assert not failures, failures
    totals = env.stats()["totals"]
    n = PROCESSES * ROUNDS
    assert totals["prepared"] == n
    assert totals["preparations"] == 2 * n
    assert totals["retries"] == n
    assert totals["observed"] == n
    assert totals["known"] == n
    assert totals["input_tokens"] == 100 * n
    assert totals["cache_read_tokens"] == 50 * n
    records = env.stats()["records"]
    assert len(records) == n
    assert all(r["status"] == "observed" and r["preparations"] == 2 for r in records)
    assert not list(env.stats_path().parent.glob("*.corrupt-*"))
