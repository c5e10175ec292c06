"""A worker starts serving without the SDKs most of its agents never use — the model client
(openai) and MCP's — and imports them beside its polls when its settings say it will need them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SDKS = ("openai", "mcp", "mcp_types")


def _loaded(tmp_path: Path, code: str, **env: str) -> dict[str, bool]:
    """Which of ``SDKS`` are imported after ``code`` runs in a new process."""
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys, json\n{code}\nprint(json.dumps({{m: m in sys.modules for m in {SDKS!r}}}))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={
            "PATH": "/usr/bin:/bin",
            "HOME": str(tmp_path),
            "XSKY_HOME": str(tmp_path / "x"),
            **env,
        },
    )
    assert done.returncode == 0, done.stderr[-2000:]
    loaded: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return loaded


WARM = (
    "import worker\n"
    "from xsky.config import load_settings\n"
    "thread = worker.warm_up(load_settings(), ['llm', 'shell'])\n"
    "print('warming' if thread else 'nothing to warm')\n"
    "thread and thread.join(60)\n"
)


def test_a_worker_imports_neither_the_model_client_nor_mcp_to_start(tmp_path: Path) -> None:
    assert _loaded(tmp_path, "import worker") == dict.fromkeys(SDKS, False)
    assert _loaded(tmp_path, WARM) == dict.fromkeys(SDKS, False)  # nothing configured


def test_what_the_settings_name_is_imported_beside_the_polls(tmp_path: Path) -> None:
    assert _loaded(tmp_path, WARM, XSKY_MODEL="m", OPENAI_BASE_URL="http://127.0.0.1:9/v1") == {
        "openai": True,
        "mcp": False,
        "mcp_types": False,
    }
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"mcpServers": {"fs": {"command": "/bin/true"}}}))
    assert _loaded(tmp_path, WARM, XSKY_USER_SETTINGS=str(settings)) == {
        "openai": False,
        "mcp": True,
        "mcp_types": True,
    }
