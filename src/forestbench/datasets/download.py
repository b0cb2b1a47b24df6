"""Verified downloads of raw dataset files into the cache ``data/raw/<dataset>/``.

Guarantees:

* A file is streamed into a temporary file in its final directory (``.<name>.part-<host>-<pid>-XXXX``), hashed while it
  is written, checked (size announced by the server, size and sha256 of the registry or of the lock file) and only then
  renamed onto its final name with :func:`os.replace`. On any failure, ``KeyboardInterrupt`` included, the temporary
  file is removed, so ``data/raw/`` never holds a partial or unverified file under a final name. Stale temporary files
  of the same target left by a killed process (SIGKILL cannot be caught) are removed before the next attempt.
* A cached file whose sha256 verifies is never downloaded again. A cached file that no longer verifies is reported and
  downloaded again; it stays in place until the verified replacement is renamed over it, so a failed fetch never
  removes a file from the cache.
* Network errors, timeouts, 5xx answers and truncated transfers are retried with exponential back-off; a 4xx answer
  or a checksum mismatch moves on to the next mirror at once. The final error names the dataset, every URL tried and,
  for a mismatch, the expected and actual sha256.
* Archives: ``.gz`` and ``.bz2`` are decompressed, one member of a ``.zip`` or ``.tar(.gz|.bz2)`` is extracted (the
  archive itself is kept and verified, the extracted member is written atomically too). ``.rar`` is refused with a
  message pointing at the alternative source, since Python cannot read it without an external tool.

Checksums not yet known (files whose checksum is not published, e.g. mediamill, full tmc2007, bookmarks) follow
*trust on first use*: the first successful download records its sha256 and size in the lock file
(``config/datasets.lock.yaml`` by default, see :class:`ShaLock`), prints that it did so, and every later download
or ``verify`` is checked against it. The lock lives next to the registry so that it can be committed and shared:
a colleague's download is then verified against the same bytes.
"""
from __future__ import annotations

import bz2
import contextlib
import datetime as _dt
import gzip
import hashlib
import http.client
import os
import shutil
import socket
import sys
import tarfile
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable

from forestbench._io import apply_umask, current_umask, is_stale_temp, temp_prefix
from forestbench.errors import DownloadError

CHUNK = 1 << 16
USER_AGENT = "forestbench-downloader/0.1 (+https://github.com/; research benchmark)"
DEFAULT_LOCK = Path("config/datasets.lock.yaml")
ARCHIVE_FORMATS = ("zip", "tar", "tar.gz", "tar.bz2", "gz", "bz2", "rar")


@dataclass
class RemoteFile:
    """One raw file of a dataset as described by the registry.

    ``name`` is the file used by the readers (inside ``data/raw/<dataset>/``). When ``archive`` is set, the URLs point
    at an archive stored as ``download_name`` and ``member`` (for zip/tar) is extracted into ``name``; ``sha256`` and
    ``size`` then describe the downloaded archive.
    """

    name: str
    urls: list[str]
    sha256: str | None = None
    size: int | None = None
    archive: str | None = None
    member: str | None = None
    download_name: str | None = None
    alternative: str | None = None  # human-readable alternative source, used in the .rar message

    @classmethod
    def from_spec(cls, spec: dict) -> "RemoteFile":
        urls = ([spec["url"]] if spec.get("url") else []) + list(spec.get("mirrors") or [])
        archive = spec.get("archive")
        member = None
        if isinstance(archive, dict):
            member = archive.get("member")
            archive = archive.get("format")
        download_name = spec.get("download_name")
        if archive and not download_name:
            download_name = _url_basename(urls[0]) if urls else spec["name"] + "." + archive
            if download_name == spec["name"]:
                download_name = spec["name"] + "." + archive
        return cls(name=spec["name"], urls=urls, sha256=(spec.get("sha256") or None), size=spec.get("size"),
                   archive=archive, member=member, download_name=download_name,
                   alternative=spec.get("alternative"))

    @property
    def stored_name(self) -> str:
        """Name of the file whose bytes the sha256 describes (the archive when there is one)."""
        return self.download_name if self.archive else self.name


def _url_basename(url: str) -> str:
    return Path(urllib.parse.unquote(urllib.parse.urlsplit(url).path)).name or "download"


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ------------------------------------------------------------------------------------------------------------------
# lock file (trust on first use)
# ------------------------------------------------------------------------------------------------------------------
class ShaLock:
    """The sha256 lock file: ``files: {"<dataset>/<file>": {sha256, size, url, recorded}}`` in YAML.

    Reads and writes hold an exclusive ``flock`` on a sidecar ``.<lock>.flock`` so that parallel fetch jobs do not
    lose each other's entries; the YAML itself is replaced atomically.
    """

    def __init__(self, path: str | os.PathLike | None = None):
        self.path = Path(path) if path is not None else Path(os.environ.get("FORESTBENCH_SHA_LOCK", DEFAULT_LOCK))

    def _read(self) -> dict:
        import yaml

        if not self.path.exists():
            return {}
        try:
            data = yaml.safe_load(self.path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise DownloadError(f"sha256 lock file {self.path} is not valid YAML: {exc}") from None
        files = data.get("files") or {}
        if not isinstance(files, dict):
            raise DownloadError(f"sha256 lock file {self.path}: 'files' must be a mapping")
        return files

    def get(self, key: str) -> dict | None:
        return self._read().get(key)

    @contextlib.contextmanager
    def _locked(self):
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        flock_path = self.path.parent / f".{self.path.name}.flock"
        with open(flock_path, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def record(self, key: str, sha256: str, size: int, url: str) -> None:
        import yaml

        from forestbench._io import write_text

        with self._locked():
            files = self._read()
            files[key] = {"sha256": sha256, "size": int(size), "url": url,
                          "recorded": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")}
            header = ("# sha256 of raw dataset files whose checksum is not in config/datasets.yaml, recorded by the\n"
                      "# first download (trust on first use). Later downloads and `forestbench datasets verify` are\n"
                      "# checked against these values. Commit this file to share the verified bytes.\n")
            write_text(self.path, header + yaml.safe_dump({"files": dict(sorted(files.items()))}, sort_keys=True))


# ------------------------------------------------------------------------------------------------------------------
# single-URL transfer
# ------------------------------------------------------------------------------------------------------------------
class _Retryable(Exception):
    """Transient failure: worth trying the same URL again."""


class _Fatal(Exception):
    """Failure of this URL that retrying will not fix (4xx, checksum mismatch)."""


@dataclass
class Downloader:
    """Downloads :class:`RemoteFile` objects into a directory, with retries and verification."""

    retries: int = 3
    backoff: float = 1.0  # seconds before the 2nd attempt; doubles at each further attempt
    timeout: float = 60.0  # seconds of socket inactivity before giving up on an attempt
    lock: ShaLock = field(default_factory=ShaLock)
    log: Callable[[str], None] = field(default=lambda msg: print(msg, file=sys.stderr))
    on_chunk: Callable[[int], None] | None = None  # test hook, called with the byte count after each chunk

    # -- public -----------------------------------------------------------------------------------------------------
    def fetch(self, dataset: str, rf: RemoteFile, directory: str | os.PathLike) -> Path:
        """Return the verified path of ``rf`` in ``directory``, downloading (and extracting) it when needed."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if rf.archive == "rar":
            raise DownloadError(
                f"dataset {dataset!r}: {rf.urls[0] if rf.urls else rf.stored_name} is a .rar archive, which "
                f"forestbench cannot extract without an external tool. "
                + (f"Use the alternative source: {rf.alternative}. " if rf.alternative else "")
                + f"Or extract it yourself and set local_path for {dataset!r} in config/datasets.yaml.")
        key = f"{dataset}/{rf.stored_name}"
        expected, expected_size, origin = self.expected(dataset, rf)
        stored = directory / rf.stored_name
        valid = False
        if stored.exists():
            actual = sha256_file(stored)
            valid = expected is None or actual == expected
            if expected is None:
                self.lock.record(key, actual, stored.stat().st_size, "(pre-existing file)")
                self.log(f"[{dataset}] {stored}: no sha256 known; recorded {actual} in {self.lock.path}")
            elif not valid:
                # kept until a verified replacement is renamed over it: a failed download leaves it as it was
                self.log(f"[{dataset}] {stored}: cached file does not verify (expected sha256 {expected} from {origin},"
                         f" got {actual}); downloading it again")
        downloaded = False
        if not valid:
            self._remove_stale_parts(directory, rf.stored_name)
            self._download_any(dataset, rf, stored, expected, expected_size)
            downloaded = True
            if expected is None:
                actual = sha256_file(stored)
                self.lock.record(key, actual, stored.stat().st_size, rf.urls[0] if rf.urls else "")
                self.log(f"[{dataset}] {rf.stored_name}: no sha256 was known; recorded sha256 {actual} in "
                         f"{self.lock.path} (later downloads are verified against it)")
        if rf.archive:
            target = directory / rf.name
            if downloaded and target.exists():  # a new archive: its old extraction may be stale
                target.unlink()
            if not target.exists():
                self._remove_stale_parts(directory, rf.name)
                extract(dataset, stored, rf.archive, rf.member, target)
            return target
        return stored

    def expected(self, dataset: str, rf: RemoteFile) -> tuple[str | None, int | None, str]:
        """The sha256 and size a file must have, from the registry or else from the lock file."""
        if rf.sha256:
            return rf.sha256.lower(), rf.size, "config/datasets.yaml"
        entry = self.lock.get(f"{dataset}/{rf.stored_name}")
        if entry:
            return str(entry["sha256"]).lower(), entry.get("size"), str(self.lock.path)
        return None, rf.size, "nowhere"

    # -- internals --------------------------------------------------------------------------------------------------
    @staticmethod
    def _remove_stale_parts(directory: Path, name: str) -> None:
        """Remove temporary files of ``name`` left by killed processes; a concurrent fetch's file is kept."""
        for stale in directory.glob(f".{name}.part-*"):
            if is_stale_temp(stale, name):
                with contextlib.suppress(FileNotFoundError):
                    stale.unlink()

    def _download_any(self, dataset: str, rf: RemoteFile, dest: Path, expected: str | None,
                      expected_size: int | None) -> None:
        if not rf.urls:
            raise DownloadError(f"dataset {dataset!r}: file {rf.stored_name!r} has no URL")
        failures = []
        for url in rf.urls:
            for attempt in range(1, self.retries + 1):
                try:
                    self._download_one(url, dest, expected, expected_size)
                    return
                except _Fatal as exc:
                    failures.append(f"{url}: {exc}")
                    break
                except _Retryable as exc:
                    failures.append(f"{url} (attempt {attempt}/{self.retries}): {exc}")
                    if attempt < self.retries:
                        delay = self.backoff * 2 ** (attempt - 1)
                        self.log(f"[{dataset}] {url}: {exc}; retrying in {delay:g}s")
                        time.sleep(delay)
        raise DownloadError(f"dataset {dataset!r}: could not download {rf.stored_name!r}; nothing was kept.\n  "
                            + "\n  ".join(failures))

    def _download_one(self, url: str, dest: Path, expected: str | None, expected_size: int | None) -> None:
        fd, tmp_name = tempfile.mkstemp(prefix=temp_prefix(dest.name), dir=dest.parent)
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                digest, total = self._stream(url, out)
            if expected is not None and digest != expected:
                raise _Fatal(f"sha256 mismatch: expected {expected}, got {digest} ({total} bytes)")
            if expected_size is not None and total != int(expected_size):
                raise _Fatal(f"size mismatch: expected {expected_size} bytes, got {total} (sha256 {digest})")
            apply_umask(tmp)
            os.replace(tmp, dest)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
            raise

    def _stream(self, url: str, out) -> tuple[str, int]:
        request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
        h = hashlib.sha256()
        total = 0
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as resp:
                announced = resp.headers.get("Content-Length")
                announced = int(announced) if announced and announced.isdigit() else None
                while True:
                    block = resp.read(CHUNK)
                    if not block:
                        break
                    out.write(block)
                    h.update(block)
                    total += len(block)
                    if self.on_chunk is not None:
                        self.on_chunk(total)
        except urllib.error.HTTPError as exc:
            if exc.code >= 500 or exc.code in (408, 429):
                raise _Retryable(f"HTTP {exc.code} {exc.reason}") from None
            raise _Fatal(f"HTTP {exc.code} {exc.reason}") from None
        except http.client.IncompleteRead as exc:
            raise _Retryable(f"truncated transfer: got {total + len(exc.partial)} bytes, "
                             f"{exc.expected} more expected") from None
        except (socket.timeout, TimeoutError) as exc:
            raise _Retryable(f"timed out after {self.timeout:g}s without data ({exc})") from None
        except urllib.error.URLError as exc:
            reason = exc.reason
            if isinstance(reason, (socket.timeout, TimeoutError)):
                raise _Retryable(f"timed out after {self.timeout:g}s ({reason})") from None
            if isinstance(reason, FileNotFoundError) or url.startswith("file:"):
                raise _Fatal(f"cannot open: {reason}") from None
            raise _Retryable(f"network error: {reason}") from None
        except (ConnectionError, http.client.HTTPException, OSError) as exc:
            raise _Retryable(f"{type(exc).__name__}: {exc}") from None
        if announced is not None and total != announced:
            raise _Retryable(f"truncated transfer: got {total} of {announced} bytes")
        return h.hexdigest(), total


# ------------------------------------------------------------------------------------------------------------------
# archives
# ------------------------------------------------------------------------------------------------------------------
def extract(dataset: str, archive: Path, fmt: str, member: str | None, target: Path) -> Path:
    """Decompress ``archive`` (or extract its ``member``) atomically into ``target``."""
    fd, tmp_name = tempfile.mkstemp(prefix=temp_prefix(target.name), dir=target.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out:
            try:
                _extract_into(fmt, archive, member, out)
            except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError, KeyError) as exc:
                raise DownloadError(f"dataset {dataset!r}: cannot extract {member or 'the content'} from {archive} "
                                    f"({fmt}): {exc}") from None
        apply_umask(tmp)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    return target


def _extract_into(fmt: str, archive: Path, member: str | None, out) -> None:
    if fmt == "gz":
        with gzip.open(archive, "rb") as src:
            shutil.copyfileobj(src, out, CHUNK)
    elif fmt == "bz2":
        with bz2.open(archive, "rb") as src:
            shutil.copyfileobj(src, out, CHUNK)
    elif fmt == "zip":
        with zipfile.ZipFile(archive) as zf:
            name = member or _single_member(zf.namelist(), archive)
            with zf.open(name) as src:
                shutil.copyfileobj(src, out, CHUNK)
    elif fmt in ("tar", "tar.gz", "tar.bz2"):
        with tarfile.open(archive, "r:*") as tf:
            names = [m.name for m in tf.getmembers() if m.isfile()]
            name = member or _single_member(names, archive)
            info = tf.getmember(name)
            if not info.isfile():
                raise KeyError(f"{name!r} is not a regular file in the archive")
            src = tf.extractfile(info)
            shutil.copyfileobj(src, out, CHUNK)
    else:
        raise KeyError(f"unknown archive format {fmt!r} (known: {', '.join(ARCHIVE_FORMATS)})")


def _single_member(names: Iterable[str], archive: Path) -> str:
    names = [n for n in names if not n.endswith("/")]
    if len(names) != 1:
        raise KeyError(f"{archive.name} holds {len(names)} files; the registry must name the member to extract")
    return names[0]


def extract_tree(dataset: str, archive: Path, target_dir: Path) -> Path:
    """Extract every regular file of a tar/zip archive below ``target_dir`` (built in a temporary directory and
    renamed), refusing absolute paths and ``..`` components."""
    if target_dir.exists():
        return target_dir
    tmp_dir = Path(tempfile.mkdtemp(prefix=f".{target_dir.name}.part-", dir=target_dir.parent))
    try:
        try:
            if zipfile.is_zipfile(archive):
                with zipfile.ZipFile(archive) as zf:
                    for info in zf.infolist():
                        if info.is_dir():
                            continue
                        dest = _safe_dest(tmp_dir, info.filename)
                        with zf.open(info) as src, open(dest, "wb") as out:
                            shutil.copyfileobj(src, out, CHUNK)
            else:
                with tarfile.open(archive, "r:*") as tf:
                    for info in tf.getmembers():
                        if not info.isfile():
                            continue
                        dest = _safe_dest(tmp_dir, info.name)
                        with tf.extractfile(info) as src, open(dest, "wb") as out:
                            shutil.copyfileobj(src, out, CHUNK)
        except (OSError, EOFError, zipfile.BadZipFile, tarfile.TarError) as exc:
            raise DownloadError(f"dataset {dataset!r}: cannot extract {archive}: {exc}") from None
        os.chmod(tmp_dir, 0o777 & ~current_umask())  # mkdtemp makes it 0700 whatever the umask
        os.replace(tmp_dir, target_dir)
    except BaseException:
        shutil.rmtree(tmp_dir, ignore_errors=True)
        raise
    return target_dir


def _safe_dest(root: Path, name: str) -> Path:
    parts = Path(name).parts
    if Path(name).is_absolute() or ".." in parts:
        raise OSError(f"unsafe path in archive: {name!r}")
    dest = root.joinpath(*parts)
    dest.parent.mkdir(parents=True, exist_ok=True)
    return dest


# ------------------------------------------------------------------------------------------------------------------
# whole datasets
# ------------------------------------------------------------------------------------------------------------------
def raw_root() -> Path:
    """Root of the raw-file cache: ``$FORESTBENCH_RAW`` or ``data/raw``."""
    return Path(os.environ.get("FORESTBENCH_RAW", "data/raw"))


def remote_files(entry: dict) -> list[RemoteFile]:
    source = entry.get("source") or {}
    return [RemoteFile.from_spec(spec) for spec in source.get("files") or []]


def unavailable_reason(name: str, entry: dict) -> str | None:
    """Why a registry entry cannot be fetched (None when it can): unavailable without a usable local_path."""
    if entry.get("status", "available") != "unavailable":
        return None
    local = entry.get("local_path")
    if local and Path(local).exists():
        return None
    how = entry.get("local_path_help") or "place the files named in its source.files in one directory"
    where = f"local_path {local!r} does not exist; " if local else ""
    return (f"dataset {name!r} is unavailable: {entry.get('unavailable_reason', 'no public source is known')}. "
            f"{where}To use it, {how}, and set 'local_path: <that directory>' in its entry of config/datasets.yaml.")


def local_file(name: str, entry: dict, rf: RemoteFile) -> Path:
    """The file of ``local_path`` that supplies ``rf`` (``local_path`` is a directory holding the files, or the one
    file of a one-file dataset)."""
    local = Path(entry["local_path"])
    src = local / rf.stored_name if local.is_dir() else local
    if not src.exists():
        raise DownloadError(f"dataset {name!r}: local_path {str(local)!r} holds no file {rf.stored_name!r}")
    return src


def accept_command(name: str, lock: ShaLock, registry: str | os.PathLike | None = None) -> str:
    """The command that records the current local_path files of ``name`` in ``lock``."""
    option = "" if registry is None or Path(registry) == Path("config/datasets.yaml") else f" --registry {registry}"
    option += "" if lock.path == ShaLock().path else f" --lock {lock.path}"
    return f"python -m forestbench datasets{option} accept {name}"


def check_local_file(name: str, entry: dict, rf: RemoteFile, lock: ShaLock,
                     registry: str | os.PathLike | None = None) -> tuple[Path, str]:
    """Path and sha256 of the local_path file of ``rf``, checked against the registry's sha256 or else the lock
    file's; a file with no checksum anywhere yet is recorded in the lock (trust on first use).

    A file that changed since the lock recorded it is refused with a message naming both checksums and the command
    that accepts the new content (:func:`accept_local`); a file that differs from the registry's pinned sha256
    cannot be accepted (the registry describes other bytes)."""
    src = local_file(name, entry, rf)
    actual = sha256_file(src)
    key = f"{name}/{rf.stored_name}"
    if rf.sha256:
        if actual != rf.sha256.lower():
            raise DownloadError(
                f"dataset {name!r}: local file {src} has sha256 {actual}, but config/datasets.yaml pins "
                f"{rf.sha256.lower()} for {rf.stored_name!r}: it is not the file the registry describes. Replace it "
                f"with the published file (or correct the registry entry if the publication changed).")
        return src, actual
    entry_ = lock.get(key)
    if entry_ is None:
        lock.record(key, actual, src.stat().st_size, str(src))
        print(f"[{name}] {src}: no sha256 known; recorded {actual} in {lock.path}", file=sys.stderr)
    elif str(entry_["sha256"]).lower() != actual:
        raise DownloadError(
            f"dataset {name!r}: local file {src} changed since it was recorded: its sha256 is now {actual}, "
            f"{lock.path} records {str(entry_['sha256']).lower()} for {key} "
            f"(recorded {entry_.get('recorded', '?')}). If the new content is intended, accept it with\n"
            f"    {accept_command(name, lock, registry)}\n"
            f"(records the new sha256; the workflow then copies the file again and reruns everything built from "
            f"{name!r}); otherwise restore the recorded file.")
    return src, actual


def accept_local(name: str, entry: dict, lock: ShaLock, only: str | None = None) -> list[tuple[str, str | None, str]]:
    """Record the sha256 of the current local_path files of ``name`` in the lock file; return (file, previous sha256
    or None, new sha256) for each file whose entry changed. Files pinned in the registry are checked, never
    recorded."""
    if not entry.get("local_path"):
        raise DownloadError(
            f"dataset {name!r} has no local_path: `accept` records the checksums of local files only. For a "
            f"downloaded file whose recorded checksum is wrong, delete its entries '{name}/<file>' from {lock.path} "
            f"and fetch again.")
    files = remote_files(entry)
    if only is not None:
        files = [rf for rf in files if only in (rf.name, rf.stored_name)]
        if not files:
            raise DownloadError(f"dataset {name!r} has no raw file {only!r}")
    changed = []
    for rf in files:
        src = local_file(name, entry, rf)
        actual = sha256_file(src)
        if rf.sha256:
            check_local_file(name, entry, rf, lock)  # raises on a difference from the registry's pin
            continue
        key = f"{name}/{rf.stored_name}"
        previous = lock.get(key)
        previous = str(previous["sha256"]).lower() if previous else None
        if previous != actual:
            lock.record(key, actual, src.stat().st_size, str(src))
            changed.append((rf.stored_name, previous, actual))
    return changed


def local_signature(name: str, entry: dict, lock: ShaLock, directory: str | os.PathLike = "data/registry",
                    registry: str | os.PathLike | None = None) -> Path:
    """Write ``<directory>/<name>.local.json`` (the sha256 of each local_path file of ``name``) only when it
    changes, after checking every file with :func:`check_local_file`.

    As an input of the workflow's fetch rule, its modification time reruns the copy into the raw cache, and
    everything built from it, exactly when the content of a local file changes, whatever the file's own
    modification time says (a copy that kept an old time, a file replaced by an older one)."""
    import json

    from forestbench._io import write_text_if_changed

    sums = {rf.stored_name: check_local_file(name, entry, rf, lock, registry)[1] for rf in remote_files(entry)}
    path = Path(directory) / f"{name}.local.json"
    text = json.dumps({"dataset": name, "local_path": str(entry["local_path"]), "sha256": sums}, indent=2,
                      sort_keys=True) + "\n"
    return write_text_if_changed(path, text)


def fetch_dataset(name: str, entry: dict, root: str | os.PathLike | None = None,
                  downloader: Downloader | None = None, registry: str | os.PathLike | None = None) -> dict[str, Path]:
    """Make every raw file of dataset ``name`` present and verified in ``<root>/<name>/``; return name -> path.

    Files already valid are kept (an interrupted fetch resumes with the missing files only). For an entry with a
    ``local_path`` (a directory holding the files), the local file is the authority: it is checked with
    :func:`check_local_file` and copied whenever the cached copy differs from it; the cache keeps its previous copy
    when the check fails.
    """
    downloader = downloader or Downloader()
    reason = unavailable_reason(name, entry)
    if reason:
        raise DownloadError(reason)
    directory = Path(root if root is not None else raw_root()) / name
    files = remote_files(entry)
    if not files:
        raise DownloadError(f"dataset {name!r}: its source lists no files to fetch")
    local = entry.get("local_path")
    out: dict[str, Path] = {}
    for rf in files:
        if local:
            src, actual = check_local_file(name, entry, rf, downloader.lock, registry)
            # the local file's sha256 is what the cached copy must have
            rf = RemoteFile(rf.name, [src.resolve().as_uri()], actual, src.stat().st_size, rf.archive, rf.member,
                            rf.download_name, rf.alternative)
        out[rf.name] = downloader.fetch(name, rf, directory)
    return out


def verify_dataset(name: str, entry: dict, root: str | os.PathLike | None = None,
                   lock: ShaLock | None = None) -> list[tuple[str, str, str]]:
    """Check the cached raw files of ``name`` without downloading: list of (file, status, detail), status one of
    ``ok``, ``missing``, ``mismatch``, ``unlocked`` (present, but no checksum is known anywhere)."""
    lock = lock or ShaLock()
    directory = Path(root if root is not None else raw_root()) / name
    report = []
    dl = Downloader(lock=lock)
    for rf in remote_files(entry):
        path = directory / rf.stored_name
        expected, _, origin = dl.expected(name, rf)
        if not path.exists():
            report.append((rf.stored_name, "missing", str(path)))
            continue
        actual = sha256_file(path)
        if expected is None:
            report.append((rf.stored_name, "unlocked", f"sha256 {actual} (not recorded anywhere)"))
        elif actual != expected:
            report.append((rf.stored_name, "mismatch", f"expected {expected} ({origin}), got {actual}"))
        else:
            report.append((rf.stored_name, "ok", actual))
    return report

