"""Tests that run a filesystem operation both as the worker's own user and, where the tests run
as root, as the unprivileged user a sandbox drops to (the worker does so only as root)."""

from __future__ import annotations

import os

ROOT = os.geteuid() == 0
NOBODY = (65534, 65534)
OWNERS = [None, NOBODY] if ROOT else [None]
