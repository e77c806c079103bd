"""The profile_page capability: show or reset a host's page profile (:mod:`trawl.profiles`).

``POST /v1/profile_page`` and ``trawl profile_page <host-or-url> [--reset]``; not an MCP tool (a setting for
people, not a step in an agent's reading). Declared once here.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING, ClassVar, Self

from pydantic import BaseModel, Field, ValidationError

from ..framing import one_line
from ..settings import Settings
from ..types import ErrorCode, TrawlError
from .base import Capability, Input, Output, Services, validation_message
from .models import ErrorOut

if TYPE_CHECKING:  # profiles loads the extractors: imported when a profile is read, not with the registry
    from ..profiles import Profile, Profiles


class ProfileIn(Input):
    positional: ClassVar[tuple[str, ...]] = ("host",)

    host: str = Field(min_length=1, max_length=2048, description="a URL on the site, or its host (docs.python.org, "
                                                                  "host:port; https assumed)")
    reset: bool = Field(default=False, description="forget the host's profile (it is learnt again from the next "
                                                   "page)")

    def target(self) -> str:
        return self.host


class SelectorOut(BaseModel):
    css: str = Field(description="the element the profile reads, as a CSS selector")
    learnt_at: str = Field(description="when it was learnt (UTC, ISO 8601)")
    learnt_f1: float = Field(description="how well it reproduced the extractor's text on that page")
    hits: int = Field(description="later pages where it matched and agreed with the extractor")
    misses: int = Field(description="consecutive pages where it did not (it is dropped at 2)")
    pages: int = Field(description="pages of the host read since it was learnt")


class ProfileOut(Output):
    host: str = ""
    enabled: bool = Field(default=False, description="whether profiles are used (TRAWL_PAGE_PROFILES)")
    profile: SelectorOut | None = None
    reset: bool = Field(default=False, description="a profile was there and is now forgotten")
    error: ErrorOut | None = None

    @classmethod
    def failure(cls, target: str, err: TrawlError) -> Self:
        return cls(ok=False, host=target[:253], error=ErrorOut.of(err))


def host_name(text: str) -> str:
    """The site a profile is kept for, ``https://docs.python.org:443``, from a URL or a host (``host[:port]``:
    https assumed); TrawlError(invalid_request) when it names none."""
    from ..profiles import origin_key

    site = origin_key(text)
    if not site:
        raise TrawlError(ErrorCode.INVALID_REQUEST, "host: not a host name or an http(s) URL")
    return site


def _out(profiles: Profiles, settings: Settings, req: ProfileIn) -> ProfileOut:
    host = host_name(req.host)
    prof = profiles.get(host)
    was_reset = profiles.reset(host) if req.reset else False
    return ProfileOut(host=host, enabled=settings.page_profiles, reset=was_reset,
                      profile=None if prof is None or req.reset else _selector_out(prof))


def _selector_out(p: Profile) -> SelectorOut:
    return SelectorOut(css=p.selector.css(), learnt_at=datetime.fromtimestamp(p.learnt_at, UTC).isoformat(
        timespec="seconds"), learnt_f1=p.learnt_f1, hits=p.hits, misses=p.misses, pages=p.pages)


async def profile_page(svc: Services, req: ProfileIn) -> ProfileOut:
    return _out(svc.engine.profiles, svc.settings, req)


def render_profile(o: ProfileOut) -> str:
    if o.error is not None:
        return f"error [{o.error.code}]: {one_line(o.error.message, 2000)}"
    state = "on" if o.enabled else "off (TRAWL_PAGE_PROFILES=1 turns them on)"
    if o.reset:
        return f"{o.host}: profile forgotten (page profiles are {state})"
    if o.profile is None:
        return f"{o.host}: no profile (page profiles are {state})"
    p = o.profile
    return (f"{o.host}: reads {one_line(p.css, 200)}  (learnt {p.learnt_at}, F1 {p.learnt_f1:.2f}; {p.hits} hits, "
            f"{p.misses} misses in a row, {p.pages} pages since)\npage profiles are {state}")


PROFILE_PAGE = Capability(
    name="profile_page", tool="profile_page", title="Show or reset a host's page profile", input=ProfileIn,
    output=ProfileOut, handler=profile_page, render=render_profile, read_only=False, open_world=False,
    bounded=False, agent_tool=False,
    description="""Show the page profile trawl learnt for a host (the element that holds its pages' main content,
reused while it keeps matching and agreeing with the extractor), or reset it with reset=true.""",
)


def run_profile_command(args: argparse.Namespace) -> int:
    """``trawl profile_page <host> [--reset] [--json]`` (its arguments come from ProfileIn), in this process."""
    fields = {"host": args.host, **({"reset": True} if args.reset else {})}
    try:
        req = ProfileIn.model_validate(fields)
        settings = Settings.from_env()
        from ..profiles import Profiles

        out = _out(Profiles(settings), settings, req)
    except ValidationError as exc:
        print(f"trawl: invalid arguments: {validation_message(exc)}", file=sys.stderr)
        return 2
    except TrawlError as err:
        print(f"trawl: {err.message}", file=sys.stderr)
        return 2
    print(json.dumps(out.model_dump(mode="json"), indent=2) if args.json else render_profile(out))
    return 0
