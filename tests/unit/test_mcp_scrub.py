"""The secrets' values out of what leaves the worker: the scrubber's forms (as is, URL-encoded,
JSON-escaped, base64 alone or inside a longer encoding), values inside structures and models,
and the log filter worker.py installs (messages, arguments and tracebacks, under every logger)."""

from __future__ import annotations

import base64
import io
import json
import logging
from urllib.parse import quote, quote_plus

import pytest

from activities.sandbox import secrets
from xsky.runs import AgentOutcome
from xsky.security.scrub import Scrubber, forms

SECRET = "s3cr3t/tok+en=9f2c never-leaves"
MARK = "[secret ${GH_TOKEN}]"


@pytest.fixture
def scrubber() -> Scrubber:
    return Scrubber([("GH_TOKEN", SECRET)])


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


@pytest.mark.parametrize(
    "shown",
    [
        SECRET,
        quote(SECRET, safe=""),
        quote_plus(SECRET),
        json.dumps(SECRET)[1:-1],
        b64(SECRET),
        base64.urlsafe_b64encode(SECRET.encode()).decode(),
    ],
    ids=["as-is", "url", "url-plus", "json", "base64", "base64url"],
)
def test_a_value_is_replaced_in_each_form_it_trivially_takes(scrubber: Scrubber, shown: str):
    text = scrubber.scrub(f"before {shown} after")
    assert text == f"before {MARK} after"


@pytest.mark.parametrize("prefix", ["", "u:", "us:", "user:", "a-longer-user:"])
def test_base64_of_the_value_inside_a_longer_text_is_found_at_every_alignment(
    scrubber: Scrubber, prefix: str
):
    header = f"Authorization: Basic {b64(prefix + SECRET + ':x')}"
    scrubbed = scrubber.scrub(header)
    assert MARK in scrubbed
    # what is left cannot give the value back
    left = scrubbed.removeprefix("Authorization: Basic ").replace(MARK, "")
    assert len(left) <= 2 * ((len(prefix) + 4) * 4 // 3 + 4)


def test_short_values_are_not_matched_and_scrubbing_is_idempotent():
    s = Scrubber([("PORT", "8080"), ("GH_TOKEN", SECRET)])
    assert forms("8080") == [] and s.scrub("port 8080") == "port 8080"
    once = s.scrub(f"{SECRET} and {b64(SECRET)}")
    assert s.scrub(once) == once == f"{MARK} and {MARK}"
    assert not Scrubber() and Scrubber().scrub(SECRET) == SECRET


def test_values_inside_structures_and_models_are_scrubbed_without_changing_them(
    scrubber: Scrubber,
):
    data = {"token": SECRET, SECRET: [1, (SECRET, None)], "n": 3}
    assert scrubber.scrub_value(data) == {"token": MARK, MARK: [1, (MARK, None)], "n": 3}
    assert data["token"] == SECRET  # a copy
    outcome = AgentOutcome(result=f"got {SECRET}", details={"structured": {"t": SECRET}})
    clean = scrubber.scrub_value(outcome)
    assert clean.result == f"got {MARK}" and clean.details == {"structured": {"t": MARK}}
    assert SECRET not in clean.model_dump_json() and outcome.result == f"got {SECRET}"


def test_a_value_handed_to_a_server_is_scrubbed_whatever_its_name(
    monkeypatch: pytest.MonkeyPatch,
):
    value = "plain-name-but-secret-7731"
    monkeypatch.setenv("XSKY_TEST_PLAIN", value)
    assert secrets.scrub(value) == value  # not handed out yet: nothing to know it by
    assert secrets.handed_out("XSKY_TEST_PLAIN") == value
    assert secrets.scrub(f"x{value}x") == "x[secret ${XSKY_TEST_PLAIN}]x"
    assert secrets.scrub_value({"v": [value]}) == {"v": ["[secret ${XSKY_TEST_PLAIN}]"]}


def test_the_log_filter_scrubs_messages_arguments_and_tracebacks_of_every_logger(
    monkeypatch: pytest.MonkeyPatch,
):
    value = "log-secret-5d1e-never-logged"
    monkeypatch.setenv("XSKY_TEST_LOG_TOKEN", value)
    secrets.handed_out("XSKY_TEST_LOG_TOKEN")
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logging.Formatter("%(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        secrets.install_log_filter()
        secrets.install_log_filter()  # twice: one filter each
        assert sum(isinstance(f, secrets.ScrubFilter) for f in handler.filters) == 1
        logging.getLogger("xsky.mcp").warning("stderr ended: %s", value)
        logging.getLogger("temporalio.activity").warning(f"failed: {b64(value)}")
        try:
            raise RuntimeError(f"boom {value}")
        except RuntimeError:
            logging.getLogger("some.library").exception("it broke")
    finally:
        root.removeHandler(handler)
        for target in (root, logging.getLogger("xsky")):
            for f in [f for f in target.filters if isinstance(f, secrets.ScrubFilter)]:
                target.removeFilter(f)
    text = out.getvalue()
    assert value not in text and b64(value) not in text
    assert text.count("[secret ${XSKY_TEST_LOG_TOKEN}]") == 3, text
    assert "RuntimeError: boom [secret ${XSKY_TEST_LOG_TOKEN}]" in text  # the traceback kept


def test_an_answer_larger_than_a_worker_keeps_is_refused_not_read() -> None:
    """A server's reply of hundreds of MB was read, copied about seven times and stored (a
    second security review): over the bound it is refused with what to ask instead."""
    import pytest
    from mcp_types import CallToolResult, TextContent

    from activities.mcp.results import MAX_RESULT_CHARS, ResultTooLarge, result_size, tool_result

    small = CallToolResult(content=[TextContent(type="text", text="ok")])
    assert result_size(small) == 2
    big = CallToolResult(content=[TextContent(type="text", text="x" * (MAX_RESULT_CHARS + 1))])
    with pytest.raises(ResultTooLarge, match="ask for less"):
        tool_result(None, "dump", big)  # type: ignore[arg-type]
