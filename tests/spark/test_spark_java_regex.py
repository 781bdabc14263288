"""subscribePattern read as Spark reads it: a java.util.regex.Pattern searched in each topic
name. Every case below is what java.util.regex answers (checked against Java 17's Pattern)."""
import pytest

from gregor.spark.java_regex import JavaRegexError, compile_java_regex

CASES = [
    # (pattern, topic, Java's Pattern.compile(p).matcher(topic).find())
    ("events", "old-events-2", True),            # a search, not a full match
    ("^events$", "old-events-2", False),
    ("ev\\Q.x*\\E", "ev.xx", False),              # quoted text: '*' is no quantifier
    ("ev\\Q.x\\E", "evAx", False),                # '.' quoted: a literal dot
    ("ev\\Q.x\\E", "ev.x", True),
    ("(?<env>prod|dev)-\\k<env>", "prod-prod", True),
    ("(?<env>prod|dev)-\\k<env>", "prod-dev", False),
    ("[a-z&&[^aeiou]]+\\z", "xyz", True),         # class intersection
    ("^[a-z&&[^aeiou]]+$", "xaz", False),
    ("^\\p{Alpha}+-\\d+$", "orders-12", True),    # POSIX class
    ("^\\p{Lower}+$", "Orders", False),
    ("^\\p{IsLatin}+\\P{L}", "ab1", True),        # Unicode script and negated category
    ("\\p{InGreek}", "alpha", False),
    ("^[\\w&&[^_]]+$", "a_b", False),
    ("^[a-c[x-z]]+$", "axc", True),               # nested class: union
    ("a(?i)b|c", "C", True),                       # inline flag to the end of the group
    ("a(?i)b|c", "aB", True),
    ("(?i)ORDERS", "orders", True),
    ("x*+x", "xxx", False),                        # possessive quantifier
    ("(?>ab|a)c", "ac", True),                     # atomic group
    ("^\\x{61}\\u0062\\0143$", "abc", True),
    ("t\\Z", "t", True),
    ("\\Gabc", "xabc", False),                     # \G: where the search starts
    ("[^.]+\\.[^.]+", "a.b", True),
]


@pytest.mark.parametrize("pattern, topic, found", CASES)
def test_java_regex_search(pattern, topic, found):
    assert (compile_java_regex(pattern).search(topic) is not None) is found


@pytest.mark.parametrize("bad", ["(", "[a-", "a\\", "\\y", "[b-a]", "\\p{NoSuchProperty}"])
def test_invalid_or_unsupported_patterns_are_errors(bad):
    with pytest.raises(JavaRegexError):
        compile_java_regex(bad)


_JAVA_CHECK = """
import java.util.regex.*;
import java.nio.file.*;
public class Check {
  public static void main(String[] a) throws Exception {
    for (String line : Files.readAllLines(Paths.get(a[0]))) {
      String[] f = line.split("\\t", -1);
      try { System.out.println(Pattern.compile(f[0]).matcher(f[1]).find()); }
      catch (PatternSyntaxException e) { System.out.println("error"); }
    }
  }
}
"""


def _random_patterns(rng, n):
    atoms = ["a", "b", "-", "\\.", ".", "\\d", "\\w", "[a-c]", "[^b]", "[a-z&&[^b-y]]",
             "\\p{Lower}", "\\p{IsDigit}", "\\P{L}", "\\Qa.\\E", "[a[0-2]]", "(?i)B", "\\x41"]
    quants = ["", "", "*", "+", "?", "{1,2}", "*+", "??"]
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rng.randint(1, 4)):
            atom = rng.choice(atoms)
            if rng.random() < 0.2:
                atom = f"(?:{atom}|{rng.choice(atoms)})"
            parts.append(atom + rng.choice(quants))
        pattern = "".join(parts)
        if rng.random() < 0.3:
            pattern = "^" + pattern
        if rng.random() < 0.3:
            pattern += "$"
        out.append(pattern)
    return out


def test_agrees_with_java_on_random_patterns(tmp_path):
    """Differential check against java.util.regex (the JDK Spark runs on): random patterns
    of the supported constructs over random topic names, one JVM for all of them."""
    import random
    import shutil
    import subprocess
    java = shutil.which("java")
    if java is None:
        pytest.skip("needs a Java runtime (as Spark does)")
    rng = random.Random(24)
    names = ["".join(rng.choice("abAB01._-") for _ in range(rng.randint(1, 6))) for _ in range(40)]
    pairs = [(p, rng.choice(names)) for p in _random_patterns(rng, 400)] + \
            [(p, t) for p, t, _ in CASES]
    (tmp_path / "Check.java").write_text(_JAVA_CHECK)
    (tmp_path / "cases.tsv").write_text("".join(f"{p}\t{t}\n" for p, t in pairs))
    out = subprocess.run([java, str(tmp_path / "Check.java"), str(tmp_path / "cases.tsv")],
                         capture_output=True, text=True, timeout=120, check=True).stdout.split()
    assert len(out) == len(pairs)
    for (pattern, topic), expected in zip(pairs, out):
        try:
            got = str(compile_java_regex(pattern).search(topic) is not None).lower()
        except JavaRegexError:
            got = "error"
        assert got == expected, (pattern, topic)
