"""A mistyped flag is reported with the subcommand's own usage (issue 27 walkthrough: `trawl fetch notes.md -q x`
printed trawl's top-level usage, which does not show where the question goes)."""

from __future__ import annotations

import pytest
from trawl.cli import main


def test_unknown_fetch_flag_shows_fetchs_usage_and_where_the_question_goes(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["fetch", "notes.md", "-q", "how do I rotate the key?"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage: trawl fetch" in err and "url [query]" in err
    assert "unrecognized arguments: -q how do I rotate the key?" in err
    assert "the question is fetch's second argument" in err


def test_unknown_flag_of_another_subcommand_names_that_subcommand(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["status", "--bogus"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "usage: trawl status" in err and "unrecognized arguments: --bogus" in err
    assert "second argument" not in err
