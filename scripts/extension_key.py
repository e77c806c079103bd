#!/usr/bin/env python3
"""Generate the key pair that pins the trawl extension's id.

Chrome derives an unpacked extension's id from the ``"key"`` in manifest.json
(base64 of the DER SubjectPublicKeyInfo): the first 32 hex digits of its
SHA-256, with 0-f mapped to a-p. Pinning the id lets the daemon accept the
extension socket only from ``Origin: chrome-extension://<id>``.

    python scripts/extension_key.py --out extension-key.pem      # new pair; prints key + id
    python scripts/extension_key.py --show extension/manifest.json  # id of a manifest's key

Keep the private key out of the repository (it is only needed to pack a .crx
or to publish). After changing the key, update ``PINNED_EXTENSION_ID`` in
daemon/trawl/browser/identity.py; the contract test fails until you do.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path


def extension_id(public_der: bytes) -> str:
    digest = hashlib.sha256(public_der).hexdigest()[:32]
    return "".join(chr(ord("a") + int(c, 16)) for c in digest)


def _generate_with_cryptography() -> tuple[bytes, bytes]:
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    der = private.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return pem, der


def _generate_with_openssl() -> tuple[bytes, bytes]:
    pem = subprocess.run(
        ["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048"],
        check=True, capture_output=True,
    ).stdout
    der = subprocess.run(
        ["openssl", "pkey", "-pubout", "-outform", "DER"], input=pem, check=True, capture_output=True
    ).stdout
    return pem, der


def generate() -> tuple[bytes, bytes]:
    """A new RSA-2048 pair as (private PEM, public DER)."""
    try:
        return _generate_with_cryptography()
    except ImportError:
        return _generate_with_openssl()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", type=Path, help="write the private key (PEM, mode 0600) here")
    p.add_argument("--show", type=Path, help="print the extension id of this manifest.json's key")
    args = p.parse_args(argv)
    if args.show:
        key = json.loads(args.show.read_text())["key"]
        print(extension_id(base64.b64decode(key)))
        return 0
    pem, der = generate()
    if args.out:
        fd = os.open(args.out, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
        print(f"private key written to {args.out}", file=sys.stderr)
    print(json.dumps({"key": base64.b64encode(der).decode(), "id": extension_id(der)}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
