"""Every setting in one typed, frozen object read from the environment (craps_streams/settings.py),
and the generated table of them in docs/operating/settings.md."""
from __future__ import annotations

import subprocess
import sys

import pytest
from pydantic import ValidationError

from craps_streams.settings import Settings, env_names, load, markdown, rows
from craps_streams.topics import Topics
from tests.conftest import ROOT


def test_the_settings_page_is_the_table_the_code_renders():
    page = (ROOT / "docs" / "operating" / "settings.md").read_text()
    assert page == markdown(), ("docs/operating/settings.md is out of date: regenerate it with "
                                "`python3 -m craps_streams.settings --markdown > docs/operating/settings.md`")
    r = subprocess.run([sys.executable, "-m", "craps_streams.settings", "--markdown"], cwd=ROOT,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout == page


def test_every_setting_has_a_type_a_default_and_a_description():
    for name, env, typ, _default, description in rows():
        assert env == "CRAPS_" + name.upper() and typ and description, name
        assert Settings.model_fields[name].default is not ... , f"{name} has no default"
    assert len(env_names()) == len(set(env_names())) >= 35
    assert "CRAPS_CORE" in env_names() and "| `CRAPS_CORE` | auto or python or native | `auto` |" in markdown()


def test_read_from_the_environment_typed_and_frozen(monkeypatch):
    monkeypatch.setenv("CRAPS_TOPIC_PREFIX", "t1234.")
    monkeypatch.setenv("CRAPS_SESSION_TIMEOUT_MS", "6000")
    monkeypatch.setenv("CRAPS_WEB_CONFIG", "")  # empty: unset
    s = load()
    assert s.topics == Topics("t1234.") and s.topics.table_events == "t1234.table-events"
    assert s.session_timeout_ms == 6000 and s.heartbeat_ms == 1200 and s.web_config is None
    with pytest.raises(ValidationError):
        s.app_id = "another"  # type: ignore[misc]
    assert s.model_copy(update={"kafka_bootstrap": "h:1"}).broker.bootstrap == "h:1"


@pytest.mark.parametrize("name,value", [("CRAPS_WEB_PORT", "many"), ("CRAPS_REPLICATION_FACTOR", "0"),
                                        ("CRAPS_CORE", "fast"), ("CRAPS_SESSION_TIMEOUT_MS", "-1")])
def test_a_value_that_is_not_valid_is_refused_naming_the_setting(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(ValidationError) as e:
        load()
    assert e.value.errors()[0]["loc"][0] == name.removeprefix("CRAPS_").lower()


def test_the_topics_come_from_the_prefix_not_from_import_time():
    import craps_streams.topics as topics

    assert not hasattr(topics, "TABLE_EVENTS") and not hasattr(topics, "TOPIC_PREFIX")
    assert set(Topics("x.").specs()) == {f"x.{n}" for n in ("table-events", "settlements", "layout-markers",
                                                           "surveillance", "rejections", "table-state")}
    assert Topics("x.").worker_outputs[-1] == "x.table-state"
