#!/usr/bin/env python3
"""Writes the values of a weights TOML (`learnbook weights`, `fit --out`,
`tune --out`) as the defaults of the `weights!` block in
crates/engine/src/params.rs, keeping names, bounds and layout.

usage: scripts/set_default_weights.py WEIGHTS.toml [crates/engine/src/params.rs]
"""
import re
import sys


def read_toml(path):
    values = {}
    for line in open(path, encoding="utf-8"):
        m = re.match(r"\s*(\w+)\s*=\s*(-?\d+)", line)
        if m:
            values[m.group(1)] = int(m.group(2))
    return values


def half_board(i):
    return "abcd"[i % 4] + str(i // 4 + 1)


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    values = read_toml(sys.argv[1])
    path = sys.argv[2] if len(sys.argv) > 2 else "crates/engine/src/params.rs"
    text = open(path, encoding="utf-8").read()
    used = set()

    def scalar(m):
        name = m.group(1)
        if name not in values:
            return m.group(0)
        used.add(name)
        return f"{name}: i32 = {values[name]},"

    def array(m):
        name, n, kind = m.group(1), int(m.group(2)), m.group(4)
        old = [int(x) for x in re.findall(r"-?\d+", m.group(3))]
        label = half_board if kind == "SQ" else (lambda i: f"r{i + 1}")
        new = []
        for i in range(n):
            key = f"{name}_{label(i)}"
            if key in values:
                used.add(key)
                new.append(values[key])
            else:
                new.append(old[i])
        if kind == "SQ":
            rows = [", ".join(f"{v:3d}" for v in new[r * 4:r * 4 + 4]) for r in range(n // 4)]
            body = "\n        " + ",\n        ".join(rows)
        else:
            body = ", ".join(str(v) for v in new)
        return f"{name}: [i32; {n}] = [{body}], {kind}"

    text = re.sub(r"(\w+): i32 = (-?\d+),", scalar, text)
    text = re.sub(r"(\w+): \[i32; (\d+)\] = \[([^\]]*)\], (SQ|RANKS)", array, text)
    unknown = sorted(set(values) - used)
    if unknown:
        sys.exit(f"not in {path}: {', '.join(unknown)}")
    open(path, "w", encoding="utf-8").write(text)
    print(f"{len(used)} defaults written to {path}")


if __name__ == "__main__":
    main()
