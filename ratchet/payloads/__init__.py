"""How Ratchet's data travels through Temporal: the data converter (pydantic
JSON), payload encryption and its codec server for the Web UI, and external
storage for payloads over Temporal's size limit."""

from ._codec_server import CodecServer
from ._converter import RatchetPayloadConverter, data_converter, with_codec
from ._encryption import EncryptionCodec, generate_key
from ._storage import FileStorageDriver, external_storage

__all__ = [
    "CodecServer",
    "EncryptionCodec",
    "FileStorageDriver",
    "RatchetPayloadConverter",
    "external_storage",
    "generate_key",
    "data_converter",
    "with_codec",
]
