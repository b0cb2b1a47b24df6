"""The registry's content against the papers and the pinned Mulan snapshot: every dataset present, shapes as published
(or a documented published_shape), pinned Mulan URLs and checksums, coherent layouts, and the yeast acceptance."""
from __future__ import annotations

import copy
import csv
import re
import subprocess
import sys
from pathlib import Path

import pytest

from forestbench.datasets.download import unavailable_reason
from forestbench.datasets.prepare import prepare
from forestbench.datasets.registry import load_registry
from forestbench.datasets.splits import make_splits
from forestbench.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "config" / "datasets.yaml"
MULAN_COMMIT = "43f6389095ad71984264db4387a8074b22bc7d4a"
# size and SHA-256 of every data file in that Mulan tree, computed from the snapshot's blobs
MULAN_BLOBS = Path(__file__).with_name("mulan_blob_sha256.csv")

# (n, p, d) as printed: thesis Table A.1 (n = n_LS + n_TS), Table A.2, Table 8.1, DTE Tables 1-2, GB paper Table 2
PUBLISHED = {
    "emotions": (593, 72, 6), "scene": (2407, 2407, 6), "yeast": (2417, 103, 14), "birds": (645, 260, 19),
    "tmc2007": (28596, 49060, 22), "genbase": (662, 1186, 27), "reuters": (7500, 19769, 34),
    "medical": (978, 1449, 45), "enron": (1702, 1001, 53), "mediamill": (43907, 120, 101),
    "yeast_go": (3465, 5930, 132), "bibtex": (7395, 1836, 159), "cal500": (502, 68, 174), "wipo": (1710, 74435, 188),
    "eurlex_subject_matters": (19348, 5000, 201), "bookmarks": (87856, 2150, 208), "diatoms": (3119, 371, 359),
    "corel5k": (5000, 499, 374), "eurlex_directory_codes": (19348, 5000, 412), "scop_go": (9843, 2003, 465),
    "delicious": (16105, 500, 983), "drug_interaction": (1862, 660, 1554), "protein_interaction": (1554, 876, 1862),
    "expression_go": (3036, 1288, 2717), "eurlex_eurovoc_descriptors": (19348, 5000, 3993),
    "sequence_funcat": (3719, 4450, 31),
    "atp1d": (337, 411, 6), "atp7d": (296, 411, 6), "edm": (154, 16, 2), "oes10": (403, 298, 16),
    "oes97": (334, 263, 16), "scm1d": (9803, 280, 16), "scm20d": (8966, 61, 16), "water_quality": (1060, 16, 14),
    "rf1": (9125, 64, 8), "rf2": (9125, 576, 8), "sf1": (323, 10, 3), "sf2": (1066, 10, 3), "jura": (359, 15, 3),
    "enb": (768, 8, 2), "slump": (103, 7, 3), "andro": (49, 30, 6), "osales": (639, 401, 12), "scpf": (1137, 23, 3),
    "music_origin1": (1059, 68, 2), "music_origin2": (1059, 116, 2), "friedman": (500, 25, 6),
    "mp5spec": (80, 700, 3), "mp6spec": (80, 700, 3), "polymer": (41, 10, 4),
    "chd_49": (555, 49, 6), "flags": (194, 19, 7), "gram_negative": (1392, 1717, 8), "gram_positive": (519, 912, 4),
    "gram_positive_pseaac": (519, 912, 4), "llog": (1460, 1004, 75), "plant_go": (978, 3091, 12),
    "virus_go": (207, 749, 6), "virus_pseaac": (207, 440, 6),
    "news20_binary": (19996, 1355191, 1), "20newsgroup": (18846, 130107, 1), "rcv1": (23149, 47236, None),
    "sector_scale": (9619, 55197, 1), "farm_ads_vect": (4143, 54877, 1), "e2006_train": (16087, 150360, 1),
    "mushrooms": (8124, None, 1), "mnist": (70000, 784, 1), "covtype": (581012, 54, 1), "sefti": (4000, 600, 1),
}
# published values that differ from the data, each explained in the entry's notes
KNOWN_DIFFERENCES = {("scene", "p"), ("genbase", "p"), ("atp1d", "p"), ("atp7d", "p"), ("wipo", "d")}


@pytest.fixture(scope="module")
def registry():
    return load_registry(REGISTRY)


def test_every_dataset_of_the_papers_has_an_entry(registry):
    assert not set(PUBLISHED) - set(registry)


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_shapes_match_the_papers(registry, name):
    entry = registry[name]
    shape, published = entry.get("shape", {}), entry.get("published_shape", {})
    for key, value in zip("npd", PUBLISHED[name]):
        if value is None:
            continue
        assert value in (shape.get(key), published.get(key)), f"{name}.{key}: registry {shape}, paper {value}"
        if shape.get(key) != value or key in published:
            assert (name, key) in KNOWN_DIFFERENCES and entry.get("notes"), f"{name}.{key} differs without a note"


def _mulan_blobs() -> dict[str, str]:
    """Path in the Mulan tree -> SHA-256 of its blob ("" where the snapshot lacked the blob)."""
    with MULAN_BLOBS.open(newline="") as f:
        rows = list(csv.DictReader(line for line in f if not line.startswith("#")))
    assert len(rows) == 62 and all(len(r["sha256"]) in (0, 64) for r in rows), MULAN_BLOBS
    return {r["path"]: r["sha256"] for r in rows}


def test_download_entries_are_coherent(registry):
    blobs = _mulan_blobs()
    pinned = {path: sha for path, sha in blobs.items() if sha}
    seen_pinned = 0
    for name, entry in registry.items():
        src = entry["source"]
        if src["kind"] != "download":
            continue
        files = {f["name"]: f for f in src["files"]}
        layout = src.get("layout", {})
        for key in ("train", "test", "data", "folds"):
            for fname in layout.get(key, []):
                assert fname in files, f"{name}: layout names {fname} not in files"
        labels = src.get("labels", {})
        if "file" in labels:
            assert labels["file"] in files, name
        if entry.get("status") == "unavailable":
            assert entry.get("unavailable_reason") and entry.get("local_path_help"), name
            assert unavailable_reason(name, entry) and name in unavailable_reason(name, entry)
            continue
        for f in src["files"]:
            assert f.get("url"), f"{name}/{f['name']}: an available dataset needs URLs"
            if "tsoumakas/mulan" in f["url"]:
                assert f"/mulan/{MULAN_COMMIT}/" in f["url"], f["url"]
                path = f["url"].split(MULAN_COMMIT + "/")[1]
                if path in pinned:
                    assert f.get("sha256") == pinned[path], \
                        f"{name}/{f['name']}: sha256 differs from the pinned source list"
                    seen_pinned += 1
                else:
                    assert path in blobs, f"{name}/{f['name']}: {path} is not in the Mulan tree"
                    assert not f.get("sha256")  # absent blobs: trust on first use
    assert seen_pinned >= 40


def test_schema_rejects_bad_download_entries(tmp_path, registry):
    import yaml

    bad = {"datasets": {"x": copy.deepcopy(registry["emotions"])}}
    bad["datasets"]["x"]["source"]["files"][0]["sha256"] = "not-a-hash"
    bad["datasets"]["x"]["source"]["labels"] = {"from": "last"}  # d missing
    path = tmp_path / "d.yaml"
    path.write_text(yaml.safe_dump(bad))
    with pytest.raises(ConfigError) as err:
        load_registry(path, ROOT / "workflow" / "schemas")
    assert "sha256" in str(err.value) and "labels" in str(err.value)


def test_embedded_yeast_shape_and_standard_split(registry, tmp_path):
    ds = prepare("yeast", registry["yeast"], tmp_path / "yeast.npz")
    assert (ds.n_samples, ds.n_features, ds.n_outputs) == (2417, 103, 14)
    (train, test), = make_splits(registry["yeast"]["protocols"]["standard"], ds.n_samples, ds.given_splits, "yeast")
    assert (len(train), len(test)) == (1500, 917)
    assert not set(train) & set(test)
    splits = make_splits(registry["yeast"]["protocols"]["thesis_ch5"], ds.n_samples, ds.given_splits, "yeast")
    assert len(splits) == 10 and all((len(a), len(b)) == (1500, 917) for a, b in splits)


def run_cli(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "forestbench", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_cli_list_info_verify(tmp_path):
    out = run_cli("datasets", "list")
    assert out.returncode == 0, out.stderr
    assert re.search(r"^emotions\s+multilabel\s+available\s+593\s+72\s+6\s+download\s+pinned", out.stdout, re.M)
    assert "unavailable (supply them with local_path): " in out.stdout and "wipo" in out.stdout
    info = run_cli("datasets", "--raw-dir", str(tmp_path), "info", "wipo")
    assert info.returncode == 0 and "status: dataset 'wipo' is unavailable" in info.stdout
    assert "gone.arff" not in info.stdout and "wipo.arff: missing" in info.stdout
    verify = run_cli("datasets", "--raw-dir", str(tmp_path), "verify", "emotions")
    assert verify.returncode == 0 and "emotions-train.arff: missing" in verify.stdout
    (tmp_path / "emotions").mkdir()
    (tmp_path / "emotions" / "emotions.xml").write_text("tampered")
    verify = run_cli("datasets", "--raw-dir", str(tmp_path), "verify", "emotions")
    assert verify.returncode == 1 and "emotions.xml: mismatch" in verify.stdout
    fetch = run_cli("datasets", "fetch", "wipo")
    assert fetch.returncode == 2 and "'wipo' is unavailable" in fetch.stderr and "local_path" in fetch.stderr
    unknown = run_cli("datasets", "info", "nope")
    assert unknown.returncode == 2 and "not in the registry" in unknown.stderr
