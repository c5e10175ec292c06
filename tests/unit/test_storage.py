"""Both stores behind xsky/storage.py keep the same contract: atomic, idempotent writes, a
missing key is FileNotFoundError, keys by prefix, appends read back in order, streamed reads,
deletes — the local directory and an S3-compatible server (moto), side by side. And the
ledger, the lease and the artifact store work the same over either."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from activities.agents import storage
from activities.agents.lease import Lease
from activities.agents.ledger import AttemptLedger
from activities.agents.storage import storage_problem
from activities.artifacts import ArtifactStore, put_blob, read_blob
from activities.storage.local import LocalStore
from activities.storage.s3 import S3Store
from tests.local_http import serving
from tests.s3server import S3Server, s3_server
from xsky.artifacts import blob_ref
from xsky.errors import UsageError
from xsky.runs import AgentOutcome
from xsky.storage import ObjectStore, parse_store


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return LocalStore(tmp_path / "artifacts")
    server: S3Server = request.getfixturevalue("s3")
    bucket = server.bucket(f"b-{uuid.uuid4().hex[:12]}")
    return S3Store(parse_store(f"s3://{bucket}/pre/fix"), server.endpoint)


@pytest.fixture(autouse=True)
def _aws(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in S3Server("").env("x").items():
        if name.startswith("AWS_") and name != "AWS_ENDPOINT_URL":
            monkeypatch.setenv(name, value)


def test_writes_replace_whole_objects_and_a_missing_key_is_file_not_found(store: ObjectStore):
    with pytest.raises(FileNotFoundError):
        store.get("run-1/T/result.txt")
    assert not store.exists("run-1/T/result.txt")
    store.put("run-1/T/result.txt", b"first")
    store.put("run-1/T/result.txt", b"second", sync=True)
    store.put("run-1/T/result.txt", b"second")  # the same bytes again: a retry changes nothing
    assert store.get("run-1/T/result.txt") == b"second" and store.exists("run-1/T/result.txt")
    big = bytes(range(256)) * 20_000  # 5 MB, read back in pieces
    store.put("run-1/T/big.bin", big)
    assert b"".join(store.chunks("run-1/T/big.bin")) == big


def test_keys_by_folder_or_name_prefix_and_deletes(store: ObjectStore):
    for key in ("r/_leader/state-2-a.0", "r/_leader/state-2-a.1", "r/_leader/plan.0", "r/T/x"):
        store.put(key, b"1")
    store.put("r2/T/x", b"1")
    assert store.keys("r/_leader/state-") == ["r/_leader/state-2-a.0", "r/_leader/state-2-a.1"]
    assert store.keys("r/") == sorted(
        ["r/_leader/state-2-a.0", "r/_leader/state-2-a.1", "r/_leader/plan.0", "r/T/x"]
    )
    store.delete("r/T/x")
    store.delete("r/T/never-there")
    assert "r/T/x" not in store.keys("r/") and store.keys("r2/") == ["r2/T/x"]


def test_appends_are_read_back_whole_in_order_and_listed_as_one_key(store: ObjectStore):
    assert store.appended("r/_attempts/a.jsonl") == b""
    for n in range(5):
        store.append("r/_attempts/a.jsonl", f'{{"n": {n}}}\n'.encode(), sync=n == 4)
    lines = store.appended("r/_attempts/a.jsonl").decode().splitlines()
    assert [json.loads(line)["n"] for line in lines] == [0, 1, 2, 3, 4]
    assert store.keys("r/_attempts/") == ["r/_attempts/a.jsonl"]
    store.delete("r/_attempts/a.jsonl")
    assert store.appended("r/_attempts/a.jsonl") == b"" and store.keys("r/") == []


def test_the_ledger_and_a_kept_outcome_are_found_through_the_store(store: ObjectStore):
    ledger = AttemptLedger(store, "run/_attempts/x-T-1-v1-d1.jsonl")
    ledger.begin(1, 10.0)
    ledger.complete(1, AgentOutcome(result="42", attempt=1))
    # another worker (another machine) reading the same store
    again = AttemptLedger(store, "run/_attempts/x-T-1-v1-d1.jsonl")
    assert again.has_outcome() and (again.outcome() or AgentOutcome()).result == "42"
    start = again.begin(2, 10.0)
    assert start.previous is not None and start.previous.startswith("completed")
    assert [e["kind"] for e in again.entries()] == ["started", "completed", "started"]


def test_a_lease_lapses_by_its_renewal_time_not_by_a_file_date(store: ObjectStore):
    lease = Lease(store, "run/_attempts/x.lease", 2, ttl=5)
    store.put(
        "run/_attempts/x.lease",
        json.dumps({"attempt": 1, "host": "vm-9", "pid": 1, "at": time.time()}).encode(),
    )
    holder = lease.holder()
    assert holder is not None and holder.attempt == 1 and holder.alive(5)
    store.put(
        "run/_attempts/x.lease",
        json.dumps({"attempt": 1, "host": "vm-9", "pid": 1, "at": time.time() - 30}).encode(),
    )
    assert not (lease.holder() or holder).alive(5)


def test_results_and_blobs_round_trip_through_the_artifact_store(store: ObjectStore):
    artifacts = ArtifactStore(store)
    ref = artifacts.put_text("run-1", "2", "v1-d1-result.txt", "é" * 20_000)
    assert (
        artifacts.read_text(ref) == "é" * 20_000 and ref.uri == "artifact:run-1/2/v1-d1-result.txt"
    )
    text = "x" * 450_000
    blob = blob_ref("run-1", "state-2-abc", text)
    put_blob(artifacts, blob, text)
    assert blob.parts == 3 and read_blob(artifacts, blob) == text
    with pytest.raises(FileNotFoundError, match="is not in"):
        artifacts.read_text("artifact:run-1/2/nope.txt")


def test_xsky_store_is_a_bucket_url_or_one_sentence():
    assert parse_store(None).s3 is False and parse_store("").url == ""
    where = parse_store("s3://bucket/some/prefix/")
    assert (where.url, where.bucket, where.prefix) == (
        "s3://bucket/some/prefix",
        "bucket",
        "some/prefix",
    )
    for bad in ("/srv/xsky", "gs://b", "s3://", "s3://b/../x"):
        with pytest.raises(UsageError, match="XSKY_STORE"):
            parse_store(bad)


async def test_temporal_payloads_over_the_threshold_go_to_the_store_and_come_back(
    store: ObjectStore,
):
    """External Storage's driver over either store: a large payload becomes a small reference
    (its bytes in the store once, under the run's folder when it is a workflow's), a small one
    stays inline, and both decode to what was sent."""
    import dataclasses

    from temporalio.converter import ExternalStorage, StorageDriverStoreContext
    from temporalio.converter import StorageDriverWorkflowInfo as WorkflowInfo

    from activities.storage.payloads import PAYLOAD_THRESHOLD, StoreDriver
    from client.connect import DATA_CONVERTER

    storage = ExternalStorage(
        drivers=[StoreDriver(store)], payload_size_threshold=PAYLOAD_THRESHOLD
    )
    target = StorageDriverStoreContext(target=WorkflowInfo(namespace="default", id="xsky-a/b"))
    converter = dataclasses.replace(DATA_CONVERTER, external_storage=storage)._with_store_context(
        target
    )
    big = {"plan": "x" * (3 * 1024 * 1024)}  # over Temporal's 2 MiB limit for one payload
    small = {"plan": "y" * 1000}
    payloads = await converter.encode([big, small])
    assert payloads[0].ByteSize() < 1024 and len(payloads[0].external_payloads) == 1
    assert payloads[1].ByteSize() < PAYLOAD_THRESHOLD and not payloads[1].external_payloads
    keys = store.keys("")
    assert len(keys) == 1 and keys[0].startswith("xsky-a_b-") and "/_payloads/" in keys[0], keys
    assert await converter.decode(payloads, [dict, dict]) == [big, small]
    await converter.encode([big])  # the same payload again: the same one object
    assert store.keys("") == keys


def test_agent_log_lines_are_written_in_the_order_given_on_either_store(
    store: ObjectStore,
):
    """On an object store an agent's log lines go through writer threads (its event loop and
    heartbeats never wait for the network), each log's lines in the order written, all of them
    there after a flush; on the local directory they are written at once."""
    from activities.agents.transcripts import append_event, flush_logs

    for i in range(30):
        append_event(store, "run/agent/transcript.jsonl", "step", i=i)
    assert flush_logs(30)
    lines = [json.loads(x) for x in store.appended("run/agent/transcript.jsonl").splitlines()]
    assert [line["i"] for line in lines] == list(range(30))


def test_a_slow_object_store_does_not_hold_up_the_agent_that_logs(tmp_path: Path):
    """Five log lines to a store whose every append takes 0.2 s: the agent goes on at once."""
    from activities.agents.transcripts import append_event, flush_logs

    class Slow(LocalStore):
        shared = True

        def append(self, key: str, data: bytes, *, sync: bool = False) -> None:
            time.sleep(0.2)
            super().append(key, data, sync=sync)

    slow = Slow(tmp_path / "artifacts")
    began = time.monotonic()
    for i in range(5):
        append_event(slow, "run/a/transcript.jsonl", "step", i=i)
    assert time.monotonic() - began < 0.2
    assert flush_logs(30) and len(slow.appended("run/a/transcript.jsonl").splitlines()) == 5


@contextlib.contextmanager
def answering_with(status: int, code: str) -> Iterator[str]:
    """An S3 endpoint that answers every request with ``status`` and error ``code``."""

    class Down(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _down(self) -> None:
            body = f"<Error><Code>{code}</Code><Message>down</Message></Error>".encode()
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            self.send_response(status)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _down

    with serving(Down) as url:
        yield url


@pytest.fixture
def failing_endpoint() -> Iterator[str]:
    """An S3 endpoint that answers every request with a 503, as a store that is down does."""
    with answering_with(503, "ServiceUnavailable") as endpoint:
        yield endpoint


@pytest.mark.parametrize(
    ("status", "code"), [(400, "InvalidBucketName"), (301, "PermanentRedirect")]
)
def test_a_store_that_refuses_a_request_for_good_is_not_waited_for(status: int, code: str):
    # A bad bucket name, an object too large, another region: every GenericError was waited
    # for, ~9.5 minutes an attempt at the default timeout, then the attempt tried again.
    with answering_with(status, code) as endpoint:
        store = S3Store(parse_store("s3://bad_name/pre"), endpoint)
        for call in (lambda: store.put("run/1/result.txt", b"x"), lambda: store.get("k")):
            with pytest.raises(OSError) as raised:
                call()
            assert storage_problem(raised.value, store.where) is None, raised.value


def test_an_object_store_that_fails_is_a_storage_problem_an_attempt_waits_for(
    failing_endpoint: str,
):
    # Before, obstore's GenericError was no OSError: an attempt failed at once (its command's
    # record cleared, the command run again once the store was back) instead of waiting.
    store = S3Store(parse_store("s3://down/pre"), failing_endpoint)
    with pytest.raises(OSError) as raised:
        store.put("run/1/result.txt", b"x" * 400)
    problem = storage_problem(raised.value, store.where)
    assert problem == "s3://down/pre fails or does not answer", problem
    with pytest.raises(OSError) as read:
        store.get("run/1/result.txt")
    assert not isinstance(read.value, FileNotFoundError), "a failing store is not a missing key"
    assert storage_problem(read.value, store.where) is not None


def test_a_write_to_a_missing_bucket_is_a_storage_problem_not_a_missing_key(s3: S3Server):
    # A store wiped (its bucket gone): before, the write raised FileNotFoundError, the attempt
    # failed, its command's record was cleared and the command ran again.
    store = S3Store(parse_store(f"s3://gone-{uuid.uuid4().hex[:8]}/pre"), s3.endpoint)
    with pytest.raises(OSError) as raised:
        store.put("run/1/result.txt", b"x" * 400)
    assert not isinstance(raised.value, FileNotFoundError), raised.value
    assert storage_problem(raised.value, store.where) is not None
    with pytest.raises(FileNotFoundError):  # a read of a missing key is still that
        store.get("run/1/result.txt")


async def test_a_stopped_attempts_write_ends_before_the_attempt_does() -> None:
    """A checkpoint's write goes on in its thread when the attempt is stopped (paused, timed
    out): it landed after the attempt ended, over the next attempt's newer checkpoint."""
    import asyncio
    import time as clock

    from activities.agents.storage import patiently

    landed: list[float] = []

    def write() -> None:
        clock.sleep(0.4)  # a slow store
        landed.append(clock.monotonic())

    saving = asyncio.ensure_future(patiently(None, "s3://b", "the checkpoint", write))  # type: ignore[arg-type]
    await asyncio.sleep(0.1)
    saving.cancel()
    with pytest.raises(asyncio.CancelledError):
        await saving
    assert landed, "the attempt ended while its write was still on its way"


async def test_a_worker_does_not_start_on_a_bucket_that_is_not_there(
    s3: S3Server, failing_endpoint: str, caplog: pytest.LogCaptureFixture
):
    # A typo in XSKY_STORE's bucket was found by the first agent's first write, which waited
    # for it ("its bucket is missing") as for a store wiped: the run stood still, unexplained.
    from worker import store_answers

    missing = S3Store(parse_store(f"s3://typo-{uuid.uuid4().hex[:8]}/pre"), s3.endpoint)
    with pytest.raises(UsageError) as refused:
        await store_answers(missing)
    said = str(refused.value)
    assert f"the store {missing.where} refuses this worker: it answers 404" in said, said
    assert "aws s3 mb s3://typo-" in said and "<?xml" not in said
    await store_answers(
        S3Store(parse_store(f"s3://{s3.bucket(f'b-{uuid.uuid4().hex[:8]}')}/p"), s3.endpoint)
    )
    await store_answers(LocalStore(Path("/nonexistent-xsky")))  # (a local store: nothing asked)
    with caplog.at_level(logging.WARNING, logger="xsky.worker"):
        await store_answers(S3Store(parse_store("s3://down/pre"), failing_endpoint))
    assert "does not answer yet" in caplog.text  # said, and the agents wait for it


async def test_a_worker_refused_by_its_store_is_told_of_its_credentials_not_of_a_bucket(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
):
    # A 403 (credentials refused, or no s3:ListBucket on the prefix) was told to make the bucket.
    import worker

    with answering_with(403, "AccessDenied") as endpoint:
        with pytest.raises(UsageError) as refused:
            await worker.store_answers(S3Store(parse_store("s3://mine/pre"), endpoint))
    said = str(refused.value)
    assert "it answers 403" in said and "s3:ListBucket" in said and "mb s3://" not in said, said

    # A store that takes connections and never answers: obstore retries for minutes; the
    # worker starts after a short wait, saying so, and its agents wait for the store.
    hung = socket.socket()
    hung.bind(("127.0.0.1", 0))
    hung.listen(8)
    monkeypatch.setattr(worker, "STORE_CHECK_SECONDS", 1.0)
    try:
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="xsky.worker"):
            port = hung.getsockname()[1]
            await worker.store_answers(
                S3Store(parse_store("s3://mine/pre"), f"http://127.0.0.1:{port}")
            )
        assert time.monotonic() - started < 5
        assert "does not answer yet (no answer within 1s)" in caplog.text
    finally:
        hung.close()


async def test_writes_a_paused_store_holds_do_not_hold_up_the_workers_other_threads():
    # A paused or hung store holds a thread per write until it answers. Made in the event
    # loop's default executor (6 threads on two cores), a handful of them held every other use
    # of it: a DNS lookup (a model's, http_get's, an MCP server's connection) waited for the
    # store (chaos12). 16 writes held: more than that executor has on any machine up to 12 CPUs.
    class Beat:
        note = ""

        def progress(self, note: str) -> None:
            self.note = note

        async def flush(self) -> None:
            pass

        @contextlib.asynccontextmanager
        async def running(self):
            yield

    gate = threading.Event()
    writes = [
        asyncio.ensure_future(storage.patiently(Beat(), "the store", "a write", gate.wait))
        for _ in range(16)
    ]
    try:
        await asyncio.sleep(0.2)
        loop = asyncio.get_running_loop()
        await asyncio.wait_for(loop.getaddrinfo("localhost", 80), 5)
    finally:
        gate.set()
        await asyncio.gather(*writes)
