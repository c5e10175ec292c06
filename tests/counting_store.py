"""A store that counts what is asked of it: every call to the store behind it, by name.

Each call of the ObjectStore protocol is a request someone pays for on S3 (a PUT, a GET, a
LIST, a DELETE), so tests and benches wrap the store an attempt works with in this and read
how many reads and writes it made. Thread-safe: attempts call the store from threads.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

from xsky.storage import ObjectStore

READS = frozenset({"get", "chunks", "exists", "keys", "appended"})
WRITES = frozenset({"put", "put_new", "append", "delete"})


class CountingStore:
    """``inner``, with every call counted (``calls``; ``log`` keeps them in order, with keys)."""

    def __init__(self, inner: ObjectStore):
        self.inner = inner
        self.where = inner.where
        self.shared = inner.shared
        self.calls: Counter[str] = Counter()
        self.log: list[tuple[str, str]] = []
        self._lock = threading.Lock()

    def _count(self, name: str, key: str) -> None:
        with self._lock:
            self.calls[name] += 1
            self.log.append((name, key))

    @property
    def reads(self) -> int:
        with self._lock:
            return sum(n for name, n in self.calls.items() if name in READS)

    @property
    def writes(self) -> int:
        with self._lock:
            return sum(n for name, n in self.calls.items() if name in WRITES)

    def reset(self) -> None:
        with self._lock:
            self.calls.clear()
            self.log.clear()

    def put(self, key: str, data: bytes, *, sync: bool = False) -> None:
        self._count("put", key)
        self.inner.put(key, data, sync=sync)

    def put_new(self, key: str, data: bytes) -> bool:
        self._count("put_new", key)
        return self.inner.put_new(key, data)

    def get(self, key: str) -> bytes:
        self._count("get", key)
        return self.inner.get(key)

    def get_tagged(self, key: str) -> tuple[bytes, str]:
        self._count("get", key)  # (one GET, as get: S3 returns the ETag with the object)
        return self.inner.get_tagged(key)

    def put_if(self, key: str, data: bytes, tag: str | None, *, sync: bool = False) -> str | None:
        self._count("put", key)  # (one PUT, as put: its condition rides in its headers)
        # (a store of before ``sync`` is not given it: bench/store_ops.py --before runs one)
        if not sync:
            return self.inner.put_if(key, data, tag)
        return self.inner.put_if(key, data, tag, sync=sync)

    def chunks(self, key: str) -> Iterator[bytes]:
        self._count("chunks", key)
        return self.inner.chunks(key)

    def exists(self, key: str) -> bool:
        self._count("exists", key)
        return self.inner.exists(key)

    def keys(self, prefix: str) -> list[str]:
        self._count("keys", prefix)
        return self.inner.keys(prefix)

    def delete(self, key: str) -> None:
        self._count("delete", key)
        self.inner.delete(key)

    def append(self, key: str, data: bytes, *, sync: bool = False) -> None:
        self._count("append", key)
        self.inner.append(key, data, sync=sync)

    def appended(self, key: str) -> bytes:
        self._count("appended", key)
        return self.inner.appended(key)

    def local(self, key: str) -> Path | None:
        return self.inner.local(key)
