"""Atomic file output: a reader never sees a half-written file, a killed job leaves none behind."""
from __future__ import annotations

import contextlib
import gzip
import json
import os
import socket
import tempfile
from pathlib import Path
from typing import Any, Iterator


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` only if the block succeeds.

    ``suffix`` (default: the suffix of ``path``) keeps writers that append an extension (``np.savez``) happy.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.",
                               suffix=".part" + (suffix if suffix is not None else path.suffix), dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        apply_umask(tmp_path)
        os.replace(tmp_path, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


def current_umask() -> int:
    """The process umask (read from /proc where possible: setting it to read it back is not thread-safe)."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def apply_umask(path: str | os.PathLike) -> None:
    """Give a file made by ``tempfile.mkstemp`` (always 0600) the mode an ordinary ``open`` would have given it
    (0666 minus the umask), so that group members of a shared results folder can read it when the umask allows."""
    os.chmod(path, 0o666 & ~current_umask())


def temp_prefix(name: str) -> str:
    """Prefix of this process's temporary files for ``name``: ``.<name>.part-<host>-<pid>-``. Naming the owner
    lets a cleanup remove the leftovers of dead processes without touching a concurrent writer's file."""
    host = socket.gethostname().split(".")[0].replace("-", "_") or "host"
    return f".{name}.part-{host}-{os.getpid()}-"


def is_stale_temp(path: str | os.PathLike, name: str, max_age_s: float = 24 * 3600) -> bool:
    """True when ``path`` is a temporary file of ``name`` whose writing process is gone: same host and a dead pid,
    or (another host, an old naming) untouched for ``max_age_s``."""
    import time

    base = os.path.basename(path)
    prefix = f".{name}.part-"
    if not base.startswith(prefix):
        return False
    parts = base[len(prefix):].split("-")
    host = socket.gethostname().split(".")[0].replace("-", "_") or "host"
    if len(parts) >= 3 and parts[0] == host and parts[1].isdigit():
        pid = int(parts[1])
        if pid == os.getpid():
            return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False
    try:
        return time.time() - os.stat(path).st_mtime > max_age_s
    except FileNotFoundError:
        return False


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def write_json_if_absent(path: str | os.PathLike, obj: Any) -> bool:
    """Write ``obj`` as ``write_json`` does, but only if ``path`` does not exist yet, in one atomic step: of two
    processes writing the same path at once, exactly one succeeds (True) and the other finds the winner's complete
    file in place (False). The file is written aside and hard-linked onto ``path``."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part" + path.suffix, dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        tmp_path.write_text(_json_text(obj), encoding="utf-8")
        apply_umask(tmp_path)
        try:
            os.link(tmp_path, path)
        except FileExistsError:
            return False
        except OSError:
            # a file system without hard links: the same outcome, without the guarantee against a simultaneous writer
            if path.exists():
                return False
            os.replace(tmp_path, path)
        return True
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()


def write_text_if_changed(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` (atomically) only when the file does not already hold it, so that its
    modification time changes exactly when its content does (Snakemake reruns what depends on it); returns the
    path."""
    path = Path(path)
    try:
        if path.read_text(encoding="utf-8") == text:
            return path
    except (OSError, UnicodeDecodeError):
        pass
    write_text(path, text)
    return path


def read_json(path: str | os.PathLike) -> Any:
    """A JSON file; a ``.gz`` one decompressed first (the results archive keeps its files gzip-compressed). Raises
    OSError (gzip.BadGzipFile included), EOFError (a cut-off gzip stream) or ValueError, for the caller to name."""
    path = Path(path)
    return json.loads(gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_text())


def write_json(path: str | os.PathLike, obj: Any) -> None:
    """Strict JSON: NaN and infinities (which ``json`` would write as bare ``NaN``/``Infinity``, invalid for strict
    readers) become ``null``; whoever writes such a value records why next to it."""
    write_text(path, _json_text(obj))


def _json_text(obj: Any) -> str:
    """The text ``write_json`` and ``write_json_if_absent`` write: strict, indented, keys sorted."""
    return json.dumps(strict_json(obj), indent=2, sort_keys=True, default=_json_default, allow_nan=False) + "\n"


def strict_json(obj: Any) -> Any:
    """``obj`` with every non-finite float (Python or numpy, also inside arrays) replaced by None."""
    import math

    import numpy as np

    if isinstance(obj, dict):
        return {k: strict_json(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [strict_json(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return strict_json(obj.tolist())
    if isinstance(obj, (float, np.floating)):
        return float(obj) if math.isfinite(obj) else None
    return obj


def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, np.floating):
        return float(obj)
    if isinstance(obj, np.bool_):
        return bool(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")
