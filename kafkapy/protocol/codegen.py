"""Compile a JSON message spec at one version into a decoder and an encoder.

For each struct the generator writes straight-line Python (one function per struct and
direction), `exec`s it once, and caches the result per (api_key, kind, version): no
per-field dispatch at run time, which is where a generic interpreter loses its time.
Runs of fixed-width fields are read and written with one `struct` call.

Decoding is bounded by construction: every length and count is checked against the bytes
left in the buffer before anything is allocated or looped over; short reads surface as
`struct.error`/`IndexError`, which `messages.py` turns into `ProtocolError`.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kafkapy.protocol import primitives as prim
from kafkapy.protocol.constants import ZERO_UUID
from kafkapy.protocol.errors import ProtocolError
from kafkapy.protocol.message import MISSING, Message, attr_name, classes_for
from kafkapy.protocol.schema import FACTORY, Field, Spec

# (buffer, position, budget) -> (message, new position). `budget` is a one-element list: the
# array elements the whole message may still decode into. Each element becomes a Python object
# of ~20 times its wire size (a 4-byte partition index: an 84-byte Message), so the frame size
# alone would let a 100 MB request decode into 2 GB; the budget bounds it whatever the frame.
Decoder = Callable[[memoryview, int, list[int]], tuple[Message, int]]
Encoder = Callable[[Any, bytearray], None]

_FIXED = {"bool": "?", "int8": "b", "int16": "h", "uint16": "H", "int32": "i", "uint32": "I",
          "int64": "q", "float64": "d"}  # fmt: skip


_SMALL = 16


def _fail(what: str) -> ProtocolError:
    return ProtocolError(what)


class _Compiler:
    """Generates the functions for one spec at one version."""

    def __init__(self, spec: Spec, version: int) -> None:
        self.spec = spec
        self.version = version
        self.flexible = version in spec.flexible
        self.classes = classes_for(spec)
        self.lines: list[str] = []
        self.ns: dict[str, Any] = {
            "_uv": prim.read_uvarint, "_wuv": prim.write_uvarint, "_fail": _fail,
            "_unpack": struct.unpack_from, "_pack": struct.pack, "_uuid": prim.uuid_from,
            "_UUIDT": uuid.UUID, "_uuidb": prim.uuid_bytes, "_Mapping": Mapping,
            "_M": MISSING, "_I16": prim.INT16.unpack_from, "_I32": prim.INT32.unpack_from,
            "_P16": prim.INT16.pack, "_P32": prim.INT32.pack,
        }  # fmt: skip
        self.counter = 0
        self.struct_funcs: dict[str, tuple[str, str]] = {}
        self.default_encodings: list[tuple[str, str]] = []

    def const(self, value: Any) -> str:
        self.counter += 1
        name = f"_c{self.counter}"
        self.ns[name] = value
        return name

    def tmp(self, prefix: str = "t") -> str:
        self.counter += 1
        return f"_{prefix}{self.counter}"

    # ---- decoding -------------------------------------------------------------------------

    def read_len(self, out: list[str], ind: str, target: str, width: int) -> None:
        """A length/count: int16/int32 in classic versions, unsigned varint+1 in flexible ones."""
        if self.flexible:
            out.append(f"{ind}{target} = b[p]")
            out.append(f"{ind}if {target} < 128: p += 1")
            out.append(f"{ind}else: {target}, p = _uv(b, p)")
            out.append(f"{ind}{target} -= 1")
        else:
            fn = "_I16" if width == 2 else "_I32"
            out.append(f"{ind}{target}, = {fn}(b, p); p += {width}")

    def read_value(self, f: Field, out: list[str], ind: str, target: str, element: bool) -> None:
        """Lines reading one value of `f` (an element of it when `element`) into `target`."""
        v = self.version
        nullable = v in f.nullable
        where = f"{self.spec.name}.{f.name}"
        t = f.type
        if t in _FIXED:
            code = _FIXED[t]
            out.append(f"{ind}{target}, = _unpack('>{code}', b, p); p += {struct.calcsize(code)}")
        elif t == "uuid":
            out.append(f"{ind}if p + 16 > len(b): raise _fail('truncated uuid in {where}')")
            out.append(f"{ind}{target} = _uuid(b[p:p + 16]); p += 16")
        elif t in ("string", "bytes", "records"):
            n = self.tmp("n")
            self.read_len(out, ind, n, 2 if t == "string" else 4)
            out.append(f"{ind}if {n} < 0:")
            if nullable and not element:
                out.append(f"{ind}    if {n} != -1: raise _fail('negative length in {where}')")
                out.append(f"{ind}    {target} = None")
            else:
                out.append(f"{ind}    raise _fail('null or negative length in {where}')")
            out.append(f"{ind}else:")
            out.append(f"{ind}    if {n} > len(b) - p: raise _fail('{where}: length beyond the frame')")
            if t == "string":
                out.append(f"{ind}    {target} = str(b[p:p + {n}], 'utf-8'); p += {n}")
            elif t == "bytes":
                out.append(f"{ind}    {target} = bytes(b[p:p + {n}]); p += {n}")
            else:  # records stay a zero-copy view into the request buffer
                out.append(f"{ind}    {target} = b[p:p + {n}]; p += {n}")
        else:
            fn = self.struct_decoder(f)
            if nullable and not element:
                out.append(f"{ind}if b[p] >= 128: {target} = None; p += 1")
                out.append(f"{ind}else: {target}, p = {fn}(b, p + 1, st)")
            else:
                out.append(f"{ind}{target}, p = {fn}(b, p, st)")

    def read_field(self, f: Field, out: list[str], ind: str, target: str) -> None:
        if not f.is_array:
            self.read_value(f, out, ind, target, element=False)
            return
        where = f"{self.spec.name}.{f.name}"
        n = self.tmp("n")
        self.read_len(out, ind, n, 4)
        out.append(f"{ind}if {n} < 0:")
        if self.version in f.nullable:
            out.append(f"{ind}    if {n} != -1: raise _fail('negative count in {where}')")
            out.append(f"{ind}    {target} = None")
        else:
            out.append(f"{ind}    raise _fail('null or negative count in {where}')")
        out.append(f"{ind}else:")
        out.append(f"{ind}    if {n} > len(b) - p: raise _fail('{where}: count beyond the frame')")
        # `st[0]`: the elements this message may still decode into (see Decoder). One
        # subtraction per array, not per element.
        out.append(f"{ind}    st[0] -= {n}")
        out.append(
            f"{ind}    if st[0] < 0: raise _fail('{where}: more array elements than one message may hold')"
        )
        if f.type in _FIXED:
            code = _FIXED[f.type]
            size = struct.calcsize(code)
            # Small arrays (replica lists) use a pre-built Struct: no format string per call.
            structs = self.const([struct.Struct(f">{k}{code}").unpack_from for k in range(_SMALL)])
            out.append(f"{ind}    if {n} < {_SMALL}: {target} = list({structs}[{n}](b, p))")
            out.append(f"{ind}    else: {target} = list(_unpack('>%d{code}' % {n}, b, p))")
            out.append(f"{ind}    p += {n} * {size}")
            return
        least = self.min_size(f)
        if least > 1:
            # Each element takes at least `least` bytes: a count the frame cannot hold is refused
            # before one Message is built, instead of after building as many as the bytes allow.
            out.append(
                f"{ind}    if {n} * {least} > len(b) - p: raise _fail('{where}: count beyond the frame')"
            )
        out.append(f"{ind}    {target} = []")
        x = self.tmp("x")
        out.append(f"{ind}    for _ in range({n}):")
        self.read_value(f, out, ind + "        ", x, element=True)
        out.append(f"{ind}        {target}.append({x})")

    def min_size(self, f: Field, element: bool = True) -> int:
        """The fewest bytes one value of `f` (one element, for an array) takes at this version."""
        v = self.version
        if v not in f.versions or v in f.tagged:
            return 0
        if f.is_array and not element:
            return 1 if self.flexible else 4
        t = f.type
        if t in _FIXED:
            return struct.calcsize(_FIXED[t])
        if t == "uuid":
            return 16
        if t in ("string", "bytes", "records"):
            return 1 if self.flexible else (2 if t == "string" else 4)
        if v in f.nullable and not element:
            return 1
        return sum(self.min_size(sub, element=False) for sub in f.fields) + (1 if self.flexible else 0)

    def struct_decoder(self, f: Field) -> str:
        return self.struct_functions(f.type, f.fields)[0]

    def struct_functions(self, name: str, fields: tuple[Field, ...]) -> tuple[str, str]:
        if name not in self.struct_funcs:
            self.counter += 1
            names = (f"_d_{name}_{self.counter}", f"_e_{name}_{self.counter}")
            self.struct_funcs[name] = names
            self.gen_decoder(names[0], name, fields)
            self.gen_encoder(names[1], name, fields)
        return self.struct_funcs[name]

    def gen_decoder(self, fname: str, name: str, fields: tuple[Field, ...]) -> None:
        v = self.version
        cls = self.const(self.classes[name])
        out = [f"def {fname}(b, p, st):"]
        args: list[str] = []
        run: list[tuple[str, str]] = []  # pending fixed-width (local, code) fields

        def flush() -> None:
            if run:
                fmt = ">" + "".join(c for _, c in run)
                names = ", ".join(t for t, _ in run)
                out.append(f"    {names}, = _unpack({fmt!r}, b, p); p += {struct.calcsize(fmt)}")
                run.clear()

        tagged: list[tuple[Field, str]] = []
        for i, f in enumerate(fields):
            local = f"f{i}"
            args.append(local)
            if v not in f.versions:
                out.append(f"    {local} = {self.default_expr(f)}")
            elif v in f.tagged:
                out.append(f"    {local} = {self.default_expr(f)}")
                tagged.append((f, local))
            elif f.type in _FIXED and not f.is_array:
                run.append((local, _FIXED[f.type]))
            else:
                flush()
                self.read_field(f, out, "    ", local)
        flush()
        if self.flexible:
            self.gen_tag_reader(out, tagged)
        out.append(f"    return {cls}({', '.join(args)}), p")
        self.lines.extend(out)

    def default_expr(self, f: Field) -> str:
        # MISSING makes the class __init__ build a fresh list/struct; scalars and the zero UUID
        # are shared.
        if f.default is FACTORY:
            return self.const(ZERO_UUID) if f.type == "uuid" and not f.is_array else "_M"
        return self.const(f.default)

    def gen_tag_reader(self, out: list[str], tagged: list[tuple[Field, str]]) -> None:
        where = self.spec.name
        out.append("    nt = b[p]")
        out.append("    if nt < 128: p += 1")
        out.append("    else: nt, p = _uv(b, p)")
        out.append("    if nt:")
        out.append(f"        if nt > len(b) - p: raise _fail('{where}: tagged field count beyond the frame')")
        out.append("        for _ in range(nt):")
        out.append("            tag, p = _uv(b, p)")
        out.append("            sz, p = _uv(b, p)")
        out.append(f"            if sz > len(b) - p: raise _fail('{where}: tagged field beyond the frame')")
        out.append("            end = p + sz")
        for j, (f, local) in enumerate(sorted(tagged, key=lambda x: x[0].tag or 0)):
            out.append(f"            {'if' if j == 0 else 'elif'} tag == {f.tag}:")
            self.read_field(f, out, "                ", local)
            out.append(f"                if p > end: raise _fail('{where}.{f.name}: overruns its tag')")
        out.append("            p = end  # unknown tags are skipped (KIP-482)")

    # ---- encoding -------------------------------------------------------------------------

    def write_len(self, out: list[str], ind: str, expr: str, width: int) -> None:
        if self.flexible:
            out.append(f"{ind}out += _wuv({expr} + 1)")
        else:
            out.append(f"{ind}out += {'_P16' if width == 2 else '_P32'}({expr})")

    def null_marker(self, width: int) -> bytes:
        return b"\x00" if self.flexible else b"\xff" * width

    def write_value(self, f: Field, out: list[str], ind: str, val: str, element: bool) -> None:
        v = self.version
        nullable = v in f.nullable and not element
        where = f"{self.spec.name}.{f.name}"
        t = f.type
        if t in _FIXED:
            out.append(f"{ind}out += _pack('>{_FIXED[t]}', {val})")
            return
        if t == "uuid":
            out.append(f"{ind}out += {val}.bytes if type({val}) is _UUIDT else _uuidb({val})")
            return
        width = 2 if t == "string" else 4
        if t in ("string", "bytes", "records"):
            out.append(f"{ind}if {val} is None:")
            if nullable:
                out.append(f"{ind}    out += {self.const(self.null_marker(width))}")
            else:
                out.append(f"{ind}    raise ValueError('{where} is not nullable in v{v}')")
            out.append(f"{ind}else:")
            d = self.tmp("d")
            out.append(f"{ind}    {d} = {val}.encode() if type({val}) is str else {val}")
            self.write_len(out, ind + "    ", f"len({d})", width)
            out.append(f"{ind}    out += {d}")
            return
        fn = self.struct_functions(f.type, f.fields)[1]
        if nullable:
            out.append(f"{ind}if {val} is None: out += b'\\xff'")
            out.append(f"{ind}else: out += b'\\x01'; {fn}({val}, out)")
        else:
            out.append(f"{ind}{fn}({val}, out)")

    def write_field(self, f: Field, out: list[str], ind: str, val: str) -> None:
        if not f.is_array:
            self.write_value(f, out, ind, val, element=False)
            return
        out.append(f"{ind}if {val} is None:")
        if self.version in f.nullable:
            out.append(f"{ind}    out += {self.const(self.null_marker(4))}")
        else:
            out.append(
                f"{ind}    raise ValueError('{self.spec.name}.{f.name} is not nullable in v{self.version}')"
            )
        out.append(f"{ind}else:")
        self.write_len(out, ind + "    ", f"len({val})", 4)
        if f.type in _FIXED:
            out.append(f"{ind}    out += _pack('>%d{_FIXED[f.type]}' % len({val}), *{val})")
            return
        x = self.tmp("x")
        out.append(f"{ind}    for {x} in {val}:")
        self.write_value(f, out, ind + "        ", x, element=True)

    def encoder_default(self, f: Field) -> str:
        if f.default is not FACTORY:
            return self.const(f.default)
        if f.is_array:
            return self.const(())
        if f.type == "uuid":
            return self.const(ZERO_UUID)
        return self.const({})  # an empty mapping encodes as a struct of defaults

    def gen_encoder(self, fname: str, name: str, fields: tuple[Field, ...]) -> None:
        v = self.version
        cls = self.const(self.classes[name])
        present = [f for f in fields if v in f.versions]
        locs = [f"f{i}" for i in range(len(present))]
        out = [f"def {fname}(o, out):"]
        if present:
            attrs = [attr_name(f) for f in present]
            defaults = [self.encoder_default(f) for f in present]
            out.append(f"    if type(o) is {cls}:")
            out.append(f"        {', '.join(locs)}, = {', '.join(f'o.{a}' for a in attrs)},")
            out.append("    elif isinstance(o, _Mapping):")
            out.append("        g = o.get")
            out.append(
                f"        {', '.join(locs)}, = "
                + ", ".join(f"g({a!r}, {d})" for a, d in zip(attrs, defaults, strict=True))
                + ","
            )
            out.append("    else:")
            out.append(
                f"        {', '.join(locs)}, = "
                + ", ".join(f"getattr(o, {a!r}, {d})" for a, d in zip(attrs, defaults, strict=True))
                + ","
            )
        run: list[tuple[str, str]] = []

        def flush() -> None:
            if run:
                fmt = ">" + "".join(c for _, c in run)
                out.append(f"    out += _pack({fmt!r}, {', '.join(x for x, _ in run)})")
                run.clear()

        tagged: list[tuple[Field, str]] = []
        for f, local in zip(present, locs, strict=True):
            if v in f.tagged:
                tagged.append((f, local))
            elif f.type in _FIXED and not f.is_array:
                run.append((local, _FIXED[f.type]))
            else:
                flush()
                self.write_field(f, out, "    ", local)
        flush()
        if self.flexible:
            self.gen_tag_writer(out, tagged)
        if len(out) == 1:
            out.append("    pass")
        self.lines.extend(out)

    def gen_tag_writer(self, out: list[str], tagged: list[tuple[Field, str]]) -> None:
        if not tagged:
            out.append("    out += b'\\x00'")
            return
        # Kafka writes a tagged field only when it differs from its default, in tag order.
        out.append("    tg = []")
        for f, local in sorted(tagged, key=lambda x: x[0].tag or 0):
            sub: list[str] = []
            self.write_field(f, sub, "        ", local)
            if (f.type in _FIXED or f.type in ("string", "bytes", "records")) and not f.is_array:
                out.append(f"    if {local} != {self.const(f.default)}:")
            elif f.type == "uuid" and not f.is_array:
                out.append(f"    if {local} is not None and {local} != {self.const(ZERO_UUID)}:")
            elif f.is_array and f.default is FACTORY:
                out.append(f"    if {local}:")
            elif f.default is None:
                out.append(f"    if {local} is not None:")
            else:  # a struct with a default value: compare encodings
                dflt = self.tmp("de")
                self.ns[dflt] = None
                self.default_encodings.append((dflt, self.struct_functions(f.type, f.fields)[1]))
                sub.append(f"        if bytes(out) == {dflt}: out = None")
                out.append("    if True:")
            out.append("        o2, out = out, bytearray()")
            out.extend(sub)
            out.append(f"        if out is not None: tg.append(({f.tag}, out))")
            out.append("        out = o2")
        out.append("    out += _wuv(len(tg))")
        out.append("    for tag, data in tg:")
        out.append("        out += _wuv(tag); out += _wuv(len(data)); out += data")

    # ---- entry ----------------------------------------------------------------------------

    def compile(self) -> tuple[Decoder, Encoder, type[Message]]:
        dec, enc = self.struct_functions(self.spec.name, self.spec.fields)
        src = "\n".join(self.lines)
        exec(compile(src, f"<kafkapy codec {self.spec.name} v{self.version}>", "exec"), self.ns)
        for dflt, fn in self.default_encodings:
            buf = bytearray()
            self.ns[fn]({}, buf)
            self.ns[dflt] = bytes(buf)
        return self.ns[dec], self.ns[enc], self.classes[self.spec.name]


def compile_spec(spec: Spec, version: int) -> tuple[Decoder, Encoder, type[Message]]:
    return _Compiler(spec, version).compile()


def generated_source(spec: Spec, version: int) -> str:
    """The generated code, for debugging a codec (`print(generated_source(...))`)."""
    c = _Compiler(spec, version)
    c.struct_functions(spec.name, spec.fields)
    return "\n".join(c.lines)
