"""Transport faults against the scripted model over real HTTP: retries, timeouts, caps, redirects."""

from __future__ import annotations

import email.utils
import socket
from typing import Any

import pytest

from i_core.errors import ModelError
from i_core.providers import exchange, get_adapter
from i_core.transport import MAX_BODY_BYTES, StreamResult, Transport, TransportError
from i_protocol.testing import scaled
from i_scripted import ScriptedModel

OK = {"text": "fine"}
BODY = {"model": "m", "messages": [{"role": "user", "content": "SECRET-PROMPT"}]}
HEADERS = {"authorization": "Bearer sk-SECRET-KEY", "content-type": "application/json"}


class Recorder:
    def __init__(self) -> None:
        self.retries: list[tuple[int, str]] = []
        self.sleeps: list[float] = []

    def on_retry(self, attempt: int, reason: str) -> None:
        self.retries.append((attempt, reason))

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)


def url(model: ScriptedModel) -> str:
    return model.base_url + "/chat/completions"


def post(model: ScriptedModel, rec: Recorder, *, body: dict[str, Any] = BODY, **kw: Any) -> Any:
    options: dict[str, Any] = {"sleep": rec.sleep, "backoff": 0.01}
    options.update(kw)
    with Transport(**options) as transport:
        return transport.post(url(model), body, HEADERS, stream=False, on_retry=rec.on_retry)


def test_500_three_times_then_200_is_retried_and_each_retry_announced() -> None:
    rec = Recorder()
    script = [{"status": 500, "error_message": "boom"}] * 3 + [OK]
    with ScriptedModel(script) as model:
        answer = post(model, rec)
        assert len(model.requests) == 4
    assert answer["choices"][0]["message"]["content"] == "fine"
    assert [n for n, _ in rec.retries] == [1, 2, 3]
    assert all(reason == "HTTP 500: boom" for _, reason in rec.retries)
    assert len(rec.sleeps) == 3 and rec.sleeps[0] < rec.sleeps[1] < rec.sleeps[2]  # exponential backoff


@pytest.mark.parametrize("status", [429, 502, 503, 504, 529])
def test_transient_statuses_are_retried(status: int) -> None:
    rec = Recorder()
    with ScriptedModel([{"status": status}, OK]) as model:
        post(model, rec)
    assert rec.retries == [(1, f"HTTP {status}: scripted error {status}")]


def test_after_the_last_retry_the_error_carries_status_and_provider_message() -> None:
    rec = Recorder()
    with (
        ScriptedModel([{"status": 503, "error_message": "overloaded"}] * 4) as model,
        pytest.raises(TransportError) as caught,
    ):
        post(model, rec)
    error = caught.value
    assert isinstance(error, ModelError)
    assert error.status == 503 and error.provider_message == "overloaded"
    assert "HTTP 503: overloaded" in str(error) and "gave up after 4 attempts" in str(error)
    assert len(rec.retries) == 3


def test_retries_zero_fails_at_once() -> None:
    rec = Recorder()
    with ScriptedModel([{"status": 500}]) as model, pytest.raises(TransportError, match="after 1 attempts"):
        post(model, rec, retries=0)
    assert rec.retries == []


@pytest.mark.parametrize(
    ("headers", "expected"),
    [({"Retry-After": "7"}, 7.0), ({"Retry-After": "99999"}, 60.0), ({"retry-after-ms": "250"}, 0.25)],
)
def test_retry_after_is_honoured_and_bounded(headers: dict[str, str], expected: float) -> None:
    rec = Recorder()
    with ScriptedModel([{"status": 429, "headers": headers}, OK]) as model:
        post(model, rec)
    assert rec.sleeps == [expected]


def test_retry_after_as_http_date() -> None:
    rec = Recorder()
    now = 1_800_000_000.0
    when = email.utils.formatdate(now + 30, usegmt=True)
    with ScriptedModel([{"status": 429, "headers": {"Retry-After": when}}, OK]) as model:
        post(model, rec, clock=lambda: now)
    assert rec.sleeps == [30.0]


@pytest.mark.parametrize(
    "headers",
    [
        {"Retry-After": "nan"},
        {"Retry-After": "NaN"},
        {"retry-after-ms": "NaN"},
        {"Retry-After": "inf"},
        {"retry-after-ms": "-Infinity"},
        {"Retry-After": "-5"},
        {"retry-after-ms": "-1", "Retry-After": "nan"},
    ],
)
def test_a_retry_after_that_is_not_a_usable_number_is_absent(headers: dict[str, str]) -> None:
    rec = Recorder()
    with ScriptedModel([{"status": 429, "headers": headers}, OK]) as model:
        post(model, rec)
    # Normal backoff (0.01 s base here), as if the header were absent.
    assert len(rec.sleeps) == 1 and 0.01 <= rec.sleeps[0] <= 0.015


def test_a_long_wait_is_said_first() -> None:
    rec = Recorder()
    said: list[str] = []
    with ScriptedModel([{"status": 429, "headers": {"Retry-After": "1e9"}}, {"status": 503}, OK]) as model:
        post(model, rec, notice=said.append, backoff=6.0)
    assert rec.sleeps[0] == 60.0 and rec.sleeps[1] >= 6.0
    assert said[0] == "HTTP 429: scripted error 429: waiting 60 s (the server's Retry-After) before retry 1"
    assert said[1].startswith("HTTP 503: scripted error 503: waiting ") and said[1].endswith(" s before retry 2")


def test_a_short_wait_is_not_said() -> None:
    rec = Recorder()
    said: list[str] = []
    with ScriptedModel([{"status": 429, "headers": {"Retry-After": "5"}}, OK]) as model:
        post(model, rec, notice=said.append)
    assert rec.sleeps == [5.0] and said == []


def test_a_model_that_never_answers_times_out_and_is_retried() -> None:
    rec = Recorder()
    with (
        ScriptedModel([{"delay": 30, "text": "late"}, {"delay": 30, "text": "late"}]) as model,
        pytest.raises(
            TransportError, match=r"model request did not finish within 0.3 s \(timeout in config.json\)"
        ) as caught,
    ):
        post(model, rec, timeout=0.3, retries=1)
    assert rec.retries == [(1, "timed out")]
    assert caught.value.status is None


def test_connection_refused_is_retried_then_reported() -> None:
    rec = Recorder()
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with Transport(sleep=rec.sleep, retries=2) as transport, pytest.raises(TransportError, match="connection failed"):
        transport.post(
            f"http://127.0.0.1:{port}/v1/chat/completions", BODY, HEADERS, stream=False, on_retry=rec.on_retry
        )
    assert [n for n, _ in rec.retries] == [1, 2]


def test_a_connection_error_names_the_endpoint_but_never_its_userinfo_or_query() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://user:s3cret@127.0.0.1:{port}/v1/chat/completions?key=sk-abc123"
    with Transport(retries=0) as transport, pytest.raises(TransportError) as caught:
        transport.post(url, BODY, HEADERS, stream=False, on_retry=lambda *_: None)
    message = str(caught.value)
    assert f"model request to http://127.0.0.1:{port}/v1/chat/completions connection failed" in message
    assert "s3cret" not in message and "user" not in message and "sk-abc123" not in message and "key=" not in message


def test_a_redirect_is_never_followed() -> None:
    rec = Recorder()
    target = "http://other.example/v1/chat/completions"
    with ScriptedModel([{"redirect": target}, OK]) as model:
        with pytest.raises(TransportError) as caught:
            post(model, rec)
        assert len(model.requests) == 1
    assert str(caught.value) == f"model endpoint answered 307 redirect to {target}; redirects are not followed"
    assert caught.value.status == 307 and rec.retries == []


@pytest.mark.parametrize("protocol", ["openai", "anthropic"])
def test_4xx_reports_the_provider_message_without_secrets(protocol: str) -> None:
    rec = Recorder()
    adapter = get_adapter(protocol)
    with ScriptedModel([{"status": 400, "error_message": "max_tokens is too large"}, OK]) as model:
        with Transport(sleep=rec.sleep) as transport, pytest.raises(TransportError) as caught:
            transport.post(
                adapter.url(model.base_url_for(protocol)),
                {**BODY, "max_tokens": 9},
                {**HEADERS, "anthropic-version": "x"},
                stream=False,
                on_retry=rec.on_retry,
            )
        assert len(model.requests) == 1
    error = caught.value
    assert error.status == 400 and error.provider_message == "max_tokens is too large"
    assert str(error) == "model endpoint answered HTTP 400: max_tokens is too large"
    assert "SECRET" not in str(error) and rec.retries == []


def test_4xx_without_json_shows_a_short_snippet() -> None:
    rec = Recorder()
    with (
        ScriptedModel([{"status": 404, "raw_body": "<html>" + "x" * 1000 + "</html>"}]) as model,
        pytest.raises(TransportError, match=r"HTTP 404: '<html>x+' \.\.\.") as caught,
    ):
        post(model, rec)
    assert caught.value.provider_message is None and len(str(caught.value)) < 400


@pytest.mark.parametrize(
    ("raw", "message"), [("{not json", "body that is not JSON: '{not json'"), ("[1, 2]", "JSON that is not an object")]
)
def test_malformed_200_body_is_a_clear_error(raw: str, message: str) -> None:
    rec = Recorder()
    with ScriptedModel([{"raw_body": raw}]) as model, pytest.raises(TransportError, match=message):
        post(model, rec)
    assert rec.retries == []


def test_malformed_model_json_through_the_adapter_names_what_is_missing() -> None:
    adapter = get_adapter("openai")
    with (
        ScriptedModel([{"raw_body": '{"choices": [{"finish_reason": "stop"}]}'}]) as model,
        Transport() as transport,
        pytest.raises(ModelError, match=r"choices\[0\].message is missing"),
    ):
        exchange(adapter, transport, url(model), BODY, {}, on_retry=Recorder().on_retry)


def test_a_body_over_the_cap_is_stopped() -> None:
    rec = Recorder()
    with (
        ScriptedModel([{"body_bytes": 2 * 1024 * 1024}]) as model,
        pytest.raises(TransportError, match="exceeds the 1048576 byte cap; stopped reading"),
    ):
        post(model, rec, max_body_bytes=1024 * 1024)
    assert rec.retries == []


def test_an_error_body_over_the_cap_is_stopped() -> None:
    rec = Recorder()
    with (
        ScriptedModel([{"status": 400, "raw_body": b"e" * (2 * 1024 * 1024)}]) as model,
        pytest.raises(TransportError, match="exceeds the 1048576 byte cap"),
    ):
        post(model, rec, max_body_bytes=1024 * 1024)


def test_a_streamed_body_over_the_default_48_mib_cap_is_stopped() -> None:
    assert MAX_BODY_BYTES == 48 * 1024 * 1024
    events: list[dict[str, Any]] = []
    with ScriptedModel([{"body_bytes": 49 * 1024 * 1024}]) as model, Transport() as transport:
        assert transport.max_body_bytes == MAX_BODY_BYTES
        with pytest.raises(TransportError, match=f"exceeds the {MAX_BODY_BYTES} byte cap"):
            transport.post(
                url(model),
                {**BODY, "stream": True},
                HEADERS,
                stream=True,
                on_retry=Recorder().on_retry,
                on_event=events.append,
            )
    assert events == []


SSE = (
    ": keep-alive comment\r\n"
    "event: message_start\r\n"
    'data: {"n": 1}\r\n'
    "\r\n"
    'data: {"n":\n'
    "data: 2}\n"
    "\n"
    "data: [DONE]\n"
    "\n"
    'data: {"n": 3}'
)


def test_sse_events_are_decoded_and_passed_on() -> None:
    events: list[dict[str, Any]] = []
    with ScriptedModel([{"raw_body": SSE}]) as model, Transport() as transport:
        result = transport.post(
            url(model),
            {**BODY, "stream": True},
            HEADERS,
            stream=True,
            on_retry=Recorder().on_retry,
            on_event=events.append,
        )
    assert events == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert result == StreamResult(status=200, events=3, done=True)  # [DONE] is no event but marks the end


def test_an_sse_event_that_is_not_json_is_an_error() -> None:
    with (
        ScriptedModel([{"raw_body": 'data: {"ok": 1}\n\ndata: {broken\n\n'}]) as model,
        Transport() as transport,
        pytest.raises(TransportError, match=r"event that is not JSON: '\{broken'"),
    ):
        transport.post(
            url(model),
            {**BODY, "stream": True},
            HEADERS,
            stream=True,
            on_retry=Recorder().on_retry,
            on_event=lambda _e: None,
        )


def test_a_stream_request_needs_on_event() -> None:
    with Transport() as transport, pytest.raises(ValueError, match="on_event"):
        transport.post("http://127.0.0.1:1/", BODY, HEADERS, stream=True, on_retry=Recorder().on_retry)


def test_an_error_raised_while_handling_events_is_not_retried() -> None:
    rec = Recorder()

    def refuse(_event: dict[str, Any]) -> None:
        raise ModelError("adapter refused")

    with ScriptedModel([OK, OK]) as model, Transport(sleep=rec.sleep) as transport:
        with pytest.raises(ModelError, match="adapter refused"):
            transport.post(
                url(model), {**BODY, "stream": True}, HEADERS, stream=True, on_retry=rec.on_retry, on_event=refuse
            )
        assert len(model.requests) == 1
    assert rec.retries == []


def test_loopback_endpoints_bypass_proxy_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy that does not exist: honouring it for loopback would fail the request.
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("ALL_PROXY", "http://127.0.0.1:9")
    with ScriptedModel([OK]) as model:
        answer = post(model, Recorder(), retries=0)
    assert answer["choices"][0]["message"]["content"] == "fine"


def test_prepare_builds_the_client_in_the_background_and_the_request_uses_that_one() -> None:
    transport = Transport(timeout=5)
    transport.prepare("http://127.0.0.1:9/v1/chat/completions")
    prepared = transport._preparing
    assert prepared is not None
    client = transport._client("http://127.0.0.1:9/v1/chat/completions")  # waits for the thread
    assert not prepared.is_alive() and transport._preparing is None
    assert list(transport._clients.values()) == [client]  # one client, built once
    transport.prepare("http://127.0.0.1:9/v1/chat/completions")
    assert transport._preparing is None  # nothing more to prepare
    transport.close()


def _ssl_context(client: Any) -> Any:
    return client._transport._pool._ssl_context  # httpx 0.28 / httpcore 1.x


def test_plain_http_to_loopback_trusts_no_certificate_and_anything_else_gets_the_ca_bundle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A loopback http:// client never makes a TLS connection (no redirects, no proxy): it skips the
    CA bundle and, were it ever asked to, would refuse every certificate."""
    import ssl

    transport = Transport(timeout=5)
    local = _ssl_context(transport._client("http://127.0.0.1:9/v1/chat/completions"))
    assert local.cert_store_stats()["x509_ca"] == 0
    assert local.verify_mode == ssl.CERT_REQUIRED and local.check_hostname
    for url in ("https://127.0.0.1:9/v1/chat/completions", "http://models.example/v1/chat/completions"):
        context = _ssl_context(transport._client(url))
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
        assert context.cert_store_stats()["x509_ca"] > 0, url  # the default bundle
    assert len(transport._clients) == 3  # loopback TLS never reuses the bundle-less client
    transport.close()


def test_warm_up_imports_httpx_without_its_command_line_client() -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from i_core.transport import Transport, warm_up\n"
        "warm_up()\n"
        "Transport(timeout=5)._client('http://127.0.0.1:9/v1')\n"
        "assert 'httpcore' in sys.modules and 'httpx' in sys.modules\n"
        "assert sys.modules.get('httpx._main') is None and 'click' not in sys.modules, sorted(sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=scaled(60))
    assert done.returncode == 0, done.stderr
