"""Message parts: images and files next to a message's text.

    Message.user("What is in this picture?", ImagePart.of(png_bytes, "image/png"))
    Message.user("Summarise it.", FilePart.of(pdf_bytes, "application/pdf", "q3.pdf"))
    Message.user("And this one?", ImagePart(url="https://example.com/cat.jpg"))

Bytes travel base64-encoded inside the message. A part over ``PART_LIMIT`` (256 KiB)
needs external payload storage (``payload_storage=`` on the client): the payload
that carries it is then stored outside history and referenced (the client refuses
it otherwise, saying so). Each model client turns parts into its API's own blocks.
"""

from __future__ import annotations

import base64
from typing import Annotated, Literal

from pydantic import Field

from ._sparse import SparseModel

PART_LIMIT = 256 * 1024
"""Largest part (decoded bytes) a message may carry without external payload storage."""


class ImagePart(SparseModel):
    """An image, by URL or as bytes (``ImagePart.of``)."""

    type: Literal["image"] = "image"
    url: str | None = None
    base64: str | None = None
    media_type: str = "image/png"
    detail: Literal["auto", "low", "high"] | None = None
    """OpenAI's image detail level (other providers ignore it)."""

    @classmethod
    def of(cls, data: bytes, media_type: str = "image/png") -> ImagePart:
        return cls(base64=base64.b64encode(data).decode(), media_type=media_type)


class FilePart(SparseModel):
    """A file (a PDF, say), by URL or as bytes (``FilePart.of``)."""

    type: Literal["file"] = "file"
    url: str | None = None
    base64: str | None = None
    media_type: str = "application/pdf"
    filename: str | None = None

    @classmethod
    def of(cls, data: bytes, media_type: str, filename: str | None = None) -> FilePart:
        encoded = base64.b64encode(data).decode()
        return cls(base64=encoded, media_type=media_type, filename=filename)


Part = Annotated[ImagePart | FilePart, Field(discriminator="type")]


def data_url(part: ImagePart | FilePart) -> str:
    """The part's URL, or its bytes as a ``data:`` URL."""
    if part.url is not None:
        return part.url
    return f"data:{part.media_type};base64,{part.base64 or ''}"


def size(part: ImagePart | FilePart) -> int:
    """The part's decoded size in bytes (0 for a URL)."""
    return len(part.base64 or "") * 3 // 4


def describe(part: ImagePart | FilePart) -> str:
    """``[image image/png, 120 KiB]`` for summaries and logs."""
    where = part.url if part.url is not None else f"{size(part) / 1024:.0f} KiB"
    name = f" {part.filename}" if isinstance(part, FilePart) and part.filename else ""
    return f"[{part.type}{name} {part.media_type}, {where}]"
