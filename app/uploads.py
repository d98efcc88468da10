"""An uploaded config.json becomes a model folder the sources can read (sources.resolve_model)."""

from __future__ import annotations

import hashlib
import json
import re
import tempfile
from pathlib import Path


def config_folder(data: bytes, root: Path | None = None) -> str:
    """Store the bytes as <root>/<content hash>/<model name>/config.json and return that folder. The folder is
    named after the config's ``_name_or_path`` because a folder model is named after its directory."""
    try:
        name = str(json.loads(data).get("_name_or_path") or "").rstrip("/").split("/")[-1]
    except (ValueError, AttributeError):
        name = ""
    name = re.sub(r"[^\w.-]+", "-", name).strip("-.") or "uploaded-model"
    base = root or Path(tempfile.gettempdir()) / "mac-llm-planner-uploads"
    folder = base / hashlib.sha256(data).hexdigest()[:16] / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_bytes(data)
    return str(folder)
