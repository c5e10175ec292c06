"""Make sure browser agents (and their tests) have a Chromium; say which one.

Order: Playwright's own Chromium (already there, or downloaded when the network allows),
an installed system Chromium, and finally Debian's `chromium` package via apt-get when
running as root. The chosen executable is written to the stamp
file; activities find the same browser at run time (activities/browser.py).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

SYSTEM_CANDIDATES = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")


def playwright_chromium() -> str | None:
    """The path of Playwright's own Chromium when it is installed."""
    code = (
        "from playwright.sync_api import sync_playwright\n"
        "with sync_playwright() as p: print(p.chromium.executable_path)"
    )
    try:
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
    except subprocess.TimeoutExpired:
        return None
    path = out.stdout.strip()
    return path if out.returncode == 0 and path and os.path.exists(path) else None


def system_chromium() -> str | None:
    for path in SYSTEM_CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("chromium")


def try_playwright_download() -> str | None:
    print("browser: trying Playwright's own Chromium download …", flush=True)
    try:
        res = subprocess.run(
            [sys.executable, "-m", "playwright", "install", "chromium"],
            capture_output=True,
            text=True,
            timeout=300,
        )
    except subprocess.TimeoutExpired:
        print("browser: the download timed out", flush=True)
        return None
    if res.returncode != 0:
        lines = (res.stderr + res.stdout).strip().splitlines()
        reason = next((ln for ln in lines if "Error" in ln), lines[-1] if lines else "(no output)")
        print(f"browser: Playwright's download failed: {reason.strip()[:160]}", flush=True)
        return None
    return playwright_chromium()


def try_apt() -> str | None:
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        return None
    print("browser: installing Debian's chromium package with apt-get …", flush=True)
    env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
    cmd = ["apt-get", "install", "-y", "-q", "--no-install-recommends", "chromium"]
    if subprocess.run(cmd, env=env, capture_output=True).returncode != 0:
        subprocess.run(["apt-get", "update", "-q"], env=env, capture_output=True)
        if subprocess.run(cmd, env=env, capture_output=True).returncode != 0:
            print("browser: apt-get could not install chromium", flush=True)
            return None
    return system_chromium()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--stamp", required=True)
    args = ap.parse_args()
    stamp = Path(args.stamp)

    path = playwright_chromium()
    source = "Playwright's own Chromium"
    if path is None and (path := try_playwright_download()):
        source = "Playwright's own Chromium (just downloaded)"
    if path is None and (path := system_chromium()):
        source = "the system Chromium (Playwright's own could not be downloaded)"
    if path is None and (path := try_apt()):
        source = "Debian's chromium package (Playwright's download is unavailable here)"
    if path is None:
        print(
            "browser: no Chromium available. Browser agents and their tests need one: install "
            "the 'chromium' package, or run `python -m playwright install chromium` with network access.",
            file=sys.stderr,
        )
        return 1
    print(f"browser: using {source}: {path}", flush=True)
    stamp.write_text(path + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
