"""Redaction at ingress: secrets, e-mail addresses and home-directory user names are replaced
before anything is matched, stored or printed. Hosts and IPs get stable pseudonyms only when
asked (`--mask-hosts`), since the failing host is part of the answer.
"""
from __future__ import annotations

import hashlib
import re

# Each rule: a pattern and its replacement. Order matters: specific tokens before generic ones.
_SECRET_RULES: tuple[tuple[re.Pattern, str], ...] = (
    (re.compile(r"\bhf_[A-Za-z0-9]{30,}"), "hf_<masked>"),
    (re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{40,}"), "<github-token>"),
    (re.compile(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b"), "<aws-access-key>"),
    (re.compile(r"(?i)(aws_secret_access_key[\"']?\s*[=:]\s*[\"']?)[A-Za-z0-9/+]{40}"), r"\1<masked>"),
    (re.compile(r"(?i)\b(WANDB_API_KEY|HF_TOKEN|HUGGING_FACE_HUB_TOKEN|HUGGINGFACE_TOKEN|OPENAI_API_KEY|GITHUB_TOKEN|GH_TOKEN|[A-Z][A-Z0-9_]*(?:_TOKEN|_SECRET|_API_KEY|_PASSWORD))([\"']?\s*[=:]\s*[\"']?)[^\s\"',;]+"), r"\1\2<masked>"),
    (re.compile(r"\b(?:sk|rk|pk)-(?:proj-)?[A-Za-z0-9_-]{32,}"), "<api-key>"),
    (re.compile(r"(?i)\b(bearer|token)(\s+)[A-Za-z0-9._~+/=-]{16,}"), r"\1\2<masked>"),
    (re.compile(r"(?i)\b(password|passwd|pwd|secret|api[_-]?key|access[_-]?token)([\"']?\s*[=:]\s*[\"']?)[^\s\"',;]+"), r"\1\2<masked>"),
    (re.compile(r"(?i)\b(wandb)(\s*login\s+)[0-9a-f]{40}\b"), r"\1\2<masked>"),
    (re.compile(r"\b[0-9a-f]{40}\b(?=[^\n]*(?:wandb|api.?key))", re.I), "<masked>"),
    (re.compile(r"://([^/\s:@]+):([^/\s@]+)@"), r"://\1:<masked>@"),
    (re.compile(r"\b[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}\b"), "<email>"),
    (re.compile(r"(/home/|/Users/|/users/)(?!<user>)[^/\s:'\"]+"), r"\1<user>"),
    (re.compile(r"(?i)(C:\\Users\\)[^\\\s]+"), r"\1<user>"),
)
# A cheap test: lines without any of these characters or words cannot hold a secret.
_MAYBE_SECRET = re.compile(r"(?i)hf_|gh[pousr]_|github_pat|AKIA|ASIA|secret|token|key|bearer|passw|pwd|wandb|sk-|rk-|pk-|@|/home/|/users/")

_IPV4 = re.compile(r"\b(?:\d{1,3}\.){3}\d{1,3}\b")


def mask_secrets(text: str) -> str:
    """Replace every secret-looking token in `text` (a line or a block of lines)."""
    if not _MAYBE_SECRET.search(text):
        return text
    for pattern, replacement in _SECRET_RULES:
        text = pattern.sub(replacement, text)
    return text


class HostMasker:
    """Stable pseudonyms for host names and IPs: the same input always gets the same name."""

    def __init__(self, salt: str = "firstfault") -> None:
        self._salt = salt
        self._names: dict[str, str] = {}

    def pseudonym(self, host: str) -> str:
        if host not in self._names:
            digest = hashlib.sha256((self._salt + host).encode()).hexdigest()[:6]
            self._names[host] = f"host-{digest}"
        return self._names[host]

    def mask_text(self, text: str, hosts: set[str]) -> str:
        text = _IPV4.sub(lambda match: self.pseudonym(match.group(0)), text)
        for host in sorted(hosts, key=len, reverse=True):
            if host and not _IPV4.fullmatch(host):
                text = re.sub(rf"\b{re.escape(host)}\b", self.pseudonym(host), text)
        return text
