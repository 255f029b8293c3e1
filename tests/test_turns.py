"""Stateless turn detection from OpenAI-style request bodies."""

import json

import pytest

from smetric.workload import turn_of

SYSTEM = {"role": "system", "content": "You are a coding agent. Use the tools to inspect and edit the repository."}


def test_first_request_of_a_session_is_turn_zero():
    body = {"model": "qwen3-coder", "stream": True,
            "messages": [SYSTEM, {"role": "user", "content": "Fix the failing test."}]}
    assert turn_of(body) == 0


def test_agent_loop_with_tool_calls_counts_one_turn_per_assistant_reply():
    call = {"id": "call_1", "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"cmd": "pytest -x"})}}
    messages = [
        SYSTEM,
        {"role": "user", "content": "Fix the failing test."},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "1 failed: test_parse"},
        {"role": "assistant", "content": "", "tool_calls": [{**call, "id": "call_2"}, {**call, "id": "call_3"}]},
        {"role": "tool", "tool_call_id": "call_2", "content": "ok"},
        {"role": "tool", "tool_call_id": "call_3", "content": "ok"},
    ]
    body = {"model": "qwen3-coder", "messages": messages, "tools": [{"type": "function", "function": {"name": "bash"}}]}
    assert turn_of(body) == 2
    # each completed turn appends exactly one assistant reply, so the next request is one turn later
    body["messages"] = messages + [{"role": "assistant", "content": "The test passes now."},
                                   {"role": "user", "content": "Thanks, also update the changelog."}]
    assert turn_of(body) == 3


def test_multi_turn_chat_with_content_parts_and_json_text():
    messages = [
        {"role": "developer", "content": [{"type": "text", "text": "Answer briefly."}]},
        {"role": "user", "content": [{"type": "text", "text": "What is in this image?"},
                                     {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A cat."}]},
        {"role": "user", "content": [{"type": "text", "text": "What colour?"}]},
    ]
    assert turn_of(json.dumps({"model": "m", "messages": messages})) == 1
    assert turn_of(json.dumps({"model": "m", "messages": messages}).encode()) == 1


def test_completions_body_without_messages_is_turn_zero():
    assert turn_of({"model": "m", "prompt": "def fib(n):", "max_tokens": 64}) == 0
    assert turn_of({"model": "m", "prompt": ["a", "b"]}) == 0


@pytest.mark.parametrize("body, error, message", [
    ({"model": "m"}, ValueError, "neither 'messages'"),
    ({"messages": "hello"}, TypeError, "'messages' must be a list, got str"),
    ({"messages": [{"content": "no role"}]}, ValueError, r"messages\[0\] must be an object with a string 'role'"),
    ({"messages": [SYSTEM, "user: hi"]}, ValueError, r"messages\[1\]"),
    ([SYSTEM], TypeError, "must be a JSON object, got list"),
    ("{not json", ValueError, "not valid JSON"),
])
def test_malformed_bodies_fail_loudly(body, error, message):
    with pytest.raises(error, match=message):
        turn_of(body)
