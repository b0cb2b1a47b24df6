"""Mulan XML label files: ``<labels xmlns="http://mulan.sourceforge.net/labels"><label name="a"/>...</labels>``.

Labels may nest (a hierarchy); every ``label`` element names one label attribute of the ARFF file. The names are
returned in document order with, for nested labels, their parent names (``parents``), so a hierarchy can be used or
ignored by the caller.
"""
from __future__ import annotations

import os
import xml.parsers.expat

from forestbench.errors import ParseError

from ._text import guard_io


@guard_io
def read_label_xml(path: str | os.PathLike, with_parents: bool = False):
    """Label names of a Mulan XML file (document order); with ``with_parents`` also {name: parent or None}."""
    path = str(path)
    names: list[str] = []
    parents: dict[str, str | None] = {}
    stack: list[str | None] = []
    root_seen = []
    parser = xml.parsers.expat.ParserCreate(namespace_separator=" ")

    def start(tag, attrs):
        local = tag.rsplit(" ", 1)[-1]
        line = parser.CurrentLineNumber
        if not root_seen:
            root_seen.append(local)
            if local != "labels":
                raise ParseError(path, line, f"root element is <{local}>, expected <labels>")
            stack.append(None)
            return
        if local != "label":
            raise ParseError(path, line, f"unexpected element <{local}> (only <label> may appear in <labels>)")
        name = attrs.get("name")
        if name is None or not name.strip():
            raise ParseError(path, line, "<label> without a name attribute")
        if name in parents:
            raise ParseError(path, line, f"label {name!r} is declared twice")
        names.append(name)
        parents[name] = stack[-1]
        stack.append(name)

    def end(tag):
        stack.pop()

    parser.StartElementHandler = start
    parser.EndElementHandler = end
    with open(path, "rb") as fh:
        try:
            parser.ParseFile(fh)
        except xml.parsers.expat.ExpatError as exc:
            raise ParseError(path, exc.lineno, f"malformed XML: {xml.parsers.expat.ErrorString(exc.code)}") from None
        except (LookupError, ValueError) as exc:  # unknown encoding declared, undecodable text
            raise ParseError(path, parser.CurrentLineNumber, f"malformed XML: {exc}") from None
    if not root_seen:
        raise ParseError(path, 1, "empty XML document")
    if not names:
        raise ParseError(path, None, "no <label> element")
    return (names, parents) if with_parents else names
