"""Regular-expression subscriptions (ConsumerGroupHeartbeat v1 SubscribedTopicRegex, KIP-848).

Kafka compiles them with RE2/J and matches whole topic names (``matcher(topic).matches()``); a pattern RE2/J
rejects gets INVALID_REGULAR_EXPRESSION. Python's ``re`` accepts a superset of RE2's syntax, so constructs RE2
does not have are rejected first: backreferences (``\\1``, ``(?P=name)``), lookahead / lookbehind, atomic groups
and possessive quantifiers, conditionals. The rest compiles with ``re`` and matches as RE2 does for topic names
(ASCII letters, digits, ``.``, ``_``, ``-``). Internal topics (``__consumer_offsets``, ...) never match.

RE2 matches in linear time; Python's backtracking engine does not: ``(a+)+$`` against a 249-character topic name
would hold the event loop for ever. So a repeated group (``*``, ``+``, ``{n,}``) whose body itself repeats or
alternates -- the shapes that backtrack exponentially -- is refused too (INVALID_REGULAR_EXPRESSION), a
deliberate difference from Kafka for patterns like ``(ab+)+``. ``(foo|bar)-.*`` and ``(abc)+`` are fine. More
than ``MAX_UNBOUNDED`` unbounded repetitions (``.*.*.*.*x`` backtracks in O(n^4): 0.8 s on one 249-character
name) are refused as well. Each (regex, topic) pair is matched once and remembered (the coordinator's cache).
"""
from __future__ import annotations

import re
from functools import lru_cache

_UNSUPPORTED = re.compile(
    r"\\[1-9]"                 # backreference
    r"|\(\?P="                 # named backreference
    r"|\(\?<?[=!]"             # lookahead / lookbehind
    r"|\(\?>"                  # atomic group
    r"|\(\?\("                 # conditional
    r"|[*+?}]\+"               # possessive quantifier
)


MAX_UNBOUNDED = 3
_UNBOUNDED = re.compile(r"\\.|\[(?:\\.|[^\]])*\]|([*+]|\{\d*,\})")


def _unbounded(pattern: str) -> int:
    return sum(1 for m in _UNBOUNDED.finditer(pattern) if m.group(1))


class RegexError(ValueError):
    pass


def _nested_repetition(pattern: str) -> str | None:
    """The first repeated group whose body repeats or alternates, or None."""
    stack: list[tuple[int, bool]] = []   # (start, body repeats or alternates)
    i, n = 0, len(pattern)
    risky = False
    while i < n:
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if c == "[":   # a character class: skip to its end
            j = i + 1
            if j < n and pattern[j] == "^":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 2 if pattern[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            stack.append((i, risky))
            risky = False
        elif c == ")" and stack:
            start, outer = stack.pop()
            nxt = pattern[i + 1] if i + 1 < n else ""
            repeated = (nxt != "" and nxt in "*+") or (nxt == "{" and re.match(r"\{\d*,\d*\}|\{\d+\}", pattern[i + 1:]) is not None
                                       and not re.match(r"\{[01]\}|\{0?,1\}", pattern[i + 1:]))
            if repeated and risky:
                return pattern[start:i + 2]
            risky = outer or risky or repeated
        elif c in "*+|" or (c == "{" and re.match(r"\{\d*,?\d*\}", pattern[i:])):
            risky = True
        i += 1
    return None


@lru_cache(maxsize=256)
def compile_re2(pattern: str) -> re.Pattern[str]:
    nested = _nested_repetition(pattern)
    if nested is not None:
        raise RegexError(f"SubscribedTopicRegex `{pattern}` is not supported: `{nested}` repeats a group that "
                         f"repeats or alternates itself (kafkalite matches without RE2's linear-time engine).")
    if _unbounded(pattern) > MAX_UNBOUNDED:
        raise RegexError(f"SubscribedTopicRegex `{pattern}` is not supported: more than {MAX_UNBOUNDED} unbounded "
                         f"repetitions (kafkalite matches without RE2's linear-time engine).")
    # character classes out of the way (escapes kept): `[*+]` is not a possessive quantifier
    bare = _UNBOUNDED.sub(lambda m: m.group(0) if not m.group(0).startswith("[") else "C", pattern)
    where = _UNSUPPORTED.search(bare)
    if where is not None:
        raise RegexError(f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: "
                         f"`{where.group()}` is not supported (RE2 syntax).")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise RegexError(f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {exc}.") from None
