"""Every setting in one typed, frozen object read from the environment (craps_streams/settings.py),
and the generated table of them in docs/operating/settings.md."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest
from craps_streams.settings import Settings, SettingsError, env_names, load, markdown, rows
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
    defaults = Settings()  # every field has a default: nothing needs a variable
    for name, env, typ, _default, description in rows():
        assert env == "CRAPS_" + name.upper() and typ and description, name
        assert hasattr(defaults, name)
    assert "explicit" not in {r[0] for r in rows()} and not defaults.explicit
    assert len(env_names()) == len(set(env_names())) >= 35
    assert "CRAPS_CORE" in env_names() and "| `CRAPS_CORE` | auto or python or native | `auto` |" in markdown()


def test_read_from_the_environment_typed_and_frozen(monkeypatch):
    monkeypatch.setenv("CRAPS_TOPIC_PREFIX", "t1234.")
    monkeypatch.setenv("CRAPS_SESSION_TIMEOUT_MS", "6000")
    monkeypatch.setenv("CRAPS_WEB_CONFIG", "")  # empty: unset
    s = load()
    assert s.topics == Topics("t1234.") and s.topics.table_events == "t1234.table-events"
    assert s.session_timeout_ms == 6000 and s.heartbeat_ms == 1200 and s.web_config is None
    assert {"topic_prefix", "session_timeout_ms"} <= s.explicit and "web_config" not in s.explicit
    with pytest.raises(AttributeError):
        s.app_id = "another"  # type: ignore[misc]
    moved = s.replace(kafka_bootstrap="h:1")
    assert moved.broker.bootstrap == "h:1" and moved.explicit == s.explicit | {"kafka_bootstrap"}
    assert moved.topic_prefix == "t1234." and s.kafka_bootstrap == "127.0.0.1:9092"
    with pytest.raises(SettingsError, match="web_port"):
        s.replace(web_port=70000)


def test_variables_are_matched_in_any_case_and_others_ignored():
    s = load({"craps_web_port": "7001", "CRAPS_NOT_A_SETTING": "x", "OTHER_WEB_PORT": "9", "CRAPS_CHROMIUM": ""})
    assert s.web_port == 7001 and s.chromium is None and s.explicit == {"web_port"}
    assert load({"CRAPS_SECRETS_DIR": "/s", "CRAPS_HOLD_TAIL_ALERT": "1e-7"}).key_ring_path.as_posix() == "/s/table-keys.json"
    assert load({"CRAPS_HOLD_TAIL_ALERT": "1e-7"}).thresholds_set() == {"CRAPS_HOLD_TAIL_ALERT": "1e-07"}


@pytest.mark.parametrize("name,value", [("CRAPS_WEB_PORT", "many"), ("CRAPS_REPLICATION_FACTOR", "0"),
                                        ("CRAPS_CORE", "fast"), ("CRAPS_SESSION_TIMEOUT_MS", "-1")])
def test_a_value_that_is_not_valid_is_refused_naming_the_setting(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(SettingsError) as e:
        load()
    assert e.value.variable == name and e.value.value == value
    assert str(e.value).startswith(f"the setting {name}={value!r} is not valid: ")


def test_the_topics_come_from_the_prefix_not_from_import_time():
    import craps_streams.topics as topics

    assert not hasattr(topics, "TABLE_EVENTS") and not hasattr(topics, "TOPIC_PREFIX")
    assert set(Topics("x.").specs()) == {f"x.{n}" for n in ("table-events", "settlements", "layout-markers",
                                                           "surveillance", "rejections", "table-state")}
    assert Topics("x.").worker_outputs[-1] == "x.table-state"


FLOOR_START = """
import os, sys
import faust.worker
seen = {}
class Worker:  # the floor's Faust worker, stood in for: the test reads what the app was built with
    def __init__(self, app, **kw):
        seen['app'] = app
    def execute_from_commandline(self):
        floor = sys.modules['craps_streams.floor.app']
        print(floor.SETTINGS.floor_port, seen['app'].conf.id, 'CRAPS_FLOOR_PORT' in os.environ)
faust.worker.Worker = Worker
from craps_streams.cli import main
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("flags, env, expected", [
    (["--port", "7123", "--instance", "b"], {}, "7123 craps-streams-floor-b False"),
    ([], {"CRAPS_FLOOR_PORT": "7124", "CRAPS_FLOOR_INSTANCE": "c"}, "7124 craps-streams-floor-c True"),
    (["--port", "7125"], {"CRAPS_FLOOR_PORT": "7124"}, "7125 craps-streams-floor-1 True"),
])
def test_the_floor_view_takes_the_settings_the_command_read(flags, env, expected):
    # `craps-streams floor` reads the settings once, its flags over the environment, and the floor
    # app built at its import takes those: no variable is written for it to read again.
    clean = {k: v for k, v in os.environ.items() if not k.startswith("CRAPS_FLOOR_") and k != "CRAPS_APP_ID"}
    r = subprocess.run([sys.executable, "-c", FLOOR_START, "floor", *flags], cwd=ROOT, capture_output=True, text=True,
                       timeout=120, env={**clean, **env})
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.split("\n")[-2] == expected


def test_use_keeps_the_settings_it_handed_on():
    r = subprocess.run([sys.executable, "-c", "from craps_streams.settings import in_use, load, use\n"
                        "assert in_use() is None\ns = use(load().replace(floor_port=7001))\n"
                        "assert in_use() is s and in_use().floor_port == 7001\nprint('ok')"],
                       cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.stdout == "ok\n", r.stderr
