"""Build a :class:`Dataset` from the raw files of a registry entry with ``source.kind: download`` (fetched from
their URLs, or copied from the folder the entry's ``local_path`` names).

The entry's ``source`` says how (schema: ``workflow/schemas/datasets.schema.yaml``):

``files``
    the raw files (see :mod:`forestbench.datasets.download`), each with a ``format``: ``arff`` (the default),
    ``csv``, ``tsv``, ``svmlight``, ``svmlight_multilabel``, ``xc`` (Extreme Classification repository svmlight with a
    header line), ``xml`` (Mulan label names) or an archive format read by a builder.
``layout``
    how the files make up the rows: ``{type: train_test, train: [...], test: [...]}`` (rows = train files then test
    files; the given split is train vs test), ``{type: single, data: [...]}`` (no given split, unless
    ``given: {n_train, n_test}`` takes the first n_train rows as learning set and the last n_test as test set),
    ``{type: folds, folds: [...]}`` (rows = the concatenated fold files; fold k is the test set of given split k and
    the other folds its learning set, as EUR-Lex's 10 published folds). Default: ``single`` on the first file.
``reader``
    options of the CSV/TSV and svmlight readers: ``header`` (the first CSV line names the columns; default false),
    ``delimiter`` (default ``,``), ``id_column`` (a column of row ids, left out of the data; used to align a
    ``labels: {from: table}`` file), ``n_features``, ``n_labels``, ``zero_based`` (``true``, ``false``, ``auto``),
    ``max_width`` (svmlight).
``labels`` (required unless a ``builder`` makes the whole dataset)
    where the outputs are: ``{from: xml, file}`` (Mulan XML label names), ``{from: meka}`` (``-C ±d`` of the relation),
    ``{from: last, d}`` / ``{from: first, d}`` (the last / first d columns of a CSV or ARFF file, as Mulan's MTR
    sets), ``{from: hierarchical, attribute}`` (Clus HMC class attribute converted to flat labels),
    ``{from: inline}`` (svmlight targets), ``{from: table, file, transpose}`` (a separate matrix aligned on row ids).
``preprocess``
    a list of operations applied in order: ``drop_attributes`` (by name, e.g. genbase's protein id),
    ``nominal_inputs`` (``encoding: ordinal`` codes, the default, or ``onehot`` for nominal inputs with more than two
    values), ``impute`` (``strategy: median``, the only one: the median of a numeric input, the most frequent code
    of a nominal one, statistics of all rows, as the papers did not say otherwise), ``drop_constant_inputs``,
    ``drop_constant_outputs``, ``drop_absent_labels`` (labels never positive).
``builder``
    a dataset built by its own code from its raw files instead of the above: ``newsgroups_bydate`` (20 newsgroups
    token counts, see :func:`_newsgroups`) or ``rcv1_lyrl2004`` (RCV1-v2 with its ``vectors`` and ``topics`` files,
    see :func:`_rcv1`).

The shape check against the entry's ``shape`` is done by the caller (``prepare``).
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from forestbench.datasets.readers import meka_label_count, read_arff, read_csv, read_label_xml, read_svmlight
from forestbench.datasets.readers.arff import Attribute
from forestbench.datasets.readers.svmlight import MAX_WIDTH
from forestbench.datasets.store import Dataset
from forestbench.errors import ConfigError, DataError

# prepared inputs are float32: a larger finite value would silently become infinite, so readers refuse it
FLOAT32_MAX = float(np.finfo(np.float32).max)
# a label matrix with more cells than this is stored sparse (EUR-Lex eurovoc: 19348 x 3993)
DENSE_Y_MAX_CELLS = 20_000_000


@dataclass
class Table:
    """Rows of one raw file: every attribute as a column (ARFF) or an (X, Y) pair (svmlight)."""

    data: object
    attributes: list[Attribute] | None = None
    relation: str = ""
    text: dict = field(default_factory=dict)
    Y: object = None  # svmlight targets
    row_ids: list[str] | None = None


def _file_specs(name: str, entry: dict) -> dict[str, dict]:
    return {f["name"]: f for f in entry["source"].get("files", [])}


def _raw_path(name: str, raw_dir: Path, fname: str) -> Path:
    path = raw_dir / fname
    if not path.exists():
        raise DataError(f"dataset {name!r}: raw file {path} is missing; run `python -m forestbench datasets fetch "
                        f"{name}` first")
    return path


def _read(name: str, spec: dict, path: Path, reader_opts: dict) -> Table:
    table = _read_table(name, spec, path, reader_opts)
    if table.data.shape[0] == 0:
        raise DataError(f"dataset {name!r}: raw file {path} has no data rows")
    _check_float32_range(name, path, table)
    return table


def _read_table(name: str, spec: dict, path: Path, reader_opts: dict) -> Table:
    fmt = spec.get("format", "arff")
    if fmt == "arff":
        a = read_arff(path, max_abs=FLOAT32_MAX)
        return Table(a.data, a.attributes, a.relation, a.text)
    if fmt in ("svmlight", "svmlight_multilabel", "xc"):
        X, Y = read_svmlight(path, multilabel=fmt != "svmlight", header=fmt == "xc",
                             n_features=reader_opts.get("n_features"), n_labels=reader_opts.get("n_labels"),
                             zero_based=reader_opts.get("zero_based", "auto"),
                             max_width=reader_opts.get("max_width", MAX_WIDTH), max_abs=FLOAT32_MAX)
        return Table(X, Y=Y)
    if fmt in ("csv", "tsv"):
        names, ids, X = read_csv(path, delimiter="\t" if fmt == "tsv" else reader_opts.get("delimiter", ","),
                                 header=reader_opts.get("header", False), id_column=reader_opts.get("id_column"),
                                 max_abs=FLOAT32_MAX)
        return Table(X, [Attribute(n, "numeric") for n in names], row_ids=ids)
    raise ConfigError(f"dataset {name!r}: file {spec['name']!r} has unknown format {fmt!r}")


def _check_float32_range(name: str, path: Path, table: Table) -> None:
    """Prepared inputs are float32: a finite value beyond its range would silently become infinite."""
    M = table.data
    vals = M.data if sp.issparse(M) else M
    with np.errstate(invalid="ignore"):
        big = np.abs(vals) > FLOAT32_MAX
    if not big.any():
        return
    if sp.issparse(M):
        k = int(np.flatnonzero(big)[0])
        row = int(np.searchsorted(M.indptr, k, side="right")) - 1
        col = int(M.indices[k])
        value = float(M.data[k])
    else:
        row, col = (int(i) for i in np.argwhere(big)[0])
        value = float(M[row, col])
    column = table.attributes[col].name if table.attributes is not None else f"feature {col}"
    raise DataError(f"dataset {name!r}: raw file {path}, data row {row + 1}, column {column!r}: value {value:g} "
                    f"is beyond the float32 range (|x| <= {FLOAT32_MAX:.4g}) of prepared data")


def _same_header(name: str, tables: list[Table], files: list[str]) -> None:
    first = tables[0]
    for t, f in zip(tables[1:], files[1:]):
        if t.attributes is None or first.attributes is None:
            continue
        if [(a.name, a.kind, a.values) for a in t.attributes] != [(a.name, a.kind, a.values) for a in first.attributes]:
            raise DataError(f"dataset {name!r}: {f} declares other attributes than {files[0]}")


def _vstack(mats):
    if any(sp.issparse(m) for m in mats):
        return sp.vstack([sp.csr_matrix(m) for m in mats], format="csr")
    return np.vstack(mats)


def _concat(name: str, tables: list[Table], files: list[str]) -> Table:
    _same_header(name, tables, files)
    if len(tables) == 1:
        return tables[0]
    width = max(t.data.shape[1] for t in tables)
    if any(t.data.shape[1] != width for t in tables):
        if all(sp.issparse(t.data) for t in tables):  # svmlight files without n_features
            for t in tables:
                t.data = sp.csr_matrix(t.data, shape=(t.data.shape[0], width)) if t.data.shape[1] == width else \
                    sp.csr_matrix((t.data.data, t.data.indices, t.data.indptr), shape=(t.data.shape[0], width))
        else:
            raise DataError(f"dataset {name!r}: its files have {sorted({t.data.shape[1] for t in tables})} columns")
    Y = None
    if tables[0].Y is not None:
        ys = [t.Y for t in tables]
        if sp.issparse(ys[0]):
            d = max(y.shape[1] for y in ys)
            ys = [sp.csr_matrix((y.data, y.indices, y.indptr), shape=(y.shape[0], d)) for y in ys]
            Y = sp.vstack(ys, format="csr")
        else:
            Y = np.concatenate(ys)
    text = {}
    for key in tables[0].text:
        text[key] = [v for t in tables for v in t.text.get(key, [""] * t.data.shape[0])]
    ids = None if tables[0].row_ids is None else [i for t in tables for i in t.row_ids]
    return Table(_vstack([t.data for t in tables]), tables[0].attributes, tables[0].relation, text, Y, ids)


# ------------------------------------------------------------------------------------------------------------------
# labels
# ------------------------------------------------------------------------------------------------------------------
def _label_columns(name: str, labels: dict, table: Table, raw_dir: Path) -> list[int]:
    names = [a.name for a in table.attributes]
    m = len(names)
    how = labels.get("from")
    if how == "xml":
        label_names = read_label_xml(_raw_path(name, raw_dir, labels["file"]))
        index = {n: j for j, n in enumerate(names)}
        missing = [n for n in label_names if n not in index]
        if missing:
            raise DataError(f"dataset {name!r}: labels {missing[:5]} of {labels['file']} are not attributes of the "
                            "ARFF file")
        return [index[n] for n in label_names]
    if how == "meka":
        c = meka_label_count(table.relation)
        if c is None:
            raise DataError(f"dataset {name!r}: relation {table.relation!r} has no MEKA '-C <n>' label count")
        return list(range(c)) if c > 0 else list(range(m + c, m))
    if how in ("last", "first"):
        d = int(labels["d"])
        if not 0 < d < m:
            raise DataError(f"dataset {name!r}: cannot take {d} label attributes out of {m}")
        return list(range(m - d, m)) if how == "last" else list(range(d))
    raise ConfigError(f"dataset {name!r}: unknown labels.from {how!r}")


def _hierarchy_labels(name: str, attr: Attribute, values: list[str]) -> tuple[np.ndarray, list[str]]:
    """Flat 0/1 labels of a Clus ``hierarchical`` attribute: every node in a row's annotation and all its ancestors.

    Tree hierarchies (FunCat, Diatoms) write a node as its path ``01/02/03``; its ancestors are the path prefixes.
    DAG hierarchies (GO) declare edges ``parent/child`` (``root/...`` for the top terms) and annotate terms; their
    ancestors follow the declared edges. Only nodes that occur in the data become labels (the thesis removed the
    nodes absent from LS and TS)."""
    declared = list(attr.values or ())
    dag = any(item.startswith("root/") for item in declared)
    parents: dict[str, set[str]] = {}
    if dag:
        for item in declared:
            parent, _, child = item.partition("/")
            if parent != "root":
                parents.setdefault(child, set()).add(parent)

    def closure(node: str) -> set[str]:
        if not dag:
            parts = node.split("/")
            return {"/".join(parts[:k]) for k in range(1, len(parts) + 1)}
        seen, stack = set(), [node]
        while stack:
            n = stack.pop()
            if n not in seen:
                seen.add(n)
                stack.extend(parents.get(n, ()))
        return seen

    rows = []
    for v in values:
        nodes = set()
        for node in (v.split("@") if v and v != "?" else []):
            nodes |= closure(node.strip())
        rows.append(nodes)
    vocab = sorted(set().union(*rows)) if rows else []
    index = {n: j for j, n in enumerate(vocab)}
    Y = np.zeros((len(rows), len(vocab)))
    for i, nodes in enumerate(rows):
        Y[i, [index[n] for n in nodes]] = 1.0
    return Y, vocab


# ------------------------------------------------------------------------------------------------------------------
# preprocessing of ARFF inputs
# ------------------------------------------------------------------------------------------------------------------
def _column(X, j):
    return X[:, j].toarray().ravel() if sp.issparse(X) else X[:, j]


def _impute(X, attrs: list[Attribute]):
    """Median (numeric) / most frequent code (nominal) of each column with missing values."""
    if sp.issparse(X):
        X = X.tocsc(copy=True)
        for j in range(X.shape[1]):
            seg = slice(X.indptr[j], X.indptr[j + 1])
            vals = X.data[seg]
            miss = np.isnan(vals)
            if miss.any():
                full = _column(X, j)
                fill = _fill_value(full, attrs[j])
                vals[miss] = fill
        return X.tocsr()
    X = np.array(X, dtype=np.float64, copy=True)
    for j in np.flatnonzero(np.isnan(X).any(axis=0)):
        X[np.isnan(X[:, j]), j] = _fill_value(X[:, j], attrs[j])
    return X


def _fill_value(col: np.ndarray, attr: Attribute) -> float:
    present = col[~np.isnan(col)]
    if present.size == 0:
        return 0.0
    if attr.kind == "nominal":
        values, counts = np.unique(present, return_counts=True)
        return float(values[np.argmax(counts)])  # ties: the smallest code
    return float(np.median(present))


def _onehot(X, attrs: list[Attribute]):
    blocks, out_attrs = [], []
    dense = not sp.issparse(X)
    for j, a in enumerate(attrs):
        col = _column(X, j)
        if a.kind == "nominal" and len(a.values) > 2:
            for k, v in enumerate(a.values):
                ind = np.where(np.isnan(col), np.nan, (col == k).astype(np.float64))
                blocks.append(ind[:, None])
                out_attrs.append(Attribute(f"{a.name}={v}", "numeric"))
        else:
            blocks.append(col[:, None])
            out_attrs.append(a)
    M = np.hstack(blocks) if blocks else np.zeros((X.shape[0], 0))
    return (M if dense else sp.csr_matrix(M)), out_attrs


def _constant_columns(X) -> np.ndarray:
    if sp.issparse(X):
        Xc = X.tocsc()
        nnz = np.diff(Xc.indptr)
        mins = np.asarray(Xc.min(axis=0).toarray()).ravel()
        maxs = np.asarray(Xc.max(axis=0).toarray()).ravel()
        return (mins == maxs) & ((nnz == 0) | (nnz == X.shape[0]))
    with np.errstate(invalid="ignore"):
        return np.all((X == X[:1]) | (np.isnan(X) & np.isnan(X[:1])), axis=0)


# ------------------------------------------------------------------------------------------------------------------
# special formats
# ------------------------------------------------------------------------------------------------------------------
def _newsgroups(name: str, entry: dict, raw_dir: Path):
    """20 newsgroups 'bydate' as ``sklearn.datasets.fetch_20newsgroups_vectorized`` builds it: token counts of the
    raw posts (latin-1, headers kept) by ``CountVectorizer`` fitted on the training posts, each row scaled to unit
    l2 norm. Rows: the 11314 training posts then the 7532 test posts, each in sorted file order."""
    from sklearn.datasets import load_files
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.preprocessing import normalize

    from forestbench.datasets.download import extract_tree

    archive = _raw_path(name, raw_dir, entry["source"]["files"][0]["name"])
    root = extract_tree(name, archive, raw_dir / "20news-bydate")
    train = load_files(root / "20news-bydate-train", encoding="latin1", shuffle=False)
    test = load_files(root / "20news-bydate-test", encoding="latin1", shuffle=False)
    if train.target_names != test.target_names:
        raise DataError(f"dataset {name!r}: train and test archives list different newsgroups")
    vec = CountVectorizer(dtype=np.int32)
    Xtr = normalize(vec.fit_transform(train.data).astype(np.float64))
    Xte = normalize(vec.transform(test.data).astype(np.float64))
    X = sp.vstack([Xtr, Xte], format="csr")
    y = np.concatenate([train.target, test.target]).astype(np.float64)
    ntr = Xtr.shape[0]
    return X, y, [(np.arange(ntr), np.arange(ntr, X.shape[0]))], {"class_names": list(train.target_names)}


def _rcv1(name: str, entry: dict, raw_dir: Path):
    """RCV1-v2 LYRL2004 training vectors (23149 documents, 47236 tf-idf features) with their 103 topic labels
    from ``rcv1v2.topics.qrels``, topics in sorted order (as ``sklearn.datasets.fetch_rcv1(subset='train')``)."""
    import gzip

    src = entry["source"]
    vec = _raw_path(name, raw_dir, src["vectors"])
    qrels = _raw_path(name, raw_dir, src["topics"])
    X, doc_ids = read_svmlight(vec, n_features=int(src.get("n_features", 47236)), zero_based=False)
    docs = {int(d): i for i, d in enumerate(doc_ids)}
    pairs = []
    with gzip.open(qrels, "rt") as fh:
        for lineno, line in enumerate(fh, 1):
            parts = line.split()
            if len(parts) < 2:
                from forestbench.errors import ParseError
                raise ParseError(qrels, lineno, "expected '<topic> <doc id> 1'")
            if int(parts[1]) in docs:
                pairs.append((parts[0], docs[int(parts[1])]))
    topics = sorted({t for t, _ in pairs})
    col = {t: j for j, t in enumerate(topics)}
    Y = sp.csr_matrix((np.ones(len(pairs)), ([i for _, i in pairs], [col[t] for t, _ in pairs])),
                      shape=(X.shape[0], len(topics)))
    Y.sum_duplicates()
    Y.data[:] = 1.0
    return X, Y, None, {"output_names": topics}


SPECIAL = {"newsgroups_bydate": _newsgroups, "rcv1_lyrl2004": _rcv1}


# ------------------------------------------------------------------------------------------------------------------
# main entry point
# ------------------------------------------------------------------------------------------------------------------
def build_dataset(name: str, entry: dict, raw_dir: str | os.PathLike) -> Dataset:
    raw_dir = Path(raw_dir)
    src = entry["source"]
    task = entry["task"]
    meta = {"source": {"kind": "download",
                       "files": {f["name"]: f.get("sha256") for f in src.get("files", [])}}}
    if src.get("builder"):
        try:
            builder = SPECIAL[src["builder"]]
        except KeyError:
            raise ConfigError(f"dataset {name!r}: unknown builder {src['builder']!r} (known: {', '.join(SPECIAL)})")
        X, Y, given, extra = builder(name, entry, raw_dir)
        meta.update(extra)
        return Dataset(name, X, _finish_outputs(name, task, Y, meta), task, meta, given)

    specs = _file_specs(name, entry)
    layout = src.get("layout") or {"type": "single", "data": [next(iter(specs))]}
    reader_opts = src.get("reader") or {}
    kind = layout["type"]
    if kind == "train_test":
        groups = [layout["train"], layout["test"]]
    elif kind == "single":
        groups = [layout["data"]]
    elif kind == "folds":
        groups = [[f] for f in layout["folds"]]
    else:
        raise ConfigError(f"dataset {name!r}: unknown layout type {kind!r}")
    sizes, tables, order = [], [], []
    for group in groups:
        size = 0
        for fname in group:
            if fname not in specs:
                raise ConfigError(f"dataset {name!r}: layout names {fname!r}, which is not in source.files")
            t = _read(name, specs[fname], _raw_path(name, raw_dir, fname), reader_opts)
            tables.append(t)
            order.append(fname)
            size += t.data.shape[0]
        sizes.append(size)
    table = _concat(name, tables, order)
    n = table.data.shape[0]

    given = None
    if kind == "train_test":
        given = [(np.arange(sizes[0]), np.arange(sizes[0], n))]
    elif kind == "folds":
        bounds = np.concatenate([[0], np.cumsum(sizes)])
        given = [(np.concatenate([np.arange(bounds[0], bounds[k]), np.arange(bounds[k + 1], n)]),
                  np.arange(bounds[k], bounds[k + 1])) for k in range(len(sizes))]
    elif layout.get("given"):
        n_train, n_test = int(layout["given"]["n_train"]), int(layout["given"]["n_test"])
        if n_train + n_test != n:
            raise DataError(f"dataset {name!r}: given split {n_train}+{n_test} does not cover its {n} rows")
        given = [(np.arange(n_train), np.arange(n_train, n))]

    labels = src.get("labels") or {"from": "inline"}
    preprocess = list(src.get("preprocess") or [])
    how = labels.get("from")
    if how == "inline":
        X, Y = table.data, table.Y
        if Y is None:
            raise ConfigError(f"dataset {name!r}: labels.from 'inline' needs svmlight/XC files; for ARFF or CSV "
                              "say where the outputs are (xml, meka, last, first, hierarchical, table)")
        attrs = None  # nameless numeric columns: built per column only if a preprocessing step needs them
        out_names = None
    elif how == "table":
        X = table.data
        attrs = table.attributes
        ytab = _read(name, specs[labels["file"]], _raw_path(name, raw_dir, labels["file"]), labels.get("reader", {}))
        Y, out_names = _aligned_outputs(name, table, ytab, labels)
    else:
        attrs = list(table.attributes)
        if how == "hierarchical":
            j = next((k for k, a in enumerate(attrs) if a.name == labels["attribute"]), None)
            if j is None or attrs[j].kind != "hierarchical":
                raise DataError(f"dataset {name!r}: no hierarchical attribute {labels['attribute']!r}")
            Y, out_names = _hierarchy_labels(name, attrs[j], table.text[attrs[j].name])
            cols = [j]
        else:
            cols = _label_columns(name, labels, table, raw_dir)
            out_names = [attrs[j].name for j in cols]
            Y = _codes_to_values(name, table.data[:, cols], [attrs[j] for j in cols])
        keep = np.setdiff1d(np.arange(len(attrs)), cols)
        X = table.data[:, keep]
        attrs = [attrs[j] for j in keep]
        text_inputs = [a.name for a in attrs if a.kind in ("string", "date", "hierarchical")]
        if text_inputs and not any(op.get("op") == "drop_attributes" and set(text_inputs) <= set(op["names"])
                                   for op in preprocess):
            raise DataError(f"dataset {name!r}: text attributes {text_inputs} cannot be inputs; drop them with "
                            "a drop_attributes preprocessing step")

    X, Y, attrs, out_names = _preprocess(name, preprocess, X, Y, attrs, out_names)
    Y = _finish_outputs(name, task, Y, meta)
    if sp.issparse(X):
        X = X.tocsr()
    meta["feature_names"] = [a.name for a in attrs] if attrs is not None and len(attrs) <= 5000 else None
    meta["output_names"] = out_names if out_names is not None and len(out_names) <= 5000 else None
    meta["nominal_inputs"] = [a.name for a in attrs if a.kind == "nominal"] if attrs is not None else []
    return Dataset(name, X, Y, task, meta, given)


_TRUE = {"1", "true", "yes", "t", "y"}
_FALSE = {"0", "false", "no", "f", "n"}


def _codes_to_values(name: str, Y, attrs: list[Attribute]):
    """Nominal label/target codes -> values: numeric declared values ({0,1}, {1,0}, {-1,1}) become their number,
    boolean words (FALSE/TRUE, NO/YES) become 0/1. Identity for the usual {0,1} declaration, which costs nothing."""
    maps = {}
    for j, a in enumerate(attrs):
        if a.kind != "nominal":
            continue
        low = [v.lower() for v in a.values]
        try:
            values = [float(v) for v in a.values]
        except ValueError:
            if len(low) == 2 and all(v in _TRUE | _FALSE for v in low) and set(low) & _TRUE and set(low) & _FALSE:
                values = [1.0 if v in _TRUE else 0.0 for v in low]
            else:
                raise DataError(f"dataset {name!r}: output attribute {a.name!r} has non-numeric values "
                                f"{list(a.values)[:5]}") from None
        if values != list(range(len(values))):
            maps[j] = np.asarray(values)
    if not maps:
        return Y
    Y = np.array(Y.toarray() if sp.issparse(Y) else Y, dtype=np.float64)
    for j, values in maps.items():
        col = Y[:, j]
        ok = ~np.isnan(col)
        col[ok] = values[col[ok].astype(np.int64)]
    return Y


def _aligned_outputs(name: str, xtab: Table, ytab: Table, labels: dict):
    Y = ytab.data.T if labels.get("transpose") else ytab.data
    ids = [a.name for a in ytab.attributes] if labels.get("transpose") else ytab.row_ids
    out_names = ytab.row_ids if labels.get("transpose") else [a.name for a in ytab.attributes]
    if xtab.row_ids is None or ids is None:
        if Y.shape[0] != xtab.data.shape[0]:
            raise DataError(f"dataset {name!r}: {Y.shape[0]} output rows for {xtab.data.shape[0]} input rows")
        return Y, out_names
    pos = {i: k for k, i in enumerate(ids)}
    missing = [i for i in xtab.row_ids if i not in pos]
    if missing:
        raise DataError(f"dataset {name!r}: no outputs for row ids {missing[:5]} ({len(missing)} in total)")
    return Y[[pos[i] for i in xtab.row_ids]], out_names


def _preprocess(name, ops, X, Y, attrs, out_names):
    for op in ops:
        kind = op.get("op")
        if attrs is None and kind in ("drop_attributes", "impute", "nominal_inputs", "drop_constant_inputs"):
            attrs = [Attribute(f"x{j}", "numeric") for j in range(X.shape[1])]
        if kind == "drop_attributes":
            names = set(op["names"])
            unknown = names - {a.name for a in attrs}
            if unknown:
                raise DataError(f"dataset {name!r}: drop_attributes names unknown input(s) {sorted(unknown)}")
            keep = [j for j, a in enumerate(attrs) if a.name not in names]
            X, attrs = X[:, keep], [attrs[j] for j in keep]
        elif kind == "impute":
            X = _impute(X, attrs)
        elif kind == "nominal_inputs":
            if op.get("encoding", "ordinal") == "onehot":
                X, attrs = _onehot(X, attrs)
            # ordinal: the reader's declaration-order codes are kept as they are
        elif kind == "drop_constant_inputs":
            keep = np.flatnonzero(~_constant_columns(X))
            X, attrs = X[:, keep], [attrs[j] for j in keep]
        elif kind in ("drop_constant_outputs", "drop_absent_labels"):
            if kind == "drop_absent_labels":
                keep = np.flatnonzero(np.asarray((Y != 0).sum(axis=0)).ravel() > 0)
            else:
                keep = np.flatnonzero(~_constant_columns(Y))
            Y = Y[:, keep]
            out_names = [out_names[j] for j in keep] if out_names is not None else None
        else:
            raise ConfigError(f"dataset {name!r}: unknown preprocessing op {kind!r}")
    return X, Y, attrs, out_names


def _finish_outputs(name: str, task: str, Y, meta: dict):
    if task == "multilabel":
        Yd = Y if sp.issparse(Y) else np.asarray(Y, dtype=np.float64)
        vals = Yd.data if sp.issparse(Yd) else Yd
        if np.isnan(vals).any():
            raise DataError(f"dataset {name!r}: missing label values")
        if not np.isin(vals, (0.0, 1.0)).all():
            raise DataError(f"dataset {name!r}: labels must be 0/1, found {np.unique(vals)[:5]}")
        n, d = Yd.shape
        if n * d > DENSE_Y_MAX_CELLS:
            return sp.csr_matrix(Yd)
        return Yd.toarray() if sp.issparse(Yd) else Yd
    if task in ("binary", "multiclass"):
        y = np.asarray(Y.toarray() if sp.issparse(Y) else Y, dtype=np.float64)
        y = y.ravel() if y.ndim == 2 and y.shape[1] == 1 else y
        if y.ndim != 1 or np.isnan(y).any():
            raise DataError(f"dataset {name!r}: a {task} target must be one column without missing values")
        classes, codes = np.unique(y, return_inverse=True)
        if task == "binary" and len(classes) != 2:
            raise DataError(f"dataset {name!r}: binary task but {len(classes)} classes")
        meta["classes"] = classes.tolist()
        return codes.astype(np.float64)
    Y = np.asarray(Y.toarray() if sp.issparse(Y) else Y, dtype=np.float64)
    if task == "regression" and Y.ndim == 2 and Y.shape[1] == 1:
        Y = Y.ravel()
    if np.isnan(Y).any():
        raise DataError(f"dataset {name!r}: {int(np.isnan(Y).sum())} missing target values")
    return Y
