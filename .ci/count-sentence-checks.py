#!/usr/bin/env python3
"""Counts the inline sentence checks in Tests/ and fails above the limit: wording lives in golden
files (a change of words is one diff there), and tests compare codes, statuses and values. The
limit is a ratchet: the count as it stands, lowered as checks move out, to reach 40 (issue 53).

What counts, exactly. In every Tests/**/*.swift file, each `#expect(...)` and `#require(...)`
is read with its whole argument list (nested brackets and string literals skipped correctly);
its condition is the first argument, plus the body of a trailing or `throws:` closure (the
`#expect { ... } throws: { error in ... }` form, whose closure is the check). The macro is one
inline sentence check when its condition both

  - compares with a string literal ("...", #"..."#, or multi-line) that holds a sentence:
    three words of letters in a row, separated by single spaces
    (`[A-Za-z']+ [A-Za-z']+ [A-Za-z']+`; an interpolation counts as a break), where "compares
    with" means the literal is the argument of `.contains(`, `.hasPrefix(`, `.hasSuffix(` or
    `.starts(with:`, a side of `==` or `!=`, or an element of an array literal that is one.

A literal that is only an argument of something else (a SQL query run, a count of matches, a
file name) is not a sentence check.

Nothing else is looked at: not the subject compared (stderr, reason, a rendered line, a JSON
value: any of them compared with words is wording), not the comment argument of a macro (it
is a message, not a check), not string literals outside #expect/#require (a golden file's
input, a fixture). A check that compares many sentences in one `==` (an array literal) counts
once. `--list` prints each counted check as `path:line`.
"""
import os, re, sys

LIMIT = 40
GOAL = 40
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests")
SENTENCE = re.compile(r"[A-Za-z']+ [A-Za-z']+ [A-Za-z']+")
MACRO = re.compile(r"#(expect|require)\b")
CLOSE = {"(": ")", "[": "]", "{": "}"}


def read_string(text, i):
    """Reads the string literal starting at text[i] (at its `#`s or quote); returns (literal
    contents with interpolations replaced by a newline, index after it)."""
    hashes = 0
    while text[i + hashes] == "#":
        hashes += 1
    j = i + hashes
    multi = text.startswith('"""', j)
    quote = '"""' if multi else '"'
    j += len(quote)
    end = quote + "#" * hashes
    escape = "\\" + "#" * hashes
    out = []
    while j < len(text):
        if text.startswith(end, j):
            return "".join(out), j + len(end)
        if text.startswith(escape, j):
            k = j + len(escape)
            if k < len(text) and text[k] == "(":
                # An interpolation: skip its expression (brackets and strings in it too).
                depth, k = 1, k + 1
                while k < len(text) and depth:
                    c = text[k]
                    if c == '"' or (c == "#" and re.match(r'#+"', text[k:])):
                        _, k = read_string(text, k)
                        continue
                    depth += c == "("
                    depth -= c == ")"
                    k += 1
                out.append("\n")
                j = k
                continue
            out.append(text[k:k + 1])
            j = k + 1
            continue
        out.append(text[j])
        j += 1
    return "".join(out), j


def group(text, i):
    """From the opening bracket at text[i]: (top-level pieces split at commas, each as
    (code with literals blanked, [literals]), index after the closing bracket)."""
    stack = [CLOSE[text[i]]]
    j = i + 1
    pieces, code, literals = [], [], []
    while j < len(text) and stack:
        c = text[j]
        if c == '"' or (c == "#" and re.match(r'#+"', text[j:])):
            literal, j = read_string(text, j)
            literals.append(literal)
            code.append('""')
            continue
        if text.startswith("//", j):
            j = text.find("\n", j)
            j = len(text) if j < 0 else j
            continue
        if c in CLOSE:
            stack.append(CLOSE[c])
        elif stack and c == stack[-1]:
            stack.pop()
            if not stack:
                break
        elif c == "," and len(stack) == 1:
            pieces.append(("".join(code), literals))
            code, literals = [], []
            j += 1
            continue
        code.append(c)
        j += 1
    pieces.append(("".join(code), literals))
    return pieces, j + 1


def compared_sentence(code, literals):
    """Whether one of `literals` (blanked to `""` in `code`, in order) holds a sentence and is
    an operand of a comparison: the argument of contains/hasPrefix/hasSuffix/starts(with:), a
    side of == or !=, or an element of an array literal that is one."""
    for k, m in enumerate(re.finditer(r'""', code)):
        if k >= len(literals) or not SENTENCE.search(literals[k]):
            continue
        before, after = code[:m.start()], code[m.end():]
        if (re.search(r"(\.contains|\.hasPrefix|\.hasSuffix)\(\s*$|\.starts\(with:\s*$|(==|!=)\s*$", before)
                or re.match(r"\s*(==|!=)", after)
                or re.search(r"(==|!=)\s*\[[^\]]*$", before)
                or re.match(r"[^\[]*\]\s*(==|!=)", after)):
            return True
    return False


def checks(text):
    """Yields (offset, is_sentence_check) for each #expect/#require in text."""
    for m in MACRO.finditer(text):
        i = m.end()
        while i < len(text) and text[i] in " \t":
            i += 1
        conditions = []
        if i < len(text) and text[i] == "(":
            pieces, i = group(text, i)
            first = pieces[0]
            if first[0].lstrip().startswith("throws:") or first[0].lstrip().startswith("performing:"):
                # `#expect(throws: E.self) { ... }`: the closure performs, it checks nothing;
                # a `throws: { error in ... }` argument is a check.
                conditions += [p for p in pieces if re.match(r"\s*throws:\s*\{", p[0])]
            else:
                conditions.append(first)
        # Trailing closures: `{ ... } throws: { error in ... }` checks in its `throws:` closure;
        # the unlabelled one performs.
        while True:
            k = i
            while k < len(text) and text[k] in " \t\n":
                k += 1
            label = re.match(r"(\w+):[ \t]*\{", text[k:])
            if label and label.group(1) == "throws":
                pieces, i = group(text, k + label.end() - 1)
                conditions.append((",".join(p[0] for p in pieces), [s for p in pieces for s in p[1]]))
            elif k < len(text) and text[k] == "{" and "\n" not in text[i:k]:
                _, i = group(text, k)
            else:
                break
        hit = any(compared_sentence(code, literals) for code, literals in conditions)
        yield m.start(), hit


def main():
    listing = "--list" in sys.argv
    count = 0
    for folder, _, files in sorted(os.walk(ROOT)):
        for name in sorted(files):
            if not name.endswith(".swift"):
                continue
            path = os.path.join(folder, name)
            text = open(path, encoding="utf-8").read()
            for offset, hit in checks(text):
                if hit:
                    count += 1
                    if listing:
                        print(f"{os.path.relpath(path)}:{text.count(chr(10), 0, offset) + 1}")
    print(f"sentence checks: {count} inline in Tests (limit {LIMIT}, goal {GOAL}; wording goes in golden files)")
    sys.exit(1 if count > LIMIT else 0)


if __name__ == "__main__":
    main()
