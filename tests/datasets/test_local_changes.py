"""A local_path file that changes after its first fetch: the fetch refuses it with a message naming both checksums and
the command that accepts it, the cached copy stays as it was, and `datasets accept` makes the next fetch copy it.
A cached file that no longer verifies stays in place when its new download fails."""
from __future__ import annotations

import hashlib

import pytest
import yaml

from dsfixtures_http import Route
from forestbench.cli import main
from forestbench.datasets.download import Downloader, RemoteFile, ShaLock, fetch_dataset
from forestbench.errors import DownloadError

OLD = b"a,b\n1,2\n"
NEW = b"a,b\n1,3\n"


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def setup(tmp_path):
    local = tmp_path / "mine"
    local.mkdir()
    (local / "t.csv").write_bytes(OLD)
    entry = {"task": "regression", "status": "unavailable", "unavailable_reason": "private", "local_path": str(local),
             "source": {"kind": "download", "files": [{"name": "t.csv", "format": "csv"}],
                        "labels": {"from": "last", "d": 1}},
             "protocols": {"p": {"type": "given"}}}
    reg = tmp_path / "datasets.yaml"
    reg.write_text(yaml.safe_dump({"datasets": {"tab": entry}}))
    lock = ShaLock(tmp_path / "lock.yaml")
    dl = Downloader(retries=1, backoff=0.01, timeout=2.0, lock=lock, log=lambda m: None)
    return tmp_path, local / "t.csv", entry, reg, dl


def cli(tmp_path, reg, *args: str) -> int:
    return main(["datasets", "--registry", str(reg), "--raw-dir", str(tmp_path / "raw"),
                 "--lock", str(tmp_path / "lock.yaml"), *args])


def test_changed_local_file_is_refused_until_accepted(setup, capsys):
    tmp_path, src, entry, reg, dl = setup
    cached = tmp_path / "raw" / "tab" / "t.csv"
    assert cli(tmp_path, reg, "fetch", "tab") == 0
    assert cached.read_bytes() == OLD
    assert dl.lock.get("tab/t.csv")["sha256"] == sha(OLD)  # first use recorded

    src.write_bytes(NEW)  # regenerated in place
    # before: the valid cached copy was kept and the new file silently ignored
    with pytest.raises(DownloadError) as err:
        fetch_dataset("tab", entry, tmp_path / "raw", dl)
    message = str(err.value)
    assert str(src) in message and sha(NEW) in message and sha(OLD) in message
    assert f"python -m forestbench datasets --lock {dl.lock.path} accept tab" in message
    assert cached.read_bytes() == OLD  # the previous copy is kept
    assert cli(tmp_path, reg, "fetch", "tab") == 2

    assert cli(tmp_path, reg, "accept", "tab") == 0
    out = capsys.readouterr().out
    assert f"tab/t.csv: recorded sha256 {sha(NEW)}" in out and f"(was {sha(OLD)})" in out
    assert cli(tmp_path, reg, "fetch", "tab") == 0
    assert cached.read_bytes() == NEW
    assert cli(tmp_path, reg, "accept", "tab") == 0
    assert "already records" in capsys.readouterr().out


def test_accept_refuses_registry_pins_and_downloaded_datasets(setup, capsys):
    tmp_path, src, entry, reg, dl = setup
    entry["source"]["files"][0]["sha256"] = sha(OLD)
    entry_dl = {**entry, "status": "available", "local_path": None}
    reg.write_text(yaml.safe_dump({"datasets": {"tab": entry, "dl": entry_dl}}))
    src.write_bytes(NEW)
    assert cli(tmp_path, reg, "accept", "tab") == 2
    assert "config/datasets.yaml pins" in capsys.readouterr().err
    assert not dl.lock.path.exists()
    assert cli(tmp_path, reg, "accept", "dl") == 2
    assert "has no local_path" in capsys.readouterr().err


def test_failed_download_keeps_the_cached_file(http_server, tmp_path):
    """Before: a cached file that did not verify was deleted before its new download, which then failed."""
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a.arff").write_bytes(b"previous bytes")
    http_server.routes["/d/a.arff"] = Route(b"served bytes", status=404)
    dl = Downloader(retries=1, backoff=0.01, timeout=2.0, lock=ShaLock(tmp_path / "lock.yaml"), log=lambda m: None)
    with pytest.raises(DownloadError):
        dl.fetch("toy", RemoteFile("a.arff", [http_server.url("/d/a.arff")], sha(b"expected")), raw)
    assert sorted(p.name for p in raw.iterdir()) == ["a.arff"]
    assert (raw / "a.arff").read_bytes() == b"previous bytes"
