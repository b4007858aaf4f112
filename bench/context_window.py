"""A long session against a model with a context window, with and without fit_window.

    .venv/bin/python -m bench.context_window [--sends 1000] [--window 128000]

The session shape of bench.sessions (the user writes ~300 characters, the answer is
~1,500, and every third send makes a tool call whose result is ~1,000 characters),
but the agent is a ``ToolCallingAgent`` on ``OpenAIChatModel("gpt-4o-mini")`` (its
window, 128,000 tokens, is in the table), speaking HTTP to
``ratchet.testing.OpenAIServer(context_window=...)``, which counts each request's
tokens (three bytes of body each: denser than Ratchet's estimate of four characters)
and refuses a longer prompt with OpenAI's 400 ``context_length_exceeded``. Two
sessions: the default (``fit_window=FitWindow()``) for ``--sends`` sends, and
``fit_window=None`` (the engine before issue 29) until its first failed send and
five more. Reports sends answered and failed, refusals, the prompt sizes the server
counted, how often the prompt was cut, and the time per send.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from ratchet.agents import OpenAIChatModel, ToolCallingAgent, tool
from ratchet.client import AgentClient
from ratchet.devserver import DevServer
from ratchet.errors import RunFailedError
from ratchet.testing._openai_server import OpenAIServer, Reply, Request, json_reply
from ratchet.wire import RunOptions, SessionOptions
from ratchet.worker import build_worker

from .sessions import ANSWER, TOOL, USER

RESULTS = Path(__file__).parent / "results"
AFTER_FAILURE = 5


@tool
def lookup() -> str:
    """Look something up (~1,000 characters)."""
    return TOOL


def answering(tokens: list[int]) -> Callable[[Request], Reply]:
    """A tool call for every third send, else the ~1,500-character answer; ``tokens``
    gets the size of every prompt answered (a refused one never gets here)."""

    def answer(request: Request) -> Reply:
        messages = request.body["messages"]
        last = messages[-1]
        tokens.append(request.tokens or 0)
        number = sum(1 for m in messages if m["role"] == "user")
        message: dict = {"role": "assistant", "content": f"{number} {ANSWER}"}
        if last["role"] == "user" and int(last["content"].split(" ", 1)[0]) % 3 == 0:
            call: dict = {"id": f"call_{uuid.uuid4().hex[:12]}", "type": "function"}
            call["function"] = {"name": "lookup", "arguments": "{}"}
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
        usage = {"prompt_tokens": tokens[-1], "completion_tokens": 400}
        usage["total_tokens"] = usage["prompt_tokens"] + 400
        choice = {"index": 0, "message": message, "finish_reason": "stop"}
        body = {"id": "chatcmpl-bench", "object": "chat.completion", "model": "gpt-4o-mini"}
        return json_reply(200, {**body, "created": 0, "choices": [choice], "usage": usage})

    return answer


async def one_session(client: AgentClient, window: int, sends: int, fit: bool) -> dict:
    tokens: list[int] = []
    with OpenAIServer(answer=answering(tokens), record=False, context_window=window) as server:
        model = OpenAIChatModel("gpt-4o-mini", base_url=server.base_url, api_key="bench")
        agent = ToolCallingAgent(model, [lookup], instructions="Answer the user.")
        run = RunOptions() if fit else RunOptions(fit_window=None)
        options = SessionOptions(run=run)
        answered, failed, first_failure, times = 0, 0, None, []
        async with build_worker(client, {"assistant": agent}):
            session = await client.start_session("assistant", options=options)
            for n in range(1, sends + 1):
                started = time.perf_counter()
                try:
                    await session.send(f"{n} {USER}")
                    answered += 1
                    times.append(time.perf_counter() - started)
                except RunFailedError:
                    failed += 1
                    first_failure = first_failure or n
                    if failed > AFTER_FAILURE:
                        break
            thread = await session.thread()
        await model.client.close()
    cuts = sum(1 for a, b in zip(tokens, tokens[1:], strict=False) if b < a)
    return {
        "fit_window": fit,
        "sends": answered + failed,
        "answered": answered,
        "failed": failed,
        "first_failed_send": first_failure,
        "refused": server.refused,
        "prompt_tokens_max": max(tokens),
        "prompt_tokens_mean": statistics.fmean(tokens),
        "prompt_tokens_last": tokens[-1],
        "prompts_cut": cuts,
        "log_messages": len(thread.messages),
        "visible_messages": len(thread.visible()),
        "ms_per_send_median": statistics.median(times) * 1000,
    }


async def measure(sends: int, window: int) -> dict:
    with DevServer.start(ui=False) as server:
        client = await AgentClient.connect(server.address, task_queue="window")
        sessions = [
            await one_session(client, window, sends, fit=True),
            await one_session(client, window, sends, fit=False),
        ]
    return {"window": window, "sends_asked": sends, "sessions": sessions}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sends", type=int, default=1000)
    parser.add_argument("--window", type=int, default=128_000)
    args = parser.parse_args()
    results = asyncio.run(measure(args.sends, args.window))
    results["command"] = "python -m bench.context_window " + " ".join(sys.argv[1:])
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "context_window.json").write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
