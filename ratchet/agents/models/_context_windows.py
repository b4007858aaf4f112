"""The context windows of well-known models, in tokens: how long a prompt may be.

A model client takes its window from ``context_window=`` or, by default, from this
table by model name; a dated snapshot (``gpt-4o-2024-08-06``,
``claude-sonnet-4-5-20250929``) has its model's window. A model not listed has no
known window: its sessions are still kept going, by the overflow error the service
answers with (see ``ratchet.agents._fit_window``).
"""

from __future__ import annotations

CONTEXT_WINDOWS: dict[str, int] = {
    # OpenAI (input tokens a request may hold)
    "gpt-4o": 128_000,
    "gpt-4o-mini": 128_000,
    "gpt-4-turbo": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.1-mini": 1_047_576,
    "gpt-4.1-nano": 1_047_576,
    "gpt-5": 272_000,
    "gpt-5-mini": 272_000,
    "gpt-5-nano": 272_000,
    "o1": 200_000,
    "o3": 200_000,
    "o3-mini": 200_000,
    "o4-mini": 200_000,
    # Anthropic (input and max_tokens together)
    "claude-sonnet-4-5": 200_000,
    "claude-haiku-4-5": 200_000,
    "claude-opus-4-1": 200_000,
    "claude-opus-4": 200_000,
    "claude-sonnet-4": 200_000,
    "claude-3-7-sonnet": 200_000,
    "claude-3-5-sonnet": 200_000,
    "claude-3-5-haiku": 200_000,
}


def known_window(model: str | None) -> int | None:
    """The window of ``model`` (or of the model it is a snapshot of), if listed."""
    if not model:
        return None
    name = model.lower().rsplit("/", 1)[-1]  # "openai/gpt-4o" on a router
    found = [k for k in CONTEXT_WINDOWS if name == k or name.startswith(k + "-")]
    return CONTEXT_WINDOWS[max(found, key=len)] if found else None
