"""Run records: one JSON document per (experiment, dataset, variant, repeat), with provenance.

A record is written atomically, so a killed job leaves no file that looks complete.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import platform
import socket
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from forestbench._io import write_json

SCHEMA_VERSION = 1
#: the packages whose versions are part of a result's fingerprint (a candidate's cache key, a record's check in
#: ``collect``): this project and the numerical libraries its estimators compute with. The git commit is recorded
#: in the provenance but left out of the fingerprint: it changes with every commit, documentation included, and
#: would make every stored result look superseded.
CODE_PACKAGES = ("forestbench", "numpy", "scipy", "scikit-learn")
PACKAGES = ("forestbench", "numpy", "scipy", "scikit-learn", "pandas", "snakemake", "threadpoolctl", "Cython")
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
SLURM_VARIABLES = ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID", "SLURM_ARRAY_TASK_ID", "SLURMD_NODENAME",
                   "SLURM_CPUS_PER_TASK", "SLURM_JOB_PARTITION")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


@functools.lru_cache(maxsize=None)
def _git_state(where: str) -> dict:
    """``{"commit", "dirty"}`` of the git checkout holding the folder ``where`` (None, None outside one)."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=where, capture_output=True, text=True,
                                timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=where,
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip() != ""
        return {"commit": commit, "dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def _git_commit() -> dict:
    """The commit of forestbench's own sources (known where they sit in a checkout: an editable install) and,
    under ``workflow``, that of the checkout the job runs in (Snakemake's working directory: the configuration and
    rules it ran). A wheel installed from a checkout knows only the second."""
    state = dict(_git_state(str(Path(__file__).resolve().parent)))
    try:
        state["workflow"] = _git_state(os.getcwd())
    except OSError:     # the working directory was removed
        state["workflow"] = {"commit": None, "dirty": None}
    return state


@functools.lru_cache(maxsize=1)
def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _thread_limits() -> dict:
    limits = {name: os.environ.get(name) for name in THREAD_VARIABLES}
    try:
        from threadpoolctl import threadpool_info
        limits["threadpools"] = [{"api": p.get("user_api"), "library": p.get("internal_api"),
                                  "num_threads": p.get("num_threads")} for p in threadpool_info()]
    except Exception:  # threadpoolctl is informative only
        limits["threadpools"] = None
    return limits


def provenance() -> dict:
    return {
        "packages": {p: _version(p) for p in PACKAGES},
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "git": _git_commit(),
        "host": socket.gethostname(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "affinity": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None,
        "threads": _thread_limits(),
        "slurm": {name: os.environ[name] for name in SLURM_VARIABLES if name in os.environ} or None,
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }


def code_versions() -> dict:
    """``{package: version}`` of :data:`CODE_PACKAGES` in the running environment."""
    return {p: _version(p) for p in CODE_PACKAGES}


def config_sha256(spec: dict) -> str:
    """sha256 of a resolved run specification (canonical JSON): the configuration a result was computed under
    (method, parameters, tuning, metrics, seed, protocol, threads, expected shape, plugins)."""
    text = json.dumps(spec, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def fingerprint(spec: dict, data: dict, code: dict | None = None) -> dict:
    """What a run record's result depends on: its configuration (:func:`config_sha256` of the run specification),
    the checksums of the prepared data and of the split manifest, and the versions of :data:`CODE_PACKAGES`."""
    return {"config_sha256": config_sha256(spec), "prepared_sha256": data.get("prepared_sha256"),
            "split_sha256": data.get("split_sha256"), "code": dict(code if code is not None else code_versions())}


def fingerprint_of(record: dict) -> dict:
    """The fingerprint of a stored record, recomputed from its specification, data checksums and provenance (so
    that records written before fingerprints were stored are checked alike)."""
    packages = (record.get("provenance") or {}).get("packages") or {}
    return fingerprint(record.get("spec") or {}, record.get("data") or {},
                       {p: packages.get(p) for p in CODE_PACKAGES})


def write_record(path: str | Path, record: dict) -> Path:
    prov = provenance()
    record = {"schema_version": SCHEMA_VERSION, **record, "provenance": prov}
    if "spec" in record:
        record["fingerprint"] = fingerprint(record["spec"], record.get("data") or {},
                                            {p: prov["packages"].get(p) for p in CODE_PACKAGES})
    write_json(path, record)
    return Path(path)
