"""`subscribePattern` the way Spark's Kafka source reads it: a java.util.regex.Pattern, used as
a *search* (`findFirstIn`) over the names of the cluster's non-internal topics.

Python's `re` shares most of Java's syntax (3.11 added possessive quantifiers and atomic
groups); what it lacks is rewritten here into an equivalent `re` pattern:
- `\\Q...\\E` quoting, `(?<name>...)` groups and `\\k<name>` references, `\\z` / `\\Z`, `\\G`,
  `\\e`, `\\cX`, `\\0ooo`, `\\x{h..h}`, `\\h` / `\\H` / `\\v` / `\\V` / `\\R`, and inline flags in
  the middle of a pattern (Java scopes them to the rest of the group; Python only allows
  global flags at the very start, so they become a scoped group);
- character classes with Java's extras: nested classes (union), `&&` (intersection),
  `\\p{...}` / `\\P{...}` (POSIX, java.lang.Character and Unicode classes).

A topic name only ever holds the 65 characters [a-zA-Z0-9._-] (Kafka's rule), so a character
class is evaluated exactly over that alphabet and written out as the explicit set it matches:
whatever Java class syntax selects, the same topic names match. This is why no general Java
regex engine is needed (writing one by hand would be the alternative; none exists for Python).
Differences left: `\\X` is taken as one character, and comments mode (`(?x)`) is honoured for
the whole pattern when it appears anywhere in it. A construct this cannot translate is an
error naming it, never a silent mismatch.
"""
from __future__ import annotations

import re
import string

# Kafka's legal topic name characters (org.apache.kafka.common.internals.Topic).
TOPIC_ALPHABET = string.ascii_letters + string.digits + "._-"


class JavaRegexError(ValueError):
    """The pattern is not a valid Java regex, or uses a construct this module cannot map."""


_POSIX = {
    "lower": string.ascii_lowercase, "upper": string.ascii_uppercase,
    "ascii": TOPIC_ALPHABET, "alpha": string.ascii_letters, "digit": string.digits,
    "alnum": string.ascii_letters + string.digits,
    "punct": "._-", "graph": TOPIC_ALPHABET, "print": TOPIC_ALPHABET, "blank": "",
    "cntrl": "", "xdigit": string.hexdigits, "space": "",
    # java.lang.Character classes
    "javalowercase": string.ascii_lowercase, "javauppercase": string.ascii_uppercase,
    "javawhitespace": "", "javamirrored": "", "javaletter": string.ascii_letters,
    "javadigit": string.digits, "javaletterordigit": string.ascii_letters + string.digits,
    "javaalphabetic": string.ascii_letters, "javaidentifierignorable": "",
    "javajavaidentifierstart": string.ascii_letters + "_",
    "javajavaidentifierpart": string.ascii_letters + string.digits + "_",
    "javaunicodeidentifierstart": string.ascii_letters,
    "javaunicodeidentifierpart": string.ascii_letters + string.digits + "_",
    "javaisocontrol": "", "javadefined": TOPIC_ALPHABET, "javatitlecase": "",
    "javaspacechar": "", "javaideographic": "",
}
# Unicode general categories, restricted to the topic alphabet.
_CATEGORIES = {
    "l": string.ascii_letters, "lu": string.ascii_uppercase, "ll": string.ascii_lowercase,
    "lt": "", "lm": "", "lo": "", "lc": string.ascii_letters,
    "n": string.digits, "nd": string.digits, "nl": "", "no": "",
    "p": "._-", "pc": "_", "pd": "-", "po": ".", "ps": "", "pe": "", "pi": "", "pf": "",
    "s": "", "sm": "", "sc": "", "sk": "", "so": "", "z": "", "zs": "", "zl": "", "zp": "",
    "c": "", "cc": "", "cf": "", "co": "", "cs": "", "cn": "", "m": "", "mn": "", "mc": "",
    "me": "",
}
# Binary properties (IsAlphabetic, ...), and the scripts and blocks that hold topic characters.
_BINARY = {
    "alphabetic": string.ascii_letters, "letter": string.ascii_letters,
    "lowercase": string.ascii_lowercase, "uppercase": string.ascii_uppercase,
    "digit": string.digits, "hexdigit": string.hexdigits, "hex_digit": string.hexdigits,
    "punctuation": "._-", "whitespace": "", "white_space": "", "control": "", "ideographic": "",
    "titlecase": "", "noncharactercodepoint": "", "assigned": TOPIC_ALPHABET,
    "joincontrol": "", "join_control": "", "emoji": "", "emoji_presentation": "",
    "emoji_modifier": "", "emoji_modifier_base": "", "emoji_component": "",
    "extended_pictographic": "", "word": string.ascii_letters + string.digits + "_",
}
_SCRIPTS_AND_BLOCKS = {"latin": string.ascii_letters, "common": string.digits + "._-",
                       "basiclatin": TOPIC_ALPHABET, "basic_latin": TOPIC_ALPHABET}
_SHORTHAND = {
    "d": string.digits, "w": string.ascii_letters + string.digits + "_", "s": "", "h": "", "v": "",
}


def _property(name: str) -> str:
    """Characters of the alphabet in \\p{name}, for Java's spellings: POSIX and java.lang.Character
    classes (Alpha, javaLowerCase), categories (Lu, IsLu, gc=Lu), binary properties
    (IsAlphabetic), scripts (IsLatin, script=Latin) and blocks (InBasicLatin, block=...).
    A script or block other than those that can hold a topic character selects nothing
    (Java would also reject a misspelt one; this accepts it)."""
    key = name.strip().lower()
    if key in _POSIX:
        return _POSIX[key]
    if key in _CATEGORIES:
        return _CATEGORIES[key]
    for prefix in ("general_category=", "gc="):
        if key.startswith(prefix) and key[len(prefix):] in _CATEGORIES:
            return _CATEGORIES[key[len(prefix):]]
    for prefix in ("script=", "sc=", "block=", "blk=", "in"):
        if key.startswith(prefix) and len(key) > len(prefix):
            return _SCRIPTS_AND_BLOCKS.get(key[len(prefix):].replace(" ", ""), "")
    if key.startswith("is") and len(key) > 2:
        rest = key[2:]
        for table in (_CATEGORIES, _BINARY, _SCRIPTS_AND_BLOCKS):
            if rest in table:
                return table[rest]
        return ""
    raise JavaRegexError(f"unknown character property \\p{{{name}}}")


def _set_class(chars: set[str]) -> str:
    if not chars:
        return "(?!)"  # matches nothing, as an empty Java class intersection does
    if len(chars) == len(TOPIC_ALPHABET):
        return "[" + re.escape(TOPIC_ALPHABET) + "]"
    return "[" + "".join(re.escape(c) for c in sorted(chars)) + "]"


class _Translator:
    def __init__(self, pattern: str):
        self.p = pattern
        self.i = 0
        self.out: list[str] = []
        self.comments = "(?x" in pattern and re.search(r"\(\?[a-zA-Z]*x", pattern) is not None
        # For each open group: the inline flags switched on inside it so far, each opened as a
        # scoped group that must close at the group's end and around each '|' of it.
        self.scoped: list[list[str]] = [[]]

    def error(self, what: str) -> JavaRegexError:
        return JavaRegexError(f"{what} at position {self.i} of {self.p!r}")

    def peek(self, n: int = 0) -> str:
        j = self.i + n
        return self.p[j] if j < len(self.p) else ""

    # -- escapes shared by classes and the pattern ---------------------------------------
    def _char_escape(self) -> str | None:
        """After a backslash: a single character escape's character, or None."""
        c = self.peek()
        simple = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "a": "\a", "e": "\x1b"}
        if c in simple:
            self.i += 1
            return simple[c]
        if c == "0":
            j = self.i + 1
            digits = ""
            while j < len(self.p) and self.p[j] in "01234567" and len(digits) < 3:
                if len(digits) == 2 and int(digits[0]) > 3:
                    break
                digits += self.p[j]
                j += 1
            if not digits:
                raise self.error("illegal octal escape \\0")
            self.i = j
            return chr(int(digits, 8))
        if c == "x":
            if self.peek(1) == "{":
                end = self.p.find("}", self.i)
                if end < 0:
                    raise self.error("unclosed \\x{")
                code = self.p[self.i + 2:end]
                self.i = end + 1
            else:
                code = self.p[self.i + 1:self.i + 3]
                self.i += 3
            try:
                return chr(int(code, 16))
            except ValueError:
                raise self.error(f"illegal hexadecimal escape \\x{code}") from None
        if c == "u":
            code = self.p[self.i + 1:self.i + 5]
            self.i += 5
            try:
                return chr(int(code, 16))
            except ValueError:
                raise self.error(f"illegal unicode escape \\u{code}") from None
        if c == "c":
            ctl = self.peek(1)
            if not ctl:
                raise self.error("\\c needs a control character")
            self.i += 2
            return chr(ord(ctl) ^ 64)
        return None

    def _class_escape(self) -> set[str] | None:
        """After a backslash: the alphabet characters of a class escape (\\d, \\p{..}, ...)."""
        c = self.peek()
        low = c.lower()
        if low in _SHORTHAND:
            self.i += 1
            chars = set(_SHORTHAND[low])
            return chars if c.islower() else set(TOPIC_ALPHABET) - chars
        if low == "p":
            self.i += 1
            if self.peek() == "{":
                end = self.p.find("}", self.i)
                if end < 0:
                    raise self.error("unclosed \\p{")
                name = self.p[self.i + 1:end]
                self.i = end + 1
            else:
                name = self.peek()
                self.i += 1
            negate = c == "P"
            if name.startswith("^"):
                negate, name = not negate, name[1:]
            chars = set(_property(name))
            return set(TOPIC_ALPHABET) - chars if negate else chars
        return None

    # -- character classes ------------------------------------------------------------
    def parse_class(self) -> set[str]:
        """At '[': the set of alphabet characters the (possibly nested) class matches."""
        assert self.peek() == "["
        self.i += 1
        negate = False
        if self.peek() == "^":
            negate = True
            self.i += 1
        result: set[str] = set()
        current: set[str] = set()
        first = True
        intersect: list[set[str]] = []
        while True:
            c = self.peek()
            if c == "":
                raise self.error("unclosed character class")
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if self.comments and c in " \t\n\r\f\x0b":
                self.i += 1
                continue
            if c == "&" and self.peek(1) == "&":
                self.i += 2
                intersect.append(current)
                current = set()
                continue
            if c == "[":
                current |= self.parse_class()
                continue
            if c == "\\":
                self.i += 1
                if self.peek() == "Q":
                    end = self.p.find("\\E", self.i + 1)
                    end = len(self.p) if end < 0 else end
                    current |= set(self.p[self.i + 1:end]) & set(TOPIC_ALPHABET)
                    self.i = min(len(self.p), end + 2)
                    continue
                cls = self._class_escape()
                if cls is not None:
                    current |= cls
                    continue
                lo = self._char_escape()
                if lo is None:
                    lo = self.peek()
                    if lo.isalnum():
                        raise self.error(f"illegal or unsupported escape \\{lo} in a character class")
                    self.i += 1
            else:
                lo = c
                self.i += 1
            if self.peek() == "-" and self.peek(1) not in ("]", "", "["):
                self.i += 1
                hi = self.peek()
                if hi == "\\":
                    self.i += 1
                    hi = self._char_escape()
                    if hi is None:
                        hi = self.peek()
                        self.i += 1
                else:
                    self.i += 1
                if ord(hi) < ord(lo):
                    raise self.error(f"illegal character range {lo}-{hi}")
                current |= {ch for ch in TOPIC_ALPHABET if lo <= ch <= hi}
            else:
                current |= {lo} & set(TOPIC_ALPHABET)
        for other in intersect:
            current = other & current
        result = current
        return set(TOPIC_ALPHABET) - result if negate else result

    # -- the pattern --------------------------------------------------------------------
    def translate(self) -> str:
        p = self.p
        while self.i < len(p):
            c = p[self.i]
            if c == "\\":
                self._escape()
            elif c == "[":
                self.out.append(_set_class(self.parse_class()))
            elif c == "(":
                self._group()
            elif c == ")":
                if len(self.scoped) == 1:
                    raise self.error("unmatched closing ')'")
                self.out.append(")" * len(self.scoped.pop()) + ")")
                self.i += 1
            elif c == "|":
                flags = self.scoped[-1]
                self.out.append(")" * len(flags) + "|" + "".join(f"(?{f}:" for f in flags))
                self.i += 1
            else:
                self.out.append(c)
                self.i += 1
        if len(self.scoped) != 1:
            raise JavaRegexError(f"unclosed group in {p!r}")
        self.out.append(")" * len(self.scoped[0]))
        return "".join(self.out)

    def _escape(self) -> None:
        self.i += 1
        c = self.peek()
        if c == "":
            raise self.error("pattern ends with a backslash")
        if c == "Q":
            end = self.p.find("\\E", self.i + 1)
            end = len(self.p) if end < 0 else end
            self.out.append(re.escape(self.p[self.i + 1:end]))
            self.i = min(len(self.p), end + 2)
            return
        if c == "k" and self.peek(1) == "<":
            end = self.p.find(">", self.i)
            if end < 0:
                raise self.error("unclosed \\k<")
            self.out.append(f"(?P={self.p[self.i + 2:end]})")
            self.i = end + 1
            return
        rewrite = {"z": r"\Z", "Z": r"(?=(?:\r\n|[\n\r\x85\u2028\u2029])?\Z)", "G": r"\A",
                   "R": r"(?:\r\n|[\n\x0b\f\r\x85\u2028\u2029])", "X": r"(?s:.)"}
        if c in rewrite:
            self.out.append(rewrite[c])
            self.i += 1
            return
        if c in "AbB" or c.isdigit() and c != "0":
            self.out.append("\\" + c)
            self.i += 1
            return
        cls = self._class_escape()
        if cls is not None:
            self.out.append(_set_class(cls))
            return
        ch = self._char_escape()
        if ch is not None:
            self.out.append(re.escape(ch))
            return
        if c.isalnum():
            raise self.error(f"illegal or unsupported escape \\{c}")
        self.out.append(re.escape(c))
        self.i += 1

    def _group(self) -> None:
        p, i = self.p, self.i
        if p.startswith("(?<", i) and p[i + 3:i + 4] not in ("=", "!"):
            end = p.find(">", i)
            if end < 0:
                raise self.error("unclosed group name")
            self.out.append(f"(?P<{p[i + 3:end]}>")
            self.i = end + 1
            self.scoped.append([])
            return
        m = re.compile(r"\(\?([idmsuxUc]*)(?:-([idmsuxUc]*))?(\)|:)").match(p, i)
        if m:
            on = "".join(f for f in m.group(1) if f in "imsx")
            off = "".join(f for f in (m.group(2) or "") if f in "imsx")
            flags = on + ("-" + off if off else "")
            self.i = m.end()
            if m.group(3) == ":":
                self.out.append(f"(?{flags}:" if flags else "(?:")
                self.scoped.append([])
            elif flags:
                # Java: the flags hold to the end of the enclosing group.
                self.out.append(f"(?{flags}:")
                self.scoped[-1].append(flags)
            return
        self.out.append("(")
        self.i += 1
        self.scoped.append([])


def compile_java_regex(pattern: str) -> re.Pattern:
    """A Python pattern that finds the same topic names as `pattern` read as a Java regex."""
    try:
        translated = _Translator(pattern).translate()
    except IndexError:
        raise JavaRegexError(f"incomplete escape or class in {pattern!r}") from None
    try:
        return re.compile(translated)
    except re.error as e:
        raise JavaRegexError(f"{e} in {pattern!r}") from None


def java_regex_search(compiled: re.Pattern, topic: str) -> bool:
    """Spark's test: the pattern is found anywhere in the name (Scala's findFirstIn)."""
    return compiled.search(topic) is not None
