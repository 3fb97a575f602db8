"""Which hosts and addresses a fetch may reach: the public-address rule (``i_protocol.addresses``,
shared with i-mcp's remote servers) and this worker's explicit exceptions.

Everything here is stdlib-only so it can be tested (and imported) without the HTTP stack.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
import time
from dataclasses import dataclass, field

from i_protocol import addresses
from i_protocol.addresses import METADATA_ADDRESSES, IPAddress, is_localhost_name, normalize_host, refusal_reason

from .errors import WebError

__all__ = [
    "METADATA_ADDRESSES",
    "AddressPolicy",
    "IPAddress",
    "is_localhost_name",
    "literal_address",
    "normalize_host",
    "refusal_reason",
    "resolve_checked",
]

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

_DNS_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")


def literal_address(host: str) -> IPAddress | None:
    """The address when ``host`` is a canonical IP literal (``i_protocol.addresses``), as a :class:`WebError`."""
    try:
        return addresses.literal_address(host)
    except addresses.AddressError as exc:
        raise WebError(str(exc)) from None


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
