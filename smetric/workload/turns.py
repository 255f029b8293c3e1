"""Stateless turn detection from a request body, as SMETRIC's router does it.

An agent session appends exactly one assistant reply to ``messages`` per completed turn (SMetric,
Fig. 3), so a request's turn is the number of ``assistant`` messages it carries: 0 for the first
request of a session. A ``/v1/completions`` body (a ``prompt``, no ``messages``) is turn 0. The
router needs no per-session state.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

__all__ = ["turn_of"]


def turn_of(request_body: Mapping | str | bytes) -> int:
    """Turn of an OpenAI-style request: the number of ``assistant`` messages in ``messages``.

    ``request_body`` is the decoded JSON object or its JSON text. A chat-completions body must
    have a ``messages`` list of objects with a ``role``; a completions body has ``prompt`` instead.
    """
    if isinstance(request_body, (str, bytes, bytearray)):
        try:
            request_body = json.loads(request_body)
        except json.JSONDecodeError as exc:
            raise ValueError(f"request body is not valid JSON: {exc.msg} at column {exc.colno}") from None
    if not isinstance(request_body, Mapping):
        raise TypeError(f"request body must be a JSON object, got {type(request_body).__name__}")
    if "messages" not in request_body:
        if "prompt" in request_body:
            return 0
        raise ValueError("request body has neither 'messages' (chat completions) nor 'prompt' (completions)")
    messages = request_body["messages"]
    if not isinstance(messages, list):
        raise TypeError(f"'messages' must be a list, got {type(messages).__name__}")
    turns = 0
    for k, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            raise ValueError(f"messages[{k}] must be an object with a string 'role', got {message!r:.60}")
        turns += message["role"] == "assistant"
    return turns
