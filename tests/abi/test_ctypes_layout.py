# SPDX-License-Identifier: Apache-2.0
"""python/wharf/_lib.py mirrors include/wharf/wharf.h: every public struct field for field (names,
order, ctypes types, offsets, sizes, alignment), every function's signature, every enum value
and the numeric macros Python uses. The header's side comes from clang's AST of wharf.h (names,
order, types) and from a C program compiled here with the build's compiler (offsetof, sizeof,
_Alignof, macro values): what libwharf itself was built with. A field added, removed, retyped or
reordered on either side fails here, before any call reads the wrong bytes."""
import ctypes
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HEADER = os.path.join(ROOT, "include", "wharf", "wharf.h")
sys.path.insert(0, os.path.join(ROOT, "python"))

from wharf import _lib  # noqa: E402  (binds nothing: the library loads on first call)

# Python class -> C struct tag. Every ctypes.Structure in _lib.py and every complete struct in
# wharf.h must be here.
STRUCTS = {
    "ClientConfig": "wharf_client_config",
    "CReport": "wharf_report",
    "XferOpts": "wharf_xfer_opts",
    "CStat": "wharf_stat",
    "CStats": "wharf_stats",
    "CBatchEntry": "wharf_batch_entry",
    "CWindow": "wharf_window",
}
# Header functions Python does not bind, each with a reason. Empty: Python binds the whole ABI.
UNBOUND_FUNCTIONS = {}
# Header macros Python does not mirror, each with a reason.
UNMIRRORED_MACROS = {
    "WHARF_ABI_VERSION": "a compile-time tag for C callers; Python checks symbols at bind time",
}
# 64-bit Linux (LP64): the only ABI libwharf is built for.
C_INTS = {
    "char": ("char",), "signed char": ("int", 1, True), "unsigned char": ("int", 1, False),
    "short": ("int", 2, True), "unsigned short": ("int", 2, False),
    "int": ("int", 4, True), "unsigned int": ("int", 4, False), "unsigned": ("int", 4, False),
    "long": ("int", 8, True), "unsigned long": ("int", 8, False),
    "long long": ("int", 8, True), "unsigned long long": ("int", 8, False),
    "_Bool": ("bool",), "double": ("double",), "float": ("float",), "void": ("void",),
}


# ---- the header's side ------------------------------------------------------------------------

@pytest.fixture(scope="module")
def header():
    clang = os.environ.get("WHARF_CLANG", "clang")
    p = subprocess.run([clang, "-x", "c", "-std=gnu11", "-Xclang", "-ast-dump=json",
                        "-fsyntax-only", HEADER], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    top = json.loads(p.stdout)["inner"]
    h = {"typedefs": {}, "fnptrs": {}, "structs": {}, "opaque": set(), "enums": {},
         "functions": {}}
    for n in top:
        kind, name = n["kind"], n.get("name", "")
        if kind == "TypedefDecl":
            fp = _find(n, "FunctionProtoType")
            if fp is not None:
                types = [c["type"]["qualType"] for c in fp["inner"]]
                h["fnptrs"][name] = (types[0], types[1:])
            else:
                h["typedefs"][name] = n["type"]["qualType"]
        elif kind == "RecordDecl" and name.startswith("wharf_"):
            if n.get("completeDefinition"):
                h["structs"][name] = [(f["name"], f["type"]["qualType"])
                                      for f in n.get("inner", []) if f["kind"] == "FieldDecl"]
            else:
                h["opaque"].add(name)
        elif kind == "EnumDecl" and name.startswith("wharf_"):
            for c in n.get("inner", []):
                if c["kind"] == "EnumConstantDecl":
                    h["enums"][c["name"]] = int(_find(c, "ConstantExpr")["value"])
        elif kind == "FunctionDecl" and name.startswith("wharf_"):
            ret = n["type"]["qualType"].split("(", 1)[0].strip()
            params = [c["type"]["qualType"] for c in n.get("inner", [])
                      if c["kind"] == "ParmVarDecl"]
            h["functions"][name] = (ret, params)
    h["opaque"] -= set(h["structs"])
    with open(HEADER) as f:
        defined = re.findall(r"^#define (WHARF_[A-Z0-9_]+)[ \t]+\S", f.read(), re.M)
    h["macros"] = [m for m in defined if m != "WHARF_API"]
    h["layout"], h["macro_values"] = _compile_layout(h["structs"], h["macros"])
    return h


def _find(node, kind):
    for c in node.get("inner", []):
        if c["kind"] == kind:
            return c
        r = _find(c, kind)
        if r is not None:
            return r
    return None


def _compile_layout(structs, macros):
    """offsetof/sizeof of every field, sizeof/_Alignof of every struct, and the numeric macros,
    as the build's C compiler lays them out."""
    lines = ['#include "wharf/wharf.h"', "#include <stddef.h>", "#include <stdio.h>",
             "int main(void)", "{"]
    for s, fields in structs.items():
        lines.append(f'    printf("S {s} %zu %zu\\n", sizeof(struct {s}), _Alignof(struct {s}));')
        for f, _ in fields:
            lines.append(f'    printf("F {s} {f} %zu %zu\\n", offsetof(struct {s}, {f}), '
                         f"sizeof(((struct {s} *)0)->{f}));")
    for m in macros:
        lines.append(f'    printf("M {m} %llu\\n", (unsigned long long)({m}));')
    lines += ["    return 0;", "}"]
    out_dir = os.environ.get("WHARF_BUILD_DIR", os.path.join(ROOT, "build"))
    os.makedirs(os.path.join(out_dir, "abi"), exist_ok=True)
    src = os.path.join(out_dir, "abi", "layout_probe.c")
    exe = os.path.join(out_dir, "abi", "layout_probe")
    with open(src, "w") as f:
        f.write("\n".join(lines) + "\n")
    cc = os.environ.get("WHARF_CC", "cc")
    p = subprocess.run([cc, "-std=gnu11", "-Wall", "-Werror", "-I", os.path.join(ROOT, "include"),
                        src, "-o", exe], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    p = subprocess.run([exe], capture_output=True, text=True, timeout=30, check=True)
    layout, macro_values = {}, {}
    for line in p.stdout.splitlines():
        w = line.split()
        if w[0] == "S":
            layout[w[1]] = (int(w[2]), int(w[3]))
        elif w[0] == "F":
            layout[(w[1], w[2])] = (int(w[3]), int(w[4]))
        else:
            macro_values[w[1]] = int(w[2])
    return layout, macro_values


def c_type(h, t):
    """A C type spelling from the AST as a comparable tuple."""
    t = re.sub(r"\b(const|volatile|restrict)\b", " ", t)
    t = " ".join(t.split())
    m = re.fullmatch(r"(.*?)\s*\[(\d+)\]", t)
    if m:
        return ("array", c_type(h, m.group(1)), int(m.group(2)))
    if t.endswith("*"):
        inner = c_type(h, t[:-1])
        if inner in (("void",), ("opaque",)):
            return ("voidp",)
        if inner == ("char",):
            return ("charp",)
        return ("ptr", inner)
    if t in h["fnptrs"]:
        ret, args = h["fnptrs"][t]
        return ("fn", c_type(h, ret), tuple(c_type(h, a) for a in args))
    if t in h["typedefs"]:
        return c_type(h, h["typedefs"][t])
    if t.startswith("enum "):
        return ("int", 4, True)  # the ABI's enums travel as int (ctypes c_int)
    if t.startswith("struct "):
        tag = t.split()[1]
        return ("struct", tag) if tag in h["structs"] else ("opaque",)
    assert t in C_INTS, f"test does not know the C type {t!r}: teach c_type()"
    return C_INTS[t]


# ---- the ctypes side --------------------------------------------------------------------------

def py_type(t):
    if t is None:
        return ("void",)
    if t is ctypes.c_char_p:
        return ("charp",)
    if t is ctypes.c_void_p:
        return ("voidp",)
    if isinstance(t, type) and issubclass(t, ctypes.Structure):
        assert t.__name__ in STRUCTS, f"{t.__name__} is not in STRUCTS"
        return ("struct", STRUCTS[t.__name__])
    if isinstance(t, type) and issubclass(t, ctypes.Array):
        return ("array", py_type(t._type_), t._length_)
    if isinstance(t, type) and issubclass(t, ctypes._Pointer):
        return ("ptr", py_type(t._type_))
    if isinstance(t, type) and issubclass(t, ctypes._CFuncPtr):
        return ("fn", py_type(t._restype_), tuple(py_type(a) for a in t._argtypes_))
    code = getattr(t, "_type_", None)
    if code == "c":
        return ("char",)
    if code == "d":
        return ("double",)
    if code == "f":
        return ("float",)
    if code == "?":
        return ("bool",)
    if isinstance(code, str) and code in "bBhHiIlLqQ":
        return ("int", ctypes.sizeof(t), code.islower())
    raise AssertionError(f"test does not know the ctypes type {t!r}: teach py_type()")


def py_structs():
    return {name: cls for name, cls in vars(_lib).items()
            if isinstance(cls, type) and issubclass(cls, ctypes.Structure)
            and cls is not ctypes.Structure}


# ---- the checks -------------------------------------------------------------------------------

def test_lp64():
    assert ctypes.sizeof(ctypes.c_long) == 8 and ctypes.sizeof(ctypes.c_void_p) == 8


def test_every_struct_is_mirrored(header):
    assert set(py_structs()) == set(STRUCTS), "a ctypes.Structure in _lib.py is not in STRUCTS"
    assert set(header["structs"]) == set(STRUCTS.values()), \
        "a struct of wharf.h has no ctypes mirror in _lib.py (or STRUCTS names one it lacks)"


@pytest.mark.parametrize("pyname", sorted(STRUCTS))
def test_struct_layout(header, pyname):
    cls, tag = py_structs()[pyname], STRUCTS[pyname]
    c_fields = header["structs"][tag]
    py_fields = [f[0] for f in cls._fields_]
    assert py_fields == [f for f, _ in c_fields], \
        f"{pyname} fields {py_fields} != struct {tag} fields {[f for f, _ in c_fields]}"
    for (name, ctype), (_, ptype) in zip(c_fields, cls._fields_):
        assert py_type(ptype) == c_type(header, ctype), \
            f"{pyname}.{name}: ctypes {ptype.__name__} does not match C {ctype}"
        d = getattr(cls, name)
        assert (d.offset, d.size) == header["layout"][(tag, name)], \
            f"{pyname}.{name}: ctypes offset/size {(d.offset, d.size)} != C " \
            f"{header['layout'][(tag, name)]}"
    assert (ctypes.sizeof(cls), ctypes.alignment(cls)) == header["layout"][tag], \
        f"{pyname}: ctypes sizeof/alignment != struct {tag}'s"


def test_every_function_is_bound(header):
    c_names, py_names = set(header["functions"]), set(_lib._SIGS)
    assert py_names - c_names == set(), "_lib.py binds functions that wharf.h does not declare"
    assert c_names - py_names - set(UNBOUND_FUNCTIONS) == set(), \
        "wharf.h declares functions _lib.py does not bind (bind them or list them in " \
        "UNBOUND_FUNCTIONS with a reason)"


def test_function_signatures(header):
    bad = []
    for name, (restype, argtypes) in sorted(_lib._SIGS.items()):
        ret, params = header["functions"][name]
        want = (c_type(header, ret), [c_type(header, p) for p in params])
        got = (py_type(restype), [py_type(a) for a in argtypes])
        if got != want:
            bad.append(f"{name}: ctypes {got} != C {ret} ({', '.join(params)})")
    assert bad == [], "\n".join(bad)


def test_enum_values(header):
    assert header["enums"], "no enum constants read from wharf.h"
    statuses = {v: k for k, v in header["enums"].items() if k.startswith(("WHARF_OK",
                                                                          "WHARF_ERR_"))}
    assert _lib.STATUS_NAMES == statuses
    bad = []
    for name, value in sorted(header["enums"].items()):
        short = name[len("WHARF_"):]
        py = getattr(_lib, short, getattr(_lib, name, None))
        if py != value:
            bad.append(f"{name} = {value} in wharf.h, _lib.{short} = {py}")
    assert bad == [], "\n".join(bad)


def test_macro_values(header):
    bad = []
    for name in header["macros"]:
        if name in UNMIRRORED_MACROS:
            continue
        short = name[len("WHARF_"):]
        if name == "WHARF_WHOLE":
            short = "WHOLE"
        if getattr(_lib, short, None) != header["macro_values"][name]:
            bad.append(f"{name} = {header['macro_values'][name]} in wharf.h, "
                       f"_lib.{short} = {getattr(_lib, short, None)}")
    assert bad == [], "\n".join(bad)
