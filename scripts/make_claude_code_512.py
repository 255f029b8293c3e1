"""Regenerate ``data/traces/weka_claude_code_512.tar.gz`` from the original kv-cache-tester archive.

The original is a ``.tar.gz`` of the session files ``traces/trace_NNNN.json`` of callanjfox/kv-cache-tester
@ 94f6046d (Apache-2.0; the 710 of its 739 files that the shipped archive holds, 31.7 MB packed); they
carry 64-token chained prefix hashes.
This writes the same sessions in the same format with 512-token blocks: the ids are chained, so a
full 512-token block is identified by the id of its last 64-token block (``hash_ids[7::8]``) and a
partial 512-token tail carries no id (as a partial 64-token tail carries none in the original).
Every other field is kept as is; ``block_size`` becomes 512 and a ``derived_from`` note is added.
The archive is byte-reproducible (sorted names, zero times, no gzip name or time).

Usage: ``python scripts/make_claude_code_512.py ORIGINAL.tar.gz [OUT.tar.gz]``
"""

from __future__ import annotations

import gzip
import io
import json
import sys
import tarfile
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "data" / "traces" / "weka_claude_code_512.tar.gz"
FACTOR = 8  # 512 / 64
NOTE = ("callanjfox/kv-cache-tester @ 94f6046d traces/{name}, Apache-2.0; modified by smetric "
        "(scripts/make_claude_code_512.py): hash_ids coarsened from 64- to 512-token blocks")


def coarsen_requests(requests: list) -> None:
    """Keep the id of every 8th 64-token block (the last of each full 512-token block), recursively."""
    for request in requests:
        if request.get("type") == "subagent":
            coarsen_requests(request["requests"])
        else:
            request["hash_ids"] = request["hash_ids"][FACTOR - 1::FACTOR]


def main(original: Path, out: Path = OUT) -> None:
    """Read every session of ``original``, coarsen it, write ``out``."""
    with tarfile.open(original, "r:gz") as archive:
        members = sorted((m for m in archive if m.isfile() and m.name.endswith(".json")), key=lambda m: m.name)
        docs = [(Path(m.name).name, json.loads(archive.extractfile(m).read())) for m in members]
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, doc in docs:
            if doc["block_size"] * FACTOR != 512:
                raise ValueError(f"{name}: expected 64-token blocks, got {doc['block_size']}")
            coarsen_requests(doc["requests"])
            doc["block_size"] = 512
            doc["derived_from"] = NOTE.format(name=name)
            data = json.dumps(doc, separators=(",", ":")).encode()
            info = tarfile.TarInfo(f"weka_claude_code_512/{name}")
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as gz:
        gz.write(buffer.getvalue())
    print(f"wrote {len(docs)} sessions to {out} ({out.stat().st_size / 1e6:.1f} MB)")


if __name__ == "__main__":
    if not 2 <= len(sys.argv) <= 3:
        sys.exit("usage: python scripts/make_claude_code_512.py ORIGINAL.tar.gz [OUT.tar.gz]")
    main(*(Path(a) for a in sys.argv[1:3]))
