#!/usr/bin/env python3
"""The module graph of src/ drawn from its paths, checked against the layer table.

    .ci/layers.py [--report] [--tests] [--layers FILE] [--src DIR]

Every `.rs` file under src/ is a node. An edge A -> B is a path in A that names
an item of B: `use crate::…` (grouped, nested, multi-line), `crate::x::y` in
code (and `$crate::` in macros), `super::`/`self::` paths, a child module's
name, or a module brought in by `use` and then used as `m::item`. A path
resolves to the file of the longest module prefix it names (`foo.rs` or
`foo/mod.rs`); inline `mod x { … }` blocks belong to their file.

Test code does not count (`--tests` counts it): items under `#[cfg(test)]`
and files declared by `#[cfg(test)] mod tests;` may reach anything, as a test
harness may; the layers are a rule about what ships.

Fails (exit 1, one line each) on
  * a circle (strongly connected component) between files of different
    folders (a folder's root file, `x/mod.rs` or `x.rs` beside `x/`, is in
    `x`). A module's uses of its own ancestors (`super::Error`, the folder's
    shared types) are not part of any circle: Rust lets a part see its whole,
    and the whole naming its parts is the direction that counts. A circle
    inside one folder is reported, not failed;
  * an import from a lower layer to a higher one, layers read from the first
    fenced block marked `layers` in FILE (default ARCHITECTURE.md): lines of
    `module::path  N` (`crate` is lib.rs), longest prefix wins, `#` a comment;
  * a file no line of the table covers.
"""
import argparse, os, re, sys
from collections import defaultdict

def strip(text):
    """Comments and literal contents become spaces; newlines stay, so offsets keep their lines."""
    out, i, n = [], 0, len(text)
    def blank(s): return re.sub(r"[^\n]", " ", s)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i); j = n if j < 0 else j
            out.append(blank(text[i:j])); i = j
        elif text.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith("/*", j): depth += 1; j += 2
                elif text.startswith("*/", j): depth -= 1; j += 2
                else: j += 1
            out.append(blank(text[i:j])); i = j
        elif (m := re.match(r'b?r(#*)"', text[i:i + 300])) and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            end = '"' + m.group(1); j = text.find(end, i + m.end()); j = n if j < 0 else j + len(end)
            out.append('""' + blank(text[i + 2:j])); i = j
        elif c == '"':
            j = i + 1
            while j < n and text[j] != '"': j += 2 if text[j] == "\\" else 1
            out.append('"' + blank(text[i + 1:j]) + '"'); i = j + 1
        elif c == "'" and i + 2 < n and (text[i + 1] == "\\" or text[i + 2] == "'"):
            j = text.find("'", i + 2 if text[i + 1] == "\\" else i + 1)
            out.append(blank(text[i:j + 1])); i = j + 1
        else:
            out.append(c); i += 1
    return "".join(out)

def block_end(text, i):
    """Index after the item starting at i: through its `;` or its balanced `{…}`."""
    depth = 0
    while i < len(text):
        c = text[i]
        if c == "{": depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0: return i + 1
        elif c == ";" and depth == 0: return i + 1
        i += 1
    return i

def drop_tests(text):
    """Blank every item under #[cfg(test)]; returns the text and the names of test-only `mod x;`."""
    test_mods = set()
    for m in reversed(list(re.finditer(r"#\[cfg\(test\)\]", text))):
        end = block_end(text, m.end())
        if mm := re.match(r"\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text[m.end():end]):
            test_mods.add(mm.group(1))
        text = text[:m.start()] + re.sub(r"[^\n]", " ", text[m.start():end]) + text[end:]
    return text, test_mods

def expand_use(tree):
    """`a::{b, c::{d as e}, self}` -> [(['a','b'], 'b'), (['a','c','d'], 'e'), (['a'], 'a')]."""
    tree = re.sub(r"\s+", "", re.sub(r"\s+as\s+", "@", tree))
    def parse(s, prefix):
        parts, depth, start = [], 0, 0
        for k, ch in enumerate(s):
            if ch == "{": depth += 1
            elif ch == "}": depth -= 1
            elif ch == "," and depth == 0: parts.append(s[start:k]); start = k + 1
        parts.append(s[start:])
        for p in filter(None, parts):
            if "{" in p:
                head = p[:p.index("{")].rstrip(":")
                yield from parse(p[p.index("{") + 1:p.rindex("}")], prefix + [x for x in head.split("::") if x])
                continue
            p, alias = p.split("@") if "@" in p else (p, None)
            segs = prefix + [x for x in p.split("::") if x]
            if segs and segs[-1] == "self": segs = segs[:-1]
            if segs: yield segs, alias or segs[-1]
    return list(parse(tree, []))

class Graph:
    def __init__(self, src, tests):
        self.src, self.tests = src, tests
        self.files = sorted(os.path.relpath(os.path.join(d, f), src)
                            for d, _, fs in os.walk(src) for f in fs if f.endswith(".rs"))
        self.mod_of = {f: self.module_path(f) for f in self.files}
        self.file_of = {"::".join(m): f for f, m in self.mod_of.items()}
        self.edges = defaultdict(list)          # file -> [(line, path text, target file)]
        self.test_files = set()
        texts = {}
        for f in self.files:                    # pass 1: test-only files
            text, test_mods = strip(open(os.path.join(src, f), encoding="utf-8").read()), set()
            if not tests: text, test_mods = drop_tests(text)
            texts[f] = text
            for t in test_mods:
                child = "::".join(self.mod_of[f] + [t])
                self.test_files |= {g for m, g in self.file_of.items() if m == child or m.startswith(child + "::")}
        for f in self.files:
            if f not in self.test_files: self.scan(f, texts[f])

    def module_path(self, f):
        parts = f[:-3].split(os.sep)
        if parts[-1] == "mod" or parts == ["lib"]: parts = parts[:-1]
        return parts

    def resolve(self, segs, here, aliases):
        """Absolute module path of the file a path names, or None outside the crate."""
        head = segs[0]
        if head in ("crate", "$crate", "qrtag"): path = segs[1:]   # the binary says `qrtag::`
        elif head == "self": path = here + segs[1:]
        elif head == "super":
            path = list(here)
            while segs and segs[0] == "super": path, segs = path[:-1], segs[1:]
            path += segs
        elif head in aliases: path = aliases[head] + segs[1:]
        elif "::".join(here + [head]) in self.file_of: path = here + segs
        else: return None, False
        for k in range(len(path), -1, -1):
            if "::".join(path[:k]) in self.file_of: return path[:k], k == len(path)
        return None, False

    def scan(self, f, text):
        aliases, line = {}, lambda o: text.count("\n", 0, o) + 1
        inline = [(m.start(), block_end(text, m.start()), m.group(1))     # `mod tests { … }`
                  for m in re.finditer(r"\bmod\s+(\w+)\s*\{", text)]
        scope = lambda o: self.mod_of[f] + [name for a, b, name in inline if a < o < b]
        seen = set()
        def add(offset, shown, mod):
            target = self.file_of["::".join(mod)]
            if target != f and (line(offset), target) not in seen:
                seen.add((line(offset), target)); self.edges[f].append((line(offset), shown, target))
        uses = list(re.finditer(r"\buse\s+([^;]*);", text))
        for m in uses:
            for segs, alias in expand_use(m.group(1)):
                mod, whole = self.resolve(segs, scope(m.start()), aliases)
                if mod is None: continue
                add(m.start(), "::".join(segs), mod)
                if whole: aliases[alias] = mod      # `use crate::store;` then `store::couch::X`
        code = text
        for m in uses: code = code[:m.start()] + " " * (m.end() - m.start()) + code[m.end():]
        for m in re.finditer(r"(?<![\w:])(\$?[a-z_]\w*)((?:\s*::\s*\w+)+)", code):
            segs = [m.group(1)] + [s.strip() for s in m.group(2).split("::")[1:]]
            here = scope(m.start())
            if segs[0] in ("crate", "$crate", "self", "super", "qrtag") or segs[0] in aliases or \
                    "::".join(here + [segs[0]]) in self.file_of:
                if (mod := self.resolve(segs, here, aliases)[0]) is not None: add(m.start(), "::".join(segs), mod)

def folder(f):
    """A file's folder; a folder's root file (`x/mod.rs`, or `x.rs` beside `x/`) is in `x`.
    An `x/` that holds only its unit tests (`x/tests.rs`) makes no folder of `x.rs`."""
    beside = os.path.join(ARGS.src, f[:-3])
    parts = os.path.isdir(beside) and any(n.endswith(".rs") and n != "tests.rs"
                                          for _, _, ns in os.walk(beside) for n in ns)
    root = f.endswith("/mod.rs") or parts
    return f[:-3] if root and not f.endswith("/mod.rs") else os.path.dirname(f)

def tarjan(nodes, succ):
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    def visit(v):
        work = [(v, iter(succ(v)))]; index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
        while work:
            u, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = n[0]; n[0] += 1; stack.append(w); on.add(w)
                    work.append((w, iter(succ(w)))); break
                if w in on: low[u] = min(low[u], index[w])
            else:
                work.pop()
                if work: low[work[-1][0]] = min(low[work[-1][0]], low[u])
                if low[u] == index[u]:
                    comp = []
                    while True:
                        w = stack.pop(); on.discard(w); comp.append(w)
                        if w == u: break
                    out.append(sorted(comp))
    for v in nodes:
        if v not in index: visit(v)
    return out

def levels(nodes, succ):
    """Levels of the condensed graph: a node that imports nothing is level 0."""
    comps = tarjan(nodes, succ); comp_of = {v: i for i, c in enumerate(comps) for v in c}; lvl = {}
    for i, c in enumerate(comps):            # Tarjan emits components sinks first
        lvl[i] = max([lvl[comp_of[w]] + 1 for v in c for w in succ(v) if comp_of[w] != i], default=0)
    return comps, (max(lvl.values()) + 1 if lvl else 0)

def read_layers(path):
    text = open(path, encoding="utf-8").read()
    m = re.search(r"^```layers[^\n]*\n(.*?)^```", text, re.S | re.M)
    if not m: print(f"{path}: no ```layers block", file=sys.stderr); sys.exit(2)
    table = {}
    for raw in m.group(1).splitlines():
        if (l := raw.split("#")[0].strip()):
            prefix, num = l.rsplit(None, 1); prefix = prefix.strip("`")
            table["" if prefix == "crate" else prefix] = int(num)
    return table

def layer_of(mod, table):
    # `crate` (the empty prefix) is lib.rs alone: it places no other module,
    # so a new top-level module no line names is reported, not let through.
    for k in range(len(mod), 0 if mod else -1, -1):
        if "::".join(mod[:k]) in table: return table["::".join(mod[:k])], "::".join(mod[:k]) or "(crate root)"
    return None, None

def main():
    global ARGS
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--report", action="store_true", help="print the whole summary, never fail")
    p.add_argument("--tests", action="store_true", help="count test code's imports too")
    p.add_argument("--layers", default="ARCHITECTURE.md", help="file with the ```layers block")
    p.add_argument("--src", default="src")
    ARGS = p.parse_args()
    g = Graph(ARGS.src, ARGS.tests)
    files = [f for f in g.files if f not in g.test_files]
    succ = lambda v: sorted({t for _, _, t in g.edges[v] if t not in g.test_files and not is_ancestor(t, v)})
    is_ancestor = lambda t, v: g.mod_of[v][:len(g.mod_of[t])] == g.mod_of[t]
    comps, nlevels = levels(files, succ)
    circles = [c for c in comps if len(c) > 1]
    crossing = [c for c in circles if len({folder(f) for f in c}) > 1]
    top = lambda f: f.split(os.sep)[0].removesuffix(".rs")
    tops = sorted({top(f) for f in files})
    tsucc = lambda t: sorted({top(w) for v in files if top(v) == t for w in succ(v) if top(w) != t})
    tcomps, tlevels = levels(tops, tsucc)
    table, violations, upward, unlayered = read_layers(ARGS.layers), [], [], []
    for f in files:
        lf, pf = layer_of(g.mod_of[f], table)
        if lf is None: unlayered.append(f); violations.append(f"src/{f}:1: no layer covers {'::'.join(g.mod_of[f]) or 'the crate root'}"); continue
        for ln, shown, t in g.edges[f]:
            if t in g.test_files: continue
            lt, pt = layer_of(g.mod_of[t], table)
            if lt is not None and lt > lf:
                upward.append((f, ln, shown, t))
                violations.append(f"src/{f}:{ln}: {shown} -> src/{t}: layer {lf} ({pf}) imports layer {lt} ({pt})")
    for c in crossing:
        violations.append(f"src/{c[0]}:1: circle across folders of {len(c)} files: " + " ".join("src/" + x for x in c))
    if ARGS.report:
        nedges = sum(len({t for _, _, t in g.edges[f] if t not in g.test_files}) for f in files)
        print(f"files: {len(files)} (+{len(g.test_files)} test-only), file imports: {nedges}, file levels: {nlevels} (uses of an ancestor not counted)")
        print(f"top-level folders and files: {len(tops)}, levels among them: {tlevels}, "
              f"circles among them: {sum(len(c) > 1 for c in tcomps)}")
        for c in tcomps:
            if len(c) > 1: print("  top-level circle:", " ".join(c))
        print(f"file circles: {len(circles)}, across folders: {len(crossing)}")
        for c in circles:
            print(f"  {'ACROSS' if c in crossing else 'inside'} ({len(c)}): " + " ".join(c))
            for v in c:
                for ln, shown, t in g.edges[v]:
                    if t in c and t != v: print(f"      {v}:{ln} {shown} -> {t}")
        print(f"upward imports: {len(upward)} (from {len({(f, t) for f, _, _, t in upward})} file pairs), unlayered files: {len(unlayered)}")
    print("\n".join(violations))
    sys.exit(1 if violations and not ARGS.report else 0)

if __name__ == "__main__":
    main()
