# SPDX-License-Identifier: Apache-2.0
"""libwharf exports exactly what its version script names, and wharf.h's functions are exactly
what it exports: src/client/client/libwharf.map names every exported symbol in its version node (no
pattern, so a new function never lands silently in WHARF_0), the built library's dynamic
symbols (nm -D --defined-only) are those names at those versions, and every function wharf.h
declares is among them, and nothing else is."""
import json
import os
import re
import subprocess

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HEADER = os.path.join(ROOT, "include", "wharf", "wharf.h")
MAP = os.path.join(ROOT, "src", "client", "client", "libwharf.map")
BUILD = os.environ.get("WHARF_BUILD_DIR", os.path.join(ROOT, "build"))


def parse_map(text):
    """{version node: [names]} of the script's global: lists; patterns are kept as written."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    nodes = {}
    for m in re.finditer(r"([\w.]+)\s*\{(.*?)\}\s*[\w.]*\s*;", text, flags=re.S):
        body = m.group(2)
        glob = re.search(r"global:(.*?)(?:local:|$)", body, flags=re.S)
        names = [n.strip() for n in (glob.group(1) if glob else "").split(";") if n.strip()]
        nodes[m.group(1)] = names
    return nodes


def exported(lib):
    """{symbol: version} of the library's defined dynamic symbols (version nodes left out)."""
    p = subprocess.run(["nm", "-D", "--defined-only", lib], capture_output=True, text=True,
                       timeout=60, check=True)
    out = {}
    for line in p.stdout.splitlines():
        sym = line.split()[-1]
        name, _, ver = sym.partition("@@")
        if not ver:  # the version nodes themselves (WHARF_0 ...), type A
            continue
        out[name] = ver
    return out


def header_functions():
    clang = os.environ.get("WHARF_CLANG", "clang")
    p = subprocess.run([clang, "-x", "c", "-std=gnu11", "-Xclang", "-ast-dump=json",
                        "-fsyntax-only", HEADER], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-3000:]
    return {n["name"] for n in json.loads(p.stdout)["inner"]
            if n["kind"] == "FunctionDecl" and n.get("loc", {}).get("file", HEADER) == HEADER
            and n["name"].startswith("wharf_")}


def test_parse_map_reads_nodes():
    nodes = parse_map("/* c */ A { global: x; y; local: *; };\nB { global: z; } A;\n")
    assert nodes == {"A": ["x", "y"], "B": ["z"]}


def test_map_names_every_symbol():
    nodes = parse_map(open(MAP).read())
    assert "WHARF_0" in nodes, nodes
    patterns = [n for names in nodes.values() for n in names if re.search(r"[*?\[]", n)]
    assert not patterns, (f"libwharf.map exports by pattern {patterns}: name each symbol, so a "
                          "new function cannot land in an old version unseen")
    seen = {}
    for node, names in nodes.items():
        for n in names:
            assert n not in seen, f"{n} is named in both {seen[n]} and {node}"
            seen[n] = node


def test_library_exports_what_the_map_names():
    lib = os.path.join(BUILD, "libwharf.so")
    assert os.path.exists(lib), f"{lib}: build libwharf first"
    want = {n: node for node, names in parse_map(open(MAP).read()).items() for n in names}
    have = exported(lib)
    unnamed = sorted(set(have) - set(want))
    assert not unnamed, f"libwharf.so exports {unnamed}, which libwharf.map does not name"
    missing = sorted(set(want) - set(have))
    assert not missing, f"libwharf.map names {missing}, which libwharf.so does not export"
    moved = {n: (want[n], have[n]) for n in want if want[n] != have[n]}
    assert not moved, f"exported at another version than the map's (map, library): {moved}"


def test_header_functions_are_exported():
    lib = os.path.join(BUILD, "libwharf.so")
    have = set(exported(lib))
    declared = header_functions()
    assert declared, "no wharf_ function found in wharf.h"
    not_exported = sorted(declared - have)
    assert not not_exported, (f"wharf.h declares {not_exported}, which libwharf.so does not "
                              "export: add each to a new version node of libwharf.map")
    undeclared = sorted(have - declared)
    assert not undeclared, f"libwharf.so exports {undeclared}, which wharf.h does not declare"


def test_unnamed_function_stays_local(tmp_path):
    """The map hides a default-visibility wharf_ function it does not name: linked with the
    map, a library keeps it local (with the old wharf_* pattern it was exported in WHARF_0)."""
    cc = os.environ.get("WHARF_CC", "cc")
    src = tmp_path / "probe.c"
    src.write_text("__attribute__((visibility(\"default\"))) int wharf_version(void) "
                   "{ return 0; }\n__attribute__((visibility(\"default\"))) int "
                   "wharf_not_in_the_map(void) { return 1; }\n")
    lib = tmp_path / "libprobe.so"
    p = subprocess.run([cc, "-shared", "-fPIC", "-o", str(lib), str(src),
                        f"-Wl,--version-script={MAP}"], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    have = exported(str(lib))
    assert have.get("wharf_version") == "WHARF_0", have
    assert "wharf_not_in_the_map" not in have, have
