"""One host holds a workspace for every run that uses it: the store's create-only write
(``put_new``) on the local directory and on an S3-compatible server (moto), and the claims made
of it — the holder answered while alive, a lost one replaced by the next generation, and of
two machines racing for a generation exactly one winning while the other reads the winner."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from activities.storage import claims
from activities.storage.local import LocalStore
from activities.storage.s3 import S3Store
from tests.s3server import S3Server, s3_server
from xsky.storage import ObjectStore, parse_store

KEY = "_workspaces/site-build"


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    with s3_server() as server:
        yield server


@pytest.fixture(autouse=True)
def _aws(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in S3Server("").env("x").items():
        if name.startswith("AWS_") and name != "AWS_ENDPOINT_URL":
            monkeypatch.setenv(name, value)


@pytest.fixture(params=["local", "s3"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> ObjectStore:
    if request.param == "local":
        return LocalStore(tmp_path / "artifacts")
    server: S3Server = request.getfixturevalue("s3")
    bucket = server.bucket(f"c-{uuid.uuid4().hex[:12]}")
    return S3Store(parse_store(f"s3://{bucket}/pre"), server.endpoint)


def test_put_new_writes_once_and_of_racing_writers_exactly_one_wins(store: ObjectStore):
    assert store.put_new("k/claims/0000000000", b"first") is True
    assert store.put_new("k/claims/0000000000", b"second") is False
    assert store.get("k/claims/0000000000") == b"first"
    won: list[bytes] = []
    gate = threading.Barrier(8)

    def race(n: int) -> None:
        data = f"writer {n}".encode()
        gate.wait()
        if store.put_new("k/claims/0000000001", data):
            won.append(data)

    threads = [threading.Thread(target=race, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and store.get("k/claims/0000000001") == won[0]
    assert store.keys("k/claims/") == ["k/claims/0000000000", "k/claims/0000000001"]


def me(host: str) -> claims.Holder:
    return claims.Holder(host, f"q-host-{host}", -1)


async def settled(
    store: ObjectStore, host: str, alive: set[str], lost: str | None = None
) -> claims.Holder:
    async def is_alive(queue: str) -> bool:
        return queue in alive

    return await claims.settle(store, KEY, me(host), lost, is_alive, f"run-{host}")


async def test_a_live_holder_is_answered_a_lost_or_dead_one_is_replaced(store: ObjectStore):
    first = await settled(store, "h-a", alive=set())
    assert (first.host, first.generation) == ("h-a", 0)
    # another run, claimed on h-b, while h-a is alive: h-a
    again = await settled(store, "h-b", alive={"q-host-h-a"})
    assert (again.host, again.generation) == ("h-a", 0)
    # the run's leader found h-a lost: h-b takes the next generation, even if h-a looked alive
    moved = await settled(store, "h-b", alive={"q-host-h-a"}, lost="q-host-h-a")
    assert (moved.host, moved.generation) == ("h-b", 1)
    # no worker of h-b beats any more: the next claim takes it over
    dead = await settled(store, "h-c", alive=set())
    assert (dead.host, dead.generation) == ("h-c", 2)
    # the holder's own host claims again: itself, no new generation
    own = await settled(store, "h-c", alive=set())
    assert (own.host, own.generation) == ("h-c", 2)
    assert claims.holder(store, KEY) == claims.Holder("h-c", "q-host-h-c", 2)


async def test_two_machines_that_race_for_a_workspace_agree_on_one_holder(tmp_path: Path):
    """Both list the claims before either writes (a barrier in the listing): both try generation
    0, one write wins, the other reads the winner and answers it."""

    class Racing(LocalStore):
        gate = threading.Barrier(2)
        listings = 0

        def keys(self, prefix: str) -> list[str]:
            found = super().keys(prefix)
            Racing.listings += 1
            if Racing.listings <= 2:  # the first listing of each machine: both see nothing
                self.gate.wait(timeout=10)
            return found

    store = Racing(tmp_path / "artifacts")
    alive = {"q-host-h-a", "q-host-h-b"}
    a, b = await asyncio.gather(settled(store, "h-a", alive), settled(store, "h-b", alive))
    assert a == b and a.generation == 0 and a.host in ("h-a", "h-b")
    assert store.keys(f"{KEY}/claims/") == [f"{KEY}/claims/0000000000"]
