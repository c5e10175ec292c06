"""xsky's one configuration object: every ``XSKY_*`` variable, Temporal's connection settings
and where the settings files are, loaded once by :func:`load_settings` and passed down.
No other module reads the environment for configuration (modules that pass environment
variables on to child processes, or expand ``$VARS`` in user paths, use it as data).

Read when asked (never at import), so tests and tools can set the environment first.

Connection settings come from Temporal's own environment configuration
(:mod:`temporalio.envconfig`): ``TEMPORAL_ADDRESS``, ``TEMPORAL_NAMESPACE``,
``TEMPORAL_API_KEY``, ``TEMPORAL_TLS*``, ``TEMPORAL_PROFILE`` and the profiles of
``TEMPORAL_CONFIG_FILE`` (default ``~/.config/temporalio/temporal.toml``), so a Temporal
Cloud profile works unchanged.

| variable | default | meaning |
|---|---|---|
| TEMPORAL_ADDRESS | localhost:7233 | the Temporal frontend |
| TEMPORAL_NAMESPACE | default | namespace of every run |
| TEMPORAL_PROFILE | default | which profile of the Temporal config file to use |
| XSKY_TASK_QUEUE | xsky | leader workflows' queue; agents use ``<queue>-<kind>`` |
| XSKY_HOME | .xsky | local state: server DB, logs, runs, artifacts |
| XSKY_ARTIFACTS | $XSKY_HOME/artifacts | the local store (results, ledgers, logs, screenshots …) when XSKY_STORE is unset |
| XSKY_STORE | (unset: XSKY_ARTIFACTS) | ``s3://bucket/prefix``: an S3-compatible object store instead, shared by workers on any machine (``AWS_ENDPOINT_URL`` and the AWS credentials variables say where and as whom) |
| AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL | (AWS S3) | the object store's endpoint (``http://`` allowed); credentials and region: the standard AWS variables, which obstore reads itself |
| XSKY_HOST | (the machine's name) | this worker's host identity: its workspaces' task queue is ``<queue>-host-<host>`` |
| XSKY_RUNS | $XSKY_HOME/runs | per-run workspaces (``<runs>/<workflow id>/workspace``) |
| XSKY_ARTIFACT_THRESHOLD | 8192 | results larger than this (bytes) travel as references |
| XSKY_UI_URL | http://localhost:$XSKY_UI_PORT | the Temporal Web UI, for links |
| XSKY_MAX_PLAN_BYTES | 5242880 | largest workflow XML accepted |
| XSKY_SKILLS_HOME | $XSKY_HOME/skills-home when XSKY_HOME is set, else ~/.xsky/skills-home | trajectories, atoms and the skill library |
| XSKY_USER_SETTINGS | ~/.xsky/settings.json | the user's settings file (roles, permissions, skills) |
| XSKY_PROJECT_DIR | . | the project whose ``.xsky/settings.json`` applies |
| XSKY_MODEL | (none: offline) | the model agents and the planner use (``OPENAI_BASE_URL`` says where) |
| XSKY_SKILLS_MODEL | (none: offline) | the model of the skill pipeline's agents |
| XSKY_COORDINATOR_MODEL | ``XSKY_MODEL`` | the model of the leader's coordinator (judges results, the goal, stalls; answers workers) |
| XSKY_CHROMIUM | (found) | the Chromium executable for browser agents |
| XSKY_UI_PORT | 8233 | the Web UI port ``starter.py server`` uses |
| OTEL_EXPORTER_OTLP_ENDPOINT | (none) | turns on tracing of runs over OTLP/HTTP (the exporter reads ``OTEL_*``) |
| XSKY_WORKER_WAIT | 10 | seconds a start waits for a worker on each queue it needs before saying none serves it (and a change to a running run, for one serving its queue) |
| XSKY_WORKFLOW_SLOTS | 10 | a worker's workflow tasks in progress at once |
| XSKY_STICKY_TIMEOUT | 10 | seconds a workflow task waits for the worker that caches its run before any worker may take it |
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from xsky.errors import UsageError
from xsky.storage import parse_store


@dataclass(frozen=True)
class Settings:
    address: str
    namespace: str
    task_queue: str
    home: Path
    artifacts: Path
    runs: Path
    artifact_threshold: int
    ui_url: str
    max_plan_bytes: int
    skills_home: Path
    user_settings: Path = Path("~/.xsky/settings.json")
    project_dir: Path = Path(".")
    model: str | None = None
    skills_model: str | None = None
    coordinator_model: str | None = None
    openai_base_url: str | None = None
    chromium: str | None = None
    ui_port: int = 8233
    tracing: bool = False  # OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT is set: the worker exports traces
    service_name: str = "xsky-worker"  # OTEL_SERVICE_NAME
    worker_wait: float = 10.0  # how long a start waits for a worker to poll before saying none does
    # A worker's workflow tasks in progress at once, and how long one waits for the worker that
    # caches its run before another takes it (docs/deployment.md: measured by bench/load.py) —
    # also what a run stands still when its leader's worker dies (bench/recovery.py).
    workflow_slots: int = 10
    sticky_timeout: float = 10.0
    profile: str | None = None
    # XSKY_STORE (None: the local directory ``artifacts``) and the S3 endpoint (AWS_ENDPOINT_URL).
    store: str | None = None
    store_endpoint: str | None = None
    host: str = "localhost"  # XSKY_HOST: this worker's host identity (its workspaces' queue)
    # Client.connect keyword arguments from temporalio.envconfig (address, namespace, TLS, API key …).
    connect_config: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def connect_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``Client.connect``: the profile's, with our address and namespace."""
        return {**self.connect_config, "target_host": self.address, "namespace": self.namespace}

    @property
    def query_timeout(self) -> timedelta:
        """How long xsky waits for a query's answer: 5 s at most, and always under the sticky
        wait. A query the server held on a dead worker's sticky queue for the sticky wait is
        sent on to the run's queue as a "legacy" query whose history runs past the run's last
        workflow task, and sdk-core (temporalio 1.35) applies those events to the run a worker
        that took it over caches: the run then fails to replay, and that worker's workflow
        tasks fail for good. The server sends a query on so only while its asker still waits
        (docs/deployment.md, "Queries while a run is taken over": what this does not close)."""
        return timedelta(seconds=max(0.5, min(5.0, self.sticky_timeout / 2)))

    @property
    def skills_queue(self) -> str:
        """The task queue of the skill pipeline (its workflows and activities)."""
        return f"{self.task_queue}-skills"

    def host_queue(self, host: str | None = None) -> str:
        """The task queue of one host's workspaces (the worker-specific task queue pattern)."""
        return f"{self.task_queue}-host-{host or self.host}"

    def kind_queue(self, kind: str) -> str:
        """The task queue that serves agents of one kind (browser, file, llm, shell)."""
        return f"{self.task_queue}-{kind}"

    def ui_link(self, workflow_id: str) -> str:
        return f"{self.ui_url.rstrip('/')}/namespaces/{self.namespace}/workflows/{workflow_id}"


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise UsageError(
            f"{name}={raw!r} is not a whole number; set it to e.g. {default}"
        ) from None
    if value <= 0:
        raise UsageError(f"{name}={raw!r} must be positive; set it to e.g. {default}")
    return value


def _host(raw: str) -> str:
    """A host identity fit for a task queue's name (letters, digits, ``.``, ``-``, ``_``)."""
    host = re.sub(r"[^A-Za-z0-9_.-]+", "-", raw.strip()).strip("-.")[:100]
    if not host:
        raise UsageError(
            f"XSKY_HOST={raw!r} has no letter or digit; name this worker's host, e.g. vm-1"
        )
    return host


def temporal_connect_config(env: Mapping[str, str], profile: str | None = None) -> dict[str, Any]:
    """Temporal's environment configuration (profile file + TEMPORAL_* variables) as
    ``Client.connect`` keyword arguments; a missing profile or a broken file is a sentence."""
    if profile is None and not _temporal_configured(env):
        # Nothing to read, so nothing the SDK would find ({}): a command that never connects
        # (validate, roles) does not pay a tenth of a second to import Temporal's client.
        return {}
    if profile is None and _address_and_namespace_only(env):
        # What the SDK makes of these two alone (tests/unit/test_config_plain_temporal.py
        # holds the two side by side): where TEMPORAL_ADDRESS is set, as a deployment sets
        # it, `validate` imported Temporal (a fifth of a second) to read one variable.
        said: dict[str, Any] = {}
        if env.get("TEMPORAL_ADDRESS"):
            said["target_host"] = env["TEMPORAL_ADDRESS"]
        if "TEMPORAL_NAMESPACE" in env:
            said["namespace"] = env["TEMPORAL_NAMESPACE"]
        return said
    from temporalio.envconfig import ClientConfig

    try:
        return dict(
            ClientConfig.load_client_connect_config(
                profile=profile or env.get("TEMPORAL_PROFILE") or None,
                config_file=env.get("TEMPORAL_CONFIG_FILE") or None,
                override_env_vars=dict(env),
            )
        )
    except Exception as e:  # noqa: BLE001 - the SDK's bridge raises its own ConfigError for any problem
        raise UsageError(
            f"Temporal's client configuration cannot be used: {e}; check TEMPORAL_PROFILE and "
            "TEMPORAL_CONFIG_FILE (or ~/.config/temporalio/temporal.toml)"
        ) from None


def _temporal_configured(env: Mapping[str, str]) -> bool:
    """Whether Temporal's environment configuration has anything to say: a TEMPORAL_*
    variable, or its configuration file where the SDK looks (the user's config folder)."""
    return any(name.startswith("TEMPORAL_") for name in env) or _config_file(env)


# The variables read without the SDK when no other TEMPORAL_* is set and no config file is
# there (TLS, an API key, a profile, a codec, gRPC metadata: the SDK reads those).
_PLAIN_TEMPORAL = frozenset({"TEMPORAL_ADDRESS", "TEMPORAL_NAMESPACE"})


def _address_and_namespace_only(env: Mapping[str, str]) -> bool:
    return {n for n in env if n.startswith("TEMPORAL_")} <= _PLAIN_TEMPORAL and not _config_file(
        env
    )


def _config_file(env: Mapping[str, str]) -> bool:
    """Whether Temporal's configuration file is where the SDK looks (the user's config folder)."""
    homes = [env.get("XDG_CONFIG_HOME"), f"{env['HOME']}/.config" if env.get("HOME") else None]
    homes.append(os.path.expanduser("~/.config"))
    return any(home and Path(home, "temporalio", "temporal.toml").exists() for home in homes)


# Every XSKY_* variable xsky reads (a person's settings, and those its own processes pass on:
# a command's values, its attempt's key, the secrets' descriptor), and the compose file's.
SETTING_NAMES = frozenset(
    """XSKY_HOME XSKY_STORE XSKY_ARTIFACTS XSKY_RUNS XSKY_TASK_QUEUE XSKY_UI_PORT XSKY_UI_URL
    XSKY_MODEL XSKY_SKILLS_MODEL XSKY_COORDINATOR_MODEL XSKY_USER_SETTINGS XSKY_SKILLS_HOME
    XSKY_PROJECT_DIR XSKY_HOST XSKY_MAX_PLAN_BYTES XSKY_ARTIFACT_THRESHOLD XSKY_CHROMIUM
    XSKY_CACHE_DIR XSKY_WORKFLOW_SLOTS XSKY_WORKER_WAIT XSKY_STICKY_TIMEOUT XSKY_WATCHDOG
    XSKY_RECORD_SPARE XSKY_STATUSES XSKY_ATTEMPT_KEY XSKY_SECRETS_FD XSKY_WORKSPACE
    XSKY_S3_ACCESS_KEY XSKY_S3_SECRET_KEY XSKY_RECORD_HISTORIES""".split()
)


def misspelt_settings(environ: Mapping[str, str] | None = None) -> list[str]:
    """A sentence for each XSKY_* variable set that xsky does not read but is a letter or two
    from one it does (the task queue's name without its underscore): such a setting was
    ignored without a word. Other XSKY_* names (a person's own, for an MCP server) are not
    questioned."""
    import difflib

    env = os.environ if environ is None else environ
    said = []
    for name in sorted(env):
        if not name.startswith("XSKY_") or name in SETTING_NAMES or name.startswith("XSKY_V"):
            continue
        close = difflib.get_close_matches(name, SETTING_NAMES, n=1, cutoff=0.85)
        if close:
            said.append(f"{name} is not a setting xsky reads (ignored) — did you mean {close[0]}?")
    return said


def default_skills_home() -> Path:
    """The skills home when neither XSKY_SKILLS_HOME nor XSKY_HOME is set (the only one before
    v0.12.4, whatever XSKY_HOME said)."""
    return (Path.home() / ".xsky" / "skills-home").absolute()


def skills_home_of(env: Mapping[str, str]) -> Path:
    """XSKY_SKILLS_HOME; else ``$XSKY_HOME/skills-home`` when XSKY_HOME is set, so a home of
    its own keeps its skill pipeline too; else :func:`default_skills_home`."""
    if env.get("XSKY_SKILLS_HOME"):
        return Path(env["XSKY_SKILLS_HOME"]).expanduser().absolute()
    if env.get("XSKY_HOME"):
        return (Path(env["XSKY_HOME"]).expanduser() / "skills-home").absolute()
    return default_skills_home()


def former_skills_home(settings: Settings, environ: Mapping[str, str] | None = None) -> Path | None:
    """The default skills home when XSKY_HOME moved this process's elsewhere, it holds what
    was ingested and the new one nothing yet: the place a person's earlier atoms and skills
    are (they are not moved, nor read, without a word)."""
    env = os.environ if environ is None else environ
    if env.get("XSKY_SKILLS_HOME"):
        return None  # chosen
    old = default_skills_home()
    if settings.skills_home == old or (settings.skills_home / "state.db").exists():
        return None
    return old if (old / "state.db").exists() else None


def moved_note(former: Path) -> str:
    """What to do about a former skills home (:func:`former_skills_home`)."""
    return (
        f"what was ingested before XSKY_HOME moved the skills home is in {former}: "
        f"set XSKY_SKILLS_HOME={former} to go on with it, or move it here"
    )


def load_settings(
    environ: Mapping[str, str] | None = None, *, profile: str | None = None
) -> Settings:
    """The configuration of this process, from ``environ`` (default: the environment)."""
    env = os.environ if environ is None else environ
    home = Path(env.get("XSKY_HOME") or ".xsky")
    connect = temporal_connect_config(env, profile)
    return Settings(
        address=str(connect.pop("target_host", None) or "localhost:7233"),
        namespace=str(connect.pop("namespace", None) or "default"),
        task_queue=env.get("XSKY_TASK_QUEUE") or "xsky",
        home=home,
        artifacts=Path(env.get("XSKY_ARTIFACTS") or home / "artifacts"),
        runs=Path(env.get("XSKY_RUNS") or home / "runs"),
        artifact_threshold=_int(env, "XSKY_ARTIFACT_THRESHOLD", 8192),
        # (the dev server `starter.py up` starts serves its UI on XSKY_UI_PORT: links follow it)
        ui_url=env.get("XSKY_UI_URL") or f"http://localhost:{_int(env, 'XSKY_UI_PORT', 8233)}",
        max_plan_bytes=_int(env, "XSKY_MAX_PLAN_BYTES", 5 * 1024 * 1024),
        skills_home=skills_home_of(env),
        user_settings=Path(
            env.get("XSKY_USER_SETTINGS") or Path.home() / ".xsky" / "settings.json"
        ),
        project_dir=Path(env.get("XSKY_PROJECT_DIR") or "."),
        model=env.get("XSKY_MODEL") or None,
        skills_model=env.get("XSKY_SKILLS_MODEL") or None,
        coordinator_model=env.get("XSKY_COORDINATOR_MODEL") or None,
        openai_base_url=env.get("OPENAI_BASE_URL") or None,
        chromium=env.get("XSKY_CHROMIUM") or None,
        ui_port=_int(env, "XSKY_UI_PORT", 8233),
        worker_wait=float(_int(env, "XSKY_WORKER_WAIT", 10)),
        workflow_slots=_int(env, "XSKY_WORKFLOW_SLOTS", 10),
        sticky_timeout=float(_int(env, "XSKY_STICKY_TIMEOUT", 10)),
        # OpenTelemetry's own variables: the exporter reads the rest (headers, timeout) itself.
        tracing=bool(
            env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        ),
        service_name=env.get("OTEL_SERVICE_NAME") or "xsky-worker",
        profile=profile or env.get("TEMPORAL_PROFILE") or None,
        store=parse_store(env.get("XSKY_STORE")).url or None,
        store_endpoint=env.get("AWS_ENDPOINT_URL_S3") or env.get("AWS_ENDPOINT_URL") or None,
        host=_host(env.get("XSKY_HOST") or socket.gethostname()),
        connect_config=connect,
    )


def server_ports(grpc_port: int) -> tuple[int, int, int, int]:
    """The ports a local Temporal dev server of ``grpc_port`` uses: gRPC, Web UI, HTTP API,
    metrics. ``xsky server`` starts it so. Agents' egress refuses these on this machine as a
    fallback only: it discovers the ports the server process really listens on (a stock
    ``temporal server start-dev`` picks its own), see activities/sandbox/temporal_ports.py."""
    return grpc_port, grpc_port + 1000, grpc_port + 2000, grpc_port + 2001
