#!/usr/bin/env python3
"""Writes android/symbols/<abi>.txt: the symbols Android's libc, libm, libdl and liblog export
to an app at a given API level (the AAR's minSdk), read from AOSP's symbol maps, the files the
NDK's stub libraries are generated from:

    bionic:      libc/libc.map.txt, libm/libm.map.txt, libdl/libdl.map.txt
    system/core: liblog/liblog.map.txt (system/logging since 2020)

    scripts/android-symbols.py --bionic DIR --liblog FILE --api 21 --source "..." OUT_DIR

Only the names are kept (facts about the platform's ABI), with the source named in each file's
header. The rules, as the NDK's stub generator reads these maps:
  - a version block named *_PRIVATE or *_PLATFORM, or LIBC_DEPRECATED, is not for apps;
  - a tag on a block applies to its symbols; a symbol's own tags come after it;
  - `introduced=N` / `introduced-ARCH=N`: from API N (on that architecture);
  - architecture tags (arm arm64 x86 x86_64 riscv64): only there;
  - `llndk`, `apex`, `systemapi`, `vndk`-only symbols are not in the NDK;
  - liblog's blocks named after releases (LIBLOG_L, _M, _O) date their symbols (21, 23, 26)
    where the map (in the version read) carries no `introduced` tag.
"""

import argparse
import os
import re
import sys

ABIS = {"arm64-v8a": "arm64", "armeabi-v7a": "arm", "x86_64": "x86_64"}
ARCHES = {"arm", "arm64", "x86", "x86_64", "riscv64", "mips", "mips64"}
NOT_NDK = {"llndk", "apex", "systemapi", "platform-only"}
RELEASES = {"L": 21, "M": 23, "N": 24, "O": 26, "P": 28, "Q": 29, "R": 30}


def tags_of(comment):
    return comment.split() if comment else []


def available(tags, arch, api):
    """Whether a symbol (or block) with these tags is in the NDK for arch at api."""
    arches = [t for t in tags if t in ARCHES]
    if arches and arch not in arches:
        return False
    if any(t in NOT_NDK for t in tags):
        return False
    # vndk alone means "for vendors only"; with no other tag the symbol is in the NDK too in
    # older maps, but a conservative list leaves it out.
    if "vndk" in tags:
        return False
    introduced = None
    for t in tags:
        m = re.fullmatch(r"introduced(?:-([a-z0-9_]+))?=(\d+)", t)
        if m and (m.group(1) is None or m.group(1) == arch):
            # An architecture's own level wins over the general one.
            if m.group(1) == arch or introduced is None:
                introduced = int(m.group(2))
    return introduced is None or introduced <= api


def parse(text, arch, api, release_blocks=False):
    names = set()
    block = None
    block_tags = []
    for raw in text.splitlines():
        line, _, comment = raw.partition("#")
        line = line.strip()
        m = re.fullmatch(r"([A-Z][A-Z0-9_]*)\s*\{", line)
        if m:
            block = m.group(1)
            block_tags = tags_of(comment)
            if release_blocks and not any(t.startswith("introduced") for t in block_tags):
                suffix = block.rsplit("_", 1)[-1] if "_" in block else ""
                if suffix in RELEASES:
                    block_tags = block_tags + ["introduced=%d" % RELEASES[suffix]]
            continue
        if line.startswith("}"):
            block = None
            continue
        if block is None or line in ("global:", "local:") or line.startswith("*"):
            continue
        if block.endswith("_PRIVATE") or block.endswith("_PLATFORM") or block == "LIBC_DEPRECATED":
            continue
        m = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*);", line)
        if not m:
            continue
        symbol_tags = tags_of(comment)
        if available(block_tags, arch, api) and available(symbol_tags, arch, api):
            names.add(m.group(1))
    return names


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bionic", required=True, help="a checkout of AOSP bionic")
    p.add_argument("--liblog", required=True, help="liblog.map.txt")
    p.add_argument("--api", type=int, default=21)
    p.add_argument("--source", required=True, help="what was read (repositories and commits), for the header")
    p.add_argument("out")
    a = p.parse_args()
    maps = [("libc", os.path.join(a.bionic, "libc/libc.map.txt"), False),
            ("libm", os.path.join(a.bionic, "libm/libm.map.txt"), False),
            ("libdl", os.path.join(a.bionic, "libdl/libdl.map.txt"), False),
            ("liblog", a.liblog, True)]
    texts = [(lib, open(path, encoding="utf-8").read(), rel) for lib, path, rel in maps]
    os.makedirs(a.out, exist_ok=True)
    for abi, arch in ABIS.items():
        names = set()
        for lib, text, rel in texts:
            names |= parse(text, arch, a.api, rel)
        with open(os.path.join(a.out, abi + ".txt"), "w", encoding="utf-8") as f:
            f.write("# Symbols Android's libc, libm, libdl and liblog export to apps on %s (%s) at API %d:\n" % (abi, arch, a.api))
            f.write("# what libhprof_shrink_jni.so may leave undefined (scripts/android-jni.sh checks it).\n")
            f.write("# Generated by scripts/android-symbols.py from AOSP's NDK symbol maps: %s\n" % a.source)
            for n in sorted(names):
                f.write(n + "\n")
        print("%s: %d symbols" % (abi, len(names)), file=sys.stderr)


if __name__ == "__main__":
    main()
