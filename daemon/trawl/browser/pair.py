"""``python -m trawl.browser.pair``: print a one-time pairing code (what ``trawl pair`` runs)."""

from .pairing import main

if __name__ == "__main__":
    raise SystemExit(main())
