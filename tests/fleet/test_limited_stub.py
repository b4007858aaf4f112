"""``OpenAIServer(rate_limit=)``: a token bucket of one second's worth, refilled at
the rate; beyond it 429 with ``retry-after``, as OpenAI answers, through the official
``openai`` client over real HTTP."""

from __future__ import annotations

import time

import openai
import pytest

from ratchet.testing import OpenAIServer


def chat(server: OpenAIServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def ask(client: openai.OpenAI) -> str | None:
    reply = client.chat.completions.create(
        model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
    )
    return reply.choices[0].message.content


def test_requests_beyond_the_limit_get_429_with_retry_after_and_are_counted():
    with OpenAIServer.answering("ok", rate_limit=1) as server:
        client = chat(server)
        assert ask(client) == "ok"
        refused = []
        for _ in range(3):  # within the second the bucket takes to refill
            with pytest.raises(openai.RateLimitError) as caught:
                ask(client)
            refused.append(caught.value)
    headers = refused[0].response.headers
    assert headers["retry-after"] == "1"
    assert 0 < int(headers["retry-after-ms"]) <= 1000
    assert caught.value.code == "rate_limit_exceeded"
    assert "Limit 1" in str(caught.value)
    assert (server.ok, server.throttled) == (1, 3)
    assert [a.status for a in server.answers] == [200, 429, 429, 429]
    times = [a.at for a in server.answers]
    assert times == sorted(times)


def test_a_client_that_obeys_retry_after_gets_the_rate_and_no_more():
    rate, wanted = 4.0, 10
    with OpenAIServer.answering("ok", rate_limit=rate) as server:
        client = chat(server)
        while server.ok < wanted:
            try:
                ask(client)
            except openai.RateLimitError as e:
                time.sleep(int(e.response.headers["retry-after-ms"]) / 1000)
    ok = [a.at for a in server.answers if a.status == 200]
    assert server.throttled > 0
    # A bucket of one second's worth: no span of T seconds holds more than rate + rate*T.
    for i, first in enumerate(ok):
        for j in range(i, len(ok)):
            assert j - i + 1 <= rate + rate * (ok[j] - first) + 1e-6, (i, j, ok)


def test_a_rate_limit_must_be_positive():
    with pytest.raises(ValueError, match="rate_limit=0: give requests per second above 0"):
        OpenAIServer(rate_limit=0)
