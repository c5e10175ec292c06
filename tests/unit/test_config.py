"""The process's settings as the environment gives them (xsky/config.py)."""

from __future__ import annotations

from xsky.config import load_settings


def test_web_ui_links_follow_the_port_the_dev_server_serves_its_ui_on():
    # `starter.py up` with XSKY_UI_PORT=18233 serves the UI there: a run's link must go there.
    assert load_settings({"XSKY_UI_PORT": "18233"}).ui_url == "http://localhost:18233"
    assert load_settings({}).ui_url == "http://localhost:8233"
    given = {"XSKY_UI_PORT": "18233", "XSKY_UI_URL": "https://temporal.example.com"}
    assert load_settings(given).ui_url == "https://temporal.example.com"  # a UI elsewhere
