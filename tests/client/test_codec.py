"""Payload privacy: the encryption codec, the codec server, and no secrets in history."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator

import pytest
from google.protobuf import json_format
from temporalio.api.common.v1 import Payload, Payloads
from temporalio.api.history.v1 import History
from temporalio.converter import DataConverter

from ratchet.agents import OpenAIChatModel, ScriptedModel, ToolCallingAgent, tool
from ratchet.cli import main
from ratchet.client import AgentClient
from ratchet.devserver import DevServer, free_port, temporal_binary
from ratchet.errors import ConfigurationError, ModelError, PayloadDecryptionError, RunFailedError
from ratchet.payloads import CodecServer
from ratchet.payloads._encryption import (
    COMPRESSION,
    ENCODING,
    KEY_ID,
    EncryptionCodec,
    generate_key,
    parse_keys,
)
from ratchet.testing import OpenAIServer
from ratchet.worker import build_worker

from ..conftest import ROOT

KEY_1 = bytes(range(32))
KEY_2 = bytes(range(32, 64))
UI_ORIGIN = "http://localhost:8233"
TOKEN = "codec-token-for-tests"


def plain_payload(value: object) -> Payload:
    return DataConverter.default.payload_converter.to_payloads([value])[0]


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


# Codec, in-process


async def test_round_trip_compresses_only_when_that_makes_the_payload_smaller():
    codec = EncryptionCodec({"k1": KEY_1})
    wordy = plain_payload("all work and no play " * 200)
    dense = Payload(metadata={"encoding": b"binary/plain"}, data=os.urandom(200))

    encoded = await codec.encode([wordy, dense])

    assert [p.metadata[COMPRESSION] for p in encoded] == [b"zlib", b"none"]
    assert all(p.metadata["encoding"] == ENCODING for p in encoded)
    assert all(p.metadata[KEY_ID] == b"k1" for p in encoded)
    assert len(encoded[0].data) < len(wordy.data) / 10
    assert b"all work" not in encoded[0].SerializeToString()
    assert await codec.decode(encoded) == [wordy, dense]


async def test_a_new_active_key_encodes_while_old_keys_still_decode():
    old = EncryptionCodec({"k1": KEY_1})
    rotated = EncryptionCodec({"k2": KEY_2, "k1": KEY_1}, active="k2")
    assert EncryptionCodec.from_env({"RATCHET_ENCRYPTION_KEYS": f"k2:{b64(KEY_2)},k1:{b64(KEY_1)}"})

    written_before = await old.encode([plain_payload("before rotation")])
    written_after = await rotated.encode([plain_payload("after rotation")])

    assert written_after[0].metadata[KEY_ID] == b"k2"
    assert await rotated.decode(written_before + written_after) == [
        plain_payload("before rotation"),
        plain_payload("after rotation"),
    ]


async def test_unknown_key_id_names_the_key_and_the_setting_to_fix():
    payload = await EncryptionCodec({"k1": KEY_1}).encode([plain_payload("x")])
    with pytest.raises(PayloadDecryptionError) as failure:
        await EncryptionCodec({"k2": KEY_2}).decode(payload)
    assert "'k1'" in str(failure.value)
    assert "RATCHET_ENCRYPTION_KEYS" in str(failure.value)


@pytest.mark.parametrize("part", ["data", "key id", "compression"])
async def test_tampered_payload_is_refused(part):
    # k1 and k2 hold the same key, so only the associated data tells them apart.
    codec = EncryptionCodec({"k1": KEY_1, "k2": KEY_1})
    (payload,) = await codec.encode([plain_payload("pay 10 EUR " * 20)])
    if part == "data":
        payload.data = payload.data[:-1] + bytes([payload.data[-1] ^ 1])
    elif part == "key id":
        payload.metadata[KEY_ID] = b"k2"
    else:
        payload.metadata[COMPRESSION] = b"none"
    with pytest.raises(PayloadDecryptionError, match="failed authentication"):
        await codec.decode([payload])


async def test_payloads_written_before_encryption_pass_through_decode():
    codec = EncryptionCodec({"k1": KEY_1})
    old = [plain_payload({"prompt": "hello"}), plain_payload(None)]
    assert await codec.decode(old) == old


@pytest.mark.parametrize(
    ("setting", "expected"),
    [
        ("", "is empty"),
        (" , ", "is empty"),
        (b64(KEY_1), "without an id and a key"),
        ("k1:", "without an id and a key"),
        ("k1:not*base64", "not valid base64"),
        (f"k1:{b64(KEY_1[:16])}", "'k1' is 16 bytes; AES-256 keys are 32 bytes"),
        (f"k1:{b64(KEY_1)},k1:{b64(KEY_2)}", "twice"),
    ],
)
def test_bad_key_settings_say_what_is_wrong_and_how_to_fix_it(setting, expected):
    with pytest.raises(ConfigurationError, match=expected) as failure:
        EncryptionCodec.from_env({"RATCHET_ENCRYPTION_KEYS": setting})
    message = str(failure.value)
    assert "RATCHET_ENCRYPTION_KEYS" in message
    assert b64(KEY_1) not in message and b64(KEY_2) not in message


def test_keys_built_in_code_are_checked_too():
    with pytest.raises(ConfigurationError, match="needs at least one key"):
        EncryptionCodec({})
    with pytest.raises(ConfigurationError, match="5 bytes"):
        EncryptionCodec({"k1": b"short"})
    with pytest.raises(ConfigurationError, match="active key 'k9'"):
        EncryptionCodec({"k1": KEY_1}, active="k9")
    with pytest.raises(ConfigurationError, match="is not set"):
        EncryptionCodec.from_env({})


def test_codec_key_command_prints_a_usable_entry(capsys):
    assert main(["codec-key", "--id", "k7"]) == 0
    line = capsys.readouterr().out.strip()
    keys = parse_keys(line)
    assert list(keys) == ["k7"] and len(keys["k7"]) == 32
    assert generate_key() != generate_key()


async def test_connect_turns_encryption_on_from_the_environment(temporal_server, monkeypatch):
    monkeypatch.setenv("RATCHET_ENCRYPTION_KEYS", generate_key("k1"))
    client = await AgentClient.connect(temporal_server.address)
    assert isinstance(client.temporal.data_converter.payload_codec, EncryptionCodec)
    monkeypatch.setenv("RATCHET_ENCRYPTION_KEYS", "k1:tooshort")
    with pytest.raises(ConfigurationError, match="RATCHET_ENCRYPTION_KEYS"):
        await AgentClient.connect(temporal_server.address)


# End to end: history written through the codec


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"{city}: snow and TOOL-MARK-{city}"


async def raw_history(client: AgentClient, workflow_id: str) -> bytes:
    """Every event of a workflow, serialised as stored by the server."""
    handle = client.temporal.get_workflow_handle(workflow_id)
    events = [e async for e in handle.fetch_history_events()]
    return History(events=events).SerializeToString()


async def run_marked_agent(client: AgentClient, marker: str) -> tuple[str, str]:
    """Run an agent whose prompt, tool call and answer carry ``marker``; return
    (workflow id, output)."""
    script = [ScriptedModel.call("lookup", city=f"{marker}-city"), f"ANSWER-{marker}"]
    agent = {"private": lambda: ToolCallingAgent(ScriptedModel(script), [lookup])}
    async with build_worker(client, agent):
        handle = await client.start_run("private", f"PROMPT-{marker}: where is it snowing?")
        result = await handle.result()
    return handle.id, result.output


@pytest.fixture
def codec() -> EncryptionCodec:
    return EncryptionCodec({"k1": KEY_1})


@pytest.fixture
async def encrypted(temporal_server: DevServer, task_queue: str, codec) -> AgentClient:
    return await AgentClient.connect(temporal_server.address, task_queue=task_queue, codec=codec)


async def test_an_encrypted_run_writes_no_plaintext_to_history(
    encrypted: AgentClient, agent_client: AgentClient
):
    marker = f"SECRET{uuid.uuid4().hex}"
    workflow_id, output = await run_marked_agent(encrypted, marker)

    assert output == f"ANSWER-{marker}"
    history = await raw_history(agent_client, workflow_id)  # a client without the codec
    assert marker.encode() not in history
    assert b"TOOL-MARK" not in history
    assert ENCODING in history
    reread = await encrypted.get_run(workflow_id).result()  # decoded from history
    assert reread.output == f"ANSWER-{marker}"

    # Positive control: the same run without the codec leaves the markers readable.
    control_id, _ = await run_marked_agent(agent_client, marker)
    control = await raw_history(agent_client, control_id)
    assert f"PROMPT-{marker}".encode() in control
    assert f"ANSWER-{marker}".encode() in control
    assert b"TOOL-MARK" in control


async def test_failure_messages_are_encrypted_too(
    encrypted: AgentClient, agent_client: AgentClient
):
    marker = f"SECRET{uuid.uuid4().hex}"
    error = ModelError(f"refused: {marker}", retryable=False, status=400)
    agent = {"private": lambda: ToolCallingAgent(ScriptedModel([error]), [lookup])}
    async with build_worker(encrypted, agent):
        handle = await encrypted.start_run("private", "hi")
        with pytest.raises(RunFailedError, match=f"refused: {marker}"):
            await handle.result()
    assert marker.encode() not in await raw_history(agent_client, handle.id)


async def test_a_client_without_the_key_cannot_read_the_result(
    encrypted: AgentClient, temporal_server: DevServer, task_queue: str
):
    workflow_id, _ = await run_marked_agent(encrypted, "ROTATED")
    other = await AgentClient.connect(
        temporal_server.address, task_queue=task_queue, codec=EncryptionCodec({"k2": KEY_2})
    )
    with pytest.raises(PayloadDecryptionError, match="'k1'"):
        await other.get_run(workflow_id).result()


# Codec server over HTTP


@pytest.fixture
def codec_server(codec) -> Iterator[CodecServer]:
    with CodecServer(codec, token=TOKEN, ui_origin=UI_ORIGIN, port=0) as server:
        yield server


def post(
    server: CodecServer,
    path: str,
    payloads: list[Payload],
    *,
    token: str | None = TOKEN,
    origin: str | None = UI_ORIGIN,
) -> tuple[int, dict[str, str], bytes]:
    headers = {"Content-Type": "application/json", "X-Namespace": "default"}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if origin is not None:
        headers["Origin"] = origin
    body = json_format.MessageToJson(Payloads(payloads=payloads)).encode()
    return request(server, path, "POST", body, headers)


def request(
    server: CodecServer, path: str, method: str, body: bytes | None, headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(server.url + path, body, headers, method=method)
    try:
        with urllib.request.urlopen(req, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def payloads_of(body: bytes) -> list[Payload]:
    return list(json_format.Parse(body, Payloads()).payloads)


async def test_codec_server_decodes_for_the_ui_with_token_and_origin(codec_server, codec):
    original = plain_payload({"prompt": "PLAINTEXT-MARK"})
    encoded = await codec.encode([original])

    for path in ("/decode", "/default/decode"):
        status, headers, body = post(codec_server, path, encoded)
        assert status == 200
        assert headers["Access-Control-Allow-Origin"] == UI_ORIGIN
        assert headers["Access-Control-Allow-Credentials"] == "true"
        assert payloads_of(body) == [original]
        assert b"PLAINTEXT-MARK" in base64.b64decode(json.loads(body)["payloads"][0]["data"])

    status, _, body = post(codec_server, "/encode", [original])
    assert status == 200
    (sealed,) = payloads_of(body)
    assert sealed.metadata["encoding"] == ENCODING
    assert await codec.decode([sealed]) == [original]


async def test_codec_server_refuses_requests_without_the_token(codec_server, codec):
    encoded = await codec.encode([plain_payload("PLAINTEXT-MARK")])
    for token in (None, "wrong-token", TOKEN + "x", ""):
        status, headers, body = post(codec_server, "/decode", encoded, token=token)
        assert status == 401
        assert b"PLAINTEXT-MARK" not in body
        assert headers["WWW-Authenticate"].startswith("Bearer")


async def test_codec_server_gives_other_origins_no_cors_headers(codec_server, codec):
    encoded = await codec.encode([plain_payload("x")])
    status, headers, _ = post(codec_server, "/decode", encoded, origin="http://evil.example")
    assert status == 200  # a browser would withhold it: no CORS headers
    assert "Access-Control-Allow-Origin" not in headers
    status, headers, _ = post(codec_server, "/decode", encoded, origin=UI_ORIGIN + ".evil.example")
    assert "Access-Control-Allow-Origin" not in headers


def test_codec_server_answers_the_preflight_for_the_ui_only(codec_server):
    asks = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type,x-namespace,authorization",
    }
    status, headers, _ = request(
        codec_server, "/default/decode", "OPTIONS", None, {**asks, "Origin": UI_ORIGIN}
    )
    assert status == 204
    assert headers["Access-Control-Allow-Origin"] == UI_ORIGIN
    assert headers["Access-Control-Allow-Credentials"] == "true"
    assert headers["Access-Control-Allow-Headers"] == "Content-Type, X-Namespace, Authorization"
    assert "POST" in headers["Access-Control-Allow-Methods"]

    status, headers, _ = request(
        codec_server, "/decode", "OPTIONS", None, {**asks, "Origin": "http://evil.example"}
    )
    assert not any(name.startswith("Access-Control-") for name in headers)


async def test_codec_server_reports_bad_requests_and_unknown_keys(codec_server):
    foreign = await EncryptionCodec({"k9": KEY_2}).encode([plain_payload("x")])
    status, _, body = post(codec_server, "/decode", foreign)
    assert status == 400 and "'k9'" in json.loads(body)["error"]
    status, _, body = request(
        codec_server,
        "/decode",
        "POST",
        b"not json",
        {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    assert status == 400
    assert post(codec_server, "/other", [])[0] == 404
    # A form-like POST (no preflight in a browser) is refused before anything is decoded.
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "text/plain"}
    assert request(codec_server, "/decode", "POST", b'{"payloads": []}', headers)[0] == 415


@pytest.mark.slow  # a child process
def test_codec_server_command_serves_and_stops_cleanly_on_sigterm():
    port = free_port()
    env = {
        **os.environ,
        "RATCHET_ENCRYPTION_KEYS": f"k1:{b64(KEY_1)}",
        "RATCHET_CODEC_TOKEN": TOKEN,
        "PYTHONPATH": str(ROOT),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "ratchet.cli", "codec-server", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready = process.stdout.readline()
        assert f"codec server on http://127.0.0.1:{port}" in ready, ready
        body = json.dumps({"payloads": []}).encode()
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/decode",
            body,
            {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=10) as response:
            assert json.loads(response.read()) == {}  # protobuf JSON leaves out empty lists
        process.terminate()
        assert process.wait(20) == 0
        assert "codec server stopped" in process.stdout.read()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_codec_server_command_needs_a_token_or_an_explicit_no_auth(monkeypatch, capsys):
    monkeypatch.setenv("RATCHET_ENCRYPTION_KEYS", f"k1:{b64(KEY_1)}")
    monkeypatch.delenv("RATCHET_CODEC_TOKEN", raising=False)
    assert main(["codec-server", "--port", str(free_port())]) == 1
    assert "RATCHET_CODEC_TOKEN is not set" in capsys.readouterr().err


@pytest.mark.slow
def test_dev_server_points_its_ui_at_the_codec_server(tmp_path):
    endpoint = "http://127.0.0.1:8081"
    with DevServer.start(log_dir=tmp_path, codec_endpoint=endpoint) as server:
        deadline = time.monotonic() + 30
        while True:  # the UI starts a little after the frontend port listens
            try:
                with urllib.request.urlopen(f"{server.ui_url}/api/v1/settings", timeout=5) as r:
                    settings = json.loads(r.read())
                break
            except (urllib.error.URLError, ConnectionError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
    assert settings["Codec"]["Endpoint"] == endpoint


# No secrets in history


async def test_the_openai_api_key_never_reaches_history(agent_client: AgentClient):
    api_key = f"sk-ratchet-{uuid.uuid4().hex}"
    with OpenAIServer() as server:
        model = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key=api_key)
        server.text("It snows in Oslo.")
        async with build_worker(agent_client, {"oa": ToolCallingAgent(model, [lookup])}):
            handle = await agent_client.start_run("oa", "Weather in Oslo?")
            assert (await handle.result()).output == "It snows in Oslo."
        await model.client.close()

    assert server.requests[0].headers["authorization"] == f"Bearer {api_key}"
    history = await raw_history(agent_client, handle.id)
    assert b"It snows in Oslo." in history  # plaintext history, so the scan can see
    assert api_key.encode() not in history


async def test_an_api_key_echoed_in_an_error_is_redacted(agent_client: AgentClient):
    api_key = f"sk-ratchet-{uuid.uuid4().hex}"
    with OpenAIServer() as server:
        model = OpenAIChatModel("gpt-test", base_url=server.base_url, api_key=api_key)
        server.error(401, f"Incorrect API key provided: {api_key}.", type="invalid_api_key")
        async with build_worker(agent_client, {"oa": ToolCallingAgent(model, [lookup])}):
            handle = await agent_client.start_run("oa", "Weather in Oslo?")
            with pytest.raises(RunFailedError, match="answered 401") as failure:
                await handle.result()
        await model.client.close()

    assert server.requests[0].headers["authorization"] == f"Bearer {api_key}"
    assert api_key not in str(failure.value)
    history = await raw_history(agent_client, handle.id)
    assert b"Incorrect API key provided" in history
    assert api_key.encode() not in history


async def test_the_temporal_cli_reads_an_encrypted_history_through_the_codec_server(
    encrypted: AgentClient, codec_server: CodecServer, temporal_server: DevServer
):
    marker = f"SECRET{uuid.uuid4().hex}"
    workflow_id, _ = await run_marked_agent(encrypted, marker)
    show = [
        temporal_binary(),
        "workflow",
        "show",
        "--address",
        temporal_server.address,
        "--workflow-id",
        workflow_id,
        "--output",
        "json",
    ]
    plain = await asyncio.to_thread(run_command, show)
    assert plain.returncode == 0, plain.stderr
    assert marker.encode() not in payload_bytes(json.loads(plain.stdout))

    codec = ["--codec-endpoint", f"{codec_server.url}/default", "--codec-auth", f"Bearer {TOKEN}"]
    decoded = await asyncio.to_thread(run_command, show + codec)
    assert decoded.returncode == 0, decoded.stderr
    assert f"ANSWER-{marker}".encode() in payload_bytes(json.loads(decoded.stdout))


def run_command(command: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def payload_bytes(node: object) -> bytes:
    """Every payload's data in ``temporal ... --output json`` output, decoded from base64."""
    if isinstance(node, dict):
        found = b"".join(payload_bytes(v) for v in node.values())
        if isinstance(node.get("data"), str) and isinstance(node.get("metadata"), dict):
            found += base64.b64decode(node["data"])
        return found
    if isinstance(node, list):
        return b"".join(payload_bytes(v) for v in node)
    return b""
