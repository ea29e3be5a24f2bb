"""How the cost of a descriptor's identity (``NeuralDescriptor.hash``) grows with the graph.

    .venv/bin/python bench/descriptor_identity.py                 # about a minute
    .venv/bin/python bench/descriptor_identity.py --old-max 1600  # the old hash further

Each row times ``hash`` on fresh copies of one descriptor (validation, canonical form and
SHA-256; the copies are made before the clock starts) and prints the best of ``--repeat``
runs, with the growth exponent against the row above (log of the time ratio over log of
the size ratio: 1 is linear, 2 quadratic). Tables:

* chains of n layers (the old hash was quadratic here; it is timed up to ``--old-max``);
* n layers each fed by its k predecessors (about k*n connections): the cost of edges;
* k identical parallel branches of L layers between a stem and a merge, the symmetric
  case: single layers are twins and cost one class; longer branches need the search
  tree, about k*k/2 small steps;
* b stacked blocks of two identical branches (2**b automorphisms): one search node and
  one guessed swap per block, so near-linear in b;
* wirings that colour refinement cannot tell apart (one 2n-cycle, or two n-cycles,
  between n and n layers), which need individualisation;
* NAS-Bench-201 cells: microseconds per cell for the old Weisfeiler-Lehman hash (a
  private copy below, the baseline) and for the exact identity, in the same run.
"""
import argparse
import hashlib
import json
import math
import time

from nord.benchmarks.nasbench201.cells import N_CELLS, code_to_genome, genome_to_descriptor
from nord.architecture.descriptor import NeuralDescriptor, canonical_params

CONV = {"out_channels": 16, "kernel_size": 3, "padding": 1}


# --- graphs ------------------------------------------------------------------------------
def chain(n):
    d = NeuralDescriptor()
    for i in range(n):
        if i % 3 == 0:
            d.add_layer_sequential("conv2d", CONV, f"l{i}")
        else:
            d.add_layer_sequential("batch_norm2d" if i % 3 == 1 else "relu", None, f"l{i}")
    return d


def dense(n, k):
    """Layer i is fed by layers i-k .. i-1."""
    d = NeuralDescriptor()
    for i in range(n):
        d.add_layer("relu" if i % 2 else "conv2d", None if i % 2 else CONV, f"l{i}")
        for j in range(max(0, i - k), i):
            d.connect_layers(f"l{j}", f"l{i}")
    return d


def branches(k, length):
    """A stem, k identical branches of ``length`` layers, and a layer summing them."""
    d = NeuralDescriptor()
    d.add_layer("conv2d", CONV, "stem")
    d.add_layer("identity", None, "merge")
    for b in range(k):
        previous = "stem"
        for i in range(length):
            name = f"b{b}_{i}"
            d.add_layer("conv2d" if i % 2 == 0 else "relu", CONV if i % 2 == 0 else None, name)
            d.connect_layers(previous, name)
            previous = name
        d.connect_layers(previous, "merge")
    return d


def stacked_blocks(blocks, width=2, length=2):
    """A chain of blocks, each ``width`` identical branches of ``length`` layers between one
    summing layer and the next (a cell with identical parallel operations, repeated)."""
    d = NeuralDescriptor()
    d.add_layer("conv2d", CONV, "stem")
    top = "stem"
    for b in range(blocks):
        merge = f"m{b}"
        d.add_layer("identity", None, merge)
        for w in range(width):
            previous = top
            for i in range(length):
                name = f"b{b}_{w}_{i}"
                d.add_layer("conv2d" if i % 2 == 0 else "relu", CONV if i % 2 == 0 else None,
                            name)
                d.connect_layers(previous, name)
                previous = name
            d.connect_layers(previous, merge)
        top = merge
    return d


def wiring(n, two_cycles):
    """A stem feeding a0..a{n-1}, each feeding two of b0..b{n-1}: one 2n-cycle of a-b
    connections, or two n-cycles (n even); refinement sees the same on both."""
    d = NeuralDescriptor()
    d.add_layer("conv2d", CONV, "stem")
    for i in range(n):
        d.add_layer("conv2d", CONV, f"a{i}")
        d.connect_layers("stem", f"a{i}")
    for j in range(n):
        d.add_layer("conv2d", {"out_channels": 8, "kernel_size": 1}, f"b{j}")
    half = n // 2
    for i in range(n):
        if two_cycles:
            base = 0 if i < half else half
            partner = base + (i - base + 1) % half
        else:
            partner = (i + 1) % n
        d.connect_layers(f"a{i}", f"b{i}")
        d.connect_layers(f"a{i}", f"b{partner}")
    return d


# --- the old hash (baseline, as it was before the exact identity) -------------------------
def old_hash(descriptor):
    """Weisfeiler-Lehman style: node labels refined as many rounds as there are layers."""
    descriptor.validate()
    outputs = set(descriptor.output_layers)
    sources = descriptor._inputs
    targets = descriptor._outputs
    labels = {}
    for name, layer in descriptor._layers.items():
        role = ("in" if name == descriptor.input_layer else "") + ("out" if name in outputs else "")
        merge = layer.merge if len(sources[name]) > 1 else ""
        labels[name] = _md5(json.dumps([layer.type, canonical_params(layer), merge, role],
                                       sort_keys=True))
    for _ in range(len(labels)):
        labels = {
            name: _md5("|".join([labels[name],
                                 ",".join(sorted(labels[s] for s in sources[name])),
                                 ",".join(sorted(labels[t] for t in targets[name]))]))
            for name in labels
        }
    return _md5(",".join(sorted(labels.values())))


def _md5(text):
    return hashlib.md5(text.encode("utf-8")).hexdigest()


# --- timing ------------------------------------------------------------------------------
def time_hash(descriptor, repeat):
    """Best time of ``hash`` over fresh copies (no cached identity)."""
    copies = [descriptor.copy() for _ in range(repeat)]
    best = math.inf
    for copy in copies:
        started = time.perf_counter()
        copy.hash
        best = min(best, time.perf_counter() - started)
    return best


def time_old(descriptor, repeat):
    best = math.inf
    for _ in range(repeat):
        started = time.perf_counter()
        old_hash(descriptor)
        best = min(best, time.perf_counter() - started)
    return best


def growth(previous, current):
    """log(t ratio) / log(size ratio) against the row above, or '' for the first row."""
    if previous is None or previous[1] <= 0 or current[1] <= 0 or previous[0] == current[0]:
        return ""
    return f"{math.log(current[1] / previous[1]) / math.log(current[0] / previous[0]):5.2f}"


def table(title, header, rows):
    print(f"\n{title}")
    print(header)
    for row in rows:
        print(row)


def main(repeat, old_max, cells):
    rows, previous, previous_old = [], None, None
    for n in (100, 200, 400, 800, 1600, 3200, 10000):
        d = chain(n)
        new = time_hash(d, repeat)
        old = time_old(d, 1) if n <= old_max else None
        old_text = f"{old:10.4f}" if old is not None else f"{'not run':>10}"
        rows.append(f"{n:>7} {d.hash[:8]} {new:10.4f} {growth(previous, (n, new)):>6}   "
                    f"{old_text} {growth(previous_old, (n, old)) if old else '':>6}")
        previous = (n, new)
        previous_old = (n, old) if old is not None else None
    table("Chains: seconds for hash (best of repeats); growth exponent vs the row above",
          f"{'layers':>7} {'hash':8} {'new s':>10} {'growth':>6}   {'old s':>10} {'growth':>6}",
          rows)

    rows = []
    for series in (((1000, 1), (1000, 2), (1000, 4), (1000, 8), (1000, 16), (1000, 32),
                    (1000, 64)),
                   ((500, 16), (1000, 16), (2000, 16), (4000, 16))):
        previous = None
        for n, k in series:
            d = dense(n, k)
            edges = len(d.connections)
            new = time_hash(d, repeat)
            rows.append(f"{n:>7} {k:>4} {edges:>8} {new:10.4f} "
                        f"{growth(previous, (edges, new)):>6}")
            previous = (edges, new)
    table("Each layer fed by its k predecessors: growth vs connections (two series: more "
          "predecessors, then more layers)",
          f"{'layers':>7} {'k':>4} {'edges':>8} {'new s':>10} {'growth':>6}", rows)

    rows = []
    for k, length in ((10, 1), (100, 1), (1000, 1), (5, 3), (10, 3), (20, 3), (40, 3),
                      (80, 3), (10, 10), (20, 10)):
        d = branches(k, length)
        rows.append(f"{k:>9} {length:>7} {len(d):>7} {time_hash(d, repeat):10.4f}")
    table("k identical parallel branches of L layers (symmetric)",
          f"{'branches':>9} {'length':>7} {'layers':>7} {'new s':>10}", rows)

    rows, previous = [], None
    for blocks in (10, 100, 200, 500, 1000, 2000):
        d = stacked_blocks(blocks)
        new = time_hash(d, repeat)
        rows.append(f"{blocks:>7} {len(d):>7} {new:10.4f} {growth(previous, (len(d), new)):>6}")
        previous = (len(d), new)
    table("b stacked blocks of two identical 2-layer branches (symmetric, 5b+1 layers)",
          f"{'blocks':>7} {'layers':>7} {'new s':>10} {'growth':>6}", rows)

    rows = []
    for n in (4, 8, 16, 64, 256):
        one, two = wiring(n, False), wiring(n, True)
        rows.append(f"{n:>5} {time_hash(one, repeat):10.4f} {time_hash(two, repeat):10.4f} "
                    f"{str(one.hash == two.hash):>9} {str(old_hash(one) == old_hash(two)):>9}")
    table("One 2n-cycle against two n-cycles of a-b wiring (n a's, n b's)",
          f"{'n':>5} {'one s':>10} {'two s':>10} {'same new':>9} {'same old':>9}", rows)

    step = max(1, N_CELLS // cells)
    genomes = [code_to_genome(code) for code in range(0, N_CELLS, step)]
    fresh = [genome_to_descriptor(genome) for genome in genomes]
    started = time.perf_counter()
    for d in fresh:
        old_hash(d)
    old = (time.perf_counter() - started) / len(fresh)
    started = time.perf_counter()
    for d in fresh:
        d.hash
    new = (time.perf_counter() - started) / len(fresh)
    started = time.perf_counter()
    for d in fresh:
        d.hash
    cached = (time.perf_counter() - started) / len(fresh)
    print(f"\nNAS-Bench-201 cells ({len(fresh)} of {N_CELLS}), microseconds per cell:")
    print(f"  old hash (baseline)   {old * 1e6:8.1f}")
    print(f"  hash                  {new * 1e6:8.1f}   ({new / old:.2f} x the old)")
    print(f"  hash, cached          {cached * 1e6:8.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="copies timed per row")
    parser.add_argument("--old-max", type=int, default=800,
                        help="longest chain for the old (quadratic) hash")
    parser.add_argument("--cells", type=int, default=N_CELLS,
                        help="NAS-Bench-201 cells to time (spread over the space)")
    args = parser.parse_args()
    main(args.repeat, args.old_max, args.cells)
