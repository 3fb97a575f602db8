"""The public-address rule every worker that reaches the network applies (SPEC §4).

One home for what i-web's fetches and i-mcp's remote servers both refuse: loopback, private,
link-local, shared, reserved and multicast addresses, IPv6 forms carrying such an IPv4 address,
cloud metadata addresses, the names of this machine, and numeric host forms that do not mean what
they seem. Each worker keeps its own exceptions (trusted networks, ``allow_private``) and error type.
Stdlib only.
"""

from __future__ import annotations

import ipaddress
import re

__all__ = [
    "METADATA_ADDRESSES",
    "AddressError",
    "IPAddress",
    "is_localhost_name",
    "literal_address",
    "normalize_host",
    "refusal_reason",
]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_ADDRESSES: frozenset[IPAddress] = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, Oracle, DigitalOcean
        "169.254.170.2",  # AWS ECS task credentials
        "169.254.169.123",  # AWS time sync, same link-local service block
        "100.100.100.200",  # Alibaba Cloud
        "fd00:ec2::254",  # AWS IMDS over IPv6
        "fd00:ec2::23",  # AWS DNS over IPv6
    )
)
"""Addresses that hand out cloud credentials: refused even where a worker trusts a private network
covering them (only an exact /32 or /128 entry of i-web's ``allow_private`` lets one through)."""

_SHARED_V4 = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")


class AddressError(ValueError):
    """A host written in a form that is refused outright (its message is one line)."""


def refusal_reason(address: IPAddress) -> str | None:
    """Why ``address`` is not a public internet address, or None when it is public."""
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    if isinstance(address, ipaddress.IPv6Address):
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            kind, v4 = embedded
            inner = refusal_reason(v4)
            if inner is not None:
                return f"an {kind} form of {v4}, {inner}"
            if kind in ("IPv4-mapped IPv6", "IPv4-compatible IPv6"):
                return f"an {kind} address (write the IPv4 address {v4} instead)"
    checks = (
        (address.is_unspecified, "an unspecified address"),
        (address.is_loopback, "a loopback address"),
        (address.is_link_local, "a link-local address"),
        (address.is_multicast, "a multicast address"),
        (isinstance(address, ipaddress.IPv4Address) and address in _SHARED_V4, "a shared (carrier-grade NAT) address"),
        (address.is_private, "a private address"),
        (address.is_reserved, "a reserved address"),
        (not address.is_global, "not a globally routable address"),
    )
    return next((reason for found, reason in checks if found), None)


def _embedded_ipv4(address: ipaddress.IPv6Address) -> tuple[str, ipaddress.IPv4Address] | None:
    """The IPv4 address an IPv6 form carries (mapped, compatible, 6to4, NAT64), if any."""
    if address.ipv4_mapped is not None:
        return "IPv4-mapped IPv6", address.ipv4_mapped
    value = int(address)
    if value >> 32 == 0 and value > 1:
        return "IPv4-compatible IPv6", ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if address.sixtofour is not None:
        return "6to4 IPv6", address.sixtofour
    if any(address in net for net in _NAT64):
        return "NAT64 IPv6", ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


def normalize_host(host: str) -> str:
    """Lower-case ``host`` without IPv6 brackets and without a trailing root dot."""
    host = host.strip().lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host[:-1] if host.endswith(".") else host


def literal_address(host: str) -> IPAddress | None:
    """The address when ``host`` is a canonical IP literal, None for a name; :class:`AddressError`
    for another numeric IPv4 form (resolvers take 2130706433, 0x7f.1, 0177.0.0.1 and 127.1 as
    IPv4: a name that looks numeric is refused rather than trusted to mean what it seems)."""
    host = normalize_host(host)
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    labels = host.split(".")
    if labels and (_NUMERIC_LABEL.match(labels[-1]) or all(_NUMERIC_LABEL.match(label) for label in labels)):
        raise AddressError(f"host {host!r} is a non-canonical numeric IPv4 form; write the address as a.b.c.d")
    return None


def is_localhost_name(host: str) -> bool:
    """True for ``localhost``, every ``*.localhost`` name (RFC 6761) and the other names of this machine."""
    host = normalize_host(host)
    return (
        host == "localhost"
        or host.endswith(".localhost")
        or host in ("localhost.localdomain", "ip6-localhost", "ip6-loopback")
    )
