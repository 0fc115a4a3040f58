# The code's shape (issue 33), checked on the objects the suite built: no
# circle of object files (who references whose symbols, variables
# included), no source file over 800 lines.
# shellcheck shell=bash

test_structure_no_object_cycles() {
	local objs
	objs=$(find "$ROOT/$BUILD/obj" -name '*.o' | sort)
	[ -n "$objs" ] || fail "no objects under $BUILD/obj"
	# each object's defined and undefined symbols, then the strongly connected
	# parts of the graph object -> object whose symbol it uses
	# shellcheck disable=SC2086
	for o in $objs; do nm "$o" | sed "s|^|$o |"; done >syms.txt || fail "nm failed"
	python3 - syms.txt >cycles.txt <<'PY' || fail "the object graph could not be read"
import collections, os, sys
defs, uses = {}, collections.defaultdict(set)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) == 4 and f[2] in "TDBRCVW":
        defs[f[3]] = f[0]
    elif len(f) == 3 and f[1] == "U":
        uses[f[0]].add(f[2])
graph = {o: {defs[s] for s in u if s in defs and defs[s] != o} for o, u in uses.items()}
index, low, stack, on, n, found = {}, {}, [], set(), [0], []
def visit(v):
    index[v] = low[v] = n[0]; n[0] += 1; stack.append(v); on.add(v)
    for w in graph.get(v, ()):
        if w not in index:
            visit(w); low[v] = min(low[v], low[w])
        elif w in on:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        part = []
        while True:
            w = stack.pop(); on.discard(w); part.append(w)
            if w == v:
                break
        if len(part) > 1:
            found.append(part)
sys.setrecursionlimit(100000)
for v in list(graph):
    if v not in index:
        visit(v)
for part in found:
    names = sorted(os.path.basename(p) for p in part)
    edges = sorted("%s -> %s (%s)" % (os.path.basename(a), os.path.basename(defs[s]), s)
                   for a in part for s in uses[a] if s in defs and defs[s] in part and defs[s] != a)
    print("circle: " + " ".join(names) + ": " + "; ".join(edges))
print("%d objects" % len(graph), file=sys.stderr)
PY
	if [ -s cycles.txt ]; then
		cat cycles.txt
		fail "object files reference each other in a circle"
	fi
	echo "    $(echo "$objs" | wc -l) objects, no circle"
}

test_structure_file_sizes() {
	local over
	over=$(find "$ROOT/src" \( -name '*.c' -o -name '*.h' \) -exec wc -l {} + |
		awk '$2 != "total" && $1 > 800 { print $2 ": " $1 " lines" }')
	[ -z "$over" ] || { echo "$over"; fail "source files over 800 lines"; }
	echo "    largest: $(find "$ROOT/src" \( -name '*.c' -o -name '*.h' \) -exec wc -l {} + |
		awk '$2 != "total"' | sort -n | tail -1 | sed "s|$ROOT/||")"
}
