"""Redaction: every credential in the corpus goes, lookalikes stay, and redacting twice changes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from xsky.redact import redact, redact_value

CORPUS = [
    json.loads(line)
    for line in (Path(__file__).resolve().parents[1] / "fixtures" / "secrets" / "corpus.jsonl")
    .read_text()
    .splitlines()
]


@pytest.mark.parametrize(
    "record", [r for r in CORPUS if r["secrets"]], ids=lambda r: r["note"][:50]
)
def test_every_secret_in_the_corpus_is_removed(record: dict) -> None:
    out = redact(record["text"])
    for secret in record["secrets"]:
        assert secret not in out
    assert "[REDACTED:" in out


@pytest.mark.parametrize(
    "record", [r for r in CORPUS if not r["secrets"]], ids=lambda r: r["note"][:50]
)
def test_text_without_secrets_is_left_alone(record: dict) -> None:
    assert redact(record["text"]) == record["text"]


def test_redaction_is_idempotent_and_keeps_the_name_of_an_assignment() -> None:
    text = 'export DB_PASSWORD="hunter2-but-longer"\nAuthorization: Bearer abcdefghijklmnopqrstuvwxyz012345'
    once = redact(text)
    assert redact(once) == once
    assert "DB_PASSWORD=" in once and "hunter2" not in once
    assert "abcdefghijklmnop" not in once


def test_a_private_key_split_over_escaped_lines_and_nested_values_are_redacted() -> None:
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7yq0mW3tQ9xT2bq\nZ1h2c3RyaW5nc2VjcmV0\n-----END RSA PRIVATE KEY-----"
    value = {"files": [{"content": key}], "n": 3}
    out = redact_value(value)
    assert "MIIEowIBAAKCAQEA7yq0mW3tQ9xT2bq" not in json.dumps(out) and out["n"] == 3  # type: ignore[index]
    cut = redact(
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"
    )  # no END line
    assert "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU" not in cut


@pytest.mark.parametrize(
    "text",
    [
        '"password":"with,comma;semi-s3cret"',
        'password = ("s3cretvalue")',
        'password: "p@ss w0rd long"',
        'PASSWORD="hello world secret"',
        "Cookie: sessionid=abcdef1234567890; csrftoken=zzzzzzzz",
        "passwords: hunter2xyz,",
    ],
)
def test_a_whole_value_goes_however_it_is_quoted_or_punctuated(text: str) -> None:
    out = redact(text)
    assert "[REDACTED:" in out
    for word in (
        "comma",
        "semi",
        "s3cret",
        "w0rd",
        "hello",
        "world",
        "abcdef1234567890",
        "hunter2xyz",
    ):
        assert word not in out


@pytest.mark.parametrize(
    "text",
    [
        "DB_PASSWORD=${DB_PASSWORD}",
        "password: <your-password>",
        'token = os.environ["TOKEN"]',
        "PWD=/home/me/project",
        "max_tokens=4096",
    ],
)
def test_placeholders_and_lookalike_names_stay(text: str) -> None:
    assert redact(text) == text
