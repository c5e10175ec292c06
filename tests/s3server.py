"""An S3-compatible server for tests and benches: moto's server mode, started on a free local
port (MinIO cannot be installed on these machines; moto installs from PyPI). It keeps its
objects in memory and is stopped with the test."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from cli.devserver import free_port


@dataclass(frozen=True)
class S3Server:
    endpoint: str
    pid: int = 0  # moto's process: a test may stop it (SIGSTOP) to play a paused store

    def env(self, bucket: str, prefix: str = "xsky") -> dict[str, str]:
        """What a worker needs to use ``bucket`` on this server (the standard AWS variables)."""
        return {
            "XSKY_STORE": f"s3://{bucket}/{prefix}",
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_REGION": "us-east-1",
        }

    def bucket(self, name: str) -> str:
        urllib.request.urlopen(urllib.request.Request(f"{self.endpoint}/{name}", method="PUT"))
        return name


@contextmanager
def s3_server(log: Path | None = None) -> Iterator[S3Server]:
    port = free_port()
    out = open(log, "wb") if log else subprocess.DEVNULL
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=out,
        stderr=subprocess.STDOUT,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(endpoint + "/", timeout=1)
                break
            except urllib.error.HTTPError:
                break  # it answers
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"moto's S3 server did not start on {endpoint}") from None
                time.sleep(0.1)
        yield S3Server(endpoint, proc.pid)
    finally:
        proc.terminate()
        proc.wait(10)
        if log:
            out.close()  # type: ignore[union-attr]
