"""Stable pseudonyms for host names and IP addresses (`--mask-hosts`).

Replaced: the hosts the logs were attributed to, with any domain suffix they carry
(`gpu-node-3.cluster.example.com`); other names of the same pattern (`gpu-node-17` when
`gpu-node-3` is known); names in host positions (`host=`, `MASTER_ADDR=`, `name:port`);
fully qualified names under a top-level domain; IPv4 and IPv6 addresses. Public services a
diagnosis names (huggingface.co, pypi.org, ...) and loopback addresses stay as they are.
"""
from __future__ import annotations

import hashlib
import re
from functools import lru_cache

from .rules import LazyPattern

_IPV4 = LazyPattern(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?![\d.]*\d)")
_IPV6 = LazyPattern(r"(?<![A-Za-z0-9:.])(?:[0-9A-Fa-f]{1,4}:|:){2,7}(?::|[0-9A-Fa-f]{1,4})(?:%[A-Za-z0-9]{1,15})?(?![A-Za-z0-9:])")
_TLDS = ("com|net|org|io|ai|co|dev|cloud|internal|local|lan|corp|intra|cluster|svc|edu|gov|mil|int|info|biz|app|"
         "us|uk|de|fr|nl|se|ch|jp|kr|cn|in|ca|au|eu|ru|br|es|it|pl|sg|tw|il|no|fi|dk|at|be|cz|ie|nz|arpa|site|tech|xyz")
_FQDN = LazyPattern(r"(?<![A-Za-z0-9_.\-/])(?:[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?\.){2,8}(?:" + _TLDS + r")(?![A-Za-z0-9_\-]|\.[A-Za-z0-9])")
_CONTEXT = LazyPattern(
    r"(?i)(?:\b(?:host(?:_?name)?|node(?:_?name)?|master_addr|addr(?:ess)?|server|peer|endpoint|machine)[\"']?[ \t]{0,3}[=:][ \t]{0,3}[\"']?"
    r"|\b(?:on|from|to) (?:host|node) )(?P<name>[A-Za-z][A-Za-z0-9\-]{1,62})(?![A-Za-z0-9\-])")
_NAME_PORT = LazyPattern(r"(?<![A-Za-z0-9_.:/\-])(?P<name>[A-Za-z][A-Za-z0-9\-]{1,62}(?:\.[A-Za-z][A-Za-z0-9\-]{0,62}){0,6}):(?P<port>\d{2,5})(?![\d.:])")
_NOT_HOSTS = {"localhost", "none", "null", "true", "false", "unknown", "default", "master", "main", "self", "any", "all", "local"}
_FILE_EXTENSIONS = {"py", "pyx", "c", "cc", "cpp", "cu", "cuh", "h", "hpp", "rs", "go", "java", "js", "ts", "sh", "log",
                    "txt", "out", "err", "json", "yaml", "yml", "toml", "cfg", "ini", "gz", "pt", "pth", "bin", "safetensors", "md"}
_PUBLIC_SUFFIXES = ("huggingface.co", "hf.co", "github.com", "githubusercontent.com", "gitlab.com", "pypi.org",
                    "pythonhosted.org", "pytorch.org", "nvidia.com", "amazonaws.com", "googleapis.com", "google.com",
                    "windows.net", "azure.com", "microsoft.com", "wandb.ai", "docker.io", "docker.com", "anaconda.org",
                    "anaconda.com", "conda.io", "ubuntu.com", "debian.org", "openai.com", "anthropic.com", "slack.com",
                    "cloudflare.com", "ray.io", "mlflow.org", "readthedocs.io", "python.org", "nccl.io")


def _is_public(name: str) -> bool:
    lowered = name.lower()
    return any(lowered == suffix or lowered.endswith("." + suffix) for suffix in _PUBLIC_SUFFIXES)


def _template(host: str) -> str | None:
    """`gpu-node-003` -> a regex for every host named the same way (`gpu-node-017`)."""
    if _IPV4.fullmatch(host) or not re.search(r"\d", host) or len(re.sub(r"[^A-Za-z]", "", host)) < 3:
        return None
    return re.sub(r"\d+", lambda m: r"\d{1,%d}" % max(6, len(m.group(0))), re.escape(host))


@lru_cache(maxsize=64)
def _known_hosts_regex(hosts: frozenset) -> re.Pattern | None:
    names = sorted((host for host in hosts if host and not _IPV4.fullmatch(host)), key=len, reverse=True)
    if not names:
        return None
    alternatives = [re.escape(name) for name in names]
    alternatives += sorted({template for template in map(_template, names) if template})
    return re.compile(r"(?i)(?<![A-Za-z0-9_\-])(?P<host>" + "|".join(alternatives) + r")(?P<suffix>(?:\.[A-Za-z0-9\-]{1,63}){0,8})(?![A-Za-z0-9_\-])")


class HostMasker:
    """Stable pseudonyms: the same host (or address) always gets the same name."""

    def __init__(self, salt: str = "firstfault") -> None:
        self._salt = salt
        self._names: dict[str, str] = {}

    def pseudonym(self, host: str) -> str:
        key = host.lower()
        if key not in self._names:
            digest = hashlib.sha256((self._salt + key).encode()).hexdigest()[:6]
            self._names[key] = f"host-{digest}"
        return self._names[key]

    def mask_text(self, text: str, hosts) -> str:
        if not text:
            return text
        text = _IPV4.sub(self._address, text)
        text = _IPV6.sub(self._address, text)
        known = _known_hosts_regex(frozenset(hosts))
        if known is not None:
            text = known.sub(self._known, text)
        text = _FQDN.sub(lambda m: m.group(0) if _is_public(m.group(0)) else self.pseudonym(m.group(0)), text)
        text = _CONTEXT.sub(lambda m: self._replace_group(m, "name"), text)
        return _NAME_PORT.sub(self._name_port, text)

    def _address(self, match: re.Match) -> str:
        import ipaddress

        try:
            address = ipaddress.ip_address(match.group(0).split("%")[0])
        except ValueError:
            return match.group(0)
        if address.is_loopback or address.is_unspecified:
            return match.group(0)
        return self.pseudonym(match.group(0))

    def _known(self, match: re.Match) -> str:
        suffix = match.group("suffix")
        labels = suffix.split(".")[1:]
        kept = ""
        for index, label in enumerate(labels):  # `gpu-node-3.log` is a file, not a domain
            if label.lower() in _FILE_EXTENSIONS:
                kept = "." + ".".join(labels[index:])
                break
        return self.pseudonym(match.group("host")) + kept

    def _replace_group(self, match: re.Match, group: str) -> str:
        name = match.group(group)
        if name.lower() in _NOT_HOSTS or name.startswith("host-"):
            return match.group(0)
        start, end = match.start(group) - match.start(), match.end(group) - match.start()
        return match.group(0)[:start] + self.pseudonym(name) + match.group(0)[end:]

    def _name_port(self, match: re.Match) -> str:
        name = match.group("name")
        last = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        if last in _FILE_EXTENSIONS or _is_public(name) or not re.search(r"[\d\-]", name):
            return match.group(0)
        return self._replace_group(match, "name")
