"""Readers of raw dataset files. Each raises :class:`forestbench.errors.ParseError` (file and line) on bad input."""
from .arff import ArffFile, Attribute, meka_label_count, read_arff, read_arff_header
from .csv import read_csv
from .svmlight import read_svmlight
from .xml_labels import read_label_xml

__all__ = ["ArffFile", "Attribute", "meka_label_count", "read_arff", "read_arff_header", "read_csv",
           "read_svmlight", "read_label_xml"]
