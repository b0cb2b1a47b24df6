"""``datasets fetch --from SOURCE``: the raw cache filled from a fixture git repository (bare clone and work tree,
read at the commit pinned in the URLs) and from a plain directory, every file verified against the registry."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from forestbench.cli import main
from forestbench.datasets.fetch_from import RepoFile, repo_file

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git command")

FILES = {  # path in the fixture repository -> bytes at the pinned commit
    "data/ml/alpha/alpha.arff": b"@relation alpha\n@attribute a numeric\n@data\n1\n2\n",
    "data/ml/alpha/alpha.xml": b"<labels/>\n",
    "data/ml/beta/beta.arff": b"@relation beta\n@data\n3\n",
    "data/mt/gamma.arff": b"@relation gamma\n@data\n4\n",
}


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main",
                           *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path) -> tuple[Path, Path, str]:
    """A work-tree repository whose first commit holds FILES, a bare clone of it, and that commit; a later commit
    changes alpha.arff, so only a read at the pinned commit gives the registry's bytes."""
    work = tmp_path / "mulan"
    work.mkdir()
    git(work, "init", "-q")
    for rel, body in FILES.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_bytes(body)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "pinned")
    commit = git(work, "rev-parse", "HEAD")
    (work / "data/ml/alpha/alpha.arff").write_bytes(b"@relation alpha\n@data\nlater edit\n")
    git(work, "commit", "-qam", "later")
    bare = tmp_path / "mulan-bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(work), str(bare))
    return work, bare, commit


def url(commit: str, path: str, form: str = "raw") -> str:
    return {"raw": f"https://raw.githubusercontent.com/owner/mulan/{commit}/{path}",
            "github": f"https://github.com/owner/mulan/raw/{commit}/{path}",
            "jsdelivr": f"https://cdn.jsdelivr.net/gh/owner/mulan@{commit}/{path}"}[form]


def entry(files: list[dict]) -> dict:
    return {"task": "multilabel", "status": "available", "shape": {"n": 2, "p": 1, "d": 1},
            "source": {"kind": "download", "files": files, "layout": {"type": "single", "data": [files[0]["name"]]},
                       "labels": {"from": "last", "d": 1}},
            "protocols": {"p": {"type": "given"}}}


def spec(commit: str, path: str, body: bytes | None, form: str = "raw") -> dict:
    out = {"name": Path(path).name, "url": url(commit, path, form), "format": "arff"}
    if body is not None:
        out["sha256"] = sha(body)
        out["size"] = len(body)
    return out


def registry(tmp_path: Path, commit: str, with_wrong: bool = True) -> Path:
    datasets = {
        # both files present and pinned; the mirror URL forms are used for the second one
        "alpha": entry([spec(commit, "data/ml/alpha/alpha.arff", FILES["data/ml/alpha/alpha.arff"]),
                        {**spec(commit, "data/ml/alpha/alpha.xml", FILES["data/ml/alpha/alpha.xml"], "jsdelivr"),
                         "mirrors": [url(commit, "data/ml/alpha/alpha.xml", "github")]}]),
        # one file present, one absent from the repository
        "beta": entry([spec(commit, "data/ml/beta/beta.arff", FILES["data/ml/beta/beta.arff"]),
                       spec(commit, "data/ml/beta/beta.xml", b"<never committed/>")]),
        # elsewhere on the web: not in this source
        "other": entry([{"name": "o.arff", "url": "https://example.org/o.arff", "sha256": sha(b"o")}]),
    }
    if with_wrong:  # the registry's sha256 describes other bytes than the repository's
        datasets["gamma"] = entry([spec(commit, "data/mt/gamma.arff", b"not what the repository holds")])
    path = tmp_path / "datasets.yaml"
    path.write_text(yaml.safe_dump({"datasets": datasets}))
    return path


def run(tmp_path: Path, reg: Path, source: Path, *names: str) -> int:
    return main(["datasets", "--registry", str(reg), "--raw-dir", str(tmp_path / "raw"),
                 "--lock", str(tmp_path / "lock.yaml"), "fetch", "--from", str(source), *names])


def cache(tmp_path: Path) -> dict[str, bytes]:
    raw = tmp_path / "raw"
    return {str(p.relative_to(raw)): p.read_bytes() for p in sorted(raw.rglob("*")) if p.is_file()}


def test_repo_file_knows_the_registry_url_forms():
    expect = RepoFile("tsoumakas", "mulan", "43f6389", "data/multi-label/emotions/emotions-train.arff")
    for form in ("https://raw.githubusercontent.com/tsoumakas/mulan/43f6389/{p}",
                 "https://github.com/tsoumakas/mulan/raw/43f6389/{p}",
                 "https://cdn.jsdelivr.net/gh/tsoumakas/mulan@43f6389/{p}"):
        assert repo_file(form.format(p=expect.path)) == expect
    assert repo_file("https://www.uco.es/kdis/mllresources/emotions.zip") is None
    assert repo_file("https://github.com/tsoumakas/mulan") is None


@pytest.mark.parametrize("kind", ["bare", "work tree"])
def test_git_source_pinned_bytes_wrong_and_missing_files(repo, tmp_path, capsys, kind):
    work, bare, commit = repo
    reg = registry(tmp_path, commit)
    status = run(tmp_path, reg, bare if kind == "bare" else work)
    out = capsys.readouterr().out
    assert status == 1  # gamma's bytes do not verify
    # the pinned bytes, not the work tree's later edit; nothing of gamma, nothing partial or temporary
    assert cache(tmp_path) == {"alpha/alpha.arff": FILES["data/ml/alpha/alpha.arff"],
                               "alpha/alpha.xml": FILES["data/ml/alpha/alpha.xml"],
                               "beta/beta.arff": FILES["data/ml/beta/beta.arff"]}
    assert "alpha: complete (2 copied)" in out
    assert "beta: incomplete: beta.xml missing" in out
    assert "other: not in this source" in out
    assert (f"gamma.arff: mismatch: {bare if kind == 'bare' else work}@{commit[:12]}:data/mt/gamma.arff: "
            f"expected sha256 {sha(b'not what the repository holds')}") in out
    assert f"got {sha(FILES['data/mt/gamma.arff'])}" in out
    assert "1 of 4 dataset(s) complete" in out and "wrong checksum: gamma" in out
    assert (f"from the git repository {bare} (bare)" if kind == "bare" else f"from the git repository {work};") in out

    # a second run keeps what is valid and reads nothing again
    assert run(tmp_path, reg, bare, "alpha") == 0
    assert "alpha: complete (2 kept)" in capsys.readouterr().out


def test_exit_status_rule(repo, tmp_path, capsys):
    """Over the whole registry only a wrong checksum fails the run; a named dataset must be complete."""
    _, bare, commit = repo
    reg = registry(tmp_path, commit, with_wrong=False)
    assert run(tmp_path, reg, bare) == 0  # beta incomplete and other not covered: reported, not failed
    out = capsys.readouterr().out
    assert "beta: incomplete" in out and "other: not in this source" in out
    assert run(tmp_path, reg, bare, "alpha") == 0
    assert run(tmp_path, reg, bare, "beta") == 1
    assert run(tmp_path, reg, bare, "alpha", "other") == 1


def test_wrong_source_file_never_replaces_the_cached_file(repo, tmp_path, capsys):
    _, bare, commit = repo
    reg = registry(tmp_path, commit)
    stale = tmp_path / "raw" / "gamma" / "gamma.arff"
    stale.parent.mkdir(parents=True)
    stale.write_bytes(b"an older copy")
    assert run(tmp_path, reg, bare, "gamma") == 1
    assert stale.read_bytes() == b"an older copy"
    assert sorted(p.name for p in stale.parent.iterdir()) == ["gamma.arff"]


def test_plain_directory_source(tmp_path, capsys):
    commit = "0" * 40
    files = {"data/ml/alpha/alpha.arff": FILES["data/ml/alpha/alpha.arff"],  # at its repository path
             "alpha/alpha.xml": FILES["data/ml/alpha/alpha.xml"],  # at <dataset>/<file>
             "beta.arff": FILES["data/ml/beta/beta.arff"],  # at <file>
             "gamma.arff": FILES["data/mt/gamma.arff"]}  # wrong for the registry
    src = tmp_path / "copy"
    for rel, body in files.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        (src / rel).write_bytes(body)
    reg = registry(tmp_path, commit)
    assert run(tmp_path, reg, src) == 1
    out = capsys.readouterr().out
    assert cache(tmp_path) == {"alpha/alpha.arff": FILES["data/ml/alpha/alpha.arff"],
                               "alpha/alpha.xml": FILES["data/ml/alpha/alpha.xml"],
                               "beta/beta.arff": FILES["data/ml/beta/beta.arff"]}
    assert "alpha: complete (2 copied)" in out
    assert "beta: incomplete: beta.xml missing" in out
    assert f"gamma.arff: mismatch: {src / 'gamma.arff'}: expected sha256" in out
    assert "other: not in this source" in out


def test_unknown_checksum_is_recorded_in_the_lock(repo, tmp_path, capsys):
    _, bare, commit = repo
    path = tmp_path / "datasets.yaml"
    path.write_text(yaml.safe_dump({"datasets": {"gamma": entry([spec(commit, "data/mt/gamma.arff", None)])}}))
    assert run(tmp_path, path, bare) == 0
    lock = yaml.safe_load((tmp_path / "lock.yaml").read_text())["files"]
    assert lock["gamma/gamma.arff"]["sha256"] == sha(FILES["data/mt/gamma.arff"])


def test_source_inside_a_repository_is_a_plain_directory(repo, tmp_path, capsys):
    """A sub-folder of a work tree is not the repository the URLs name: its files are looked up by path."""
    work, _, commit = repo
    reg = registry(tmp_path, commit, with_wrong=False)
    assert run(tmp_path, reg, work / "data" / "ml", "beta") == 1
    out = capsys.readouterr().out
    assert cache(tmp_path) == {"beta/beta.arff": FILES["data/ml/beta/beta.arff"]}
    assert f"from the directory {work / 'data' / 'ml'}" in out and "git repository" not in out


def test_missing_source_directory_is_an_error(tmp_path, capsys):
    reg = registry(tmp_path, "0" * 40)
    assert run(tmp_path, reg, tmp_path / "nowhere") == 2
    assert "no such directory" in capsys.readouterr().err


def test_unreadable_repository_is_an_error_not_a_plain_directory(tmp_path, capsys):
    broken = tmp_path / "broken.git"
    (broken / "objects").mkdir(parents=True)
    (broken / "HEAD").write_text("not a ref\n")
    reg = registry(tmp_path, "0" * 40)
    assert run(tmp_path, reg, broken) == 2
    assert "looks like a git repository, but git cannot read it" in capsys.readouterr().err
