"""Issue 27 at the unit level: the config file, the status page's token card, the absolute match signal's rules."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from trawl.scores import LIFT_WEAK, MEANING_CLOSE, MEANING_WEAK, WORDS_WEAK, judged, match_of
from trawl.server.status import _glance_html, saved_text
from trawl.settings import Settings, SettingsError, config_path
from trawl.types import Chunk


def _card(returned: int, page: int) -> str:
    st = {"last_hour": {"calls": 1, "errors": 0, "p50_ms": 80.0, "p95_ms": 90.0, "tokens_returned": returned,
                        "tokens_page": page,
                        "saving": 1 - returned / page}, "browser": {}, "extractor": {}}
    html = _glance_html(st)
    return html[html.index("<h3>Tokens</h3>"):]


def test_token_bar_shows_the_share_saved_and_never_a_false_100() -> None:
    card = _card(12, 40_000)  # 99.97% saved
    width = float(re.search(r"width:([0-9.]+)%", card).group(1))  # type: ignore[union-attr]
    assert width > 99.0  # the bar is as full as the figure beside it says
    assert "99.9%</span> saved" in card and "100%" not in card
    half = _card(500, 1000)
    assert "50%</span> saved" in half and "width:50.0%" in half
    assert saved_text(1.0) == "100%" and saved_text(0.001) == "<1%" and saved_text(0.0) == "0%"


def _chunks(*scores: float) -> list[Chunk]:
    return [Chunk(id=f"c{i}", index=i, heading_path=(), text=f"passage {i}", score=s) for i, s in enumerate(scores)]


def test_passages_without_evidence_are_left_out_and_said() -> None:
    out = judged(_chunks(0.9, 0.4, 0.0, -0.2), "hybrid", MEANING_WEAK + 0.05, 0.8)
    assert [c.id for c in out.chunks] == ["c0", "c1"] and out.match == "good"
    assert any("2 passage(s) with no evidence" in w for w in out.warnings)
    kept = judged(_chunks(0.9, 0.0), "hybrid", MEANING_WEAK + 0.05, 0.8, explicit_k=True)
    assert len(kept.chunks) == 2 and not kept.warnings  # the caller asked for k passages: k it gets
    none = judged(_chunks(0.0, 0.0), "bm25-only", None, 0.0)
    assert len(none.chunks) == 2  # nothing has evidence: the start of the page stays, and the match says weak
    assert none.match == "weak" and any("no passage matches the question well" in w for w in none.warnings)
    other_model = judged(_chunks(0.9), "hybrid", 0.3, 0.0, 0.29, calibrated=False)  # another model's cosines
    assert other_model.match == "" and not other_model.warnings


def test_match_is_weak_only_when_both_meaning_and_words_are() -> None:
    assert match_of(MEANING_WEAK - 0.01, WORDS_WEAK - 0.01) == "weak"
    assert match_of(None, WORDS_WEAK - 0.01) == "weak"
    assert match_of(MEANING_CLOSE, 0.0, typical=MEANING_CLOSE) == "good"  # close in meaning: good however typical
    assert match_of(MEANING_WEAK - 0.2, WORDS_WEAK) == "good"  # the words are there
    between = (MEANING_WEAK + MEANING_CLOSE) / 2
    assert match_of(between, 0.0, typical=between - LIFT_WEAK / 2) == "weak"  # does not stand out
    assert match_of(between, 0.0, typical=between - 2 * LIFT_WEAK) == "good"  # stands out from the page


def test_config_file_sits_between_the_defaults_and_the_environment(tmp_path: Path) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text('port = 9911\nstate_dir = "~/trawl-state"\nfile_roots = ["/srv/a", "/srv/b"]\n', encoding="utf-8")
    s = Settings.from_env({"TRAWL_CONFIG": str(cfg), "TRAWL_PORT": "9912"})
    assert s.port == 9912  # the variable wins over the file's line
    assert s.state_dir == Path("~/trawl-state").expanduser() and s.file_roots == ("/srv/a", "/srv/b")
    assert Settings.from_env({"TRAWL_CONFIG": str(cfg)}).port == 9911
    assert Settings().port == 8765  # made in code: neither file nor environment
    home = tmp_path / "home"
    (home / ".config" / "trawl").mkdir(parents=True)
    (home / ".config" / "trawl" / "config.toml").write_text("port = 9913\n", encoding="utf-8")
    assert config_path({"XDG_CONFIG_HOME": str(home / ".config")}) == home / ".config" / "trawl" / "config.toml"
    assert Settings.from_env({"XDG_CONFIG_HOME": str(home / ".config")}).port == 9913


@pytest.mark.parametrize(("text", "said"), [
    ('port = "abc"\n', "port = 'abc' in"),
    ("colour = 3\n", "unknown setting 'colour' in"),
    ("port = \n", "is not valid TOML"),
])
def test_bad_config_file_lines_name_the_file(tmp_path: Path, text: str, said: str) -> None:
    cfg = tmp_path / "config.toml"
    cfg.write_text(text, encoding="utf-8")
    with pytest.raises(SettingsError) as err:
        Settings.from_env({"TRAWL_CONFIG": str(cfg)})
    assert said in str(err.value) and str(cfg) in str(err.value)


def test_doctor_says_when_settings_come_from_this_shell_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from trawl.server.doctor import check_config

    # no daemon runs for this check (other tests' daemons, in this process or another worker, leave notes too)
    monkeypatch.setenv("TRAWL_RUNNING_DIR", str(tmp_path / "running"))

    cfg = tmp_path / "config.toml"
    settings = Settings(state_dir=tmp_path / "state", cache_dir=tmp_path / "cache")
    shell = check_config(settings, {"TRAWL_CONFIG": str(cfg), "TRAWL_PORT": "9001"})
    assert shell.level == "warn" and "TRAWL_PORT" in shell.detail and str(cfg) in shell.fix, shell
    cfg.write_text("port = 9001\n", encoding="utf-8")
    kept = check_config(settings, {"TRAWL_CONFIG": str(cfg), "TRAWL_PORT": "9001"})
    assert kept.level == "ok" and f"{cfg} sets port" in kept.detail, kept


def test_across_languages_only_a_low_cosine_is_weak() -> None:
    from trawl.scores import MEANING_WEAK_CROSS

    assert match_of(MEANING_WEAK - 0.02, 0.0, typical=MEANING_WEAK - 0.02, same=False) == "good"
    assert match_of(MEANING_WEAK_CROSS - 0.01, 0.0, same=False) == "weak"
