"""What a secret looks like: the credential shapes the redaction finds, and the randomness
test of a value assigned to a secret-looking name.

Kinds, in the order they are applied (``PATTERN_DOCS`` describes each):

* ``gcp_service_account``: the ``private_key_id`` and ``private_key`` fields of a
  service-account JSON (quoted keys, as the JSON file, a Python dict repr or escaped JSON);
* ``private_key``: PEM private key blocks (RSA, EC, OPENSSH, PKCS#8, encrypted, PGP), with
  real or ``\\n``-escaped newlines; an unterminated block is cut at the end of its body;
* ``aws_access_key``: ``AKIA``/``ASIA``/``ABIA``/``ACCA`` + 16 upper-case letters or digits;
* ``aws_secret_key``: 40 base64 characters assigned to ``aws_secret_access_key``,
  ``SecretAccessKey``, ... (``=`` or ``:``, quoted or not);
* ``anthropic_key`` (``sk-ant-…``), ``openai_key`` (``sk-proj-…``, ``sk-svcacct-…``,
  ``sk-admin-…``, legacy ``sk-`` + 32+ letters/digits), ``hf_token`` (``hf_`` + 34
  letters), ``github_token`` (``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` + 36,
  ``github_pat_…``), ``slack_token`` (``xox[abeprs]-<digits>-…``), ``slack_webhook``,
  ``jwt`` (``eyJ….eyJ….…``), ``bearer_token`` (a token with digits after ``Bearer``, as the
  value of an ``Authorization`` header or of a name whose word is ``auth``, or a HAR
  header's name/value pair);
* ``url_password``: ``scheme://user:password@host`` keeps the user and the host;
* user ``extra_patterns`` (whole match replaced), in their given order;
* ``secret_assignment``: a value of 16+ characters assigned (``=``/``:``, quoted or not,
  type annotation allowed) to a name containing ``api_key``, ``secret``, ``token``,
  ``password``/``passwd``/``pwd``, ``access_key``, ``private_key`` or ``credential``, or
  stored as the hook value of a variable so named, when it looks random: it mixes three of
  lower case, upper case, digits and symbols (``+/=!@#$%^&*~``), or has 32+ characters with
  letters and digits, its Shannon entropy is at least 3 bits per character, and it is not
  a dotted name (``settings.SECRET_KEY``). Candidates are found by one regex pass; the
  randomness test runs in Python on the distinct candidates only. Every occurrence of an
  accepted value, in any redacted column of any table, is replaced (only the value: the
  name and the quotes stay).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

PLACEHOLDER = "<REDACTED:{kind}>"
SECRET_ASSIGNMENT = "secret_assignment"
KIND = re.compile(r"^[a-z][a-z0-9_]*$")

_Q = r"""\\*["']"""  # a quote, possibly escaped (once or more: JSON inside JSON)
# A PEM body's character (base64, line breaks real or escaped, and the headers' ``Proc-Type:
# 4,ENCRYPTED``). Dashes come in runs of at most four, so a body never runs into the five
# dashes of the next ``-----BEGIN``: a text of many headers and no ``-----END`` is read once,
# where a body that could hold them had each header's search run to the text's end (a
# megabyte of repeated headers took over a minute to redact).
_PEM_CHAR = r"""(?:[A-Za-z0-9+/=\s:,.()]|\\+[nrt])"""
_PEM_BODY = rf"""(?:{_PEM_CHAR}|-{{1,4}}{_PEM_CHAR})"""
_VALUE_CHARS = r"A-Za-z0-9+/=_.~!@#$%^&*-"
# A bearer token: at least two digits among token characters, then eight more (random
# tokens have digits; words and paths seldom do)
_TOKEN = r"(?:[A-Za-z._~+/-]*[0-9]){2,}[A-Za-z0-9._~+/-]{8,}=*"
_NAME_WORDS = (
    r"api[_-]?key|secret|token|passw(?:or)?d|pwd|access[_-]?key|private[_-]?key|credentials?"
)
_SECRET_NAME = rf"(?i:[A-Za-z0-9_-]*(?:{_NAME_WORDS})[A-Za-z0-9_-]*)"


@dataclass(frozen=True)
class Pattern:
    """``needs``: a cheap regex (literals, same case rules) that every match of ``regex``
    contains, so a text without it is skipped before ``regex`` runs; the regex itself when
    none is known (a user's pattern)."""

    kind: str
    regex: str
    replacement: str  # may use the regex's numbered groups: ${1}
    needs: str | None = None

    @property
    def required(self) -> str:
        return self.regex if self.needs is None else self.needs


def whole(kind: str, regex: str, needs: str | None = None) -> Pattern:
    return Pattern(kind, regex, PLACEHOLDER.format(kind=kind), needs)


def _keep(kind: str, regex: str, needs: str, after: bool = False) -> Pattern:
    """Group 1 (and group 2 when ``after``) are kept around the placeholder."""
    tail = "${2}" if after else ""
    return Pattern(kind, regex, "${1}" + PLACEHOLDER.format(kind=kind) + tail, needs)


BUILTIN_PATTERNS: tuple[Pattern, ...] = (
    _keep(
        "gcp_service_account",
        rf"({_Q}private_key_id{_Q}\s*:\s*{_Q})[0-9a-f]{{40}}",
        needs="private_key_id",
    ),
    _keep(
        "gcp_service_account",
        rf"({_Q}private_key{_Q}\s*:\s*{_Q})-----BEGIN PRIVATE KEY-----{_PEM_BODY}*?"
        r"-----END PRIVATE KEY-----(?:\\+n|\n)?",
        needs="-----BEGIN PRIVATE KEY-----",
    ),
    whole(
        "private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?:"
        rf"{_PEM_BODY}*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"|(?:[A-Za-z0-9+/=\r\n]|\\+[nr])*)",
        needs="-----BEGIN",
    ),
    whole("aws_access_key", r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b", "AKIA|ASIA|ABIA|ACCA"),
    _keep(
        "aws_secret_key",
        r"((?i:aws[_-]?secret[_-]?(?:access[_-]?)?key|secret[_-]?access[_-]?key)"
        rf"(?:{_Q})?\s*[:=]\s*(?:{_Q})?)[A-Za-z0-9/+]{{40}}([^A-Za-z0-9/+=]|$)",
        needs="(?i:secret)",  # both names have it; (?i) as the pattern: ſ is an s
        after=True,
    ),
    whole("anthropic_key", r"\bsk-ant-[A-Za-z0-9_-]{32,}", "sk-ant-"),
    whole(
        "openai_key",
        r"\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{32,}|[A-Za-z0-9]{32,})",
        "sk-",
    ),
    whole("hf_token", r"\bhf_[A-Za-z]{34}\b", "hf_"),
    whole(
        "github_token",
        r"\b(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59})\b",
        "gh[pousr]_|github_pat_",
    ),
    whole("slack_token", r"\bxox[abeprs]-[0-9]{8,13}-[A-Za-z0-9-]{8,}", "xox[abeprs]-"),
    # a JSON Web Token: base64url header and payload (both JSON objects: ``eyJ``), signature
    whole("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}", "eyJ"),
    # only as the value of an Authorization header, or of a name whose word is auth
    # (auth_header, x-authorization; not author, oauth_flow), and only a token with digits in
    # it: "bearer" is also a word, a column's value, a prose phrase. The name may be quoted
    # or indexed, the value an f-string or a JS template; a HAR or Postman header is a
    # name/value pair.
    _keep(
        "bearer_token",
        r"((?i:\b(?:[a-z0-9]+[_.-])*auth(?:orization)?(?:[_.-][a-z0-9]+)*)(?:\\*[\"'`\]])*"
        r"[ \t]*(?:=>|[:=,])[ \t]*[fbrFBR]{0,2}(?:\\*[\"'`])?(?i:bearer)[ \t]+)" + _TOKEN,
        needs="(?i:bearer)",
    ),
    _keep(
        "bearer_token",
        rf"((?i:{_Q}name{_Q}\s*:\s*{_Q}authorization{_Q}\s*,\s*{_Q}value{_Q}\s*:\s*{_Q}"
        r"bearer)[ \t]+)" + _TOKEN,
        needs="(?i:bearer)",
    ),
    whole(
        "slack_webhook",
        r"https://hooks\.slack\.com/services/T[A-Z0-9]{8,}/B[A-Z0-9]{8,}/[A-Za-z0-9]{24}",
        r"https://hooks\.slack\.com/services/T",
    ),
    Pattern(
        "url_password",
        r"""(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@"'\\<>]*:)[^\s:/@"'\\<>${*][^\s:/@"'\\<>]*@""",
        "${1}<REDACTED:url_password>@",
        r"://\S*@",  # everything between the scheme and the @ is not white space
    ),
)

# Candidates for secret_assignment: name, optional closing quote, optional annotation,
# ``=`` or ``:``, optional opening quote, the value.
ASSIGNMENT = (
    rf"{_SECRET_NAME}(?:{_Q})?\s*(?::\s*[A-Za-z_][A-Za-z0-9_.\[\]]*\s*)?[:=]\s*(?:{_Q})?"
    rf"(?P<value>[{_VALUE_CHARS}]{{16,}})"
)
ASSIGNMENT_PY = re.compile(ASSIGNMENT)
# What every ASSIGNMENT match contains: a text without it is not searched (the leading
# ``[A-Za-z0-9_-]*`` of the name leaves the full regex no literal to skip ahead by).
ASSIGNMENT_NEEDS = f"(?i:{_NAME_WORDS})"
# ``(?i)`` folds case by Unicode's rules, which keeps the regex engine from searching for
# the words as literals: it runs ≈ 2× slower. Folded by ASCII's rules the words are
# literals again, and only two characters outside ASCII fold to an ASCII letter (``ſ`` to
# s, the Kelvin sign to k: the test checks every character). A text holding neither
# matches ``ASSIGNMENT_NEEDS`` exactly when it matches ``ASSIGNMENT_NEEDS_ASCII``; one
# holding either is searched in full.
ASSIGNMENT_NEEDS_ASCII = f"(?i-u:{_NAME_WORDS})"
FOLDS_TO_ASCII = "[\u017f\u212a]"
SECRET_NAME_FULL = rf"^{_SECRET_NAME}$"
JSON_STRING_VALUE = rf'^"[{_VALUE_CHARS}]{{16,}}"$'
_SYMBOLS = frozenset("+/=!@#$%^&*~")
_DOTTED_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+$")

PATTERN_DOCS: dict[str, str] = {
    "gcp_service_account": "private_key_id and private_key fields of a GCP service-account JSON",
    "private_key": "PEM private key blocks (RSA, EC, OpenSSH, PKCS#8, encrypted, PGP)",
    "aws_access_key": "AWS access key ids (AKIA…, ASIA…)",
    "aws_secret_key": "AWS secret access keys assigned to aws_secret_access_key and the like",
    "anthropic_key": "Anthropic API keys (sk-ant-…)",
    "openai_key": "OpenAI API keys (sk-…, sk-proj-…)",
    "hf_token": "Hugging Face tokens (hf_…)",
    "github_token": "GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)",
    "slack_token": "Slack tokens (xoxb-, xoxp-, …)",
    "slack_webhook": "Slack incoming-webhook URLs",
    "jwt": "JSON Web Tokens (eyJ….eyJ….…)",
    "bearer_token": "HTTP bearer tokens (Authorization: Bearer …; the header kept)",
    "url_password": "passwords in URLs (scheme://user:password@host; user and host kept)",
    SECRET_ASSIGNMENT: "random-looking values (16+ characters) assigned to names like api_key, "
    "secret, token or password",
}


def looks_secret(value: str) -> bool:
    """The randomness test of a secret_assignment candidate value (see the module doc)."""
    if len(value) < 16:
        return False
    if _DOTTED_NAME.match(value) and not value.startswith("eyJ"):  # a JWT is dotted too
        return False
    lower = any(c.islower() for c in value)
    upper = any(c.isupper() for c in value)
    digit = any(c.isdigit() for c in value)
    symbol = any(c in _SYMBOLS for c in value)
    mixed = lower + upper + digit + symbol >= 3 or (len(value) >= 32 and digit and lower | upper)
    return mixed and _entropy(value) >= 3.0


def _entropy(text: str) -> float:
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in Counter(text).values())
