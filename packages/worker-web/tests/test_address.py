"""The address classifier, host-form checks and allow_private policy."""

from __future__ import annotations

import ipaddress
import socket
import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from i_web.address import (
    AddressPolicy,
    literal_address,
    refusal_reason,
    resolve_checked,
)
from i_web.errors import WebError

FAR = time.monotonic() + 3600  # a deadline that never passes in unit tests

REFUSED = {
    "127.0.0.1": "loopback",
    "127.255.0.9": "loopback",
    "10.1.2.3": "private",
    "172.16.5.4": "private",
    "192.168.1.1": "private",
    "169.254.169.254": "metadata",
    "169.254.170.2": "metadata",
    "100.100.100.200": "metadata",
    "169.254.1.1": "link-local",
    "100.64.0.1": "shared",
    "0.0.0.0": "unspecified",
    "224.0.0.1": "multicast",
    "239.1.2.3": "multicast",
    "240.0.0.1": "",
    "255.255.255.255": "",
    "192.0.2.10": "",
    "198.18.0.1": "",
    "::1": "loopback",
    "::": "unspecified",
    "fe80::1": "link-local",
    "fc00::1": "private",
    "fd00:ec2::254": "metadata",
    "ff02::1": "multicast",
    "::ffff:127.0.0.1": "IPv4-mapped",
    "::ffff:10.0.0.1": "IPv4-mapped",
    "::ffff:169.254.169.254": "IPv4-mapped",
    "::127.0.0.1": "IPv4-compatible",
    "2002:7f00:1::": "6to4",
    "2002:a9fe:a9fe::": "6to4",
    "64:ff9b::a00:1": "NAT64",
    "2001:db8::1": "",
}
PUBLIC = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e"]


@pytest.mark.parametrize("text", sorted(REFUSED))
def test_non_public_addresses_are_refused_with_a_reason(text: str) -> None:
    reason = refusal_reason(ipaddress.ip_address(text))
    assert reason is not None
    assert REFUSED[text] in reason


@pytest.mark.parametrize("text", PUBLIC)
def test_public_addresses_pass(text: str) -> None:
    assert refusal_reason(ipaddress.ip_address(text)) is None


PRIVATE_V4 = [
    ipaddress.ip_network(n)
    for n in (
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "127.0.0.0/8",
        "169.254.0.0/16",
        "100.64.0.0/10",
        "0.0.0.0/8",
        "224.0.0.0/4",
    )
]


@given(st.sampled_from(PRIVATE_V4), st.integers(min_value=0, max_value=2**32 - 1))
def test_every_address_of_private_v4_ranges_is_refused_also_when_ipv6_mapped(
    net: ipaddress.IPv4Network, n: int
) -> None:
    address = net[n % net.num_addresses]
    assert refusal_reason(address) is not None
    assert refusal_reason(ipaddress.IPv6Address(f"::ffff:{address}")) is not None
    assert refusal_reason(ipaddress.IPv6Address((0x2002 << 112) | (int(address) << 80))) is not None


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_mapped_forms_are_always_refused_and_explain_the_ipv4_reason(n: int) -> None:
    v4 = ipaddress.IPv4Address(n)
    inner = refusal_reason(v4)
    for form in (f"::ffff:{v4}", f"::{v4}"):
        reason = refusal_reason(ipaddress.IPv6Address(form))
        if int(ipaddress.IPv6Address(form)) <= 1:
            continue  # :: and ::1 are themselves
        assert reason is not None
        assert str(v4) in reason
        if inner is not None:
            assert inner in reason


@pytest.mark.parametrize(
    "host", ["2130706433", "0177.0.0.1", "0x7f.0.0.1", "0x7f000001", "127.1", "017700000001", "10.0x1", "1.2.3.4.5"]
)
def test_non_canonical_numeric_hosts_are_refused(host: str) -> None:
    with pytest.raises(WebError, match="non-canonical numeric"):
        literal_address(host)


@given(st.integers(min_value=0, max_value=2**32 - 1), st.sampled_from(["dec", "hex", "oct"]))
def test_integer_ipv4_encodings_never_pass_as_names(n: int, form: str) -> None:
    host = {"dec": str(n), "hex": hex(n), "oct": "0" + oct(n)[2:]}[form]
    with pytest.raises(WebError):
        resolve_checked(host, 80, AddressPolicy(), FAR)


def test_canonical_literals_are_addresses_and_names_are_not() -> None:
    assert literal_address("8.8.8.8") == ipaddress.ip_address("8.8.8.8")
    assert literal_address("[2606:4700::1]") == ipaddress.ip_address("2606:4700::1")
    assert literal_address("example.com") is None


@pytest.mark.parametrize("host", ["localhost", "LOCALHOST.", "api.localhost", "a.b.localhost", "localhost.localdomain"])
def test_localhost_names_are_refused_before_any_lookup(host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_dns(*args: object, **kwargs: object) -> list[object]:
        raise AssertionError("a localhost name must be refused without DNS")

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    with pytest.raises(WebError, match="names this machine"):
        resolve_checked(host, 80, AddressPolicy(), FAR)


def _fake_dns(monkeypatch: pytest.MonkeyPatch, answers: dict[str, list[str]]) -> None:
    def getaddrinfo(host: str, port: int, *args: object, **kwargs: object) -> list[object]:
        if host not in answers:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return [
            (socket.AF_INET6 if ":" in a else socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, port))
            for a in answers[host]
        ]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


def test_every_dns_answer_must_be_public(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_dns(monkeypatch, {"mixed.example": ["93.184.216.34", "10.0.0.7"], "good.example": ["93.184.216.34"]})
    with pytest.raises(WebError, match=r"mixed\.example \(resolves to 10\.0\.0\.7\): a private address"):
        resolve_checked("mixed.example", 80, AddressPolicy(), FAR)
    assert resolve_checked("good.example", 80, AddressPolicy(), FAR) == ["93.184.216.34"]


def test_dns_answer_in_metadata_or_mapped_form_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_dns(monkeypatch, {"meta.example": ["169.254.169.254"], "mapped.example": ["::ffff:127.0.0.1"]})
    with pytest.raises(WebError, match="metadata"):
        resolve_checked("meta.example", 80, AddressPolicy(), FAR)
    with pytest.raises(WebError, match="IPv4-mapped"):
        resolve_checked("mapped.example", 80, AddressPolicy(), FAR)


def test_dns_failure_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_dns(monkeypatch, {})
    with pytest.raises(WebError, match=r"DNS lookup of nowhere\.example failed"):
        resolve_checked("nowhere.example", 80, AddressPolicy(), FAR)


def test_allow_private_networks_are_exact() -> None:
    policy = AddressPolicy.from_entries(["127.0.0.1/32", "10.20.0.0/16"])
    assert policy.address_refusal("x", ipaddress.ip_address("127.0.0.1")) is None
    assert policy.address_refusal("x", ipaddress.ip_address("127.0.0.2")) is not None
    assert policy.address_refusal("x", ipaddress.ip_address("10.20.9.9")) is None
    assert policy.address_refusal("x", ipaddress.ip_address("10.21.0.1")) is not None
    assert policy.address_refusal("x", ipaddress.ip_address("::1")) is not None


def test_allow_private_names_trust_their_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_dns(monkeypatch, {"intranet.corp": ["10.0.0.5"], "wiki.corp": ["10.0.0.6"], "other.corp": ["10.0.0.7"]})
    policy = AddressPolicy.from_entries(["intranet.corp", "*.wiki.corp", "wiki.corp"])
    assert resolve_checked("intranet.corp", 80, policy, FAR) == ["10.0.0.5"]
    assert resolve_checked("WIKI.corp.", 80, policy, FAR) == ["10.0.0.6"]
    with pytest.raises(WebError):
        resolve_checked("other.corp", 80, policy, FAR)


def test_allowing_localhost_by_name() -> None:
    policy = AddressPolicy.from_entries(["localhost"])
    assert "127.0.0.1" in resolve_checked("localhost", 80, policy, FAR)


def test_metadata_needs_an_exact_entry_even_inside_an_allowed_network(monkeypatch: pytest.MonkeyPatch) -> None:
    meta = ipaddress.ip_address("169.254.169.254")
    broad = AddressPolicy.from_entries(["169.254.0.0/16", "0.0.0.0/0", "metadata.internal"])
    assert broad.address_refusal("metadata.internal", meta) == "a cloud metadata address"
    assert broad.address_refusal("x", ipaddress.ip_address("169.254.3.3")) is None
    exact = AddressPolicy.from_entries(["169.254.169.254/32"])
    assert exact.address_refusal("x", meta) is None


@pytest.mark.parametrize("entries", ["127.0.0.1", [""], [5], ["not a host!"], ["10.0.0.0/33"]])
def test_bad_allow_private_entries_are_errors(entries: object) -> None:
    with pytest.raises(WebError, match="allow_private"):
        AddressPolicy.from_entries(entries)
