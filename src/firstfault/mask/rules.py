"""The mechanics of the generic detectors; which words count as secret names is data
(`names:` in detectors.yaml), so is which detector runs and in what order.

Every pattern here is linear in the text: quantifiers are bounded, each match is anchored on a
literal or at the start of a token (a lookbehind), and nothing re-scans what a match consumed.
A rule takes the text and returns it with the secret parts replaced; the text around them (the
key, the flag, the quotes, the host of a URL) is kept, since a diagnosis may quote it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

class LazyPattern:
    """A regex compiled on first use: most runs mask few lines, and a short run should not pay
    for compiling every detector's pattern at start-up."""

    __slots__ = ("_source", "_flags", "_compiled")

    def __init__(self, source: str, flags: int = 0) -> None:
        self._source, self._flags, self._compiled = source, flags, None

    def __getattr__(self, name: str):
        if self._compiled is None:
            self._compiled = re.compile(self._source, self._flags)
        return getattr(self._compiled, name)

    def __getstate__(self):
        return (self._source, self._flags)

    def __setstate__(self, state) -> None:
        self._source, self._flags = state
        self._compiled = None


MASKED = "<masked>"
MAX_VALUE = 2048  # characters of one value; longer ones are cut there (the rest is masked too)

# Values that hold no secret: placeholders, references to variables, masks already applied.
_PLACEHOLDER = LazyPattern(
    r"<[A-Za-z0-9:_ .-]{1,40}>|[*xX•#.?_-]+|\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|%\([A-Za-z_]+\)[sdr]|\{[A-Za-z_]*\}|"
    r"(?i:none|null|nil|true|false|yes|no|on|off|undefined|unset|redacted|hidden|masked|empty|n/a|required|optional)")
_DOTTED_IDENTIFIER = LazyPattern(r"[a-z_][a-z0-9_]*(?:\.[a-z0-9_]+)+|[a-z_]+")


def is_placeholder(value: str) -> bool:
    return not value or _PLACEHOLDER.fullmatch(value) is not None


def credential_like(value: str, minimum: int) -> bool:
    """Whether a value of a loosely named key (`token`, `key`) looks like a credential rather
    than a word, a number or a dotted name (`layers.0.weight`)."""
    if len(value) < minimum or any(char.isspace() for char in value) or value.isdigit() and len(value) < 12:
        return False
    if _DOTTED_IDENTIFIER.fullmatch(value):
        return False
    has_digit = any(char.isdigit() for char in value)
    mixed_case = value.lower() != value and value.upper() != value
    return has_digit or mixed_case or len(value) >= 24


def name_literals(names) -> tuple[str, ...]:
    """Few lower-case words of which a text holds at least one when it holds any of `names`: a
    name matches with '_', '-', '.' or nothing between its parts, so each literal lies within one
    part; the parts that cover most names are taken first (`key` covers api_key and secret_key)."""
    parts = [[part for part in name.lower().split("_") if len(part) >= 3] or [name.lower()] for name in names]
    candidates = sorted({part for name_parts in parts for part in name_parts})
    covers = {literal: {index for index, name_parts in enumerate(parts) if any(literal in part for part in name_parts)}
              for literal in candidates}
    uncovered, chosen = set(range(len(parts))), []
    while uncovered:
        best = max(candidates, key=lambda literal: len(covers[literal] & uncovered))
        chosen.append(best)
        uncovered -= covers[best]
    return tuple(sorted(chosen))


def name_alternation(names) -> str:
    """Names as one alternation; '_' in a name stands for '_', '-', '.' or nothing."""
    parts = sorted({re.escape(name).replace("_", "[_.-]?") for name in names}, key=len, reverse=True)
    return "|".join(parts)


def _spellings(name: str) -> set[str]:
    """`api_key` as it may be written: api_key, api-key, api.key, apikey."""
    spellings = {""}
    for index, part in enumerate(name.split("_")):
        spellings = {done + joint + part for done in spellings for joint in (("",) if index == 0 else ("_", "-", ".", ""))}
    return spellings


@dataclass(frozen=True)
class SecretNames:
    """Key and flag names whose values are secrets (from the catalogue's `names:`)."""

    strong: tuple[str, ...]  # any value but a placeholder is a secret
    weak: tuple[str, ...]  # bare, only a credential-looking value is one (`token: 5` is not)
    glued: tuple[str, ...]  # may follow other letters directly (dbpassword, authtoken)
    not_secret: tuple[str, ...]  # regexes of keys that end in a name but are no secret (pad_token)
    query: tuple[str, ...]  # URL query parameters

    def __post_init__(self) -> None:
        object.__setattr__(self, "_answers", {})
        object.__setattr__(self, "_excluded", LazyPattern("(?i)(?:" + "|".join(self.not_secret) + ")") if self.not_secret else None)
        object.__setattr__(self, "_strong", LazyPattern("(?i)(?:" + name_alternation(self.strong + self.glued) + ")$"))
        object.__setattr__(self, "_weak", LazyPattern("(?i)(?:" + name_alternation(self.weak) + ")"))
        object.__setattr__(self, "_suffixes", tuple(sorted({variant for name in self.all for variant in _spellings(name)})))
        object.__setattr__(self, "_named", LazyPattern(
            "(?:^|[_.\\-]|(?<=[a-z])(?=[A-Z]))(?i:" + name_alternation(self.all) + ")$|(?i:" + name_alternation(self.glued) + ")$"))

    @property
    def all(self) -> tuple[str, ...]:
        return self.strong + self.weak + self.glued

    def names_secret(self, key: str) -> bool:
        """Whether a key's last part is a secret name (and the key is not a known exception)."""
        if not key.lower().endswith(self._suffixes):  # most keys: one C-level test
            return False
        return self._remembered("secret", key, lambda: self._named.search(key) is not None and not self.excluded(key))

    def _remembered(self, question: str, key: str, answer):
        """Answers about a key, kept: a line may name the same key thousands of times."""
        known = self._answers
        found = known.get((question, key))
        if found is None:
            if len(known) >= 4096:
                known.clear()
            found = known[(question, key)] = answer()
        return found

    def excluded(self, key: str) -> bool:
        return self._excluded is not None and self._excluded.fullmatch(key.strip("-\"'\\")) is not None

    def strength(self, key: str) -> str:
        """strong, medium (a compound key ending in a weak name: `cache_key`) or weak."""
        return self._remembered("strength", key, lambda: self._strength(key))

    def _strength(self, key: str) -> str:
        bare = key.strip("-\"'\\")
        if self._strong.search(bare):
            return "strong"
        if "_" in bare and bare.upper() == bare:  # an environment variable: HF_TOKEN, STRIPE_KEY
            return "strong"
        return "weak" if self._weak.fullmatch(bare) else "medium"

    def hides(self, key: str, value: str, strength: str | None = None) -> bool:
        """Whether `value` of `key` is to be masked."""
        if is_placeholder(value) or self.excluded(key):
            return False
        strength = strength or self.strength(key)
        if strength == "strong":
            return True
        return credential_like(value, 6 if strength == "medium" else 8)


_QUOTED_VALUE = (
    # JSON inside a string, escaped once or more: \"...\", \\\"...\\\"
    r'(?:\\\\){0,3}\\"(?:[^"\\\n]|\\[^"\n]){0,%(n)d}?(?:\\\\){0,3}\\"'
    r'|[bBrRuU]{0,2}"(?:[^"\\\n]|\\.){0,%(n)d}"'  # Python literals: b'...', r"...", u'...'
    r"|[bBrRuU]{0,2}'(?:[^'\\\n]|\\.){0,%(n)d}'"
    r"|[\"'][^\"'\n]{1,%(n)d}"  # a quote that the (cut) line never closes
) % {"n": MAX_VALUE}
_UNQUOTED_VALUE = r"[^\s\"'`,;&(){}\[\]]{1,%d}" % MAX_VALUE
_UNQUOTED_RUN = re.compile(r"[^\s\"'`,;&(){}\[\]]*")  # the rest of an unquoted value past the bound
_OPENING = LazyPattern(r"[bBrRuU]{1,2}(?=[\"'])|(?:\\\\){0,3}\\(?=\")")


def _rest_of_long_value(text: str, end: int, opening: str, closing: str) -> tuple[int, str]:
    """(end, closing quote) of a value whose match stopped at MAX_VALUE characters: an unquoted
    one runs on to its separator, a quoted one to its closing quote or the end of the line."""
    if not opening:
        return _UNQUOTED_RUN.match(text, end).end(), ""
    if closing:
        return end, closing
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    quote = opening[-1]
    found = text.find(quote, end, line_end)
    return (found + 1, quote) if found >= 0 else (line_end, "")


def _unquote(value: str) -> tuple[str, str, str]:
    """(opening quote, inner text, closing quote) of a value as matched; a literal's prefix
    (`b'`) and the backslashes of an escaped quote (`\\\"`) belong to the quote."""
    lead = _OPENING.match(value)
    prefix = lead.group(0) if lead else ""
    for quote in ('"', "'"):
        if value.startswith(quote, len(prefix)):
            opening = prefix + quote
            closing = opening if prefix.startswith("\\") else quote
            inner = value[len(opening):]
            if inner.endswith(closing) and len(inner) >= len(closing):
                return opening, inner[:-len(closing)], closing
            return opening, inner, ""
    return "", value, ""


_NEXT_ITEM = LazyPattern(r"[ \t](?=[A-Za-z_][A-Za-z0-9_.\-]{0,60}[=:])|\n")
_ENV_KEY = LazyPattern(r"[A-Z][A-Z0-9_]*")
_CODE_NAME = LazyPattern(r"[A-Za-z_][A-Za-z0-9_]{0,60}(?:\.[A-Za-z_][A-Za-z0-9_]{0,60}){0,8}")
_NESTED_KEY = LazyPattern(r"[A-Za-z_][A-Za-z0-9_.\-]{0,60}=[^=]")
# the same, read in the text where an unquoted value starts (its next character a value's too)
_NESTED_KEY_AHEAD = LazyPattern(r"[A-Za-z_][A-Za-z0-9_.\-]{0,60}=[^=\s\"'`,;&(){}\[\]]")
# the keys from there on whose values are keys too (`b=c=d=x` from b: `b=c=`; d is read)
_KEY_CHAIN = LazyPattern(r"(?:[A-Za-z_][A-Za-z0-9_.\-]{0,60}=(?=[A-Za-z_][A-Za-z0-9_.\-]{0,60}=[^=\s\"'`,;&(){}\[\]])){0,100000}")


# A key and its separator: the token right before `=`, `:`, `=>` or `:=` (in quotes or not). Which
# keys are secret is decided on the token (SecretNames.names_secret), not inside this pattern,
# which stays one cheap pass over the text.
_KEY_SEPARATOR = LazyPattern(
    r"(?<![A-Za-z0-9_.\-$%])(?P<quote>\\{0,7}[\"']?)(?P<key>[A-Za-z0-9_.\-]{1,64})"
    r"(?P<sep>\\{0,7}[\"']?[ \t]{0,4}(?:=>|:=|=|:)(?![:=])[ \t]{0,4})")
_VALUE = LazyPattern(_QUOTED_VALUE + r"|\$\{[A-Za-z_][A-Za-z0-9_]{0,100}\}|" + _UNQUOTED_VALUE)
# A flag on a command line, alone (`--token x`, `--token=x`) or as an item of a printed argv
# list (`'--token', 'x'`).
_FLAG = LazyPattern(r"(?:(?P<quote>['\"])|(?<![A-Za-z0-9_\-]))(?P<flag>--?[A-Za-z][A-Za-z0-9_\-]{0,63})(?![A-Za-z0-9_\-])")
_LISTED_VALUE = LazyPattern(r"['\"][ \t]{0,4},[ \t]{0,4}(?P<value>'(?:[^'\\\n]|\\.){0,%(n)d}'|\"(?:[^\"\\\n]|\\.){0,%(n)d}\")" % {"n": MAX_VALUE})
_FLAG_VALUE = LazyPattern(r"(?P<sep>=|[ \t]{1,4})(?P<value>" + _QUOTED_VALUE + r"|(?!-)" + _UNQUOTED_VALUE + ")")


class KeyValueRule:
    """`KEY=value`, `key: value`, `"key": "value"`, `key='value'` (also inside a string's JSON),
    where the key's last part is a secret name: `password`, `*_TOKEN`, `apiKey`, `AccountKey`.
    An unquoted value of an environment variable (`DB_PASSWORD=a b`) or of a YAML line
    (`password: a b`) runs to the next `KEY=` or the end of the line: such values may hold spaces."""

    def __init__(self, names: SecretNames) -> None:
        self.names = names
        self.literals = name_literals(names.all)

    def apply(self, text: str) -> str:
        if "=" not in text and ":" not in text:
            return text  # no key without a separator
        pieces, position, chained = [], 0, 0
        for match in _KEY_SEPARATOR.finditer(text):
            if match.start() < max(position, chained) or not self.names.names_secret(match.group("key")):
                continue  # inside a value already masked, in a chain of keys, or not a secret's key
            if _NESTED_KEY_AHEAD.match(text, match.end()):
                # `password=token=x`: the value is a key of its own, read next (not the value
                # first: 2 KB per key); so is each key of `a=b=c=...=x` whose next is one too
                chained = _KEY_CHAIN.match(text, match.end()).end()
                continue
            value = _VALUE.match(text, match.end())
            if value is None:
                continue
            replacement, end = self._replace(match, value)
            if replacement is not None:
                pieces += [text[position:match.start()], replacement]
                position = end
        if not pieces:
            return text
        pieces.append(text[position:])
        return "".join(pieces)

    def _replace(self, match: re.Match, value: re.Match) -> tuple[str | None, int]:
        opening, inner, closing = _unquote(value.group(0))
        text, separator = match.string, match.group("sep")
        following = text[value.end():value.end() + 1]
        code = following in ("(", "[") and separator.strip() == "=" and " " in separator and _CODE_NAME.fullmatch(inner)
        if not opening and (code or _NESTED_KEY.match(inner)):
            return None, 0  # source code (`password = getpass.getpass()`), or a key of its own (`credentials: key=...`)
        key = match.group("key")
        if not self.names.hides(key, inner):
            return None, 0
        end = value.end()
        if len(inner) >= MAX_VALUE:  # a value cut at the bound: its rest goes too
            end, closing = _rest_of_long_value(text, end, opening, closing)
        if not opening and self.names.strength(key) == "strong" and self._may_hold_spaces(match):
            found = _NEXT_ITEM.search(text, end, end + MAX_VALUE)
            end = found.start() if found else min(len(text), end + MAX_VALUE)
            while end > value.end() and text[end - 1] in " \t\r":
                end -= 1
        return match.group(0) + opening + MASKED + closing, end

    @staticmethod
    def _may_hold_spaces(match: re.Match) -> bool:
        key, separator = match.group("key"), match.group("sep").strip()
        if separator == "=" and _ENV_KEY.fullmatch(key):
            return True
        line_start = match.string.rfind("\n", 0, match.start()) + 1
        return separator == ":" and not match.string[line_start:match.start()].strip()


_NAME_VALUE = LazyPattern(
    r"(?i)(?P<q1>\\{0,7}[\"']?)name(?P=q1)[ \t]{0,4}[:=][ \t]{0,4}(?P<q2>\\{0,7}[\"']?)(?P<key>[A-Za-z0-9_.\-]{1,64})(?P=q2)"
    r"[ \t]{0,4},[ \t]{0,4}(?P<q3>\\{0,7}[\"']?)value(?P=q3)[ \t]{0,4}[:=][ \t]{0,4}")


class NameValueRule:
    """A secret named in one field and given in the next: `{"name": "WANDB_API_KEY", "value":
    "..."}` (a pod's or a task's environment), `{name: HF_TOKEN, value: ...}` (its YAML)."""

    literals = ("value",)

    def __init__(self, names: SecretNames) -> None:
        self.names = names

    def apply(self, text: str) -> str:
        pieces, position = [], 0
        for match in _NAME_VALUE.finditer(text):
            key = match.group("key")
            if match.start() < position or not self.names.names_secret(key):
                continue
            value = _VALUE.match(text, match.end())
            if value is None:
                continue
            opening, inner, closing = _unquote(value.group(0))
            if not self.names.hides(key, inner, "strong" if _ENV_KEY.fullmatch(key) else None):
                continue
            pieces += [text[position:value.start()], opening + MASKED + closing]
            position = value.end()
        if not pieces:
            return text
        pieces.append(text[position:])
        return "".join(pieces)


class ArgvRule:
    """Command lines: `--password X`, `--token=X`, and Python or JSON argv lists
    (`'--password', 'X'`, as DeepSpeed's launcher prints the whole command)."""

    def __init__(self, names: SecretNames) -> None:
        self.names = names
        self.literals = name_literals(names.all)

    def apply(self, text: str) -> str:
        if "-" not in text:
            return text  # no flag without a dash
        pieces, position = [], 0
        for match in _FLAG.finditer(text):
            flag = match.group("flag")
            if match.start() < position or not self.names.names_secret(flag.lstrip("-")):
                continue
            follows = None
            if match.group("quote") and text[match.end():match.end() + 1] == match.group("quote"):
                follows = _LISTED_VALUE.match(text, match.end())  # `'--token', 'x'`
            if follows is None:
                follows = _FLAG_VALUE.match(text, match.end())  # `--token x`, `"--token=x"`
            if follows is None:
                continue
            opening, inner, closing = _unquote(follows.group("value"))
            # on a command line a secret-named flag takes a secret, short or not (`--token abc`)
            if not self.names.hides(flag, inner, "strong"):
                continue
            pieces += [text[position:follows.start("value")], opening + MASKED + closing]
            position = follows.end()
        if not pieces:
            return text
        pieces.append(text[position:])
        return "".join(pieces)


_URL = LazyPattern(r"(?i)\b[a-z][a-z0-9+.\-]{1,20}://[^\s\"'`<>]{1,%d}" % (2 * MAX_VALUE))
_HOST_AFTER_AT = LazyPattern(r"[A-Za-z0-9\[]")  # a host name or an [IPv6] address starts there


class UrlCredentialsRule:
    """`scheme://user:password@host` (the password may hold '/', ':' or '@') and
    `scheme://TOKEN@host`, in any URL: databases, brokers, git remotes, proxies."""

    literals = ("://",)

    def __init__(self, names: SecretNames) -> None:
        self.names = names

    def apply(self, text: str) -> str:
        return _URL.sub(self._replace, text)

    def _replace(self, match: re.Match) -> str:
        url = match.group(0)
        start = url.index("://") + 3
        at = self._userinfo_end(url, start)
        if at < 0:
            return url
        userinfo = url[start:at]
        user, colon, password = userinfo.partition(":")
        if colon:
            if is_placeholder(password):
                return url
            return url[:start] + user + ":" + MASKED + url[at:]
        if credential_like(user, 16) and not is_placeholder(user):  # a token as the user name
            return url[:start] + MASKED + url[at:]
        return url

    @staticmethod
    def _userinfo_end(url: str, start: int) -> int:
        """The '@' that ends the user info: the last one followed by a host, before any '/'
        that follows it (a path may hold '@' too, as in `pkg@1.0`)."""
        at = url.rfind("@", start)
        while at > start:
            if _HOST_AFTER_AT.match(url, at + 1) and "/" not in url[start:at].split(":", 1)[0]:
                return at
            at = url.rfind("@", start, at)
        return -1


class QueryParameterRule:
    """`?token=…`, `&sig=…`, `access_token=…`, `X-Amz-Signature=…` in URLs and form bodies."""

    def __init__(self, names: SecretNames) -> None:
        self.names = names
        self.literals = name_literals(names.query)
        self.regex = LazyPattern(r"(?<=[?&;#])(?P<name>(?i:" + name_alternation(names.query) + r"))=(?P<value>[^&#\s\"'<>`]{1,%d})" % MAX_VALUE)

    def apply(self, text: str) -> str:
        if "=" not in text:
            return text
        return self.regex.sub(lambda m: m.group(0) if is_placeholder(m.group("value")) else f"{m.group('name')}={MASKED}", text)


_COOKIE = LazyPattern(r"(?i)\b(?:set-)?cookie[\"']?[ \t]{0,4}[:=][ \t]{0,4}[\"']?(?P<pairs>[^\n\"']{1,%d})" % (2 * MAX_VALUE))
_COOKIE_PAIR = LazyPattern(r"(?P<name>[^=;,\s]{1,256})=(?P<value>[^;,\s]{1,%d})" % MAX_VALUE)
_COOKIE_ATTRIBUTES = {"path", "domain", "expires", "max-age", "samesite", "secure", "httponly", "priority", "partitioned", "version", "comment"}


class CookieRule:
    """`Cookie: a=1; session=…` and `Set-Cookie: session=…; Path=/`: every value but the
    attributes (Path, Domain, Expires...)."""

    literals = ("cookie",)

    def __init__(self, names: SecretNames) -> None:
        self.names = names

    def apply(self, text: str) -> str:
        return _COOKIE.sub(self._replace, text)

    def _replace(self, match: re.Match) -> str:
        pairs = _COOKIE_PAIR.sub(
            lambda pair: pair.group(0) if pair.group("name").lower() in _COOKIE_ATTRIBUTES or is_placeholder(pair.group("value"))
            else f"{pair.group('name')}={MASKED}", match.group("pairs"))
        return match.group(0)[:match.start("pairs") - match.start()] + pairs


_TOKEN = LazyPattern(r"(?<![A-Za-z0-9+/_\-.])[A-Za-z0-9+/_\-]{32,}={0,2}(?![A-Za-z0-9+/=_\-])")
_LOWER_RUN = LazyPattern(r"[a-z]{11,}")
_UPPER_RUN = LazyPattern(r"[A-Z]{11,}")


def looks_random(token: str, names: SecretNames | None = None) -> bool:
    """A token of unknown format that reads as random: upper case, lower case and digits mixed
    the way base62/base64 output mixes them, not the way identifiers (CamelCase, SNAKE_CASE,
    mangled C++ names), paths and hex digests (git SHAs, checkpoint hashes) do. Base64 of a JSON
    object (`eyJ...`) is judged by its keys: DeepSpeed's `--world_info` is hosts and GPUs."""
    if token.startswith("_Z"):
        return False
    if token.startswith("eyJ") and names is not None:
        keys = _json_keys(token)
        if keys is not None:  # at any depth: a docker config's `auths` hold an `auth`
            return any(names.names_secret(key) for key in keys)
    letters = [char for char in token if char.isalnum()]
    if len(letters) < 24 or _LOWER_RUN.search(token) or _UPPER_RUN.search(token):
        return False
    upper = sum(char.isupper() for char in letters)
    digits = sum(char.isdigit() for char in letters)
    if not upper or not digits or upper == len(letters) - digits:
        return False
    # transitions that involve an upper-case letter: ~0.49 per pair in random base62, ~0.1-0.25 in identifiers
    changes = sum(1 for left, right in zip(letters, letters[1:])
                  if left.isupper() != right.isupper() and not (left.isdigit() and right.isdigit()))
    return changes >= 0.3 * (len(letters) - 1)


def _json_keys(token: str) -> list[str] | None:
    """The keys of a base64-encoded JSON object, or None when the token is not one."""
    import base64
    import binascii
    import json

    try:
        document = json.loads(base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_" if "-" in token or "_" in token else None))
    except (ValueError, binascii.Error, RecursionError):
        return None
    if not isinstance(document, dict):
        return None
    keys, pending = [], [document]
    while pending and len(keys) < 1000:
        item = pending.pop()
        if isinstance(item, dict):
            keys += [str(key) for key in item]
            pending += list(item.values())
        elif isinstance(item, list):
            pending += item
    return keys


class EntropyRule:
    """Tokens of 32+ characters that look random, where no format is known."""

    literals = ()

    def __init__(self, names: SecretNames) -> None:
        self.names = names

    def apply(self, text: str) -> str:
        text = _TOKEN.sub(lambda m: MASKED if looks_random(m.group(0), self.names) or self._holds_secret(m.group(0))
                          else m.group(0), text)
        if "/" not in text:
            return text
        # a URL path segment (a download link's or an unknown webhook's token): the token
        # pattern above reads a whole path as one token, which no path resembles
        return _PATH_SEGMENT.sub(lambda m: MASKED if looks_random(m.group(0)) else m.group(0), text)


    def _holds_secret(self, token: str) -> bool:
        """A base64 blob that decodes to text holding a secret (`password=...` in a config dump):
        masked whole, whatever the blob looks like."""
        decoded = _base64_text(token)
        if decoded is None or decoded == token:
            return False
        return KeyValueRule(self.names).apply(decoded) != decoded or ArgvRule(self.names).apply(decoded) != decoded


def _base64_text(token: str) -> str | None:
    """The text a base64 token decodes to (mostly printable), else None."""
    import base64
    import binascii

    if len(token) % 4 == 1 or len(token) > 8192:
        return None
    try:
        raw = base64.b64decode(token + "=" * (-len(token) % 4), altchars=b"-_" if "-" in token or "_" in token else None)
        text = raw.decode("utf-8")
    except (ValueError, binascii.Error, UnicodeDecodeError):
        return None
    printable = sum(char.isprintable() or char in "\n\t" for char in text)
    return text if text and printable >= 0.95 * len(text) else None


_PATH_SEGMENT = LazyPattern(r"(?<=/)[A-Za-z0-9_\-]{24,256}(?=[/?#\s\"'),]|$)")


RULES = {
    "key-value": KeyValueRule,
    "argv": ArgvRule,
    "name-value": NameValueRule,
    "url-credentials": UrlCredentialsRule,
    "query-parameters": QueryParameterRule,
    "cookie": CookieRule,
    "entropy": EntropyRule,
}
