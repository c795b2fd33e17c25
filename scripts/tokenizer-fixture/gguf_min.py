"""A minimal GGUF reader and writer for metadata-only files (vocabularies), standard library only."""
import struct

# GGUF value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_SCALAR = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
           BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}


class Reader:
    def __init__(self, data):
        self.d, self.o = data, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.d, self.o)
        self.o += struct.calcsize(fmt)
        return v[0]

    def string(self):
        n = self.take("<Q")
        s = self.d[self.o:self.o + n]
        self.o += n
        return s  # bytes: token texts need not be valid UTF-8

    def value(self, t):
        if t == STRING:
            return self.string()
        if t == ARRAY:
            et, n = self.take("<I"), self.take("<Q")
            return (et, [self.value(et) for _ in range(n)])
        return self.take(_SCALAR[t])


def read_kv(path):
    """The metadata of a GGUF file as an ordered list of (key, type, value); refuses tensors."""
    r = Reader(open(path, "rb").read())
    if r.d[:4] != b"GGUF":
        raise SystemExit(f"{path}: not a GGUF file")
    r.o = 4
    version, n_tensors, n_kv = r.take("<I"), r.take("<Q"), r.take("<Q")
    if version != 3 or n_tensors != 0:
        raise SystemExit(f"{path}: want a GGUF v3 vocabulary without tensors "
                         f"(version {version}, {n_tensors} tensors)")
    kv = []
    for _ in range(n_kv):
        key = r.string().decode()
        t = r.take("<I")
        kv.append((key, t, r.value(t)))
    return kv


def _put(out, t, v):
    if t == STRING:
        out += struct.pack("<Q", len(v)) + v
    elif t == ARRAY:
        et, items = v
        out += struct.pack("<IQ", et, len(items))
        for x in items:
            _put(out, et, x)
    else:
        out += struct.pack(_SCALAR[t], v)


def write_kv(path, kv, alignment=32):
    out = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 0, len(kv)))
    for key, t, v in kv:
        _put(out, STRING, key.encode())
        out += struct.pack("<I", t)
        _put(out, t, v)
    out += b"\0" * (-len(out) % alignment)
    open(path, "wb").write(out)
