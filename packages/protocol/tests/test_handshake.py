"""The ``hello`` handshake: what a worker answers, and how a host reads any answer."""

from __future__ import annotations

import pytest

from i_protocol import PROTOCOL_VERSION, Worker
from i_protocol import __version__ as library
from i_protocol.handshake import EXTENSIONS, UNKNOWN, hello_answer, hello_request, parse_hello, speaks


def request(data):
    return {"id": 1, "event": "hello", "workspace": "/tmp", "data": data}


def test_a_worker_answers_hello_with_who_it_is_and_its_extensions():
    worker = Worker("budget", "0.2.3", dist_name="i-worker-budget", extensions=("cut_estimates", "rejection"))
    sent = hello_request("i-core", "0.3.3", ["problems"])
    answer = worker.handle(request(sent))["data"]
    assert answer == {
        "package": "i-worker-budget",
        "version": "0.2.3",
        "protocol": PROTOCOL_VERSION,
        "library": library,
        "extensions": ["cut_estimates", "rejection"],
    }
    hello = parse_hello(answer, sent)
    assert hello.known and hello.package == "i-worker-budget" and hello.extensions == {"cut_estimates", "rejection"}
    assert speaks(hello)


def test_hello_needs_no_request_context():
    answer = Worker("demo", "1").handle({"id": 7, "event": "hello", "data": hello_request("i-core", "0.3.3")})
    assert answer["id"] == 7 and answer["data"]["package"] == "i-demo"


def test_a_catch_all_handler_does_not_swallow_hello():
    worker = Worker("steer", "1.0")

    @worker.hook("*")
    def everything(data, req):
        return {**data, "touched": True}

    answer = worker.handle(request(hello_request("i-core", "0.3.3")))["data"]
    assert answer["package"] == "i-steer" and answer["extensions"] == []


def test_data_returned_unchanged_is_unknown_protocol_1_without_extensions():
    sent = hello_request("i-core", "0.3.3", ["problems"])
    hello = parse_hello(dict(sent), sent)
    assert hello == UNKNOWN and not hello.known and hello.protocol == "1" and hello.extensions == frozenset()
    assert speaks(hello)


@pytest.mark.parametrize("answer", [None, [], "hello", {"package": 3}, {"unrelated": True}])
def test_anything_that_is_no_hello_answer_is_unknown(answer):
    assert parse_hello(answer, hello_request("i-core", "0.3.3")) == UNKNOWN


@pytest.mark.parametrize("protocol", [2, "2"])
def test_a_declared_other_protocol_is_kept_so_the_host_can_refuse_it(protocol):
    sent = hello_request("i-core", "0.3.3")
    full = {"package": "x-worker", "version": "9", "protocol": protocol, "library": "9.0", "extensions": []}
    assert parse_hello(full, sent).protocol == "2" and not speaks(parse_hello(full, sent))
    bare = {**sent, "protocol": protocol}  # an echo that changed only the protocol
    assert parse_hello(bare, sent).protocol == "2" and parse_hello(bare, sent).package is None


def test_unregistered_extension_names_are_ignored_in_answers_and_refused_when_sent():
    sent = hello_request("i-core", "0.3.3")
    answer = {"package": "w", "version": "1", "protocol": "1", "library": "x", "extensions": ["chunks", "warp"]}
    assert parse_hello(answer, sent).extensions == {"chunks"}
    with pytest.raises(ValueError, match="warp"):
        hello_request("i-core", "0.3.3", ["warp"])
    with pytest.raises(ValueError, match="warp"):
        hello_answer("w", "1", "0.2", ["warp"])


def test_the_registry_holds_spec_and_our_own_extension_names():
    spec = {"previous_attempt", "chunks", "after_compact_rounds", "after_compact_commit", "rejection", "tools_list"}
    ours = {"provider_request", "progress", "cut_estimates", "tool_output_budget"}
    assert spec | ours <= set(EXTENSIONS)
