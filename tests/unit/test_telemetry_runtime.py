"""activities/telemetry.py ``runtime``: what its errors blame."""

from __future__ import annotations

import socket

import pytest

from activities import telemetry


@pytest.mark.parametrize("every", [0.0, 0.5, 120.0])
def test_a_runtime_option_the_sdk_refuses_is_not_blamed_on_metrics(monkeypatch, every):
    # (it said "cannot serve metrics on None: … choose another --metrics-port", with no metrics
    # asked for)
    monkeypatch.setattr(telemetry, "WORKER_HEARTBEAT", every)
    with pytest.raises(telemetry.TelemetryError) as raised:
        telemetry.runtime(None, None)
    said = str(raised.value)
    assert said.startswith("cannot start Temporal's runtime: "), said
    assert "metrics" not in said and "None" not in said, said


def test_a_metrics_address_in_use_is_said_so():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        bind = f"127.0.0.1:{taken.getsockname()[1]}"
        with pytest.raises(telemetry.TelemetryError) as raised:
            telemetry.runtime(bind, None)
    assert str(raised.value) == (
        f"cannot serve metrics on {bind}: the address is in use (another worker or exporter "
        "has it); choose another --metrics-port"
    )


def test_a_bad_metrics_address_is_blamed_on_metrics():
    with pytest.raises(
        telemetry.TelemetryError, match="^cannot serve metrics on nohost.invalid:9: "
    ):
        telemetry.runtime("nohost.invalid:9", None)
