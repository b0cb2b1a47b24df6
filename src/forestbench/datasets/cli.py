"""``python -m forestbench datasets list | info NAME | fetch NAME | fetch --from SOURCE [NAME ...] | verify [NAME ...]
| accept NAME``."""
from __future__ import annotations

import sys
from pathlib import Path

from forestbench.errors import DownloadError

DEFAULT_REGISTRY = "config/datasets.yaml"


def _registry(args) -> dict:
    from forestbench.datasets.registry import load_registry

    return load_registry(args.registry)


def _lock(args):
    from forestbench.datasets.download import ShaLock

    return ShaLock(args.lock)


def _checksum_state(name: str, entry: dict, lock) -> str:
    """'pinned' (every sha256 in the registry), 'locked' (the rest recorded in the lock file), 'tofu' (some
    sha256 will be recorded by the first download), or '-' for sources without files."""
    from forestbench.datasets.download import remote_files

    files = remote_files(entry)
    if not files or not any(f.urls for f in files):
        return "-"  # nothing to download (embedded, or only a local_path can supply the files)
    if all(f.sha256 for f in files):
        return "pinned"
    if all(f.sha256 or lock.get(f"{name}/{f.stored_name}") for f in files):
        return "locked"
    return "tofu"


def _list(args) -> int:
    from forestbench.datasets.download import unavailable_reason

    reg = _registry(args)
    lock = _lock(args)
    rows = [("name", "task", "status", "n", "p", "d", "source", "checksums")]
    for name in sorted(reg):
        e = reg[name]
        shape = e.get("shape") or {}
        status = "unavailable" if unavailable_reason(name, e) else ("local" if e.get("local_path") else "available")
        rows.append((name, e["task"], status, *(str(shape.get(k, "?")) for k in "npd"), e["source"]["kind"],
                     _checksum_state(name, e, lock)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    missing = [r[0] for r in rows[1:] if r[2] == "unavailable"]
    if missing:
        print(f"\n{len(missing)} unavailable (supply them with local_path): {', '.join(missing)}")
    return 0


def _info(args) -> int:
    import yaml

    from forestbench.datasets.download import raw_root, unavailable_reason, verify_dataset
    from forestbench.datasets.registry import get_entry

    reg = _registry(args)
    entry = get_entry(reg, args.name)
    print(yaml.safe_dump({args.name: entry}, sort_keys=False, width=110).rstrip())
    reason = unavailable_reason(args.name, entry)
    if reason:
        print(f"\nstatus: {reason}")
    if entry["source"]["kind"] == "download":
        root = Path(args.raw_dir) if args.raw_dir else raw_root()
        print(f"\nraw files in {root / args.name}:")
        for fname, state, detail in verify_dataset(args.name, entry, root, _lock(args)):
            print(f"  {fname}: {state} ({detail})")
    return 0


def _fetch(args) -> int:
    from forestbench.datasets.download import Downloader, fetch_dataset, remote_files, raw_root
    from forestbench.datasets.registry import get_entry

    reg = _registry(args)
    if args.source is not None:
        return _fetch_from(args, reg)
    if len(args.names) != 1:
        raise DownloadError("datasets fetch: name exactly one dataset (or use --from SOURCE for several)")
    args.name = args.names[0]
    entry = get_entry(reg, args.name)
    if entry["source"]["kind"] != "download":
        print(f"{args.name}: source kind {entry['source']['kind']!r} needs no download")
        return 0
    root = Path(args.raw_dir) if args.raw_dir else raw_root()
    dl = Downloader(retries=args.retries, timeout=args.timeout, lock=_lock(args))
    if args.file:
        # one file only (the workflow fetches file by file, so an interrupted run resumes where it stopped)
        wanted = [f for f in entry["source"]["files"] if f["name"] == args.file]
        if not wanted:
            known = ", ".join(f.name for f in remote_files(entry))
            raise DownloadError(f"dataset {args.name!r} has no raw file {args.file!r} (files: {known})")
        entry = {**entry, "source": {**entry["source"], "files": wanted}}
    paths = fetch_dataset(args.name, entry, root, dl, registry=args.registry)
    for fname, path in paths.items():
        print(f"{args.name}: {path}")
    return 0


def _fetch_from(args, reg: dict) -> int:
    from forestbench.datasets.download import Downloader, raw_root
    from forestbench.datasets.fetch_from import OK_STATES, Source, fetch_from

    if args.file:
        raise DownloadError("datasets fetch: --file applies to a download, not to --from")
    root = Path(args.raw_dir) if args.raw_dir else raw_root()
    dl = Downloader(lock=_lock(args))
    source = Source(args.source)
    results, status = fetch_from(source, reg, args.names or None, root, dl)
    for res in results:
        print(f"{res.name}: {res.summary()}")
        for f in res.files:
            if f.state not in OK_STATES and f.state != "absent":
                print(f"  {f.file}: {f.state}: {f.detail}")
    complete = [r.name for r in results if r.complete]
    mismatched = [r.name for r in results if r.mismatched]
    incomplete = [r.name for r in results if r.covered and not r.complete]
    absent = [r.name for r in results if not r.covered]
    print(f"\n{len(complete)} of {len(results)} dataset(s) complete in {root} from the {source.describe()}"
          + (f"; wrong checksum: {', '.join(mismatched)}" if mismatched else "")
          + (f"; incomplete: {', '.join(sorted(set(incomplete) - set(mismatched)))}"
             if set(incomplete) - set(mismatched) else "")
          + (f"; not in this source: {len(absent)}" if absent else ""))
    return status


def _accept(args) -> int:
    from forestbench.datasets.download import accept_local
    from forestbench.datasets.registry import get_entry

    reg = _registry(args)
    entry = get_entry(reg, args.name)
    lock = _lock(args)
    changed = accept_local(args.name, entry, lock, args.file)
    for fname, old, new in changed:
        print(f"{args.name}/{fname}: recorded sha256 {new} in {lock.path}" + (f" (was {old})" if old else ""))
    if not changed:
        print(f"{args.name}: the lock already records the current local files")
    return 0


def _verify(args) -> int:
    from forestbench.datasets.download import raw_root, unavailable_reason, verify_dataset

    reg = _registry(args)
    names = args.names or sorted(n for n, e in reg.items() if e["source"]["kind"] == "download")
    root = Path(args.raw_dir) if args.raw_dir else raw_root()
    bad = 0
    for name in names:
        if name not in reg:
            raise DownloadError(f"dataset {name!r} is not in the registry")
        entry = reg[name]
        if entry["source"]["kind"] != "download":
            continue
        report = verify_dataset(name, entry, root, _lock(args))
        states = [s for _, s, _ in report]
        if "mismatch" in states:
            bad += 1
        if args.names or any(s != "missing" for s in states):
            for fname, state, detail in report:
                print(f"{name}/{fname}: {state} ({detail})")
        elif unavailable_reason(name, entry) is None:
            print(f"{name}: not fetched")
    if bad:
        print(f"{bad} dataset(s) with files that do not verify", file=sys.stderr)
        return 1
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser("datasets", help="list, describe, fetch and verify the registry's datasets")
    parser.add_argument("--registry", default=DEFAULT_REGISTRY)
    parser.add_argument("--raw-dir", default=None, help="raw-file cache (default: $FORESTBENCH_RAW or data/raw)")
    parser.add_argument("--lock", default=None,
                        help="sha256 lock file (default: $FORESTBENCH_SHA_LOCK or config/datasets.lock.yaml)")
    sub = parser.add_subparsers(dest="datasets_command", required=True)
    p = sub.add_parser("list", help="every dataset with its task, status, expected shape and checksum state")
    p.set_defaults(func=_list)
    p = sub.add_parser("info", help="the registry entry of a dataset and the state of its raw files")
    p.add_argument("name")
    p.set_defaults(func=_info)
    p = sub.add_parser("fetch", help="download and verify the raw files of a dataset into <raw-dir>/<name>/, or "
                                      "copy them from a local copy of their source (--from)")
    p.add_argument("names", nargs="*", metavar="NAME",
                   help="the dataset (exactly one without --from; with --from any number, none meaning every "
                        "downloaded dataset)")
    p.add_argument("--from", dest="source", metavar="SOURCE",
                   help="take the files from SOURCE instead of the network: a git repository (bare or not) of the "
                        "repository the registry's URLs point into, read at the pinned commit, or a plain directory "
                        "(files at their repository path, at <dataset>/<file> or at <file>); every file is verified "
                        "against its sha256. Exit status 1 when a file does not verify or a named dataset is "
                        "incomplete")
    p.add_argument("--file", help="fetch only this raw file")
    p.add_argument("--retries", type=int, default=3)
    p.add_argument("--timeout", type=float, default=60.0, help="seconds without data before an attempt fails")
    p.set_defaults(func=_fetch)
    p = sub.add_parser("accept", help="record the sha256 of a dataset's current local_path files in the lock file "
                                       "(after an intended change of a local file)")
    p.add_argument("name")
    p.add_argument("--file", help="accept only this raw file")
    p.set_defaults(func=_accept)
    p = sub.add_parser("verify", help="check the sha256 of the cached raw files (no download); exit 1 on mismatch")
    p.add_argument("names", nargs="*")
    p.set_defaults(func=_verify)
