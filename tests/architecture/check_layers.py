#!/usr/bin/env python3
"""Checks that no #include of libforkfeed runs back up a layer (ARCHITECTURE.md).

    check_layers.py SOURCE_DIR

Each room of the library has a layer; a file may include its own room and the rooms
below it, never one above, nor a room beside it on the same layer. Prints every include
that breaks this, with the file and line, and exits 1; exits 0 when there is none.
"""

import pathlib
import re
import sys

# Bottom to top. Rooms on one line share a layer and may not include each other.
LAYERS = [
    ["include/forkfeed"],  # the public API: standard library only
    ["base"],
    ["cuda"],
    ["transport"],
    ["dataset"],
    ["transforms"],
    ["workers"],
    ["process"],
    ["loader"],
    ["protocol"],
    ["remote"],
    ["client", "daemon"],
    ["gateway"],
]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def room_of(path: str):
    """The room a path (relative to the root, or as an include writes it) lies in."""
    if path.startswith("forkfeed/"):
        path = "include/" + path
    for level, rooms in enumerate(LAYERS):
        for room in rooms:
            if path.startswith(room + "/"):
                return level, room
    return None


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1]).resolve()
    broken = []
    checked = 0
    for level, rooms in enumerate(LAYERS):
        for room in rooms:
            for source in sorted((root / room).rglob("*")):
                if source.suffix not in (".h", ".cpp"):
                    continue
                checked += 1
                name = source.relative_to(root).as_posix()
                for number, line in enumerate(source.read_text(errors="replace").splitlines(), 1):
                    match = INCLUDE.match(line)
                    if not match:
                        continue
                    target = room_of(match.group(1))
                    if target is None:
                        broken.append(f"{name}:{number}: includes {match.group(1)}, which is no room of the library")
                    elif target[0] > level or (target[0] == level and target[1] != room):
                        broken.append(f"{name}:{number}: {room}/ includes {match.group(1)} from "
                                      f"{target[1]}/, which is not below it")
    for b in broken:
        print(b)
    if checked == 0:
        print(f"check_layers.py: no source files under {root}", file=sys.stderr)
        return 2
    print(f"{checked} files checked, {len(broken)} includes run back up" if broken else
          f"{checked} files checked: every include runs down a layer")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
