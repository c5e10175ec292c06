"""TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE alone (no other TEMPORAL_* variable, no config
file) are read without importing Temporal's SDK, as the SDK reads them: a command that never
connects (validate) does not import Temporal where a deployment sets the address."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.envconfig import ClientConfig

from xsky.config import load_settings, temporal_connect_config

ENVS = [
    {"TEMPORAL_ADDRESS": "1.2.3.4:7233"},
    {"TEMPORAL_ADDRESS": "temporal:7233", "TEMPORAL_NAMESPACE": "ns"},
    {"TEMPORAL_NAMESPACE": "ns"},
    {"TEMPORAL_ADDRESS": ""},
    {"TEMPORAL_NAMESPACE": ""},
    {"TEMPORAL_ADDRESS": " spaced :1 ", "TEMPORAL_NAMESPACE": " n "},
    {"TEMPORAL_ADDRESS": "ünï:1"},
    # the SDK's: any other TEMPORAL_* variable
    {"TEMPORAL_ADDRESS": "x:1", "TEMPORAL_TLS": "true"},
    {"TEMPORAL_ADDRESS": "x:1", "TEMPORAL_API_KEY": "k"},
    {"TEMPORAL_ADDRESS": "x:1", "TEMPORAL_GRPC_META_A": "b"},
]


@pytest.mark.parametrize("given", ENVS)
def test_what_the_sdk_makes_of_the_variables(
    given: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # (no config file where the SDK looks)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config"), **given}
    sdk = dict(ClientConfig.load_client_connect_config(override_env_vars=env))
    assert temporal_connect_config(env) == sdk
    settings = load_settings(env)
    assert settings.address == (sdk.get("target_host") or "localhost:7233")
    assert settings.namespace == (sdk.get("namespace") or "default")


def test_a_config_file_is_read_by_the_sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (the SDK finds its file through the process's own environment)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    config = tmp_path / "config" / "temporalio" / "temporal.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[profile.default]\naddress = "from-file:7233"\nnamespace = "filed"\n')
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "config")}
    sdk = dict(ClientConfig.load_client_connect_config(override_env_vars=env))
    assert sdk.get("namespace") == "filed"  # (the SDK found it where xsky looks)
    assert temporal_connect_config(env) == sdk
    env["TEMPORAL_NAMESPACE"] = "over"
    assert temporal_connect_config(env) == dict(
        ClientConfig.load_client_connect_config(override_env_vars=env)
    )
