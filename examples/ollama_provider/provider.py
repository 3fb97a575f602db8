"""A provider worker: the core's model requests over Ollama's native ``/api/chat`` wire.

The core does not speak this wire; the provider translates both ways (``packages/core/README.md``,
"Provider workers"):

- history format -> Ollama: ``_``-prefixed private fields dropped, text parts joined, base64
  image parts moved to ``images``, tool-call ``arguments`` parsed from their JSON string into an
  object, a tool result named by its tool (Ollama has no call ids);
- Ollama -> reply: an id for every tool call, ``arguments`` back to a JSON string, the finish
  reason (``tool_calls`` when there are calls, else ``done_reason``), usage from
  ``prompt_eval_count`` / ``eval_count`` (absent: unknown, never 0).

The exchange is the provider's own duty: it posts only to the configured origin (``url``),
follows no redirect, retries a 429/5xx or a refused connection at most twice within the
request's ``timeout`` and reports each retry. Python standard library plus ``i_protocol``.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
import uuid

from i_protocol import Worker, WorkerError

worker = Worker("ollama-provider", "1.0.0", dist_name="ollama-provider", extensions=("provider_request",))
RETRIES = 2
_TRANSIENT = (429, 500, 502, 503, 504)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        raise WorkerError(f"ollama provider: the server redirected to {newurl!r}; redirects are not followed")


_OPENER = urllib.request.build_opener(_NoRedirect)


def _text_and_images(content):
    """(text, base64 images) of a history-format content: a string or a list of parts."""
    if content is None or isinstance(content, str):
        return content or "", []
    texts, images = [], []
    for part in content:
        if part.get("type") == "text":
            texts.append(part.get("text", ""))
        elif part.get("type") == "image_url":
            url = part.get("image_url", {}).get("url", "")
            if url.startswith("data:") and ";base64," in url:
                images.append(url.split(";base64,", 1)[1])
    return "\n".join(texts), images


def to_ollama(body):
    """The Ollama ``/api/chat`` request of one history-format request body."""
    names = {}
    messages = []
    for message in body["messages"]:
        text, images = _text_and_images(message.get("content"))
        out = {"role": message["role"], "content": text}
        if images:
            out["images"] = images
        if message.get("tool_calls"):
            out["tool_calls"] = []
            for call in message["tool_calls"]:
                names[call["id"]] = call["function"]["name"]
                arguments = json.loads(call["function"]["arguments"] or "{}")
                out["tool_calls"].append({"function": {"name": call["function"]["name"], "arguments": arguments}})
        if message["role"] == "tool":
            out["tool_name"] = names.get(message.get("tool_call_id"), "")
        messages.append(out)
    request = {"model": body["model"], "messages": messages, "stream": False}
    if body.get("tools"):
        request["tools"] = body["tools"]  # Ollama takes the same {"type": "function", ...} shape
    if isinstance(body.get("max_tokens"), int):
        request["options"] = {"num_predict": body["max_tokens"]}
    return request


def from_ollama(answer):
    """The provider reply (message, finish reason, usage, raw response) of an Ollama answer."""
    message = answer.get("message")
    if not isinstance(message, dict):
        raise WorkerError(f"ollama provider: the answer has no message: {str(answer)[:200]}")
    reply = {"role": "assistant", "content": message.get("content") or ""}
    calls = []
    for call in message.get("tool_calls") or []:
        function = call.get("function", {})
        calls.append(
            {
                "id": f"call_{uuid.uuid4().hex[:24]}",
                "type": "function",
                "function": {"name": function.get("name", ""), "arguments": json.dumps(function.get("arguments", {}))},
            }
        )
    if calls:
        reply["tool_calls"] = calls
    tokens_in, tokens_out = answer.get("prompt_eval_count"), answer.get("eval_count")
    usage = {"input_tokens": tokens_in, "output_tokens": tokens_out} if tokens_in is not None else None
    finish = "tool_calls" if calls else {"length": "length"}.get(answer.get("done_reason"), "stop")
    return {"message": reply, "finish_reason": finish, "usage": usage, "response": answer}


def _post(url, payload, timeout):
    request = urllib.request.Request(url, data=payload, headers={"content-type": "application/json"}, method="POST")
    with _OPENER.open(request, timeout=timeout) as response:
        return json.loads(response.read())


@worker.hook("provider_request")
def provider_request(data, request):
    """One model exchange: translate, POST (with bounded retries), translate back."""
    url = data["url"].rstrip("/") + "/api/chat"  # the configured origin, never another
    payload = json.dumps(to_ollama(data["body"])).encode()
    deadline = time.monotonic() + float(data.get("timeout", 600))
    retries = []
    while True:
        try:
            answer = _post(url, payload, max(1.0, deadline - time.monotonic()))
            break
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:500].decode("utf-8", "replace")
            if exc.code not in _TRANSIENT or len(retries) == RETRIES:
                raise WorkerError(f"ollama provider: {url} answered HTTP {exc.code}: {detail}") from None
            reason = f"HTTP {exc.code}"
        except urllib.error.URLError as exc:
            if len(retries) == RETRIES:
                raise WorkerError(f"ollama provider: cannot reach {url}: {exc.reason}") from None
            reason = f"connection failed: {exc.reason}"
        retries.append({"attempt": len(retries) + 1, "reason": reason})
        time.sleep(min(0.5 * len(retries), max(0.0, deadline - time.monotonic())))
    return {**from_ollama(answer), "retries": retries}


if __name__ == "__main__":
    sys.exit(worker.main())
