"""Type stubs of the native module (crates/sift-python/src). The public API, with its
documentation, is in ``sift/__init__.py``; these are the calls it makes."""

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import pyarrow as pa

__version__: str

class SiftError(Exception): ...
class CorruptFileError(SiftError): ...
class UnsupportedTypeError(SiftError): ...
class FilterError(SiftError): ...
class SqlError(SiftError): ...

class File:
    def __init__(self, path: str, verify_checksums: bool = True) -> None: ...
    @property
    def path(self) -> "os.PathLike[str]": ...
    @property
    def schema(self) -> pa.Schema: ...
    @property
    def num_rows(self) -> int: ...
    @property
    def num_blocks(self) -> int: ...
    @property
    def block_rows(self) -> List[int]: ...
    def metadata(self) -> Dict[str, Any]: ...
    def scan(
        self,
        columns: Optional[Sequence[str]] = None,
        filter: Optional[str] = None,
        expression: Optional[bytes] = None,
        limit: Optional[int] = None,
        read_dictionary: Optional[Sequence[str]] = None,
        threads: Optional[int] = None,
        batch_size: Optional[int] = None,
        rows: Optional[Tuple[int, int]] = None,
    ) -> Scanner: ...

class Scanner:
    @property
    def schema(self) -> pa.Schema: ...
    @property
    def stats(self) -> Dict[str, int]: ...
    def read_all(self) -> pa.Table: ...
    def to_reader(self) -> pa.RecordBatchReader: ...

def translate_expression(pickled: bytes, schema: pa.Schema) -> Dict[str, Any]: ...
def write(
    data: Any,
    path: str,
    block_rows: Optional[int] = None,
    compression: Optional[str] = None,
    threads: Optional[int] = None,
    progress: Optional[bool] = None,
    byteslice: Optional[Sequence[str]] = None,
) -> Dict[str, Any]: ...
def convert(
    src: str,
    dst: str,
    block_rows: Optional[int] = None,
    compression: Optional[str] = None,
    threads: Optional[int] = None,
    progress: Optional[bool] = None,
    byteslice: Optional[Sequence[str]] = None,
) -> Dict[str, Any]: ...
def sql(
    query: str, tables: Optional[Mapping[str, str]] = None, threads: Optional[int] = None
) -> pa.Table: ...
