#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Source drift check: are the kernel functions and variables the module
copies, calls or reads still what they were when last checked?

    scripts/drift.py check    compare the newest Debian source of each
                              kernel line with scripts/kernel.record
    scripts/drift.py update   rewrite the record from those sources, then
                              include/xnc_record.h
    scripts/drift.py header   write include/xnc_record.h from the record

    options (check, update):
      --line L --source S --version V
                  one kernel line only (6.1, 6.12 or 7.3), from S: a
                  linux-source tarball, or a directory holding its tree
                  (or linux-source-L/ with the tree), of Debian source
                  version V; each of the three is optional, the others
                  default to linux-source-L's installed tarball and
                  version (7.3: trixie-backports' newest, which
                  scripts/trixie-source.sh fetches into the cache unless it
                  is there)
      --trixie    also Debian 13 trixie's newest linux-source-6.12
                  (scripts/trixie-source.sh: fetched into the cache unless
                  it is there), checked against the 6.12 record; update
                  adds its version to 6.12's releases only if all its items
                  are as recorded from the host's 6.12 source

The record (scripts/kernel.record, its header comment has the format)
holds, per kernel line, the Debian source versions checked ("release") and
per item its kind, name, source file, the SHA-256 of its normalized text,
for a function its one-line prototype, and the short hash of each
normalized line, so that check can show a line diff of what changed
without keeping any kernel text.  The items are ITEMS below:

  copy   a function the module carries its own rewrite of (src/lookup.c)
  bind   a function the module calls directly: a prototype change and a
         body change are both reported (errors: review the caller)
  rely   a function whose behaviour the module depends on
  read   a global variable the module reads: its definition statement

Normalized: C comments removed, whitespace runs made one space on each
source line, lines stripped, empty lines dropped: one line of the
normalized text per source line, so a diff shows source lines.

A definition is found on a lexed copy of the file whose comments, string
and character literals and preprocessor lines are blanked: its top-level
constructs are split at ";" and at the closing brace of a function body
(a "{" block after a head ending in ")"); a function NAME is a construct
with a body whose head has "NAME(" outside any parenthesis (so neither a
prototype nor EXPORT_SYMBOL(NAME) nor a function pointer parameter
matches), from the first of the lines directly above NAME's that belong to
the head (a return type on its own line); a variable NAME is a top-level
statement that declares it (not extern, not a struct tag of that name)
or defines it through a macro (DEFINE_MUTEX(NAME), LIST_HEAD(NAME)).
Several definitions of one name (#ifdef alternatives) are recorded in file
order, concatenated.

check exits 0 when every item is as recorded (a release not yet listed is
noted), 1 on any difference (a diff of each) or when include/xnc_record.h
is not what header writes, 2 on a usage or source error.  update exits 1
when trixie's source differs (the record is written without it), 2 when
an item is not found (nothing is written).  Only the member
files the record names are read from a tarball, streaming; several
tarballs are read in parallel.  Python's standard library only.
"""

import argparse
import concurrent.futures
import difflib
import hashlib
import os
import re
import signal
import subprocess
import sys
import tarfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORD = os.path.join(TOP, "scripts", "kernel.record")
HEADER = os.path.join(TOP, "include", "xnc_record.h")
TRIXIE_SCRIPT = os.path.join(TOP, "scripts", "trixie-source.sh")
TRIXIE_LINE = "6.12"
KLINES = ("6.1", "6.12", "7.3")
# lines bookworm has no linux-source of: trixie-backports' instead
# (scripts/trixie-source.sh LINE)
BPO_LINES = ("7.3",)

POLICY = "net/xfrm/xfrm_policy.c"
ITEMS = (
    ("copy", "xfrm_lookup_with_ifid", POLICY),
    ("copy", "xfrm_bundle_lookup", POLICY),
    ("copy", "xfrm_create_dummy_bundle", POLICY),
    ("copy", "xfrm_expand_policies", POLICY),
    ("copy", "xfrm_policy_lookup", POLICY),
    ("bind", "xfrm_sk_policy_lookup", POLICY),
    ("bind", "xfrm_policy_lookup_bytype", POLICY),
    ("bind", "xfrm_resolve_and_create_bundle", POLICY),
    ("bind", "xdst_queue_output", POLICY),
    ("bind", "kallsyms_on_each_symbol", "kernel/kallsyms.c"),
    ("bind", "xfrm_policy_insert", POLICY),
    ("bind", "bpf_get_btf_vmlinux", "kernel/bpf/verifier.c"),
    ("bind", "btf_find_by_name_kind", "kernel/bpf/btf.c"),
    ("bind", "btf_name_by_offset", "kernel/bpf/btf.c"),
    ("rely", "xfrm_dev_down", "net/xfrm/xfrm_device.c"),
    ("read", "xfrm_policy_afinfo", POLICY),
    ("read", "klp_patches", "kernel/livepatch/core.c"),
    ("read", "klp_mutex", "kernel/livepatch/core.c"),
    # 6.1 only: from 6.12 on, the kernel creates our trace events (src/trace.c)
    ("read", "event_mutex", "kernel/trace/trace_events.c", ("6.1",)),
)
FUNCTION_KINDS = ("copy", "bind", "rely")
KINDS = FUNCTION_KINDS + ("read",)

# what a change of each kind asks for
REVIEW = {
    "copy": "the module carries its own rewrite of it: port the change or "
            "show it does not apply",
    "bind": "the module calls it directly: review that the call still does "
            "what the module expects",
    "bind-prototype": "the module calls it directly, as the recorded prototype "
                      "says: change its declaration and calls (include/) to match",
    "rely": "the module depends on its behaviour: review that it still holds",
    "read": "the module reads it: review its type and meaning",
}

def items(line):
    """ITEMS of kernel line LINE, as (kind, name, path)."""
    return [i[:3] for i in ITEMS if len(i) < 4 or line in i[3]]


HASH_LEN = 12
HASHES_PER_ROW = 8
CONTEXT = 2


class SourceError(Exception):
    """A source that cannot be read: exit 2."""


# --- lexing and extraction -------------------------------------------------

def _blank(chars, i, j):
    for k in range(i, j):
        if chars[k] != "\n":
            chars[k] = " "


def lex(text):
    """Return (code, masked), each as long as text with its newlines:
    code has the comments blanked, masked also the contents of string and
    character literals and every preprocessor line (with continuations)."""
    code = list(text)
    masked = list(text)
    n = len(text)
    i = 0
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            _blank(code, i, j)
            _blank(masked, i, j)
            i = j
        elif c == "/" and text.startswith("//", i):
            j = i
            while True:
                j = text.find("\n", j)
                if j < 0:
                    j = n
                elif text[j - 1] == "\\":
                    j += 1
                    continue
                break
            _blank(code, i, j)
            _blank(masked, i, j)
            i = j
        elif c in "\"'":
            # an unterminated literal ends at the line's end (an apostrophe
            # in #error text)
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j, n)
            _blank(masked, i + 1, j)
            i = j + 1 if j < n and text[j] == c else j
        else:
            i += 1
    code = "".join(code)
    masked = "".join(masked)
    out = []
    cont = False
    for cline, mline in zip(code.split("\n"), masked.split("\n")):
        if cont or mline.lstrip().startswith("#"):
            cont = cline.rstrip().endswith("\\")
            mline = " " * len(mline)
        out.append(mline)
    return code, "\n".join(out)


class Construct:
    """A top-level construct: [start, end) in the file, head_end the
    opening brace of a function body (is_func) or end."""

    def __init__(self, start, head_end, end, is_func):
        self.start, self.head_end, self.end, self.is_func = \
            start, head_end, end, is_func


# the end of a function definition's head: the parameter list's ")", maybe
# followed by annotations (__acquires(x), __releases(x))
FUNC_HEAD_END = re.compile(r"\)\s*(?:__\w+\s*(?:\([^()]*\))?\s*)*$")


def constructs(masked, path):
    """The top-level constructs of a masked file, in order."""
    out = []
    depth = paren = 0
    start = brace = None
    for i, c in enumerate(masked):
        if start is None:
            if c.isspace():
                continue
            start, brace = i, None
        if c == "(":
            paren += 1
        elif c == ")":
            paren -= 1
        elif c == "{":
            if depth == 0 and brace is None:
                brace = i
            depth += 1
        elif c == "}":
            depth -= 1
            if depth < 0:
                raise SourceError(f"{path}: unbalanced '}}' at offset {i}")
            if depth == 0 and FUNC_HEAD_END.search(masked[start:brace]):
                out.append(Construct(start, brace, i + 1, True))
                start = None
        elif c == ";" and depth == 0 and paren == 0:
            out.append(Construct(start, i + 1, i + 1, False))
            start = None
    if depth:
        raise SourceError(f"{path}: {depth} braces left open at its end")
    return out


class Source:
    """One source file, lexed, with its top-level constructs."""

    def __init__(self, path, text):
        self.path = path
        self.text = text
        self.code, self.masked = lex(text)
        self.constructs = constructs(self.masked, path)

    def line_start(self, pos):
        return self.masked.rfind("\n", 0, pos) + 1

    def line_end(self, pos):
        j = self.masked.find("\n", pos)
        return len(self.masked) if j < 0 else j

    def lineno(self, pos):
        return self.masked.count("\n", 0, pos) + 1

    def lines(self, start, end):
        """[(source line number, normalized line)] of the code text of the
        whole lines from start to end."""
        first = self.lineno(start)
        text = self.code[self.line_start(start):self.line_end(max(start, end - 1))]
        out = []
        for k, raw in enumerate(text.split("\n")):
            norm = " ".join(raw.split())
            if norm:
                out.append((first + k, norm))
        return out

    def close_paren(self, pos):
        """The position after the ")" matching the "(" at pos."""
        depth = 0
        for i in range(pos, len(self.masked)):
            c = self.masked[i]
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    return i + 1
        raise SourceError(f"{self.path}: unbalanced '(' at line {self.lineno(pos)}")


# attributes a prototype is recorded without
PROTO_DROP = re.compile(
    r"\b(?:static|inline|__inline|__inline__|noinline|__always_inline|"
    r"__init|__exit|__ref|__meminit|__kprobes|__sched|__head|__cpuidle|"
    r"noinstr)\b|"
    r"\b__section\s*\([^()]*\)|"
    r"\b__attribute__\s*\(\(\s*_*section_*\s*\([^()]*\)\s*\)\)")


def normalize_prototype(text):
    text = PROTO_DROP.sub(" ", " ".join(text.split()))
    text = " ".join(text.split())
    text = re.sub(r"\*\s+(?=[A-Za-z_])", "*", text)
    text = re.sub(r"\(\s+", "(", text)
    text = re.sub(r"\s+([),])", r"\1", text)
    return text


def paren_depth(text, pos):
    return text.count("(", 0, pos) - text.count(")", 0, pos)


class Found:
    """An item as a source has it: its definitions' normalized lines
    [(source line number, text)], prototypes, and what was passed over."""

    def __init__(self, kind, name, path):
        self.kind, self.name, self.path = kind, name, path
        self.lines = []
        self.protos = []
        self.defs = 0
        self.where = []      # first and last source line of each definition
        self.skipped = []    # (line number, what) of non-definitions
        self.notes = []      # how the definition was found, when not plainly

    def digest(self):
        return sha256("".join(t + "\n" for _, t in self.lines))

    def hashes(self):
        return [line_hash(t) for _, t in self.lines]


def first_word(text):
    m = re.search(r"[A-Za-z_]\w*", text)
    return m.group() if m else "?"


def find_function(src, kind, name):
    f = Found(kind, name, src.path)
    pat = re.compile(r"(?<![\w])" + re.escape(name) + r"\s*\(")
    mention = re.compile(r"(?<![\w])" + re.escape(name) + r"(?![\w])")
    for c in src.constructs:
        head = src.masked[c.start:c.head_end]
        m = next((m for m in pat.finditer(head)
                  if paren_depth(head, m.start()) == 0), None)
        if m is None:
            if not c.is_func and mention.search(head):
                f.skipped.append((src.lineno(c.start), f"a mention ({first_word(head)} ...)"))
            continue
        if not c.is_func:
            f.skipped.append((src.lineno(c.start), "a prototype"))
            continue
        npos = c.start + m.start()
        # the head's lines directly above NAME's (a return type, static
        # noinline, __weak on their own line)
        start = src.line_start(npos)
        while start > c.start:
            prev = src.line_start(start - 1)
            if not src.masked[prev:start].strip():
                break
            start = prev
        if start < src.line_start(npos):
            f.notes.append(f"head starts {src.lineno(npos) - src.lineno(start)} "
                           f"line(s) above {name}(")
        if src.masked[src.line_start(c.start):c.start].strip():
            f.notes.append("definition does not begin at column 0")
        pend = src.close_paren(c.start + m.end() - 1)
        f.protos.append(normalize_prototype(src.code[start:pend]))
        f.lines += src.lines(start, c.end)
        f.defs += 1
        f.where.append((src.lineno(start), src.lineno(c.end - 1)))
    if f.defs > 1:
        f.notes.append(f"{f.defs} definitions, concatenated in file order")
    return f


TOKEN = re.compile(r"[A-Za-z_]\w*|\S")
DEF_MACRO = re.compile(r"^[A-Z][A-Z0-9_]*$")


def find_variable(src, name):
    f = Found("read", name, src.path)
    for c in src.constructs:
        if c.is_func:
            continue
        stmt = src.masked[c.start:c.end]
        if not re.search(r"(?<![\w])" + re.escape(name) + r"(?![\w])", stmt):
            continue
        toks = [m.group() for m in TOKEN.finditer(stmt)]
        why = declares(toks, name)
        if why is None:
            f.skipped.append((src.lineno(c.start), "mention, not a definition"))
            continue
        if why:
            f.notes.append(why)
        f.lines += src.lines(c.start, c.end)
        f.defs += 1
        f.where.append((src.lineno(c.start), src.lineno(c.end - 1)))
    if f.defs > 1:
        f.notes.append(f"{f.defs} definitions, concatenated in file order")
    return f


def declares(toks, name):
    """None if the statement toks does not define variable name, else how
    ("" for a plain declarator)."""
    if not toks or toks[0] == "extern" or toks[0].startswith("EXPORT_SYMBOL"):
        return None
    depth = 0
    opener = []          # the token before each open "("
    seen_assign = False
    for k, t in enumerate(toks):
        if t == "(":
            opener.append(toks[k - 1] if k else "")
            depth += 1
        elif t == ")":
            opener.pop()
            depth -= 1
        elif t == "=" and depth == 0:
            seen_assign = True
        elif t == name:
            prev = toks[k - 1] if k else ""
            nxt = toks[k + 1] if k + 1 < len(toks) else ""
            if prev in ("struct", "union", "enum"):
                continue
            if depth == 0 and not seen_assign and nxt != "(":
                return ""
            if (depth == 1 and not seen_assign and DEF_MACRO.match(opener[-1])
                    and not opener[-1].startswith(("DECLARE_", "EXPORT_"))):
                return f"defined by {opener[-1]}()"
    return None


def extract(files, kind, name, path):
    """The item (kind, name) of path, from files {path: text}, or None if
    the file is missing."""
    src = files.get(path)
    if src is None:
        return None
    if kind == "read":
        return find_variable(src, name)
    return find_function(src, kind, name)


def sha256(text):
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()


def line_hash(text):
    return sha256(text)[:HASH_LEN]


# --- sources ---------------------------------------------------------------

def read_members(source, line, paths):
    """{path: text} of the paths of a linux-source-LINE tarball (streamed,
    stopping once all are read) or directory; missing ones are absent."""
    top = f"linux-source-{line}"
    out = {}
    if os.path.isdir(source):
        root = os.path.join(source, top)
        if not os.path.isdir(root):
            root = source
        for p in paths:
            try:
                with open(os.path.join(root, p), "rb") as fh:
                    out[p] = fh.read().decode("utf-8", "surrogateescape")
            except FileNotFoundError:
                pass
        if not out and not os.path.isdir(os.path.join(root, "kernel")):
            raise SourceError(f"{source}: neither a kernel tree nor a {top}/ directory")
        return out
    want = {f"{top}/{p}": p for p in paths}
    seen_top = False
    try:
        with tarfile.open(source, mode="r|*") as tf:
            for m in tf:
                name = m.name[2:] if m.name.startswith("./") else m.name
                if not seen_top:
                    if name.split("/", 1)[0] != top:
                        break
                    seen_top = True
                p = want.pop(name, None)
                if p is None or not m.isfile():
                    continue
                out[p] = tf.extractfile(m).read().decode("utf-8", "surrogateescape")
                if not want:
                    break
    except (OSError, tarfile.TarError, EOFError) as e:
        raise SourceError(f"{source}: {e}") from e
    if not seen_top:
        raise SourceError(f"{source}: no {top}/ in it: not linux-source-{line}'s tarball")
    return out


def load(target):
    """Worker: {path: Source} of a target's files, or a SourceError."""
    try:
        texts = read_members(target.source, target.line, target.paths)
        return {p: Source(p, t) for p, t in texts.items()}
    except SourceError as e:
        return e


class Target:
    """One source to check: a kernel line's tarball or tree, its version."""

    def __init__(self, line, source, version, label=""):
        self.line, self.source, self.version, self.label = line, source, version, label
        self.paths = []
        self.files = None

    def title(self):
        return f"{self.line}{' ' + self.label if self.label else ''} {self.version}"


def load_all(targets):
    jobs = [t for t in targets if t.files is None]
    if len(jobs) > 1 and (os.cpu_count() or 1) > 1:
        with concurrent.futures.ProcessPoolExecutor(max_workers=min(len(jobs), 4)) as ex:
            results = list(ex.map(load, jobs))
    else:
        results = [load(t) for t in jobs]
    for t, r in zip(jobs, results):
        if isinstance(r, SourceError):
            raise r
        t.files = r


def installed_version(line):
    pkg = f"linux-source-{line}"
    try:
        r = subprocess.run(["dpkg-query", "-W", "-f=${Version}", pkg],
                           capture_output=True, text=True, check=False)
    except OSError as e:
        raise SourceError(f"dpkg-query: {e}") from e
    if r.returncode or not r.stdout.strip():
        raise SourceError(f"{pkg} is not installed (scripts/deps.sh), "
                          "or give --source and --version")
    return r.stdout.strip()


def fetched_source(cmd):
    """(tarball, version) that a fetcher script prints, having fetched it
    into the cache if it was not there."""
    name = os.path.relpath(cmd[0], TOP)
    try:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    except OSError as e:
        raise SourceError(f"{name}: {e}") from e
    if r.returncode or len(r.stdout.split()) != 2:
        raise SourceError(f"{name} failed")
    tb, ver = r.stdout.split()
    return tb, ver


def trixie_source():
    """trixie's newest linux-source-6.12 (scripts/trixie-source.sh)."""
    return fetched_source([TRIXIE_SCRIPT])


def targets_of(args):
    """The sources to check, each line's own first, then trixie's."""
    if (args.source or args.version) and not args.line:
        raise SourceError("--source and --version need --line")
    out = []
    for line in ([args.line] if args.line else KLINES):
        if line in BPO_LINES and not args.source:
            source, version = fetched_source([TRIXIE_SCRIPT, line])
            out.append(Target(line, source, args.version or version))
            continue
        source = args.source or f"/usr/src/linux-source-{line}.tar.xz"
        version = args.version or installed_version(line)
        if not os.path.exists(source):
            raise SourceError(f"{source}: no such file (apt-get install linux-source-{line})")
        out.append(Target(line, source, version))
    if args.trixie:
        if args.line and args.line != TRIXIE_LINE:
            raise SourceError(f"--trixie is a {TRIXIE_LINE} source, not --line {args.line}'s")
        tb, ver = trixie_source()
        out.append(Target(TRIXIE_LINE, tb, ver, "trixie"))
    return out


# --- the record ------------------------------------------------------------

class Entry:
    """One item as recorded."""

    def __init__(self, kind, name, path, defs, digest, protos, hashes):
        self.kind, self.name, self.path = kind, name, path
        self.defs, self.digest, self.protos, self.hashes = defs, digest, protos, hashes

    @classmethod
    def of(cls, found):
        return cls(found.kind, found.name, found.path, found.defs, found.digest(),
                   list(found.protos), found.hashes())

    def key(self):
        return (self.kind, self.name, self.path)

    def same(self, other):
        return (self.key() == other.key() and self.defs == other.defs and
                self.digest == other.digest and self.protos == other.protos and
                self.hashes == other.hashes)


class Block:
    """A kernel line's part of the record: its releases and items."""

    def __init__(self, line):
        self.line = line
        self.releases = []
        self.entries = []


RECORD_HEAD = """\
# SPDX-License-Identifier: GPL-2.0
#
# The record of what was checked: the kernel functions and variables
# xfrm_nocache copies, calls or reads (scripts/drift.py's ITEMS), as the
# Debian sources of each kernel line listed have them.  Written by
# scripts/drift.py update, compared with the newest sources by make drift
# (scripts/drift.py check); include/xnc_record.h is generated from it
# (scripts/drift.py header).  No kernel text: names, paths, hashes and
# one-line prototypes.
#
# One block per kernel line:
#
#   line LINE                 6.1, 6.12 or 7.3
#   release VERSION           a Debian source version (linux-source-LINE)
#                             whose items all are as below; one or more
#   item KIND NAME PATH DEFS SHA256
#                             KIND: copy (the module carries its own rewrite
#                             of the function), bind (it calls it directly),
#                             rely (it depends on its behaviour), read (a
#                             global variable it reads); PATH: the source
#                             file; DEFS: the number of definitions
#                             (#ifdef alternatives), their texts
#                             concatenated in file order; SHA256: of the
#                             normalized text
#   proto PROTOTYPE           a function's, one per definition
#   lines HASH...             the first 12 hex digits of the SHA-256 of each
#                             line of the normalized text, 8 a row, in
#                             order: check's line diff
#
# Normalized text: C comments removed, whitespace runs on each source line
# made one space, lines stripped, empty lines dropped; the SHA-256 is of
# those lines, each ending in a newline.  A prototype: the declarator up to
# its parameter list's ")", on one line, single spaces, without static,
# inline, noinline, __always_inline or a section attribute.
"""


def read_record(path=RECORD):
    blocks = {}
    block = entry = None
    try:
        with open(path, encoding="utf-8") as fh:
            rows = fh.read().split("\n")
    except OSError as e:
        raise SourceError(f"{path}: {e}") from e
    for n, row in enumerate(rows, 1):
        if not row.strip() or row.startswith("#"):
            continue
        word, _, rest = row.partition(" ")
        try:
            if word == "line":
                block = blocks.setdefault(rest.strip(), Block(rest.strip()))
                entry = None
            elif word == "release":
                block.releases.append(rest.strip())
            elif word == "item":
                kind, name, path_, defs, digest = rest.split()
                if kind not in KINDS:
                    raise ValueError(f"kind {kind}")
                entry = Entry(kind, name, path_, int(defs), digest, [], [])
                block.entries.append(entry)
            elif word == "proto":
                entry.protos.append(rest.strip())
            elif word == "lines":
                entry.hashes += rest.split()
            else:
                raise ValueError(f"'{word}'")
        except (ValueError, AttributeError) as e:
            raise SourceError(f"{path}:{n}: cannot parse: {e}") from e
    return blocks


def write_record(blocks, path=RECORD):
    out = [RECORD_HEAD]
    for line in KLINES:
        b = blocks.get(line)
        if b is None:
            continue
        out.append(f"\nline {line}\n")
        out += [f"release {r}\n" for r in b.releases]
        for e in b.entries:
            out.append(f"item {e.kind} {e.name} {e.path} {e.defs} {e.digest}\n")
            out += [f"proto {p}\n" for p in e.protos]
            for k in range(0, len(e.hashes), HASHES_PER_ROW):
                out.append("lines " + " ".join(e.hashes[k:k + HASHES_PER_ROW]) + "\n")
    with open(path + ".tmp", "w", encoding="utf-8") as fh:
        fh.write("".join(out))
    os.replace(path + ".tmp", path)


# --- the header ------------------------------------------------------------

def header_text(blocks):
    out = ["/* SPDX-License-Identifier: GPL-2.0 */\n",
           "/*\n",
           " * Generated by scripts/drift.py from scripts/kernel.record; do not edit.\n",
           " *\n",
           " * XNC_RECORD_RELEASES: the Debian source versions (linux-source-<line>)\n",
           " * of the kernel line being compiled in which the kernel functions and\n",
           " * variables the module copies, calls or reads were checked to be as\n",
           " * recorded (make drift).\n",
           " */\n",
           "#ifndef _XNC_RECORD_H\n",
           "#define _XNC_RECORD_H\n",
           "\n",
           "#include <linux/version.h>\n",
           "\n"]
    first = True
    for line in KLINES:
        b = blocks.get(line)
        if b is None:
            continue
        major, patch = line.split(".")
        out.append(f"#{'if' if first else 'elif'} LINUX_VERSION_MAJOR == {major} && "
                   f"LINUX_VERSION_PATCHLEVEL == {patch}\n")
        first = False
        out.append(define("XNC_RECORD_RELEASES",
                          ", ".join(f'"{r}"' for r in b.releases)))
    if not first:
        out.append("#endif\n")
    out += ["\n", "#endif /* _XNC_RECORD_H */\n"]
    return "".join(out)


def define(name, value, width=100):
    """#define NAME VALUE, continued on tab-indented lines within width."""
    first = f"#define {name} {value}"
    if len(first) <= width:
        return first + "\n"
    rows = [f"#define {name}"]
    cur = ""
    for part in value.split(", "):
        cand = f"{cur}, {part}" if cur else part
        if cur and 8 + len(cand) + 3 > width:
            rows.append(cur + ",")
            cur = part
        else:
            cur = cand
    rows.append(cur)
    return rows[0] + " \\\n" + " \\\n".join("\t" + r for r in rows[1:]) + "\n"


def header_ok(blocks):
    try:
        with open(HEADER, encoding="utf-8") as fh:
            return fh.read() == header_text(blocks)
    except OSError:
        return False


def write_header(blocks):
    with open(HEADER + ".tmp", "w", encoding="utf-8") as fh:
        fh.write(header_text(blocks))
    os.replace(HEADER + ".tmp", HEADER)


# --- check -----------------------------------------------------------------

def hunks(old_hashes, found):
    """The line diff of a recorded item and its current text: rows of
    text."""
    new_hashes = found.hashes()
    sm = difflib.SequenceMatcher(None, old_hashes, new_hashes, autojunk=False)
    rows = []
    for group in sm.get_grouped_opcodes(CONTEXT):
        i1, j1 = group[0][1], group[0][3]
        i2, j2 = group[-1][2], group[-1][4]
        src_lines = [found.lines[j][0] for j in range(j1, j2)]
        where = (f" ({found.path}:{src_lines[0]}-{src_lines[-1]})"
                 if src_lines else "")
        rows.append(f"@@ checked lines {i1 + 1}-{i2}, now {j1 + 1}-{j2}{where} @@")
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                rows += [f"  {found.lines[j][1]}" for j in range(b1, b2)]
                continue
            rows += [f"- [checked line {i + 1}, hash {old_hashes[i]}]"
                     for i in range(a1, a2)]
            rows += [f"+ {found.lines[j][1]}" for j in range(b1, b2)]
    return rows


def compare(entry, found):
    """None if a recorded item is what the source has, else (what changed,
    rows of detail: the prototypes, the line diff)."""
    if found is None:
        return "not found: its file is not in the source", []
    if found.defs == 0:
        return f"not found: no definition of it in {found.path}", []
    new = Entry.of(found)
    if entry.same(new):
        return None
    rows = []
    if entry.protos != new.protos:
        what = "prototype changed"
        rows += [f"- proto {p}" for p in entry.protos]
        rows += [f"+ proto {p}" for p in new.protos]
    elif entry.kind in FUNCTION_KINDS:
        what = "body changed"
    else:
        what = "definition changed"
    if entry.defs != new.defs:
        what += f" ({new.defs} definitions, the record has {entry.defs})"
    if entry.hashes != new.hashes:
        rows += hunks(entry.hashes, found)
    return what, rows


def item_list_problems(block):
    want = items(block.line)
    have = [e.key() for e in block.entries]
    rows = []
    for k in want:
        if k not in have:
            rows.append(f"{block.line}: {k[0]} {k[1]} ({k[2]}) is checked by "
                        "drift.py but not in the record: scripts/drift.py update")
    for k in have:
        if k not in want:
            rows.append(f"{block.line}: {k[0]} {k[1]} ({k[2]}) is in the record "
                        "but no longer in drift.py's ITEMS: scripts/drift.py update")
    return rows


def cmd_check(args):
    blocks = read_record()
    targets = targets_of(args)
    problems = 0
    for t in targets:
        if t.line not in blocks:
            raise SourceError(f"scripts/kernel.record has no line {t.line}: "
                              "scripts/drift.py update")
        t.paths = sorted({e.path for e in blocks[t.line].entries})
    load_all(targets)
    summary = []
    for t in targets:
        block = blocks[t.line]
        bad = 0
        for e in block.entries:
            diff = compare(e, extract(t.files, e.kind, e.name, e.path))
            if diff is None:
                continue
            bad += 1
            print(f"DRIFT {t.title()}: {e.name} ({e.kind}, {e.path}): {diff[0]}")
            for r in diff[1]:
                print(r)
            review = REVIEW[e.kind]
            if e.kind == "bind" and diff[0].startswith("prototype"):
                review = REVIEW["bind-prototype"]
            print(f"({e.name}: {review}; then scripts/drift.py update)")
        problems += bad
        where = f" ({t.source})"
        if bad:
            summary.append(f"{t.title()}{where}: {len(block.entries)} items checked, "
                           f"{bad} not as recorded")
        elif t.version in block.releases:
            summary.append(f"{t.title()}{where}: {len(block.entries)} items checked, "
                           "all as recorded; in the record")
        else:
            summary.append(f"{t.title()}{where}: {len(block.entries)} items checked, "
                           f"all as recorded; release {t.version} is not in the record; "
                           "its items are unchanged: `scripts/drift.py update` adds it")
    stale = []
    for line in (KLINES if not args.line else [args.line]):
        if line in blocks:
            stale += item_list_problems(blocks[line])
        else:
            stale.append(f"{line}: not in the record: scripts/drift.py update")
    for line in (KLINES if not args.line else [args.line]):
        if line in blocks:
            stale += ours_problems(blocks[line])
    if not header_ok(blocks):
        stale.append("include/xnc_record.h is not what `scripts/drift.py header` "
                     "writes from scripts/kernel.record: run it")
    for s in stale:
        print(f"DRIFT {s}")
    for s in summary:
        print(s)
    if problems or stale:
        print(f"drift: {problems} item(s) not as recorded, {len(stale)} other "
              "difference(s) from scripts/kernel.record")
        return 1
    return 0


# --- the module's own prototypes -------------------------------------------

# What the module declares (the headers) and checks at load against BTF
# (src/verify.c's table) must be the recorded prototype of the same line.
OURS_DECLS = ("include/xfrm_nocache.h", "include/xnc_compat.h")
OURS_TABLE = "src/verify.c"


def preprocess(path, line):
    """The file as the compiler sees it for LINE, without its includes:
    only LINUX_VERSION_MAJOR and _PATCHLEVEL are defined (neither test-only
    switches nor what the kernel's headers define)."""
    with open(os.path.join(TOP, path), encoding="utf-8") as f:
        text = "".join(ln for ln in f if not ln.lstrip().startswith("#include"))
    major, patch = line.split(".")
    r = subprocess.run(["cpp", "-P", "-undef", "-nostdinc",
                        f"-DLINUX_VERSION_MAJOR={major}",
                        f"-DLINUX_VERSION_PATCHLEVEL={patch}"],
                       input=text, capture_output=True, text=True, check=False)
    if r.returncode:
        raise SourceError(f"cpp {path}: {r.stderr.strip()}")
    return r.stdout


def c_compact(text):
    """A prototype with the spaces C needs only (as src/verify.c compares)."""
    text = " ".join(text.split())
    return re.sub(r" (?=\W)|(?<=\W) ", "", text)


def ours(line):
    """{kernel name: [(where, prototype)]} of the module's declarations and
    of verify.c's table, for LINE."""
    found = {}
    for path in OURS_DECLS:
        text = preprocess(path, line)
        # a bound function: "RET xnc_NAME(...) __asm__("xnc_klp.NAME") __weak;"
        for m in re.finditer(r'([^;{}]*?)\bxnc_(\w+)(\((?:[^;]*)\))\s*'
                             r'__asm__\s*\(\s*"xnc_klp\.(\w+)"\s*\)', text):
            ret, ours_name, params, name = m.groups()
            if ours_name != name:
                continue
            found.setdefault(name, []).append(
                (path, f"{ret.strip()} {name}{params}"))
        # the replacement: "RET xnc_NAME(...);" without __asm__
        for m in re.finditer(r'([^;{}]*?)\bxnc_(xfrm_lookup_with_ifid)'
                             r'(\([^;]*\))\s*;', text):
            ret, name, params = m.groups()
            found.setdefault(name, []).append(
                (path, f"{ret.strip()} {name}{params}"))
    text = preprocess(OURS_TABLE, line)
    body = re.search(r"xnc_protos\[\]\s*=\s*\{(.*?)\n\};", text, re.S)
    if not body:
        raise SourceError(f"{OURS_TABLE}: no xnc_protos[] table")
    for m in re.finditer(r'\{\s*"(\w+)"\s*,\s*"([^"]*)"\s*,\s*\{([^{}]*)\}\s*\}',
                         body.group(1)):
        name, ret, params = m.groups()
        plist = re.findall(r'"([^"]*)"', params)
        found.setdefault(name, []).append(
            (OURS_TABLE, f"{ret} {name}({', '.join(plist) or 'void'})"))
    return found


def ours_problems(block):
    """The module's prototypes that differ from the record's, for BLOCK's
    line, and functions the module binds or probes that it has none of."""
    rows = []
    mine = ours(block.line)
    recorded = {e.name: e for e in block.entries if e.kind in ("bind", "copy")}
    for name, decls in sorted(mine.items()):
        e = recorded.get(name)
        if not e or len(e.protos) != 1:
            rows.append(f"{block.line}: {name}() is declared in "
                        f"{decls[0][0]} but has no single prototype in the record")
            continue
        for where, proto in decls:
            if c_compact(proto) != c_compact(e.protos[0]):
                rows.append(f"{block.line}: {name}() in {where} is\n"
                            f"  {' '.join(proto.split())}\n"
                            f"  the record's is\n  {e.protos[0]}")
    for name, e in sorted(recorded.items()):
        if e.kind == "bind" and name not in mine:
            rows.append(f"{block.line}: {name}() is bound in the record but "
                        f"declared nowhere in {', '.join(OURS_DECLS)} or {OURS_TABLE}")
    return rows


# --- update ----------------------------------------------------------------

def describe(found):
    if found.defs == 0:
        return "not found"
    where = ", ".join(f"{a}-{b}" for a, b in found.where)
    extra = "; ".join(found.notes)
    skipped = ", ".join(f"line {n}: {w}" for n, w in found.skipped)
    return (f"{found.path}:{where}" + (f"; {extra}" if extra else "") +
            (f"; passed over {skipped}" if skipped else ""))


def cmd_update(args):
    try:
        blocks = read_record()
    except SourceError:
        if os.path.exists(RECORD):
            raise
        blocks = {}
    targets = targets_of(args)
    for t in targets:
        t.paths = sorted({p for _, _, p in items(t.line)})
    load_all(targets)
    new = {}
    for t in targets:
        if t.label:
            continue
        entries = []
        for kind, name, path in items(t.line):
            found = extract(t.files, kind, name, path)
            if found is None or found.defs == 0:
                raise SourceError(f"{t.title()}: {kind} {name} not found in {path}: "
                                  "not recorded")
            print(f"{t.title()}: {kind} {name}: {describe(found)}")
            entries.append(Entry.of(found))
        old = blocks.get(t.line)
        b = Block(t.line)
        b.entries = entries
        if old is not None and len(old.entries) == len(entries) and \
                all(a.same(c) for a, c in zip(old.entries, entries)):
            b.releases = list(old.releases)
        elif old is not None and old.releases:
            print(f"{t.line}: items changed: releases {', '.join(old.releases)} dropped")
        if t.version not in b.releases:
            b.releases.append(t.version)
        new[t.line] = b
    blocks.update(new)
    rc = 0
    for t in targets:
        if not t.label:
            continue
        b = blocks.get(t.line)
        diffs = []
        for e in b.entries:
            found = extract(t.files, e.kind, e.name, e.path)
            if compare(e, found):
                diffs.append(e.name)
        if diffs:
            print(f"{t.title()}: differs from {t.line}'s record in {', '.join(diffs)}: "
                  f"not added to its releases (scripts/drift.py check --trixie: the diff)")
            rc = 1
        else:
            print(f"{t.title()}: {len(b.entries)} items as recorded")
            if t.version not in b.releases:
                b.releases.append(t.version)
    write_record(blocks)
    write_header(blocks)
    for line in KLINES:
        if line in blocks:
            print(f"{line}: releases {', '.join(blocks[line].releases)}")
    return rc


def cmd_header(_args):
    write_header(read_record())
    return 0


def main():
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)   # quiet into | head
    ap = argparse.ArgumentParser(
        description="kernel source drift check against scripts/kernel.record")
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name, fn in (("check", cmd_check), ("update", cmd_update)):
        p = sub.add_parser(name)
        p.set_defaults(fn=fn)
        p.add_argument("--line", choices=KLINES)
        p.add_argument("--source", help="tarball or directory")
        p.add_argument("--version", help="its Debian source version")
        p.add_argument("--trixie", action="store_true",
                       help="also trixie's linux-source-6.12 (scripts/trixie-source.sh)")
    sub.add_parser("header").set_defaults(fn=cmd_header)
    args = ap.parse_args()
    try:
        return args.fn(args)
    except SourceError as e:
        print(f"drift.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
