"""Downloads through the real urllib code path from a server on 127.0.0.1 (fixture ``http_server``)."""
from __future__ import annotations

import bz2
import gzip
import hashlib
import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from forestbench.datasets.download import (Downloader, RemoteFile, ShaLock, extract_tree, fetch_dataset,
                                           verify_dataset)
from dsfixtures_http import Route
from forestbench.errors import DownloadError

BODY = b"@relation t\n@attribute a numeric\n@data\n" + b"1.5\n" * 50000  # > several 64 KiB chunks
SHA = hashlib.sha256(BODY).hexdigest()


def listing(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


@pytest.fixture
def dl(tmp_path):
    return Downloader(retries=3, backoff=0.01, timeout=2.0, lock=ShaLock(tmp_path / "lock.yaml"), log=lambda m: None)


def test_success_then_cached(http_server, dl, tmp_path):
    http_server.routes["/d/a.arff"] = Route(BODY)
    rf = RemoteFile("a.arff", [http_server.url("/d/a.arff")], SHA, len(BODY))
    path = dl.fetch("toy", rf, tmp_path / "raw" / "toy")
    assert path.read_bytes() == BODY
    assert listing(tmp_path / "raw" / "toy") == ["a.arff"]
    dl.fetch("toy", rf, tmp_path / "raw" / "toy")
    assert http_server.count("/d/a.arff") == 1  # a valid cached file is never downloaded again


def test_sha_mismatch_names_dataset_url_and_hashes(http_server, dl, tmp_path):
    http_server.routes["/d/a.arff"] = Route(BODY)
    bad = "0" * 64
    rf = RemoteFile("a.arff", [http_server.url("/d/a.arff")], bad, None)
    with pytest.raises(DownloadError) as err:
        dl.fetch("toy", rf, tmp_path / "raw" / "toy")
    msg = str(err.value)
    assert "'toy'" in msg and http_server.url("/d/a.arff") in msg and bad in msg and SHA in msg
    assert listing(tmp_path / "raw" / "toy") == []
    assert http_server.count("/d/a.arff") == 1  # a mismatch is not retried on the same URL


def test_404_not_retried_and_nothing_left(http_server, dl, tmp_path):
    rf = RemoteFile("a.arff", [http_server.url("/missing.arff")], SHA)
    with pytest.raises(DownloadError, match=r"HTTP 404.*") as err:
        dl.fetch("toy", rf, tmp_path / "raw" / "toy")
    assert http_server.url("/missing.arff") in str(err.value)
    assert http_server.count("/missing.arff") == 1
    assert listing(tmp_path / "raw" / "toy") == []


def test_503_is_retried_with_backoff(http_server, dl, tmp_path):
    http_server.routes["/d/a.arff"] = Route(BODY, fail_times=2)
    rf = RemoteFile("a.arff", [http_server.url("/d/a.arff")], SHA)
    assert dl.fetch("toy", rf, tmp_path / "raw").read_bytes() == BODY
    assert http_server.count("/d/a.arff") == 3


def test_truncated_body(http_server, dl, tmp_path):
    http_server.routes["/d/a.arff"] = Route(BODY, truncate_at=100_000)
    rf = RemoteFile("a.arff", [http_server.url("/d/a.arff")], SHA)
    with pytest.raises(DownloadError, match="truncated"):
        dl.fetch("toy", rf, tmp_path / "raw" / "toy")
    assert http_server.count("/d/a.arff") == 3  # retried
    assert listing(tmp_path / "raw" / "toy") == []


def test_truncated_body_without_known_sha(http_server, dl, tmp_path):
    """Even with no checksum to compare against, a short transfer is detected from Content-Length."""
    http_server.routes["/d/a.arff"] = Route(BODY, truncate_at=10)
    rf = RemoteFile("a.arff", [http_server.url("/d/a.arff")])
    with pytest.raises(DownloadError, match="truncated"):
        dl.fetch("toy", rf, tmp_path / "raw" / "toy")
    assert listing(tmp_path / "raw" / "toy") == []
    assert ShaLock(tmp_path / "lock.yaml").get("toy/a.arff") is None


def test_slow_server_times_out(http_server, tmp_path):
    http_server.routes["/slow"] = Route(BODY, delay=1.5)
    dl = Downloader(retries=2, backoff=0.01, timeout=0.3, lock=ShaLock(tmp_path / "lock.yaml"), log=lambda m: None)
    rf = RemoteFile("a.arff", [http_server.url("/slow")], SHA)
    with pytest.raises(DownloadError, match="timed out") as err:
        dl.fetch("toy", rf, tmp_path / "raw" / "toy")
    assert "'toy'" in str(err.value)
    assert listing(tmp_path / "raw" / "toy") == []


def test_mirror_used_after_primary_fails(http_server, dl, tmp_path):
    http_server.routes["/mirror/a.arff"] = Route(BODY)
    rf = RemoteFile("a.arff", [http_server.url("/gone.arff"), http_server.url("/mirror/a.arff")], SHA)
    assert dl.fetch("toy", rf, tmp_path / "raw").read_bytes() == BODY


def test_keyboard_interrupt_leaves_nothing(http_server, tmp_path):
    http_server.routes["/d/a.arff"] = Route(BODY)

    def interrupt(nbytes):
        if nbytes > 70_000:
            raise KeyboardInterrupt

    dl = Downloader(retries=1, backoff=0, timeout=2, lock=ShaLock(tmp_path / "l.yaml"), log=lambda m: None,
                    on_chunk=interrupt)
    with pytest.raises(KeyboardInterrupt):
        dl.fetch("toy", RemoteFile("a.arff", [http_server.url("/d/a.arff")], SHA), tmp_path / "raw")
    assert listing(tmp_path / "raw") == []


def _dead_pid() -> int:
    import subprocess
    import sys

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_stale_part_file_from_killed_process_is_removed(http_server, dl, tmp_path):
    from forestbench._io import temp_prefix

    raw = tmp_path / "raw"
    raw.mkdir()
    dead = temp_prefix("a.arff").replace(f"-{os.getpid()}-", f"-{_dead_pid()}-")
    (raw / f"{dead}abc123").write_bytes(b"half")      # a killed process of this host
    old = raw / ".a.arff.part-abc123"                  # an unknown writer, untouched for two days
    old.write_bytes(b"half")
    os.utime(old, (0, os.stat(old).st_mtime - 2 * 86400))
    http_server.routes["/d/a.arff"] = Route(BODY)
    dl.fetch("toy", RemoteFile("a.arff", [http_server.url("/d/a.arff")], SHA), raw)
    assert listing(raw) == ["a.arff"]


def test_concurrent_fetches_of_one_file_both_succeed(http_server, tmp_path):
    """Before: the second fetch removed the first one's temporary file, which then died in os.replace."""
    import threading

    raw = tmp_path / "raw"
    http_server.routes["/d/a.arff"] = Route(BODY)
    started, release, errors = threading.Event(), threading.Event(), []

    def pause(total):
        started.set()
        release.wait(10)

    def first():
        try:
            Downloader(retries=1, lock=ShaLock(tmp_path / "l.yaml"), on_chunk=pause, log=lambda m: None).fetch(
                "toy", RemoteFile("a.arff", [http_server.url("/d/a.arff")], SHA), raw)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=first)
    thread.start()
    assert started.wait(10)
    assert len(list(raw.glob(".a.arff.part-*"))) == 1
    Downloader(retries=1, lock=ShaLock(tmp_path / "l.yaml"), log=lambda m: None).fetch(
        "toy", RemoteFile("a.arff", [http_server.url("/d/a.arff")], SHA), raw)
    release.set()
    thread.join(10)
    assert errors == []
    assert listing(raw) == ["a.arff"] and (raw / "a.arff").read_bytes() == BODY


def test_downloaded_files_respect_the_umask(http_server, dl, tmp_path):
    http_server.routes["/d/a.arff"] = Route(BODY)
    previous = os.umask(0o027)
    try:
        path = dl.fetch("toy", RemoteFile("a.arff", [http_server.url("/d/a.arff")], SHA), tmp_path / "raw")
    finally:
        os.umask(previous)
    assert oct(os.stat(path).st_mode & 0o777) == oct(0o640)


def test_corrupted_cache_is_downloaded_again(http_server, dl, tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a.arff").write_bytes(b"corrupted")
    http_server.routes["/d/a.arff"] = Route(BODY)
    assert dl.fetch("toy", RemoteFile("a.arff", [http_server.url("/d/a.arff")], SHA), raw).read_bytes() == BODY


def test_trust_on_first_use_records_then_verifies(http_server, dl, tmp_path):
    http_server.routes["/d/a.arff"] = Route(BODY)
    rf = RemoteFile("a.arff", [http_server.url("/d/a.arff")])
    messages = []
    dl.log = messages.append
    dl.fetch("toy", rf, tmp_path / "raw")
    assert any("recorded sha256" in m for m in messages)
    lock = ShaLock(tmp_path / "lock.yaml")
    assert lock.get("toy/a.arff")["sha256"] == SHA
    # the server now serves other bytes: a fresh download must be rejected against the lock
    (tmp_path / "raw" / "a.arff").unlink()
    http_server.routes["/d/a.arff"] = Route(BODY + b"tampered")
    with pytest.raises(DownloadError, match=SHA):
        dl.fetch("toy", rf, tmp_path / "raw")
    assert listing(tmp_path / "raw") == []


def test_file_url(tmp_path, dl):
    src = tmp_path / "src.arff"
    src.write_bytes(BODY)
    rf = RemoteFile("a.arff", [src.as_uri()], SHA)
    assert dl.fetch("toy", rf, tmp_path / "raw").read_bytes() == BODY
    with pytest.raises(DownloadError, match="cannot open"):
        dl.fetch("toy", RemoteFile("b.arff", [(tmp_path / "nope").as_uri()], SHA), tmp_path / "raw")


@pytest.mark.parametrize("fmt", ["gz", "bz2", "zip", "tar.gz"])
def test_archives(http_server, dl, tmp_path, fmt):
    if fmt == "gz":
        blob = gzip.compress(BODY)
    elif fmt == "bz2":
        blob = bz2.compress(BODY)
    elif fmt == "zip":
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as zf:
            zf.writestr("other.txt", b"x")
            zf.writestr("dir/a.arff", BODY)
        blob = buf.getvalue()
    else:
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tf:
            for name, data in (("other.txt", b"x"), ("dir/a.arff", BODY)):
                info = tarfile.TarInfo(name)
                info.size = len(data)
                tf.addfile(info, io.BytesIO(data))
        blob = buf.getvalue()
    http_server.routes[f"/a.{fmt}"] = Route(blob)
    spec = {"name": "a.arff", "url": http_server.url(f"/a.{fmt}"), "sha256": hashlib.sha256(blob).hexdigest(),
            "archive": {"format": fmt, "member": "dir/a.arff"} if fmt in ("zip", "tar.gz") else fmt}
    path = dl.fetch("toy", RemoteFile.from_spec(spec), tmp_path / "raw")
    assert path.name == "a.arff" and path.read_bytes() == BODY
    assert listing(tmp_path / "raw") == sorted(["a.arff", f"a.{fmt}"])


def test_zip_member_missing_leaves_archive_only(http_server, dl, tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("other.txt", b"x")
    blob = buf.getvalue()
    http_server.routes["/a.zip"] = Route(blob)
    spec = {"name": "a.arff", "url": http_server.url("/a.zip"), "sha256": hashlib.sha256(blob).hexdigest(),
            "archive": {"format": "zip", "member": "a.arff"}}
    with pytest.raises(DownloadError, match="cannot extract"):
        dl.fetch("toy", RemoteFile.from_spec(spec), tmp_path / "raw")
    assert listing(tmp_path / "raw") == ["a.zip"]  # the verified archive stays; no partial member


def test_rar_gives_alternative(dl, tmp_path):
    spec = {"name": "m.arff", "url": "https://example.invalid/mediamill.rar", "archive": "rar",
            "alternative": "the Extreme Classification repository"}
    with pytest.raises(DownloadError, match="rar.*Extreme Classification"):
        dl.fetch("mediamill", RemoteFile.from_spec(spec), tmp_path / "raw")


def test_extract_tree_refuses_traversal(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tf:
        info = tarfile.TarInfo("../evil.txt")
        info.size = 1
        tf.addfile(info, io.BytesIO(b"x"))
    archive = tmp_path / "a.tar.gz"
    archive.write_bytes(buf.getvalue())
    with pytest.raises(DownloadError, match="unsafe"):
        extract_tree("toy", archive, tmp_path / "out")
    assert not (tmp_path / "evil.txt").exists() and not (tmp_path / "out").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["a.tar.gz"]


def test_interrupted_then_resumed_dataset_fetch(http_server, dl, tmp_path):
    """A two-file dataset whose second file fails: the first stays (verified), nothing partial; the next run
    downloads only what is missing."""
    other = b"<labels/>"
    http_server.routes["/d/a.arff"] = Route(BODY)
    entry = {"status": "available", "source": {"kind": "download", "files": [
        {"name": "a.arff", "url": http_server.url("/d/a.arff"), "sha256": SHA},
        {"name": "a.xml", "url": http_server.url("/d/a.xml"), "sha256": hashlib.sha256(other).hexdigest()}]}}
    raw = tmp_path / "raw"
    with pytest.raises(DownloadError, match="a.xml"):
        fetch_dataset("toy", entry, raw, dl)
    assert listing(raw / "toy") == ["a.arff"]
    assert [s for _, s, _ in verify_dataset("toy", entry, raw, dl.lock)] == ["ok", "missing"]
    http_server.routes["/d/a.xml"] = Route(other)
    paths = fetch_dataset("toy", entry, raw, dl)
    assert sorted(paths) == ["a.arff", "a.xml"]
    assert http_server.count("/d/a.arff") == 1 and http_server.count("/d/a.xml") == 2
    assert [s for _, s, _ in verify_dataset("toy", entry, raw, dl.lock)] == ["ok", "ok"]


def test_unavailable_dataset_and_local_path(tmp_path, dl):
    entry = {"status": "unavailable", "unavailable_reason": "no public copy",
             "source": {"kind": "download", "files": [{"name": "w.arff", "sha256": SHA}]}}
    with pytest.raises(DownloadError, match=r"'wipo' is unavailable: no public copy.*local_path"):
        fetch_dataset("wipo", entry, tmp_path / "raw", dl)
    local = tmp_path / "mine"
    local.mkdir()
    (local / "w.arff").write_bytes(BODY)
    entry["local_path"] = str(local)
    assert fetch_dataset("wipo", entry, tmp_path / "raw", dl)["w.arff"].read_bytes() == BODY
    (local / "w.arff").write_bytes(b"other bytes")
    (tmp_path / "raw" / "wipo" / "w.arff").unlink()
    with pytest.raises(DownloadError, match="config/datasets.yaml pins"):
        fetch_dataset("wipo", entry, tmp_path / "raw", dl)


def test_new_archive_replaces_stale_extraction(http_server, dl, tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "a.arff").write_bytes(b"stale extraction of an older archive")
    (raw / "a.gz").write_bytes(b"corrupted archive")
    blob = gzip.compress(BODY)
    http_server.routes["/a.gz"] = Route(blob)
    spec = {"name": "a.arff", "url": http_server.url("/a.gz"), "sha256": hashlib.sha256(blob).hexdigest(),
            "archive": "gz"}
    assert dl.fetch("toy", RemoteFile.from_spec(spec), raw).read_bytes() == BODY


def test_extracted_tree_respects_the_umask(tmp_path):
    archive = tmp_path / "a.tar.gz"
    member = tmp_path / "x.txt"
    member.write_text("x")
    with tarfile.open(archive, "w:gz") as tf:
        tf.add(member, arcname="d/x.txt")
    previous = os.umask(0o022)
    try:
        root = extract_tree("toy", archive, tmp_path / "tree")
    finally:
        os.umask(previous)
    assert oct(os.stat(root).st_mode & 0o777) == oct(0o755)
