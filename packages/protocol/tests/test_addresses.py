"""The shared public-address rule (i_protocol.addresses): what i-web and i-mcp both refuse."""

from __future__ import annotations

import ipaddress

import pytest

from i_protocol.addresses import AddressError, is_localhost_name, literal_address, normalize_host, refusal_reason


@pytest.mark.parametrize(
    ("address", "reason"),
    [
        ("127.0.0.1", "a loopback address"),
        ("10.1.2.3", "a private address"),
        ("169.254.169.254", "a cloud metadata address"),
        ("fd00:ec2::254", "a cloud metadata address"),
        ("100.64.0.1", "a shared (carrier-grade NAT) address"),
        ("169.254.3.4", "a link-local address"),
        ("224.0.0.1", "a multicast address"),
        ("0.0.0.0", "an unspecified address"),
        ("::ffff:127.0.0.1", "an IPv4-mapped IPv6 form of 127.0.0.1, a loopback address"),
        ("64:ff9b::a00:1", "an NAT64 IPv6 form of 10.0.0.1, a private address"),
        ("2002:7f00:1::", "an 6to4 IPv6 form of 127.0.0.1, a loopback address"),
        ("::ffff:8.8.8.8", "an IPv4-mapped IPv6 address (write the IPv4 address 8.8.8.8 instead)"),
    ],
)
def test_a_non_public_address_is_refused_with_its_reason(address: str, reason: str) -> None:
    assert refusal_reason(ipaddress.ip_address(address)) == reason


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"])
def test_a_public_address_passes(address: str) -> None:
    assert refusal_reason(ipaddress.ip_address(address)) is None


@pytest.mark.parametrize("host", ["2130706433", "0x7f.1", "0177.0.0.1", "127.1", "example.0x1"])
def test_a_numeric_host_form_that_is_not_canonical_is_refused(host: str) -> None:
    with pytest.raises(AddressError, match="non-canonical numeric IPv4 form"):
        literal_address(host)


def test_literals_and_names() -> None:
    assert literal_address("[::1]") == ipaddress.ip_address("::1")
    assert literal_address("Example.COM.") is None
    assert normalize_host(" [FE80::1] ") == "fe80::1"
    assert all(is_localhost_name(h) for h in ("localhost", "a.localhost.", "ip6-loopback", "LOCALHOST"))
    assert not is_localhost_name("localhost.example.com")
