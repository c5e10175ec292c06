"""The process's settings as the environment gives them (xsky/config.py)."""

from __future__ import annotations

from xsky.config import load_settings


def test_web_ui_links_follow_the_port_the_dev_server_serves_its_ui_on():
    # `starter.py up` with XSKY_UI_PORT=18233 serves the UI there: a run's link must go there.
    assert load_settings({"XSKY_UI_PORT": "18233"}).ui_url == "http://localhost:18233"
    assert load_settings({}).ui_url == "http://localhost:8233"
    given = {"XSKY_UI_PORT": "18233", "XSKY_UI_URL": "https://temporal.example.com"}
    assert load_settings(given).ui_url == "https://temporal.example.com"  # a UI elsewhere


def test_the_skills_home_follows_xsky_home_and_an_earlier_default_home_is_named(
    tmp_path, monkeypatch
):
    # real11: XSKY_HOME moved runs, logs and the server but not the skill pipeline's home,
    # which stayed ~/.xsky/skills-home: two homes shared one set of atoms and skills.
    from xsky.config import former_skills_home

    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    old = tmp_path / "me" / ".xsky" / "skills-home"
    mine = tmp_path / "project" / ".xsky"
    assert load_settings({"XSKY_HOME": str(mine)}).skills_home == mine / "skills-home"
    assert load_settings({}).skills_home == old  # no XSKY_HOME: the default home, as before
    chosen = tmp_path / "elsewhere"
    given = {"XSKY_HOME": str(mine), "XSKY_SKILLS_HOME": str(chosen)}
    assert load_settings(given).skills_home == chosen
    # what was ingested in the default home before is named, not read, while the new is empty
    moved = load_settings({"XSKY_HOME": str(mine)})
    assert former_skills_home(moved, {"XSKY_HOME": str(mine)}) is None  # nothing there
    old.mkdir(parents=True)
    (old / "state.db").write_bytes(b"")
    assert former_skills_home(moved, {"XSKY_HOME": str(mine)}) == old
    assert former_skills_home(load_settings({}), {}) is None  # it is the home in use
    assert former_skills_home(load_settings(given), given) is None  # another chosen
    (mine / "skills-home").mkdir(parents=True)
    (mine / "skills-home" / "state.db").write_bytes(b"")
    assert former_skills_home(moved, {"XSKY_HOME": str(mine)}) is None  # the new one is used
