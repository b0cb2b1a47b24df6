"""Fill the raw cache from a local copy of a source instead of the network (``datasets fetch --from SOURCE``).

A SOURCE is either

* a git repository (bare, or with a work tree) of a repository the registry's URLs point into: a file whose URL (or
  one of its mirrors) names ``<owner>/<repo>`` at commit ``<commit>`` and path ``<path>`` is read from the git
  objects as ``<commit>:<path>``, so the bytes are those of the pinned commit whatever the work tree holds; a file
  whose commit the repository lacks is looked up in the work tree like in a plain directory; or
* a plain directory, where a file is looked up at its repository path
  (``data/multi-label/emotions/emotions-train.arff``), then at ``<dataset>/<file>``, then at ``<file>``.

Every file is verified against the registry's sha256 (or the lock file's; a file with no checksum anywhere is
recorded there, trust on first use, as a download would) before it is renamed into ``<raw>/<dataset>/<file>``; a
file that does not verify never enters the cache and never replaces a cached file. Files already valid in the cache
are kept without reading the source.

Each file ends in one state: ``kept`` (already valid in the cache), ``copied``, ``missing`` (the source covers it, a
commit of its repository or other files of its dataset, but does not hold it, e.g. a blob left out of a partial
clone), ``mismatch`` (the source's bytes do not verify: expected and actual sha256) or ``absent`` (the source does
not cover it). A dataset is complete when every file is kept or copied, and *not in this source* when every file is
absent.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import re
import subprocess
import tempfile
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, Callable, Iterator

from forestbench._io import apply_umask, temp_prefix
from forestbench.datasets.download import (CHUNK, Downloader, RemoteFile, extract, remote_files, sha256_file,
                                           unavailable_reason)
from forestbench.errors import DownloadError

OK_STATES = ("kept", "copied")


@dataclass(frozen=True)
class RepoFile:
    """A file of a git hosting repository at a pinned revision, as named by a URL."""

    owner: str
    repo: str
    commit: str
    path: str


_URL_FORMS = (
    # https://raw.githubusercontent.com/<owner>/<repo>/<commit>/<path>
    ("raw.githubusercontent.com", re.compile(r"^/(?P<owner>[^/]+)/(?P<repo>[^/]+)/(?P<commit>[^/]+)/(?P<path>.+)$")),
    # https://github.com/<owner>/<repo>/raw/<commit>/<path> (also /blob/<commit>/<path>?raw=true)
    ("github.com", re.compile(r"^/(?P<owner>[^/]+)/(?P<repo>[^/]+)/(?:raw|blob)/(?P<commit>[^/]+)/(?P<path>.+)$")),
    # https://cdn.jsdelivr.net/gh/<owner>/<repo>@<commit>/<path>
    ("cdn.jsdelivr.net", re.compile(r"^/gh/(?P<owner>[^/]+)/(?P<repo>[^/@]+)@(?P<commit>[^/]+)/(?P<path>.+)$")),
)


def repo_file(url: str) -> RepoFile | None:
    """``(owner, repo, commit, path)`` of a URL of one of the forms the registry uses (raw.githubusercontent.com,
    github.com/.../raw/..., cdn.jsdelivr.net/gh/...@...), or None for any other URL."""
    parts = urllib.parse.urlsplit(url)
    for host, pattern in _URL_FORMS:
        if parts.hostname == host:
            m = pattern.match(urllib.parse.unquote(parts.path))
            if m:
                repo = m["repo"][:-4] if m["repo"].endswith(".git") else m["repo"]
                return RepoFile(m["owner"], repo, m["commit"], m["path"])
    return None


# ------------------------------------------------------------------------------------------------------------------
# sources
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class Candidate:
    """A place in the source that may hold a file: ``open`` yields its bytes, or raises FileNotFoundError."""

    where: str
    open: Callable[[], contextlib.AbstractContextManager[BinaryIO]]


def _git_env() -> dict:
    # never reach for the network: a partial clone must report its missing blobs, not fetch them
    return {**os.environ, "GIT_NO_LAZY_FETCH": "1", "GIT_TERMINAL_PROMPT": "0"}


def _git_dir(path: Path) -> Path | None:
    """The git directory of ``path`` when ``path`` is the top of a repository (bare or not), else None; a directory
    that merely lies inside some repository is a plain directory. A folder that looks like a repository but that git
    refuses (e.g. owned by another user) is an error, not silently a plain directory."""
    def ask(*args: str) -> tuple[str | None, str]:
        try:
            out = subprocess.run(["git", "-C", str(path), "rev-parse", *args], capture_output=True, text=True,
                                 env=_git_env(), timeout=60)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, str(exc)
        return (out.stdout.strip() if out.returncode == 0 else None), out.stderr.strip()

    git_dir, err = ask("--absolute-git-dir")
    if git_dir is None:
        if (path / ".git").exists() or ((path / "HEAD").is_file() and (path / "objects").is_dir()):
            raise DownloadError(f"--from {path}: looks like a git repository, but git cannot read it: {err}")
        return None
    if ask("--is-bare-repository")[0] == "true":
        return Path(git_dir) if Path(git_dir).resolve() == path.resolve() else None
    top = ask("--show-toplevel")[0]
    return Path(git_dir) if top and Path(top).resolve() == path.resolve() else None


class Source:
    """A local copy of the registry's sources: a git repository or a plain directory (see the module docstring)."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        if not self.path.is_dir():
            raise DownloadError(f"--from {str(path)!r}: no such directory")
        self.git_dir = _git_dir(self.path)
        self.work_tree = None if self.git_dir is None or self.git_dir.resolve() == self.path.resolve() else self.path
        self._commits: dict[str, bool] = {}

    def describe(self) -> str:
        if self.git_dir is None:
            return f"directory {self.path}"
        return f"git repository {self.path}" + ("" if self.work_tree else " (bare)")

    def _git(self, *args: str, **kw) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "--git-dir", str(self.git_dir), *args], env=_git_env(), **kw)

    def has_commit(self, commit: str) -> bool:
        if commit not in self._commits:
            out = self._git("cat-file", "-e", f"{commit}^{{commit}}", capture_output=True)
            self._commits[commit] = out.returncode == 0
        return self._commits[commit]

    @contextlib.contextmanager
    def _git_blob(self, ref: RepoFile) -> Iterator[BinaryIO]:
        spec = f"{ref.commit}:{ref.path}"
        blob = self._git("rev-parse", "--verify", "--quiet", spec, capture_output=True, text=True)
        if blob.returncode != 0:
            raise FileNotFoundError(f"{spec}: no such path at that commit")
        oid = blob.stdout.strip()
        if self._git("cat-file", "-e", oid, capture_output=True).returncode != 0:
            raise FileNotFoundError(f"{spec}: listed, but its blob {oid} is not in this copy (partial clone?)")
        proc = subprocess.Popen(["git", "--git-dir", str(self.git_dir), "cat-file", "blob", oid],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_git_env())
        try:
            yield proc.stdout
        except BaseException:
            proc.kill()
            proc.wait()
            proc.stderr.close()
            raise
        finally:
            proc.stdout.close()
        err = proc.stderr.read().decode(errors="replace").strip()
        proc.stderr.close()
        if proc.wait() != 0:
            raise OSError(f"git cat-file blob {oid} ({spec}) failed: {err}")

    def candidates(self, dataset: str, rf: RemoteFile) -> tuple[list[Candidate], bool, list[str]]:
        """Places that hold ``rf``, best first; whether the source covers it (a commit named by one of its URLs is
        in the repository: a miss there means the file is missing, not merely elsewhere); the places looked at."""
        refs = [ref for ref in map(repo_file, rf.urls) if ref is not None]
        found: list[Candidate] = []
        covered = False
        looked: list[str] = []
        if self.git_dir is not None:
            for ref in dict.fromkeys(refs):
                looked.append(f"{ref.commit[:12]}:{ref.path}")
                if self.has_commit(ref.commit):
                    covered = True
                    found.append(Candidate(f"{self.path}@{ref.commit[:12]}:{ref.path}",
                                           lambda ref=ref: self._git_blob(ref)))
        if self.git_dir is None or self.work_tree is not None:
            rel = [ref.path for ref in refs] + [f"{dataset}/{rf.stored_name}", rf.stored_name]
            rel = [r for r in rel if not Path(r).is_absolute() and ".." not in Path(r).parts]  # stay inside SOURCE
            for path in dict.fromkeys(self.path / r for r in rel):
                looked.append(str(path))
                if path.is_file():
                    found.append(Candidate(str(path), lambda path=path: open(path, "rb")))
        return found, covered, looked


# ------------------------------------------------------------------------------------------------------------------
# copying
# ------------------------------------------------------------------------------------------------------------------
@dataclass
class FileResult:
    file: str
    state: str  # kept | copied | missing | mismatch | absent
    detail: str


@dataclass
class DatasetResult:
    name: str
    files: list[FileResult] = field(default_factory=list)
    note: str = ""  # why nothing was attempted (an unavailable dataset, one supplied by local_path)

    @property
    def complete(self) -> bool:
        return bool(self.files) and all(f.state in OK_STATES for f in self.files)

    @property
    def covered(self) -> bool:
        return any(f.state != "absent" for f in self.files)

    @property
    def mismatched(self) -> bool:
        return any(f.state == "mismatch" for f in self.files)

    def summary(self) -> str:
        if self.note:
            return self.note
        if self.complete:
            counts = {s: sum(f.state == s for f in self.files) for s in OK_STATES}
            return "complete (" + ", ".join(f"{n} {s}" for s, n in counts.items() if n) + ")"
        if not self.covered:
            return "not in this source"
        bad = [f for f in self.files if f.state not in OK_STATES]
        return "incomplete: " + ", ".join(f"{f.file} {f.state}" for f in bad)


def _copy_verified(cand: Candidate, dest: Path, expected: str | None) -> tuple[str, int, bool]:
    """Stream ``cand`` into a temporary file next to ``dest``, hashing; once the source has closed without error,
    rename it onto ``dest`` only when its sha256 is ``expected`` (or nothing is expected). Return (sha256, size,
    installed)."""
    fd, tmp_name = tempfile.mkstemp(prefix=temp_prefix(dest.name), dir=dest.parent)
    tmp = Path(tmp_name)
    try:
        h = hashlib.sha256()
        total = 0
        with os.fdopen(fd, "wb") as out, cand.open() as stream:
            for block in iter(lambda: stream.read(CHUNK), b""):
                out.write(block)
                h.update(block)
                total += len(block)
        digest = h.hexdigest()
        if expected is not None and digest != expected:
            tmp.unlink()
            return digest, total, False
        apply_umask(tmp)
        os.replace(tmp, dest)
        return digest, total, True
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise


def fetch_file_from(source: Source, dataset: str, rf: RemoteFile, directory: Path, dl: Downloader) -> FileResult:
    """Bring one raw file of ``dataset`` into ``directory`` from ``source``, verified (see the module docstring)."""
    directory.mkdir(parents=True, exist_ok=True)
    expected, _, origin = dl.expected(dataset, rf)
    stored = directory / rf.stored_name
    result = None
    if stored.exists() and expected is not None and sha256_file(stored) == expected:
        result = FileResult(rf.stored_name, "kept", f"already valid in {directory}")
    else:
        candidates, covered, looked = source.candidates(dataset, rf)
        errors, wrong = [], []
        dl._remove_stale_parts(directory, rf.stored_name)
        for cand in candidates:
            try:
                digest, size, installed = _copy_verified(cand, stored, expected)
            except OSError as exc:
                errors.append(str(exc))
                continue
            if installed:
                if expected is None:
                    dl.lock.record(f"{dataset}/{rf.stored_name}", digest, size, cand.where)
                    detail = f"from {cand.where}; no sha256 was known, recorded {digest} in {dl.lock.path}"
                else:
                    detail = f"from {cand.where}, sha256 verified"
                result = FileResult(rf.stored_name, "copied", detail)
                break
            wrong.append(f"{cand.where}: expected sha256 {expected} ({origin}), got {digest}")
        if result is None:
            if wrong:
                result = FileResult(rf.stored_name, "mismatch", "; ".join(wrong))
            elif candidates or covered:
                result = FileResult(rf.stored_name, "missing", "; ".join(errors) or "not in the source")
            else:
                result = FileResult(rf.stored_name, "absent", "not found at " + ", ".join(looked))
    if result.state in OK_STATES and rf.archive:
        target = directory / rf.name
        if result.state == "copied" and target.exists():  # a new archive: its old extraction may be stale
            target.unlink()
        if not target.exists():
            dl._remove_stale_parts(directory, rf.name)
            extract(dataset, stored, rf.archive, rf.member, target)
    return result


def fetch_dataset_from(source: Source, name: str, entry: dict, root: Path, dl: Downloader) -> DatasetResult:
    if entry.get("local_path"):
        return DatasetResult(name, note=f"supplied by its local_path {entry['local_path']!r}: "
                                        f"use `datasets fetch {name}`")
    reason = unavailable_reason(name, entry)
    if reason:
        return DatasetResult(name, note="unavailable: set local_path in its registry entry to use it")
    files = remote_files(entry)
    if not files:
        raise DownloadError(f"dataset {name!r}: its source lists no files to fetch")
    result = DatasetResult(name, [fetch_file_from(source, name, rf, root / name, dl) for rf in files])
    if result.covered:  # the source holds part of the dataset: the rest is missing from it
        for f in result.files:
            if f.state == "absent":
                f.state = "missing"
    return result


def fetch_from(source: Source | str | os.PathLike, registry: dict, names: list[str] | None, root: Path,
               dl: Downloader) -> tuple[list[DatasetResult], int]:
    """Fill ``root`` from ``source`` for ``names`` (None: every downloaded dataset of ``registry``); return the
    per-dataset results and the exit status.

    The status is 1 when a file of the source does not verify (anywhere), or when a dataset named explicitly is
    not complete; 0 otherwise: a run over the whole registry is not failed by datasets the source does not hold
    or holds only in part (e.g. the large files a partial clone leaves out), which are reported."""
    src = source if isinstance(source, Source) else Source(source)
    explicit = bool(names)
    if explicit:
        unknown = [n for n in names if n not in registry]
        if unknown:
            raise DownloadError(f"dataset(s) not in the registry: {', '.join(unknown)}")
        not_download = [n for n in names if registry[n]["source"]["kind"] != "download"]
        if not_download:
            raise DownloadError(f"dataset(s) with nothing to fetch (source kind is not download): "
                                f"{', '.join(not_download)}")
    else:
        names = sorted(n for n, e in registry.items() if e["source"]["kind"] == "download"
                       and not e.get("local_path") and unavailable_reason(n, e) is None)
    results = [fetch_dataset_from(src, name, registry[name], root, dl) for name in names]
    status = 0
    for res in results:
        if res.mismatched or (explicit and not res.complete):
            status = 1
    return results, status
