"""The names ``ratchet.agents`` exported in 0.1.0 that live in ``ratchet.types`` since 0.2.

``ratchet.agents`` resolves them with a deprecation warning until 0.3, and state
stores them under their 0.1.0 name until then (a worker rolled back reads it)."""

TO_TYPES = frozenset(
    {
        "CustomEvent",
        "FilePart",
        "ImagePart",
        "Message",
        "PendingAction",
        "PromptSize",
        "RunEvent",
        "ShareToken",
        "StateChange",
        "TextDelta",
        "ToolCall",
        "Usage",
    }
)
