#!/usr/bin/env python3
"""Checks that libforkfeed's files and functions stay small: no .h/.cpp over 500 lines,
no function over 80.

    check_sizes.py SOURCE_DIR [--allowed FILE]

The library is the rooms of ARCHITECTURE.md's table, layer 0 to the gateway (read as
check_layers.py reads it; python/ and tools/ above it are not checked). A file's size is
its count of lines. A function's is counted from the line its signature starts on (its
template line, if any) to the line of its closing brace, both included: a function whose
signature starts on line 10 and whose body closes on line 89 is 80 lines. Functions are
found at namespace scope and in classes (member functions defined in the class, nested
classes too); a lambda, or a local class, counts as part of the function it is in, and
the braces of classes, namespaces, enums and initializers are no function. Comments,
string and character literals (raw strings too) and preprocessor lines are read as blanks.

Prints "path:line: function NAME is N lines (over 80)" or "path: file is N lines
(over 500)" for each offender, then a summary. The allowed ones are listed in
size_allowances.txt beside this script (or FILE), one a line, each with its reason:

    pending|one-idea  PATH [FUNCTION]  -- REASON

"pending" is what is still to split (issue 55), printed as a reminder on every run;
"one-idea" is a size that says one idea and is kept. Exits 1 when an offender is not
allowed, when an entry allows nothing any more (it is then to be removed) or when a
file's braces do not match; 0 when every offender is allowed; 2 when the table or the
list cannot be read.
"""

import pathlib
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from check_layers import SOURCES, read_table  # noqa: E402  (beside this script)

MAX_FILE_LINES = 500
MAX_FUNCTION_LINES = 80
ALLOWED = pathlib.Path(__file__).resolve().parent / "size_allowances.txt"
KINDS = ("pending", "one-idea")
ENTRY = re.compile(r"^(\S+)\s+(\S+)(?:\s+(?!--\s)(\S+))?\s+--\s+(\S.*)$")


def blanked(text: str) -> str:
    """text with its comments, literals and preprocessor lines blanked, every newline kept.

    A string literal becomes "" and a character literal '' (so that `extern "C"` still
    reads as one); a number keeps its digit separators (1'000) out of the literals' way.
    """
    out = []
    i, n = 0, len(text)
    line_start = True

    def blank(chunk: str) -> str:
        return "".join("\n" if c == "\n" else " " for c in chunk)

    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            i += 1
            line_start = True
            continue
        if c in " \t\r\f\v":
            out.append(c)
            i += 1
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text[i:j]))
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(blank(text[i:j]))
            i = j
            continue
        if c == "#" and line_start:  # a directive, with its continuation lines
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    j = n
                    break
                if text[k - 1] == "\\" or (text[k - 1] == "\r" and text[k - 2] == "\\"):
                    j = k + 1
                    continue
                j = k
                break
            out.append(blank(text[i:j]))
            i = j
            continue
        line_start = False
        if c.isalpha() or c == "_":
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if word in ("R", "u8R", "uR", "UR", "LR") and j < n and text[j] == '"':
                open_paren = text.find("(", j)
                delimiter = text[j + 1:open_paren] if open_paren >= 0 else ""
                end = text.find(")" + delimiter + '"', open_paren)
                end = n if open_paren < 0 or end < 0 else end + len(delimiter) + 2
                out.append('""' + blank(text[i + 2:end]))
                i = end
                continue
            out.append(word)
            i = j
            continue
        if c.isdigit() or (c == "." and i + 1 < n and text[i + 1].isdigit()):
            j = i + 1
            while j < n:
                if text[j] in "eEpP" and j + 1 < n and text[j + 1] in "+-":
                    j += 2
                elif text[j].isalnum() or text[j] in "_.'":
                    j += 1
                else:
                    break
            out.append(text[i:j].replace("'", "_"))
            i = j
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n) if j < n and text[j] == c else j
            out.append(c + c + blank(text[i + 2:j]))
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


TOKEN = re.compile(r"""\s*(?:([A-Za-z_]\w*)|(\d[\w.]*)|(""|'')|(::|->|\S))""")


def tokens(code: str):
    """(text, line) of every token of blanked code."""
    line = 1
    pos = 0
    for match in TOKEN.finditer(code):
        if match.lastindex is None:
            continue
        line += code.count("\n", pos, match.start(match.lastindex))
        pos = match.start(match.lastindex)
        yield match.group(match.lastindex), line


CLASS_KEYS = {"class", "struct", "union", "enum"}
# A "(" after these is no parameter list.
NOT_CALLS = {"alignas", "alignof", "__attribute__", "__declspec", "decltype", "sizeof", "noexcept",
             "requires", "throw", "static_assert", "__extension__"}
ACCESS = {"public", "private", "protected"}
INITIALIZER = ("{}", 0)  # what an initializer's braces leave in a declaration


def after_templates(head, i=0):
    """The index in head past its leading `template <...>` parts and attributes."""
    while i < len(head):
        if head[i][0] == "template" and i + 1 < len(head) and head[i + 1][0] == "<":
            depth, paren, i = 0, 0, i + 1
            while i < len(head):
                t = head[i][0]
                paren += (t == "(") - (t == ")")
                if paren == 0:
                    depth += (t == "<") - (t == ">")
                i += 1
                if depth == 0:
                    break
        elif head[i][0] == "[" and i + 1 < len(head) and head[i + 1][0] == "[":
            i = closing(head, i, "[", "]") + 1
        elif head[i][0] in ("export", "extern") and i + 1 < len(head) and head[i + 1][0] != '""':
            i += 1
        else:
            break
    return i


def is_word(token: str) -> bool:
    return bool(re.match(r"[A-Za-z_]", token))


def name_before(head, k):
    """The (qualified) name that ends just before head[k]: `f`, `Cache::load`, `A::~A`."""
    j = k - 1
    if j < 0 or not is_word(head[j][0]):
        return ""
    parts = [head[j][0]]
    j -= 1
    if j >= 0 and head[j][0] == "~":
        parts.insert(0, "~")
        j -= 1
    while j >= 1 and head[j][0] == "::" and is_word(head[j - 1][0]):
        parts[:0] = [head[j - 1][0], "::"]
        j -= 2
    return "".join(parts)


def closing(head, k, open_="(", close=")"):
    """The index of the token that closes head[k]'s bracket (len(head) if none does)."""
    depth = 0
    while k < len(head):
        depth += (head[k][0] == open_) - (head[k][0] == close)
        if depth == 0:
            return k
        k += 1
    return k


def classify(head):
    """What a "{" opens at namespace or class scope, from the tokens before it.

    One of ("namespace", ""), ("class", NAME), ("skip", "") for an enum's or an
    initializer's braces, and ("function", NAME).
    """
    i = after_templates(head)
    words = [t for t, _ in head[i:]]
    if words[:1] == ["namespace"] or words[:2] == ["inline", "namespace"] or words == ["extern", '""']:
        return "namespace", ""
    paren = angle = bracket = 0
    seen_equals = None
    class_key = class_name = None
    k = i
    while k < len(head):
        t = head[k][0]
        top = paren == 0 and bracket == 0 and angle == 0
        if top and t == "operator":
            j = k + 1
            if j + 1 < len(head) and head[j][0] == "(" and head[j + 1][0] == ")":
                j += 2
            while j < len(head) and head[j][0] != "(":
                j += 1
            scope = name_before(head, k - 1) + "::" if k > 0 and head[k - 1][0] == "::" else ""
            return "function", scope + "".join(x for x, _ in head[k:j])
        if t == "(" and top and not (k > 0 and head[k - 1][0] in NOT_CALLS):
            if seen_equals is not None:
                if head[seen_equals + 1][0] == "[":
                    return "function", name_before(head, seen_equals)  # a lambda kept in a name
                return "skip", ""
            name = name_before(head, k)
            if not name:
                return "skip", ""
            # A constructor's member initializers (`: x_(a), y_{b}`): the brace of `y_{b}`
            # is none of its body; the brace after `)` or after an initializer's is.
            end = closing(head, k)
            rest = [x for x, _ in head[end + 1:]]
            if ":" in rest and rest[-1] not in (")", "{}"):
                return "skip", ""
            return "function", name
        if t == "(":
            paren += 1
        elif t == ")":
            paren -= 1
        elif t == "[":
            bracket += 1
        elif t == "]":
            bracket -= 1
        elif paren == 0 and bracket == 0 and t == "<" and k > 0 and re.match(r"\w", head[k - 1][0]):
            angle += 1
        elif paren == 0 and bracket == 0 and t == ">" and angle > 0:
            angle -= 1
        elif top and t == "=" and seen_equals is None:
            seen_equals = k
        elif top and t in CLASS_KEYS and class_key is None:
            class_key = t
            j = k + 1
            while j < len(head):  # past `[[nodiscard]]`, `alignas(64)`, the class of `enum class`
                if head[j][0] == "[":
                    j = closing(head, j, "[", "]") + 1
                elif head[j][0] in NOT_CALLS and j + 1 < len(head) and head[j + 1][0] == "(":
                    j = closing(head, j + 1) + 1
                elif head[j][0] in ("class", "struct"):
                    j += 1
                else:
                    break
            class_name = ""
            while j < len(head) and (is_word(head[j][0]) or head[j][0] == "::") and head[j][0] != "final":
                class_name += head[j][0]
                j += 1
        k += 1
    if seen_equals is not None and seen_equals + 1 < len(head) and head[seen_equals + 1][0] == "[":
        return "function", name_before(head, seen_equals)  # `auto f = [&] {`
    if seen_equals is not None or class_key in (None, "enum"):
        return "skip", ""
    return "class", class_name


def functions(text: str):
    """(name, first line, last line) of every function defined in a C++ file's text, and
    the problems met reading it (braces that do not match)."""
    found, problems = [], []
    scopes = []  # ("namespace" | "class", name)
    head = []
    stream = list(tokens(blanked(text)))
    k = 0
    while k < len(stream):
        t, line = stream[k]
        if t == ";":
            head = []
        elif t == ":" and len(head) == 1 and head[0][0] in ACCESS:
            head = []
        elif t == "{":
            kind, name = classify(head)
            if kind in ("namespace", "class"):
                scopes.append((kind, name))
                head = []
            else:
                depth, j = 0, k
                while j < len(stream):
                    depth += (stream[j][0] == "{") - (stream[j][0] == "}")
                    if depth == 0:
                        break
                    j += 1
                if j == len(stream):
                    problems.append(f"line {line}: this brace is never closed")
                    return found, problems
                if kind == "function":
                    classes = [n for s, n in scopes if s == "class" and n]
                    first = head[0][1] if head else line
                    found.append(("::".join(classes + [name]), first, stream[j][1]))
                    head = []
                else:
                    head.append(INITIALIZER)
                k = j
        elif t == "}":
            if not scopes:
                problems.append(f"line {line}: a brace closes that was never opened")
                return found, problems
            scopes.pop()
            head = []
        else:
            head.append((t, line))
        k += 1
    if scopes:
        problems.append(f"{len(scopes)} braces are never closed")
    return found, problems


def library_files(root: pathlib.Path):
    layers, _ = read_table(root / "ARCHITECTURE.md")
    files = []
    for rooms in layers:
        for room in rooms:
            files += sorted(p for p in (root / room).rglob("*") if p.suffix in SOURCES and p.is_file())
    return files


def measure(root: pathlib.Path, files):
    """The offenders among files: (path, line, name or None, size), and reading problems."""
    offenders, problems = [], []
    for source in files:
        name = source.relative_to(root).as_posix()
        text = source.read_text(errors="replace")
        lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
        if lines > MAX_FILE_LINES:
            offenders.append((name, 1, None, lines))
        found, trouble = functions(text)
        problems += [f"{name}: {p}" for p in trouble]
        for function, first, last in found:
            if last - first + 1 > MAX_FUNCTION_LINES:
                offenders.append((name, first, function, last - first + 1))
    return offenders, problems


def read_allowed(path: pathlib.Path):
    """The entries of the allow-list: (kind, path, function or None, reason, line)."""
    entries = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        match = ENTRY.match(line.strip())
        if not match or match.group(1) not in KINDS:
            raise ValueError(f"{path.name}:{number}: not 'pending|one-idea PATH [FUNCTION] -- REASON': "
                             f"{line}")
        entries.append((match.group(1), match.group(2), match.group(3), match.group(4), number))
    return entries


def describe(offender):
    path, line, function, size = offender
    if function is None:
        return f"{path}: file is {size} lines (over {MAX_FILE_LINES})"
    return f"{path}:{line}: function {function} is {size} lines (over {MAX_FUNCTION_LINES})"


def main() -> int:
    args = sys.argv[1:]
    allowed_path = ALLOWED
    if len(args) == 3 and args[1] == "--allowed":
        allowed_path = pathlib.Path(args[2])
    elif len(args) != 1:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(args[0]).resolve()
    try:
        files = library_files(root)
        entries = read_allowed(allowed_path)
    except (OSError, ValueError) as e:
        print(f"check_sizes.py: {e}", file=sys.stderr)
        return 2
    if not files:
        print(f"check_sizes.py: no source files under {root}", file=sys.stderr)
        return 2
    offenders, problems = measure(root, files)
    used = set()
    failing = []
    for offender in offenders:
        path, _, function, _ = offender
        entry = next((e for e in entries if e[1] == path and e[2] == function), None)
        if entry is None:
            failing.append(offender)
        else:
            used.add(entry[4])
    for offender in failing:
        print(describe(offender))
    for p in problems:
        print(f"{p}: its functions cannot be measured (a brace in each branch of an #if?)")
    stale = [e for e in entries if e[4] not in used]
    for kind, path, function, _, number in stale:
        what = f"function {function} in {path}" if function else f"file {path}"
        print(f"{allowed_path.name}:{number}: {kind} entry for {what} matches no offender any more: "
              "remove it")
    pending = [o for o in offenders if o not in failing and
               next(e for e in entries if e[1] == o[0] and e[2] == o[2])[0] == "pending"]
    if pending:
        print(f"still to split ({len(pending)}, pending in {allowed_path.name}):")
        for offender in pending:
            print(f"  {describe(offender)}")
    allowed = len(offenders) - len(failing)
    print(f"{len(files)} files checked: {len(failing)} over {MAX_FILE_LINES} lines a file or "
          f"{MAX_FUNCTION_LINES} a function and not allowed, {allowed} allowed ({len(pending)} pending), "
          f"{len(stale)} stale entries")
    return 1 if failing or stale or problems else 0


if __name__ == "__main__":
    sys.exit(main())
