"""An MCP server's command given by its full path, refused as "not found" inside the sandbox:
when that path is a symbolic link (a virtualenv's bin/python), the refusal says where it leads."""

from __future__ import annotations

import os
from pathlib import Path

from activities.mcp.pool import link_target_note


def test_a_command_that_is_a_link_says_where_it_leads(tmp_path: Path):
    real = tmp_path / "pyenv" / "bin" / "python3"
    real.parent.mkdir(parents=True)
    real.write_text("#!/bin/sh\n")
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    os.symlink(real, venv / "python")
    note = link_target_note(str(venv / "python"))
    assert f"is a link to {real}" in note and str(real.parent) in note
    # a plain file, a bare name, a missing path, a ${VAR}: nothing to add
    assert link_target_note(str(real)) == ""
    assert link_target_note("python3") == ""
    assert link_target_note(str(tmp_path / "missing")) == ""
    assert link_target_note("${HOME}/bin/server") == ""
