"""Text from runs is shown, never obeyed: every control character and escape sequence comes out
as a visible escape, for terminals (printable), JSON, XML and the Web UI's markdown."""

from __future__ import annotations

import json
import re
import time
from datetime import UTC, datetime

import pytest

from xsky.leader.tasks import TaskState, board_markdown
from xsky.plan.xml import parse_workflow
from xsky.safe_text import json_safe, markdown_inline, printable, xml_safe

# Anything a terminal or a bidi-aware renderer would act on instead of showing.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def obeyed(text: str) -> list[str]:
    """The characters of ``text`` a terminal would obey (a CR only when not in a CRLF)."""
    return RAW.findall(text.replace("\r\n", "\n"))


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[2J\x1b[H", "\\x1b[2J\\x1b[H"),  # CSI: clear the screen, cursor home
        ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),  # SGR colours
        ("\x1b[1A\x1b[2K", "\\x1b[1A\\x1b[2K"),  # cursor up, erase the line
        (  # OSC 8 hyperlink, ST-terminated: the shown text would hide where it goes
            "\x1b]8;;https://evil.example/\x1b\\safe.txt\x1b]8;;\x1b\\",
            "\\x1b]8;;https://evil.example/\\x1b\\safe.txt\\x1b]8;;\\x1b\\",
        ),
        (
            "\x1b]52;c;cm0gLXJmIH4=\x07",
            "\\x1b]52;c;cm0gLXJmIH4=\\x07",
        ),  # OSC 52: write the clipboard
        ("\x1b]0;root@prod\x07", "\\x1b]0;root@prod\\x07"),  # the window title
        ("\x1bP+q544e\x1b\\", "\\x1bP+q544e\\x1b\\"),  # DCS
        (
            "\x1b_apc\x1b\\ \x1b^pm\x1b\\ \x1bXsos\x1b\\",
            "\\x1b_apc\\x1b\\ \\x1b^pm\\x1b\\ \\x1bXsos\\x1b\\",
        ),
        (
            "\x9b2J \x9d0;t\x9c",
            "\\x9b2J \\x9d0;t\\x9c",
        ),  # C1: CSI, OSC and ST in one character each
        ("\x85next", "\\x85next"),  # NEL
        ("paid\rPAID", "paid\\rPAID"),  # a lone CR would print PAID over paid
        ("abc\b\b\bxyz", "abc\\x08\\x08\\x08xyz"),  # backspaces overwrite too
        ("\x07\x00\x7f", "\\x07\\x00\\x7f"),  # BEL, NUL, DEL
        ("invoice\u202egnp.exe", "invoice\\u202egnp.exe"),  # RLO: would read invoiceexe.png
        (
            "\u2066a\u2069 \u200e\u200f\u061c \u202a\u202b\u202c\u202d",
            "\\u2066a\\u2069 \\u200e\\u200f\\u061c \\u202a\\u202b\\u202c\\u202d",
        ),
    ],
)
def test_each_control_and_escape_sequence_is_shown_as_an_escape(raw: str, shown: str) -> None:
    out = printable(raw)
    assert out == shown
    assert obeyed(out) == []


def test_line_breaks_tabs_and_crlf_stay_and_other_text_is_untouched() -> None:
    text = "line one\n\tindented\r\nwindows line\nünïcode 中文 emoji 🙂 [bold]x[/] \\x1b literal"
    assert printable(text) is text  # nothing to do: the same object, no copy
    assert printable("a\r\nb\r\n") == "a\r\nb\r\n"
    assert printable("a\r\r\nb") == "a\\r\r\nb"  # only the CR of the CRLF stays


def test_on_one_line_line_breaks_are_shown_too() -> None:
    assert printable("a\nb\r\nc\td", keep_newlines=False) == "a\\nb\\r\\nc\td"


@pytest.mark.parametrize("keep_newlines", [True, False])
def test_printable_is_idempotent(keep_newlines: bool) -> None:
    text = "".join(chr(c) for c in range(0, 0xA0)) + "\u202e\u2066\r\n\r" * 3 + "\\x1b[0m"
    once = printable(text, keep_newlines=keep_newlines)
    assert printable(once, keep_newlines=keep_newlines) == once
    assert obeyed(once) == []


def test_five_megabytes_are_made_printable_in_under_a_second() -> None:
    line = "2026-11-28 \x1b[32mINFO\x1b[0m agent T-3 \u202eread\u202c the page\r\n"
    log = (line * (5_000_000 // len(line) + 1))[:5_000_000]  # a coloured log, CRLF lines
    for sample in (log, "\x1b" * 5_000_000):  # and nothing but controls
        took = []
        for _ in range(3):  # the best of three: a busy machine slows one run, not the code
            started = time.perf_counter()
            out = printable(sample)
            took.append(time.perf_counter() - started)
        assert min(took) < 1.0
        assert obeyed(out) == [] and printable(out) == out


def test_json_keeps_the_exact_values_without_a_character_a_terminal_obeys() -> None:
    value = {"result": "\x1b[2J\x9b31m\u202eabc\x7f\r\n", "ok": "plain ✓"}
    dumped = json_safe(json.dumps(value, ensure_ascii=False, indent=2))
    assert obeyed(dumped) == []
    assert "\\u009b" in dumped and "\\u202e" in dumped and "plain ✓" in dumped
    assert json.loads(dumped) == value


def test_xml_keeps_a_plan_valid_and_equal_while_its_bidi_controls_show() -> None:
    xml = (
        '<workflow name="n" taskId="t"><agent name="llm" id="1">'
        "<task>pay invoice\u202egnp.exe \x9b now</task></agent></workflow>"
    )
    shown = xml_safe(xml)
    assert obeyed(shown) == [] and "&#x202E;" in shown and "&#x9B;" in shown
    assert parse_workflow(shown) == parse_workflow(xml)


def test_markdown_cells_are_literal_text_on_one_line() -> None:
    cell = markdown_inline(
        "a | b\nc [click](https://evil.example) <img src=x> &#x202e; \x1b[2J *x*"
    )
    assert "\n" not in cell and obeyed(cell) == []
    for raw in ("|", "[", "]", "<", "&", "*"):
        assert f"\\{raw}" in cell
    assert re.search(r"(?<!\\)[|\[\]<>&*]", cell) is None  # every one escaped
    assert "\\\\x1b" in cell  # the shown ESC, its backslash escaped for markdown
    assert markdown_inline("x" * 100, 10) == "x" * 9 + "…"


def test_the_web_ui_board_keeps_its_table_whatever_the_agents_wrote() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    task = TaskState(
        id="T-1",
        agent_id="1",
        session_id="run",
        subject="s",
        description="sum | [page](https://e.example)\u202e",
        assigned_agent="llm",
        stored="failed",
        error="boom\x1b[2J | second cell?\nnew row?",
    )
    md = board_markdown("plan **bold** \x9b", [task], now, "footer\x1b]52;c;eA==\x07")
    assert obeyed(md) == []
    lines = md.splitlines()
    # the table is a fenced block of two lines: no line of the agents' words opens or closes it
    assert [i for i, line in enumerate(lines) if line.startswith("```")] == [2, 5]
    row = lines[4]
    assert row.startswith("T-1 ") and "[page](https://e.example)" in row and "\\u20" in row
    # the error under the table: one line of literal markdown (its line break did not split it)
    note = lines[7]
    assert note == r"- **T-1** boom\\x1b\[2J \| second cell? new row?", note
    assert md.splitlines()[0].startswith("**plan \\*\\*bold\\*\\* \\\\x9b**")
    assert md.endswith("footer\\x1b]52;c;eA==\\x07")


def test_a_board_cell_is_one_line_with_single_spaces_and_cut_at_its_width() -> None:
    """Cells already plain are taken as they are (the board's fast path); any other is made so:
    controls shown, whitespace runs, edge spaces and tabs made single spaces, a long one cut."""
    from xsky.leader.tasks import _plain

    assert _plain("T-12", 16) == "T-12"
    assert _plain("fetch the page", 14) == "fetch the page"
    assert _plain(" fetch  the\tpage ", 36) == "fetch the page"
    assert _plain("fetch  the page", 36) == "fetch the page"
    assert _plain(" fetch the page", 36) == "fetch the page"
    assert _plain("fetch the page ", 36) == "fetch the page"
    assert _plain("fetch\u3000the\xa0page", 36) == "fetch the page"  # Unicode spaces
    assert _plain("fetch the page", 10) == "fetch the…"
    assert _plain("ok\u202e", 36) == "ok\\u202e"  # a bidi override is shown, not obeyed
    assert _plain("ok\x1b[2J", 36) == "ok\\x1b[2J"
