"""Regular-expression subscriptions (ConsumerGroupHeartbeat v1 SubscribedTopicRegex, KIP-848).

Kafka compiles them with RE2/J and matches whole topic names (``matcher(topic).matches()``); a pattern RE2/J
rejects gets INVALID_REGULAR_EXPRESSION. Python's ``re`` accepts a superset of RE2's syntax, so constructs RE2
does not have are rejected first: backreferences (``\\1``, ``(?P=name)``), lookahead / lookbehind, atomic groups
and possessive quantifiers, conditionals. The rest compiles with ``re`` and matches as RE2 does for topic names
(ASCII letters, digits, ``.``, ``_``, ``-``). Internal topics (``__consumer_offsets``, ...) never match.
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


class RegexError(ValueError):
    pass


@lru_cache(maxsize=256)
def compile_re2(pattern: str) -> re.Pattern[str]:
    where = _UNSUPPORTED.search(pattern)
    if where is not None:
        raise RegexError(f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: "
                         f"`{where.group()}` is not supported (RE2 syntax).")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise RegexError(f"SubscribedTopicRegex `{pattern}` is not a valid regular expression: {exc}.") from None
