#!/usr/bin/env python3
"""Checks the rooms of libforkfeed against ARCHITECTURE.md's table of rooms.

    check_layers.py SOURCE_DIR

The table ("Rooms, bottom to top") is the one list of rooms: each row's layer and its
rooms are read from SOURCE_DIR/ARCHITECTURE.md. A file may include its own room and the
rooms below it, never one above, nor a room beside it on the same layer. Every folder of
SOURCE_DIR that holds C++ sources must be in the table (a room, or a row "above" the
library), except the tests and the examples; every room in the table must hold sources.
Each row of its tables (the rooms, the owners) is one line of at most ROW_LIMIT
characters: a map, not a narrative. Two rules beyond the layers: the rooms kept APART
below never include one another though the layers would let them, and no header includes
itself through others (a circle).
Prints every breach, with the file and line, and exits 1; exits 0 when there is none,
2 when the table cannot be read.
"""

import pathlib
import re
import sys

SOURCES = (".h", ".cpp")
# Folders beside the library that are not in the table: they use it, never the reverse.
OUTSIDE = {"tests", "examples"}
# Rooms that the layers would let include each other but must not: a worker reads what a
# member holds through formats/, never the index's rules of which samples exist.
APART = {"workers": {"dataset"}}
# A row of ARCHITECTURE.md's tables: what a room holds, or a rule and its owner, in a line.
ROW_LIMIT = 220
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
ROW = re.compile(r"^\|\s*(\d+|above)\s*\|([^|]*)\|")
ROOM = re.compile(r"`([^`]+)/`")


def read_table(architecture: pathlib.Path):
    """The layers, bottom to top (each a list of rooms), and the rooms above the library."""
    layers, above = [], []
    in_section = False
    for line in architecture.read_text().splitlines():
        if line.startswith("## "):
            in_section = line.strip() == "## Rooms, bottom to top"
            continue
        match = ROW.match(line) if in_section else None
        if not match:
            continue
        rooms = ROOM.findall(match.group(2))
        if match.group(1) == "above":
            above += rooms
        else:
            if int(match.group(1)) != len(layers):
                raise ValueError(f"layer {match.group(1)} comes where layer {len(layers)} should")
            layers.append(rooms)
    if not layers:
        raise ValueError("no table under '## Rooms, bottom to top'")
    return layers, above


def room_of(layers, path: str):
    """The layer and room a path (relative to the root, or as an include writes it) lies in."""
    if path.startswith("forkfeed/"):
        path = "include/" + path
    for level, rooms in enumerate(layers):
        for room in rooms:
            if path.startswith(room + "/"):
                return level, room
    return None


def has_sources(folder: pathlib.Path) -> bool:
    return any(p.suffix in SOURCES for p in folder.rglob("*"))


def folders_missing(root: pathlib.Path, layers, above):
    """The folders of root holding sources that the table does not name."""
    named = {room.split("/")[0] for rooms in layers for room in rooms} | {r.split("/")[0] for r in above}
    missing = []
    for folder in sorted(p for p in root.iterdir() if p.is_dir()):
        name = folder.name
        if name.startswith(".") or name in OUTSIDE or name in named:
            continue
        if (folder / "CMakeCache.txt").exists():  # a build tree
            continue
        if has_sources(folder):
            missing.append(f"{name}/ holds C++ sources but is no room of ARCHITECTURE.md's table: add its "
                           "row (its layer and what it holds)")
    return missing


def includes_up(root: pathlib.Path, layers):
    """Every include that runs back up a layer or sideways, and how many files were read."""
    broken = []
    checked = 0
    for level, rooms in enumerate(layers):
        for room in rooms:
            if not (root / room).is_dir() or not has_sources(root / room):
                broken.append(f"ARCHITECTURE.md's table names {room}/, which holds no sources here: "
                              "remove its row, or name the folder that holds them")
                continue
            for source in sorted((root / room).rglob("*")):
                if source.suffix not in SOURCES:
                    continue
                checked += 1
                name = source.relative_to(root).as_posix()
                for number, line in enumerate(source.read_text(errors="replace").splitlines(), 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    target = room_of(layers, match.group(1))
                    if target is None:
                        broken.append(f"{name}:{number}: includes {match.group(1)}, "
                                      "which is no room of the library")
                    elif target[0] > level or (target[0] == level and target[1] != room):
                        broken.append(f"{name}:{number}: {room}/ includes {match.group(1)} from "
                                      f"{target[1]}/, which is not below it")
                    elif target[1] in APART.get(room, ()):
                        broken.append(f"{name}:{number}: {room}/ includes {match.group(1)} from "
                                      f"{target[1]}/, which it is kept apart from")
    return broken, checked


def include_circles(root: pathlib.Path, layers):
    """Every circle of includes among the library's headers, each once, as a chain of paths."""
    edges = {}
    for rooms in layers:
        for room in rooms:
            for source in sorted((root / room).rglob("*.h")) if (root / room).is_dir() else ():
                name = source.relative_to(root).as_posix()
                targets = []
                for line in source.read_text(errors="replace").splitlines():
                    match = INCLUDE.match(line)
                    if match:
                        target = match.group(1)
                        targets.append("include/" + target if target.startswith("forkfeed/") else target)
                edges[name] = targets
    circles, state = [], {}

    def visit(node, path):
        state[node] = "open"
        for target in edges.get(node, ()):
            if state.get(target) == "open":
                circle = path[path.index(target):] + [target]
                circles.append(" -> ".join(circle))
            elif target in edges and target not in state:
                visit(target, path + [target])
        state[node] = "done"
    for node in sorted(edges):
        if node not in state:
            visit(node, [node])
    return [f"a circle of includes: {c}" for c in circles]


def long_rows(architecture: pathlib.Path):
    """Every row of ARCHITECTURE.md's tables longer than ROW_LIMIT characters."""
    lines = architecture.read_text().splitlines()
    return [f"ARCHITECTURE.md:{number}: a row of {len(line)} characters, over {ROW_LIMIT}: "
            "say the owner in a line, and how it works in its file"
            for number, line in enumerate(lines, 1) if line.startswith("|") and len(line) > ROW_LIMIT]


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1]).resolve()
    try:
        layers, above = read_table(root / "ARCHITECTURE.md")
    except (OSError, ValueError) as e:
        print(f"check_layers.py: cannot read the rooms from {root / 'ARCHITECTURE.md'}: {e}", file=sys.stderr)
        return 2
    broken = folders_missing(root, layers, above)
    up, checked = includes_up(root, layers)
    broken += up + include_circles(root, layers) + long_rows(root / "ARCHITECTURE.md")
    for b in broken:
        print(b)
    if checked == 0:
        print(f"check_layers.py: no source files under {root}", file=sys.stderr)
        return 2
    print(f"{checked} files checked, {len(broken)} breaches of ARCHITECTURE.md's rooms" if broken else
          f"{checked} files checked: every folder is a room of the table, every include runs down a layer, "
          "no room kept apart includes the other, and no header includes itself")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
