#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Post-link step: turn the module's references to non-exported vmlinux
symbols into livepatch relocations, applied by the kernel's livepatch core.

    scripts/klp-relocs.py MODULE.ko       rewrite MODULE.ko in place
    scripts/klp-relocs.py --check MODULE.ko
                                          exit 0 if converted, 1 if not

The C side (src/klp.h) declares every such target as a weak undefined
symbol whose assembler name is "xnc_klp." followed by the kernel's name of
it, so the compiler emits direct calls and plain data references, and
modpost, which ignores weak undefined symbols, stays quiet.  This step
then, following Documentation/livepatch/module-elf-format.rst:

  - renames each such symbol to ".klp.sym.vmlinux.NAME,0" and gives it the
    section index SHN_LIVEPATCH, so the module loader leaves it alone;
  - moves every relocation against those symbols out of ".rela.SEC" into
    a new section ".klp.rela.vmlinux.SEC" flagged SHF_RELA_LIVEPATCH.

While loading a livepatch module, the kernel resolves the symbols of
vmlinux's livepatch relocation sections (kallsyms; position 0: the name must
be unique in vmlinux, modules are never searched) and applies them, before
the module's init runs.  A missing or ambiguous name fails the load with
the kernel's own message naming it ("livepatch: symbol 'X' not found in
symbol table", "unresolvable ambiguity").  If this step never ran, the
weak symbols are left undefined, the module loader resolves them to 0, and
the module's init refuses to enable (src/klp.c).

Relocations from sections that are not loaded (debug information) are left
as they are: the loader never applies them.  Idempotent: a module without
"xnc_klp." symbols is left untouched.  ELF64 little-endian x86-64 only.
Python's standard library only.
"""

import os
import struct
import sys

PREFIX = b"xnc_klp."
OBJ = b"vmlinux"

SHT_SYMTAB = 2
SHT_RELA = 4
SHF_ALLOC = 0x2
SHF_INFO_LINK = 0x40
SHF_RELA_LIVEPATCH = 0x00100000
SHN_UNDEF = 0
SHN_LORESERVE = 0xff00
SHN_LIVEPATCH = 0xff20
STB_GLOBAL = 1
EM_X86_64 = 62
KSYM_NAME_LEN = 512

EHDR = struct.Struct("<16sHHIQQQIHHHHHH")
SHDR = struct.Struct("<IIQQQQIIQQ")
SYM = struct.Struct("<IBBHQQ")
RELA = struct.Struct("<QQq")


class KlpError(Exception):
    pass


def cstr(blob, off):
    end = blob.index(b"\0", off)
    return bytes(blob[off:end])


class Elf:
    def __init__(self, data):
        self.data = data
        if data[:4] != b"\x7fELF":
            raise KlpError("not an ELF file")
        if data[4] != 2 or data[5] != 1:
            raise KlpError("not a 64-bit little-endian ELF file")
        h = list(EHDR.unpack_from(data, 0))
        self.ehdr = h
        (_, e_type, e_machine, _, _, _, e_shoff, _, _, _, _,
         e_shentsize, e_shnum, e_shstrndx) = h
        if e_type != 1:
            raise KlpError("not a relocatable object (a .ko is ET_REL)")
        if e_machine != EM_X86_64:
            raise KlpError("machine %d is not x86-64" % e_machine)
        if e_shentsize != SHDR.size or e_shnum == 0 or \
           e_shstrndx >= SHN_LORESERVE:
            raise KlpError("unexpected section header layout")
        self.shdrs = [list(SHDR.unpack_from(data, e_shoff + i * SHDR.size))
                      for i in range(e_shnum)]
        self.shstrndx = e_shstrndx

    def section(self, i):
        s = self.shdrs[i]
        return self.data[s[4]:s[4] + s[5]]

    def name(self, i):
        return cstr(self.section(self.shstrndx), self.shdrs[i][0])


def convert(data):
    """Return (new file bytes, nsyms, nrelas, nsecs) or None if no targets."""
    elf = Elf(data)
    symtabs = [i for i, s in enumerate(elf.shdrs) if s[1] == SHT_SYMTAB]
    if len(symtabs) != 1:
        raise KlpError("expected one symbol table, found %d" % len(symtabs))
    symndx = symtabs[0]
    symsh = elf.shdrs[symndx]
    strndx = symsh[6]
    strtab = bytearray(elf.section(strndx))
    nsym = symsh[5] // SYM.size

    targets = {}
    for i in range(nsym):
        off = symsh[4] + i * SYM.size
        st_name, st_info, st_other, st_shndx, _, _ = SYM.unpack_from(data, off)
        name = cstr(strtab, st_name)
        if not name.startswith(PREFIX):
            continue
        kname = name[len(PREFIX):]
        if st_shndx != SHN_UNDEF:
            raise KlpError("%s is defined in the module; a target must be "
                           "undefined" % name.decode())
        if not kname or len(kname) >= KSYM_NAME_LEN or b"," in kname:
            raise KlpError("bad target name %r" % name.decode())
        klpname = b".klp.sym." + OBJ + b"." + kname + b",0"
        new_name = len(strtab)
        strtab += klpname + b"\0"
        SYM.pack_into(data, off, new_name, (STB_GLOBAL << 4) | (st_info & 0xf),
                      st_other, SHN_LIVEPATCH, 0, 0)
        targets[i] = kname
    if not targets:
        return None

    # Split every loaded section's relocations.
    newsecs = []            # (name, target index, rela bytes)
    nrelas = 0
    used = set()
    for i, s in enumerate(elf.shdrs):
        if s[1] != SHT_RELA or s[6] != symndx:
            continue
        tgt = s[7]
        if tgt >= len(elf.shdrs) or not elf.shdrs[tgt][2] & SHF_ALLOC:
            continue
        if s[2] & SHF_RELA_LIVEPATCH:
            continue
        keep, move = bytearray(), bytearray()
        for off in range(s[4], s[4] + s[5], RELA.size):
            r_offset, r_info, r_addend = RELA.unpack_from(data, off)
            if (r_info >> 32) in targets:
                move += RELA.pack(r_offset, r_info, r_addend)
                used.add(r_info >> 32)
            else:
                keep += RELA.pack(r_offset, r_info, r_addend)
        if not move:
            continue
        data[s[4]:s[4] + len(keep)] = keep
        data[s[4] + len(keep):s[4] + s[5]] = bytes(s[5] - len(keep))
        s[5] = len(keep)
        newsecs.append((b".klp.rela." + OBJ + b"." + elf.name(tgt), tgt,
                        bytes(move)))
        nrelas += len(move) // RELA.size
    unused = sorted(targets[i].decode() for i in targets if i not in used)
    if unused:
        raise KlpError("no loaded code or data refers to %s" %
                       ", ".join(unused))

    # Append: the new relocation sections, .strtab, .shstrtab, then the
    # section header table with the new sections at its end (no existing
    # section changes index, so no symbol or link needs renumbering).
    out = bytearray(data)

    def append(blob, align):
        while len(out) % align:
            out.append(0)
        off = len(out)
        out.extend(blob)
        return off

    shstr = bytearray(elf.section(elf.shstrndx))
    for name, tgt, blob in newsecs:
        name_off = len(shstr)
        shstr += name + b"\0"
        off = append(blob, 8)
        elf.shdrs.append([name_off, SHT_RELA,
                          SHF_ALLOC | SHF_INFO_LINK | SHF_RELA_LIVEPATCH,
                          0, off, len(blob), symndx, tgt, 8, RELA.size])
    if len(elf.shdrs) >= SHN_LORESERVE:
        raise KlpError("too many sections")
    elf.shdrs[strndx][4] = append(bytes(strtab), 1)
    elf.shdrs[strndx][5] = len(strtab)
    elf.shdrs[elf.shstrndx][4] = append(bytes(shstr), 1)
    elf.shdrs[elf.shstrndx][5] = len(shstr)
    shoff = append(b"", 8)
    for s in elf.shdrs:
        out.extend(SHDR.pack(*s))
    h = elf.ehdr
    h[6] = shoff
    h[12] = len(elf.shdrs)
    EHDR.pack_into(out, 0, *h)
    return bytes(out), len(targets), nrelas, len(newsecs)


def converted(data):
    elf = Elf(data)
    return any(s[2] & SHF_RELA_LIVEPATCH for s in elf.shdrs)


def main(argv):
    check = len(argv) == 3 and argv[1] == "--check"
    if len(argv) != 2 and not check:
        sys.stderr.write("usage: klp-relocs.py [--check] MODULE.ko\n")
        return 2
    path = argv[-1]
    try:
        with open(path, "rb") as f:
            data = bytearray(f.read())
        if check:
            return 0 if converted(data) else 1
        res = convert(data)
    except (OSError, KlpError, ValueError, struct.error) as e:
        sys.stderr.write("klp-relocs.py: %s: %s\n" % (path, e))
        return 1
    if res is None:
        if not converted(data):
            sys.stderr.write("klp-relocs.py: %s: no %s symbols: nothing to "
                             "convert\n" % (path, PREFIX.decode()))
            return 1
        return 0
    out, nsyms, nrelas, nsecs = res
    tmp = path + ".klp-tmp"
    with open(tmp, "wb") as f:
        f.write(out)
    os.chmod(tmp, os.stat(path).st_mode & 0o7777)
    os.replace(tmp, path)
    print("  KLP     %s: %d symbols, %d relocations, %d sections" %
          (os.path.basename(path), nsyms, nrelas, nsecs))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
