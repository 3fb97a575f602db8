"""Which hosts and addresses a fetch may reach: the public-address rule and its explicit exceptions.

Everything here is stdlib-only so it can be tested (and imported) without the HTTP stack.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
import time
from dataclasses import dataclass, field

from .errors import WebError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Addresses that hand out cloud credentials: refused even when a broad allow_private network
# covers them; only an exact /32 or /128 entry lets one through.
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

_SHARED_V4 = ipaddress.ip_network("100.64.0.0/10")
_NAT64 = (ipaddress.ip_network("64:ff9b::/96"), ipaddress.ip_network("64:ff9b:1::/48"))
_NUMERIC_LABEL = re.compile(r"^(0x[0-9a-f]*|[0-9]+)$")
_DNS_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")


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
    if address.is_unspecified:
        return "an unspecified address"
    if address.is_loopback:
        return "a loopback address"
    if address.is_link_local:
        return "a link-local address"
    if address.is_multicast:
        return "a multicast address"
    if isinstance(address, ipaddress.IPv4Address) and address in _SHARED_V4:
        return "a shared (carrier-grade NAT) address"
    if address.is_private:
        return "a private address"
    if address.is_reserved:
        return "a reserved address"
    if not address.is_global:
        return "not a globally routable address"
    return None


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
    """The address when ``host`` is a canonical IP literal; refuses other numeric IPv4 forms."""
    host = normalize_host(host)
    try:
        return ipaddress.ip_address(host)
    except ValueError:
        pass
    labels = host.split(".")
    # Resolvers accept 2130706433, 0x7f.1, 0177.0.0.1 and 127.1 as IPv4: a name that looks
    # numeric is refused outright rather than trusted to mean what it seems.
    if labels and (_NUMERIC_LABEL.match(labels[-1]) or all(_NUMERIC_LABEL.match(lab) for lab in labels)):
        raise WebError(f"host {host!r} is a non-canonical numeric IPv4 form; write the address as a.b.c.d")
    return None


def is_localhost_name(host: str) -> bool:
    """True for ``localhost`` and every ``*.localhost`` name (RFC 6761 loopback names)."""
    host = normalize_host(host)
    return (
        host == "localhost"
        or host.endswith(".localhost")
        or host in ("localhost.localdomain", "ip6-localhost", "ip6-loopback")
    )


@dataclass(frozen=True)
class AddressPolicy:
    """The public-address rule plus the hosts and networks web.json explicitly trusts."""

    names: frozenset[str] = frozenset()
    suffixes: tuple[str, ...] = ()
    networks: tuple[IPNetwork, ...] = field(default_factory=tuple)

    @classmethod
    def from_entries(cls, entries: object, where: str = "allow_private") -> AddressPolicy:
        """Parse the ``allow_private`` list: host names, ``*.suffix`` names and CIDR networks."""
        if entries is None:
            return cls()
        if not isinstance(entries, list):
            raise WebError(f"{where} must be a list of host names and CIDR networks")
        names: set[str] = set()
        suffixes: list[str] = []
        networks: list[IPNetwork] = []
        for entry in entries:
            if not isinstance(entry, str) or not entry.strip():
                raise WebError(f"{where}: every entry must be a non-empty string, got {entry!r}")
            text = normalize_host(entry)
            try:
                networks.append(ipaddress.ip_network(text, strict=False))
                continue
            except ValueError:
                pass
            if text.startswith("*."):
                suffixes.append(text[1:])
                continue
            if not all(_DNS_LABEL.match(label) for label in text.split(".")):
                raise WebError(f"{where}: {entry!r} is neither a host name nor a CIDR network")
            names.add(text)
        return cls(frozenset(names), tuple(suffixes), tuple(networks))

    def name_allowed(self, host: str) -> bool:
        """True when web.json trusts this host name explicitly."""
        host = normalize_host(host)
        return host in self.names or any(host.endswith(suffix) for suffix in self.suffixes)

    def address_refusal(self, host: str, address: IPAddress) -> str | None:
        """Why ``address`` (an answer for ``host``) may not be contacted, or None."""
        reason = refusal_reason(address)
        if reason is None:
            return None
        if address in METADATA_ADDRESSES:
            exact = any(net.prefixlen == net.max_prefixlen and address in net for net in self.networks)
            return None if exact else reason
        if self.name_allowed(host) or any(address in net for net in self.networks):
            return None
        return reason

    def check_name(self, host: str) -> None:
        """Refuse names that mean this machine unless they are explicitly trusted."""
        if is_localhost_name(host) and not self.name_allowed(host):
            raise WebError(f"host {normalize_host(host)!r} names this machine; refused (allow_private can trust it)")


def resolve_checked(host: str, port: int, policy: AddressPolicy, deadline: float) -> list[str]:
    """Resolve ``host`` and return its addresses, refusing the host if ANY answer is not allowed.

    The caller must connect to these exact addresses; nothing resolves the name again.
    """
    host = normalize_host(host)
    if not host:
        raise WebError("URL has no host")
    policy.check_name(host)
    literal = literal_address(host)
    if literal is not None:
        answers: list[IPAddress] = [literal]
    else:
        answers = _lookup(host, port, deadline)
    for address in answers:
        reason = policy.address_refusal(host, address)
        if reason is not None:
            shown = host if literal is not None else f"{host} (resolves to {address})"
            raise WebError(f"refused to connect to {shown}: {reason}; only public addresses are allowed")
    return [str(a) for a in answers]


def _lookup(host: str, port: int, deadline: float) -> list[IPAddress]:
    """getaddrinfo under the fetch deadline (a lookup cannot be cancelled, so it runs on a thread)."""
    box: dict[str, object] = {}

    def run() -> None:
        try:
            box["infos"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError) as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, name="i-web-dns", daemon=True)
    thread.start()
    thread.join(min(max(0.0, deadline - time.monotonic()), 60.0))
    if thread.is_alive():
        raise WebError(f"DNS lookup of {host} timed out")
    if "error" in box:
        raise WebError(f"DNS lookup of {host} failed: {box['error']}")
    answers: list[IPAddress] = []
    for info in box.get("infos", []):  # type: ignore[attr-defined]
        address = ipaddress.ip_address(info[4][0])
        if address not in answers:
            answers.append(address)
    if not answers:
        raise WebError(f"DNS lookup of {host} returned no addresses")
    return answers
