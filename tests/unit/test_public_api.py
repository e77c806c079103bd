"""The public surface of the `trawl` package is pinned: adding or removing a name is a deliberate change."""

import inspect

import trawl


def test_exported_names_are_pinned() -> None:
    assert sorted(trawl.__all__) == sorted(
        [
            "Chunk",
            "Coverage",
            "Engine",
            "ErrorCode",
            "ErrorInfo",
            "FetchResult",
            "Settings",
            "TrawlError",
            "__version__",
            "afetch_relevant",
            "fetch_relevant",
        ]
    )
    for name in trawl.__all__:
        assert hasattr(trawl, name), name


def test_sync_and_async_twins_take_the_same_parameters() -> None:
    sync = inspect.signature(trawl.fetch_relevant).parameters
    async_ = inspect.signature(trawl.afetch_relevant).parameters
    assert list(sync) == list(async_) == ["target", "query", "k", "max_age_s", "source", "engine"]
    assert inspect.iscoroutinefunction(trawl.afetch_relevant)
    assert not inspect.iscoroutinefunction(trawl.fetch_relevant)


def test_error_codes_are_stable_strings() -> None:
    assert trawl.ErrorCode.LOGIN_REQUIRED == "login_required"
    assert trawl.ErrorCode.TOO_LARGE.value == "too_large"
