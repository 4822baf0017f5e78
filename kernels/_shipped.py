"""The folders of shipped machine code (``kernels/cubin/``, ``kernels/cupy_cache/``): read, and written whole."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path


def read_manifest(folder: Path, form: int) -> dict:
    """``folder``'s ``manifest.json`` when it is one of format ``form``, else ``{}`` (none, unreadable, or
    another layout: its files are then not used)."""
    try:
        data = json.loads((folder / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("format") == form else {}


def write_folder(folder: Path, files: dict[str, bytes], manifest: dict, ours: Callable[[str], bool]) -> None:
    """Make ``folder`` hold ``files`` and their ``manifest.json``: a file of the folder that ``ours``
    recognises and ``files`` no longer names is removed, nothing else is touched; the manifest is written
    last (a file it names that is missing or altered is not used: the loaders check)."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.iterdir():
        if ours(old.name) and old.name not in files:
            old.unlink()
    for name, data in files.items():
        (folder / name).write_bytes(data)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
