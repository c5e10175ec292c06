"""The skills home on one host (client/skills_host.py): with an object store (workers on
several machines) the skill pipeline runs only where ``worker.py --skills`` says, and a second
host's worker asked to run it while another host's serves it refuses with a sentence."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
import time

import pytest
from temporalio.worker import Worker

from client.skills_host import serves_skills, skills_elsewhere, skills_identity
from tests.conftest import ROOT, Env
from workflows.skills.watch import SkillsScanWorkflow

pytestmark = pytest.mark.integration


def test_one_machine_runs_the_pipeline_everywhere_several_only_where_asked(env: Env):
    one = env.settings
    several = dataclasses.replace(env.settings, store="s3://bucket/xsky")
    assert serves_skills(one, None) and not serves_skills(several, None)
    assert serves_skills(several, True) and not serves_skills(one, False)


async def test_a_second_host_asked_for_the_skills_home_refuses(env: Env):
    vm_a = dataclasses.replace(env.settings, host="vm-a", store="s3://bucket/xsky")
    vm_b = dataclasses.replace(vm_a, host="vm-b")
    holder = Worker(
        env.client,
        task_queue=env.settings.skills_queue,
        workflows=[SkillsScanWorkflow],
        identity=skills_identity(vm_a, 4242),
    )
    async with holder:
        deadline = time.monotonic() + 30
        while await skills_elsewhere(env.client, vm_b) is None:
            assert time.monotonic() < deadline, "vm-a's worker never showed as a poller"
            await asyncio.sleep(0.2)
        assert await skills_elsewhere(env.client, vm_b) == "vm-a"
        assert await skills_elsewhere(env.client, vm_a) is None  # its own host: no one else

        # worker.py on vm-b with --skills: a sentence, exit 2, nothing served
        environ = env.environ() | {"XSKY_HOST": "vm-b", "XSKY_STORE": "s3://bucket/xsky"}
        proc = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, str(ROOT / "worker.py"), "--skills"],
            env=environ,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 2, proc.stderr
        assert "the skills home is on host vm-a" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
