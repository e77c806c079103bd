"""Which extraction path this installation runs, and what it costs in quality (for ``trawl doctor`` and the status
page).

trawl's extraction cascade starts from rs-trafilatura when its wheel is installed (today: CPython 3.12 on x86-64
Linux; pyproject's environment marker installs it only there) and from trafilatura elsewhere. Both paths were
measured on the same pages with ``benchmarks/bench_extract_paths.py`` (the engine's own stage sequence, mean token
F1 against wcxb-dev's reference text): over all 1497 pages of wcxb-dev, 0.8703 with rs-trafilatura and 0.8443
without (-2.6 points). The first re-measured in stop 34, the second in stop 35 (its path's own rules), with
``bench_extract.py``'s trawl row (``--no-rs`` for the second), the same stage sequence and scorer. Re-measure after
changing the cascade.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass

# benchmarks/bench_extract.py (and --no-rs), Python 3.12, all 1497 pages, stops 34 and 35.
F1_WITH_RS = 0.8703
F1_WITHOUT_RS = 0.8443
MEASURED_ON = "all 1497 wcxb-dev pages"


@dataclass(frozen=True, slots=True)
class ExtractorPath:
    name: str  # "rs-trafilatura" or "trafilatura"
    best: bool  # the best path trawl has
    f1: float  # this path's F1 on wcxb-dev
    f1_best: float  # the best path's F1, for comparison
    why: str  # why this path runs here

    def line(self) -> str:
        head = f"{self.name} first (F1 {self.f1:.3f} on {MEASURED_ON})"
        if self.best:
            return head
        return (f"{head}; with rs-trafilatura it would be {self.f1_best:.3f} "
                f"({(self.f1 - self.f1_best) * 100:+.1f} points): {self.why}")

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "best": self.best, "f1": self.f1, "f1_best": self.f1_best, "why": self.why,
                "measured_on": MEASURED_ON}


def current() -> ExtractorPath:
    from .extract import candidates

    if candidates.HAVE_RS:
        return ExtractorPath("rs-trafilatura", True, F1_WITH_RS, F1_WITH_RS, "installed")
    v = sys.version_info
    if (v.major, v.minor) == (3, 12) and sys.platform == "linux" and platform.machine() == "x86_64":
        why = "rs-trafilatura is not installed here: pip install 'rs-trafilatura>=0.1.1,<0.2'"
    else:
        why = (f"rs-trafilatura has no wheel for CPython {v.major}.{v.minor} on {sys.platform}/{platform.machine()} "
               "(it ships one for 3.12 on x86-64 Linux)")
    return ExtractorPath("trafilatura", False, F1_WITHOUT_RS, F1_WITH_RS, why)
