"""scope_export - export scope-profiler HDF5 runs as JSON, in parallel over MPI.

A ctypes binding of libscope_export. The call a profiler makes at the end of
an mpi4py job, right after ``ProfileManager.finalize()``::

    from mpi4py import MPI
    import scope_export
    scope_export.export(MPI.COMM_WORLD, "run.h5", "profile.json.gz")

``export`` is collective over the communicator: every rank calls it, every
rank returns (or raises) the same. ``comm=None`` runs on this process alone
without MPI (mpi4py is then not needed and MPI is not initialized).

The communicator reaches the library as its Fortran handle (``comm.py2f()``,
``MPI_Comm_f2c`` in C), so mpi4py must use the MPI the library was built
with (Debian's python3-mpi4py and libopenmpi do). The library is the one
``cmake --install`` put beside this package, or ``$SCOPE_EXPORT_LIBRARY``.
"""

import ctypes
import json as _json
import gc as _gc
import os
import struct
from itertools import repeat as _repeat

try:
    import numpy as _np
except ImportError:  # load() gives memoryviews instead of arrays
    _np = None

__all__ = ["export", "load", "ExportError", "UsageError", "version", "has_isal"]

_ERROR_TEXT_LENGTH = 512  # SX_ERROR_TEXT_LENGTH and SX_ERROR_SOURCE_LENGTH
_SX_ERR_USAGE = 1


class _Error(ctypes.Structure):
    # struct sx_error; its layout is part of the library's ABI
    _fields_ = [
        ("code", ctypes.c_int),
        ("rank", ctypes.c_int),
        ("text", ctypes.c_char * _ERROR_TEXT_LENGTH),
        ("source", ctypes.c_char * _ERROR_TEXT_LENGTH),
    ]


class ExportError(Exception):
    """A failed export: the library's status, message, failing rank and source.

    ``status`` is the library's enum sx_status value, ``reason`` its short
    description, ``message`` the one-line error, ``rank`` the MPI rank that
    failed first (-1 outside MPI), ``source`` the file and object it names.
    """

    def __init__(self, status, reason, message, rank, source):
        self.status = status
        self.reason = reason
        self.message = message
        self.rank = rank
        self.source = source
        where = []
        if rank >= 0:
            where.append("rank %d" % rank)
        if source and source not in message:
            where.append(source)
        text = message or reason
        super().__init__(text + (" [%s]" % ", ".join(where) if where else ""))


class UsageError(ExportError, ValueError):
    """A bad option value or argument (the library's SX_ERR_USAGE)."""


def _library_path():
    explicit = os.environ.get("SCOPE_EXPORT_LIBRARY")
    if explicit:
        return explicit
    try:
        from . import _install  # written by cmake --install: where the library went
    except ImportError:
        return "libscope_export.so"
    here = os.path.dirname(os.path.abspath(__file__))
    return os.path.normpath(os.path.join(here, _install.LIBRARY))


def _load():
    path = _library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(
            "scope_export: cannot load the library %s (%s); set SCOPE_EXPORT_LIBRARY "
            "to the path of libscope_export.so" % (path, e)
        ) from e
    err_p = ctypes.POINTER(_Error)
    lib.sx_args_new.restype = ctypes.c_void_p
    lib.sx_args_new.argtypes = []
    lib.sx_args_free.restype = None
    lib.sx_args_free.argtypes = [ctypes.c_void_p]
    lib.sx_args_set.restype = ctypes.c_int
    lib.sx_args_set.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, err_p]
    lib.sx_export_args_f.restype = ctypes.c_int
    lib.sx_export_args_f.argtypes = [
        ctypes.POINTER(ctypes.c_int),  # MPI_Fint *: NULL runs alone without MPI
        ctypes.c_char_p,
        ctypes.c_char_p,
        ctypes.c_void_p,
        err_p,
    ]
    lib.sx_strerror.restype = ctypes.c_char_p
    lib.sx_strerror.argtypes = [ctypes.c_int]
    lib.sx_version.restype = ctypes.c_char_p
    lib.sx_version.argtypes = []
    lib.sx_has_isal.restype = ctypes.c_int
    lib.sx_has_isal.argtypes = []
    size_p = ctypes.POINTER(ctypes.c_size_t)
    lib.sx_load.restype = ctypes.c_int
    lib.sx_load.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p), err_p]
    lib.sx_loaded_text.restype = ctypes.c_void_p
    lib.sx_loaded_text.argtypes = [ctypes.c_void_p, size_p]
    lib.sx_loaded_metadata.restype = ctypes.c_void_p
    lib.sx_loaded_metadata.argtypes = [ctypes.c_void_p, size_p]
    lib.sx_loaded_values.restype = ctypes.c_void_p
    lib.sx_loaded_values.argtypes = [ctypes.c_void_p, size_p]
    lib.sx_loaded_ends.restype = ctypes.c_void_p
    lib.sx_loaded_ends.argtypes = [ctypes.c_void_p, size_p]
    try:  # a library before it: load() looks for the markers itself
        lib.sx_loaded_slots.restype = ctypes.c_void_p
        lib.sx_loaded_slots.argtypes = [ctypes.c_void_p, size_p]
    except AttributeError:
        pass
    lib.sx_loaded_free.restype = None
    lib.sx_loaded_free.argtypes = [ctypes.c_void_p]
    return lib


_lib = _load()


def version():
    """The library's version, e.g. "0.3.0"."""
    return _lib.sx_version().decode()


def has_isal():
    """Whether the library has the ISA-L deflate engine (deflate="isal")."""
    return bool(_lib.sx_has_isal())


def _raise(status, e):
    cls = UsageError if status == _SX_ERR_USAGE else ExportError
    raise cls(
        status,
        _lib.sx_strerror(status).decode(),
        e.text.decode("utf-8", "replace"),
        e.rank,
        e.source.decode("utf-8", "replace"),
    )


def _strings(value, name):
    if value is None:
        return []
    if isinstance(value, (str, bytes, os.PathLike)):
        return [value]
    try:
        return list(value)
    except TypeError:
        raise TypeError("%s takes a string or a list of strings" % name) from None


def _ranks(value):
    if isinstance(value, str):
        return value
    try:
        return ",".join(str(int(r)) for r in value)
    except (TypeError, ValueError):
        raise TypeError('ranks takes a list of ints or a string like "0,2,5-7"') from None


def _fcomm(comm):
    if comm is None:
        return None
    try:
        handle = comm.py2f()  # mpi4py: the Fortran handle, MPI_Comm_f2c in the library
    except AttributeError:
        raise TypeError(
            "comm must be an mpi4py communicator (e.g. MPI.COMM_WORLD) or None"
        ) from None
    return ctypes.byref(ctypes.c_int(handle))


def export(
    comm,
    input,
    output,
    *,
    indent=None,
    summary=False,
    ranks=None,
    include=None,
    exclude=None,
    gzip_level=6,
    deflate=None,
    block_size=None,
    format=None,
    call_paths=True,
):
    """Export the run in 'input' (HDF5) as a JSON document to 'output'.

    A name ending in ".gz" is written gzip-compressed. The options are those
    of the command's export: indent (json.dumps(indent=N)), summary (the
    aggregate rows only), ranks (a list of ints or "0,2,5-7"), include and
    exclude (a regular expression or a list of them, matched like re.match),
    gzip_level (0..9), deflate ("zlib" or "isal"), block_size (bytes of text
    per block of work), format ("json", "chrome-trace", "speedscope",
    "region-statistics", "prof": pstats files "<stem>_rank<N>.prof" beside
    'output', "perfetto": Perfetto's protobuf trace, or "otf2": an OTF2 trace
    archive, 'output' (".otf2" added when missing) with OUT.def and OUT/ beside
    it), call_paths (False:
    prof entries per region).

    Collective over 'comm' (an mpi4py communicator): every rank calls it.
    None runs on this process alone without MPI. Raises ExportError (or
    UsageError for a bad option) with the library's message on every rank;
    a failed export leaves no output and never destroys an existing one.
    """
    settings = []
    if indent is not None:
        settings.append(("indent", str(indent)))
    if summary:
        settings.append(("summary", "1"))
    if ranks is not None:
        settings.append(("ranks", _ranks(ranks)))
    for pattern in _strings(include, "include"):
        settings.append(("include", pattern))
    for pattern in _strings(exclude, "exclude"):
        settings.append(("exclude", pattern))
    if gzip_level is not None:
        settings.append(("gzip-level", str(gzip_level)))
    if deflate is not None:
        settings.append(("deflate", deflate))
    if block_size is not None:
        settings.append(("block-size", str(block_size)))
    if format is not None:
        settings.append(("format", format))
    if not call_paths:
        settings.append(("no-call-paths", "1"))

    fcomm = _fcomm(comm)
    e = _Error()
    args = _lib.sx_args_new()
    if not args:
        raise MemoryError("scope_export: out of memory")
    try:
        for key, value in settings:
            value = os.fsencode(value) if not isinstance(value, bytes) else value
            st = _lib.sx_args_set(args, key.encode(), value, ctypes.byref(e))
            if st != 0:
                _raise(st, e)
        st = _lib.sx_export_args_f(
            fcomm, os.fsencode(input), os.fsencode(output), args, ctypes.byref(e)
        )
        if st != 0:
            _raise(st, e)
    finally:
        _lib.sx_args_free(args)


# The event columns of a row, as load() returns them.
_COLUMNS = (
    "start_times_ns",
    "end_times_ns",
    "gpu_durations_ns",
    "call_ids",
    "parent_ids",
    "thread_ids",
    "task_ids",
    "await_ns",
)


def _int64s(address, n):
    """n int64 values at 'address' as a new numpy array, or a memoryview without numpy."""
    if _np is not None:
        a = _np.empty(n, dtype=_np.int64)
        if n:
            ctypes.memmove(a.ctypes.data, address, 8 * n)
        return a
    return memoryview(bytearray((ctypes.c_char * (8 * n)).from_address(address))).cast("q")


def _utf8_decoder():
    """CPython's PyUnicode_DecodeUTF8, or None where there is no pythonapi."""
    try:
        f = ctypes.pythonapi.PyUnicode_DecodeUTF8
    except (AttributeError, OSError):
        return None
    f.restype = ctypes.py_object
    f.argtypes = (ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_char_p)
    return f


_decode_utf8 = _utf8_decoder()


def _text_at(address, n):
    """The library's text at 'address' as json.loads reads bytes: decoded straight
    from the library's buffer where it can be (one copy of the text, not two)."""
    if _decode_utf8 is not None and n:
        head = ctypes.string_at(address, min(n, 4))
        # what json.loads would not decode as plain UTF-8 (a BOM, UTF-16 or UTF-32)
        if not head.startswith(b"\xef\xbb\xbf") and b"\x00" not in head:
            return _decode_utf8(address, n, b"surrogatepass")
    return ctypes.string_at(address, n)


class _Loaded:
    """What sx_load() gave, freed with the last column that views its values."""

    def __init__(self, handle):
        self.handle = handle

    def __del__(self):
        if _lib is not None and self.handle:
            _lib.sx_loaded_free(self.handle)
            self.handle = None


def load(path):
    """A JSON profile (.json or .json.gz) as Python objects, checked as ``validate`` does.

    What ``json.load`` gives for the document, but every event column of a row
    (start_times_ns, end_times_ns, gpu_durations_ns, call_ids, parent_ids,
    thread_ids, task_ids, await_ns) is an int64 numpy array (a memoryview of
    format "q" when numpy is not installed). The library reads the document in
    one pass and the columns straight into arrays; a profile that is not valid
    raises ExportError with validate's message.
    """
    # The cyclic collector paused for the call: the document is millions of new objects
    # (rows, lists, {}), none of them garbage, which it would walk again and again (a
    # third of the time); it runs as before once the call returns, whatever happens.
    paused = _gc.isenabled()
    _gc.disable()
    try:
        return _load(path)
    finally:
        if paused:
            _gc.enable()


def _load(path):
    e = _Error()
    handle = ctypes.c_void_p()
    st = _lib.sx_load(os.fsencode(path), ctypes.byref(handle), ctypes.byref(e))
    if st != 0:
        _raise(st, e)
    owner = _Loaded(handle.value)  # frees the library's buffers when nothing views them
    n = ctypes.c_size_t()
    text = _text_at(_lib.sx_loaded_text(handle, ctypes.byref(n)), n.value)
    metas = _text_at(_lib.sx_loaded_metadata(handle, ctypes.byref(n)), n.value)
    address = _lib.sx_loaded_values(handle, ctypes.byref(n))
    values, buf = _int64s(0, 0), None
    if n.value:
        # the columns are views of the library's own buffer (no copy of it): the
        # buffer keeps 'owner', and so the buffer, alive while a column is
        buf = (ctypes.c_int64 * n.value).from_address(address)
        buf.owner = owner
        if _np is not None:
            values = _np.frombuffer(buf, dtype=_np.int64)
        else:
            values = memoryview(buf).cast("B").cast("q")
    address = _lib.sx_loaded_ends(handle, ctypes.byref(n))
    ends = _int64s(address, n.value + 1).tolist()
    slots = None
    if hasattr(_lib, "sx_loaded_slots"):
        address = _lib.sx_loaded_slots(handle, ctypes.byref(n))
        slots = _int64s(address, 2 * n.value).tolist() if n.value else None
    del buf, owner
    doc = _json.loads(text)
    metas = _json.loads(metas)
    regions = doc.get("regions") if isinstance(doc, dict) else None
    if not isinstance(regions, list):
        return doc
    if slots is not None:
        # where each marker is, from the library: no row is searched
        k = m = 0
        it = iter(slots)
        for i, c in zip(it, it):
            row = regions[i]
            if c >= 0:
                row[_COLUMNS[c]] = values[ends[k] : ends[k + 1]]
                k += 1
            elif c == -1:
                row["event_metadata"] = _sparse_items(metas[m])
                m += 1
            elif isinstance(row, dict):
                _text_columns(row)
        return doc
    for row in regions:
        if not isinstance(row, dict):
            continue
        v = row.get("event_metadata")
        if isinstance(v, str) and v.startswith("\x00sxm"):
            row["event_metadata"] = _sparse_items(metas[int(v[4:])])
        for key in _COLUMNS:
            v = row.get(key)
            if isinstance(v, str) and v.startswith("\x00sx"):
                k = int(v[3:])
                row[key] = values[ends[k] : ends[k + 1]]
        _text_columns(row)
    return doc


def _sparse_items(sparse):
    """An event_metadata list from the library's sparse form: [length, index, object, ...]."""
    items = [{} for _ in _repeat(None, sparse[0])]
    for k in range(1, len(sparse), 2):
        items[sparse[k]] = sparse[k + 1]
    return items


def _text_columns(row):
    """The columns of a row the library's fast reader left as text, as int64 arrays."""
    for key in _COLUMNS:
        v = row.get(key)
        if isinstance(v, list):
            row[key] = _int64s_of(v)


def _int64s_of(values):
    if _np is not None:
        return _np.array(values, dtype=_np.int64)
    return memoryview(bytearray(struct.pack("<%dq" % len(values), *values))).cast("q")
