package sender

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"
)

// Which destinations a delivery may connect to: only globally reachable
// ones. The tables below are the IANA special-purpose address registries,
// whose "Globally Reachable" column decides:
//
//	https://www.iana.org/assignments/iana-ipv4-special-registry/
//	https://www.iana.org/assignments/iana-ipv6-special-registry/
//
// plus the blocks of the IPv4 and IPv6 address-space registries that are not
// unicast space (IPv4 multicast; for IPv6 everything outside 2000::/3, the
// only block allocated for global unicast, and multicast and the deprecated
// site-local and IPv4-compatible blocks, named for clearer errors).
//
// Transcribed on 2026-11-23 (the build machine has no network, so not
// fetched then: from the registries as published after their 2024 updates
// adding 3fff::/20 (RFC 9637) and 5f00::/16 (RFC 9602), cross-checked against
// CPython's ipaddress tables). Rows whose column says True but that could not
// be confirmed are left out, so their addresses fall under the enclosing
// False row and are refused: 2001:1::3/128 (RFC 9665). Recheck against the
// registries when updating this file; TestSpecialBlocks runs over every row.
//
// An address is judged by the most specific row that contains it. "N/A" in
// the registry counts as not global, except where the row says to judge the
// IPv4 address embedded in the IPv6 one (the well-known NAT64 prefix, 6to4);
// IPv4-mapped addresses are unmapped before the lookup, since they are IPv4
// on the wire.

// reach is a row's verdict.
type reach uint8

const (
	notGlobal reach = iota // "Globally Reachable": False or N/A
	global                 // "Globally Reachable": True
	viaIPv4                // judged as the IPv4 address embedded at embedAt
)

// specialBlock is one row of the tables.
type specialBlock struct {
	prefix  netip.Prefix
	name    string // the registry's name of the block
	ref     string // the registry's reference
	reach   reach
	embedAt int // viaIPv4: the byte offset of the embedded IPv4 address
}

func block(prefix, name, ref string, r reach) specialBlock {
	return specialBlock{prefix: netip.MustParsePrefix(prefix), name: name, ref: ref, reach: r}
}

func embedding(prefix, name, ref string, at int) specialBlock {
	b := block(prefix, name, ref, viaIPv4)
	b.embedAt = at
	return b
}

// ipv4Blocks is the IANA IPv4 Special-Purpose Address Registry, and IPv4
// multicast from the IPv4 Address Space Registry.
var ipv4Blocks = []specialBlock{
	block("0.0.0.0/8", `"This network"`, "RFC 791, Section 3.2", notGlobal),
	block("0.0.0.0/32", `"This host on this network"`, "RFC 1122, Section 3.2.1.3", notGlobal),
	block("10.0.0.0/8", "Private-Use", "RFC 1918", notGlobal),
	block("100.64.0.0/10", "Shared Address Space", "RFC 6598", notGlobal),
	block("127.0.0.0/8", "Loopback", "RFC 1122, Section 3.2.1.3", notGlobal),
	block("169.254.0.0/16", "Link Local", "RFC 3927", notGlobal),
	block("172.16.0.0/12", "Private-Use", "RFC 1918", notGlobal),
	block("192.0.0.0/24", "IETF Protocol Assignments", "RFC 6890, Section 2.1", notGlobal),
	block("192.0.0.0/29", "IPv4 Service Continuity Prefix", "RFC 7335", notGlobal),
	block("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", notGlobal),
	block("192.0.0.9/32", "Port Control Protocol Anycast", "RFC 7723", global),
	block("192.0.0.10/32", "Traversal Using Relays around NAT Anycast", "RFC 8155", global),
	block("192.0.0.170/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050", notGlobal),
	block("192.0.0.171/32", "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050", notGlobal),
	block("192.0.2.0/24", "Documentation (TEST-NET-1)", "RFC 5737", notGlobal),
	block("192.31.196.0/24", "AS112-v4", "RFC 7535", global),
	block("192.52.193.0/24", "AMT", "RFC 7450", global),
	block("192.88.99.0/24", "Deprecated (6to4 Relay Anycast)", "RFC 7526", notGlobal),
	block("192.88.99.2/32", "6a44-relay anycast address", "RFC 6751", notGlobal),
	block("192.168.0.0/16", "Private-Use", "RFC 1918", notGlobal),
	block("192.175.48.0/24", "Direct Delegation AS112 Service", "RFC 7534", global),
	block("198.18.0.0/15", "Benchmarking", "RFC 2544", notGlobal),
	block("198.51.100.0/24", "Documentation (TEST-NET-2)", "RFC 5737", notGlobal),
	block("203.0.113.0/24", "Documentation (TEST-NET-3)", "RFC 5737", notGlobal),
	block("224.0.0.0/4", "Multicast", "RFC 5771", notGlobal),
	block("240.0.0.0/4", "Reserved", "RFC 1112, Section 4", notGlobal),
	block("255.255.255.255/32", "Limited Broadcast", "RFC 8190, RFC 919, Section 7", notGlobal),
}

// ipv6Blocks is the IANA IPv6 Special-Purpose Address Registry, and the
// non-unicast blocks of the IPv6 Address Space Registry.
var ipv6Blocks = []specialBlock{
	// IPv6 Address Space Registry: only 2000::/3 is global unicast.
	block("::/0", "not Global Unicast (reserved by the IETF, or special)", "RFC 4291, IPv6 Address Space", notGlobal),
	block("2000::/3", "Global Unicast", "RFC 4291, IPv6 Address Space", global),
	block("::/96", "IPv4-compatible (deprecated)", "RFC 4291, Section 2.5.5.1", notGlobal),
	block("fec0::/10", "Site-Local (deprecated)", "RFC 3879", notGlobal),
	block("ff00::/8", "Multicast", "RFC 4291", notGlobal),

	// IPv6 Special-Purpose Address Registry.
	block("::1/128", "Loopback Address", "RFC 4291", notGlobal),
	block("::/128", "Unspecified Address", "RFC 4291", notGlobal),
	embedding("::ffff:0:0/96", "IPv4-mapped Address", "RFC 4291", 12),
	embedding("64:ff9b::/96", "IPv4-IPv6 Translat.", "RFC 6052", 12),
	block("64:ff9b:1::/48", "IPv4-IPv6 Translat. (local-use)", "RFC 8215", notGlobal),
	block("100::/64", "Discard-Only Address Block", "RFC 6666", notGlobal),
	block("2001::/23", "IETF Protocol Assignments", "RFC 2928", notGlobal),
	block("2001::/32", "TEREDO (relayed to an IPv4 host)", "RFC 4380, RFC 8190", notGlobal),
	block("2001:1::1/128", "Port Control Protocol Anycast", "RFC 7723", global),
	block("2001:1::2/128", "Traversal Using Relays around NAT Anycast", "RFC 8155", global),
	block("2001:2::/48", "Benchmarking", "RFC 5180", notGlobal),
	block("2001:3::/32", "AMT", "RFC 7450", global),
	block("2001:4:112::/48", "AS112-v6", "RFC 7535", global),
	block("2001:10::/28", "Deprecated (previously ORCHID)", "RFC 4843", notGlobal),
	block("2001:20::/28", "ORCHIDv2", "RFC 7343", global),
	block("2001:30::/28", "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374", global),
	block("2001:db8::/32", "Documentation", "RFC 3849", notGlobal),
	embedding("2002::/16", "6to4", "RFC 3056", 2),
	block("2620:4f:8000::/48", "Direct Delegation AS112 Service", "RFC 7534", global),
	block("3fff::/20", "Documentation", "RFC 9637", notGlobal),
	block("5f00::/16", "Segment Routing (SRv6) SIDs", "RFC 9602", notGlobal),
	block("fc00::/7", "Unique-Local", "RFC 4193, RFC 8190", notGlobal),
	block("fe80::/10", "Link-Local Unicast", "RFC 4291", notGlobal),
}

// lookup returns the most specific row containing a (zone-less), or nil:
// an IPv4 address in no row is global unicast; every IPv6 address is in ::/0.
func lookup(a netip.Addr) *specialBlock {
	table := ipv4Blocks
	if a.Is6() {
		table = ipv6Blocks
	}
	var best *specialBlock
	for i := range table {
		b := &table[i]
		if b.prefix.Contains(a) && (best == nil || b.prefix.Bits() > best.prefix.Bits()) {
			best = b
		}
	}
	return best
}

// forbiddenReason says why a is not a globally reachable unicast address,
// or returns "" when it is one.
func forbiddenReason(a netip.Addr) string {
	if !a.IsValid() {
		return "invalid"
	}
	// A zone (fe80::1%eth0) only scopes a non-global address; Prefix.Contains
	// never matches a zoned address, so judge the address without it.
	a = a.WithZone("").Unmap()
	b := lookup(a)
	if b == nil {
		return ""
	}
	switch b.reach {
	case global:
		return ""
	case viaIPv4:
		raw := a.As16()
		v4 := netip.AddrFrom4([4]byte(raw[b.embedAt : b.embedAt+4]))
		if why := forbiddenReason(v4); why != "" {
			return fmt.Sprintf("%s (%s) of %s, which is %s", b.name, b.prefix, v4, why)
		}
		return ""
	}
	return fmt.Sprintf("not globally reachable: %s (%s, %s)", b.name, b.prefix, b.ref)
}

// parseIPv4Shorthand reads host as inet_aton(3) and the WHATWG URL
// standard do: one to four parts separated by dots (a trailing dot
// allowed), each decimal, octal (a leading 0) or hexadecimal (0x), the last
// part filling the bytes the others leave (127.1 is 127.0.0.1, 2130706433
// too). It reports false for anything else, dotted-quad decimal included
// (netip.ParseAddr reads that).
func parseIPv4Shorthand(host string) (netip.Addr, bool) {
	parts := strings.Split(strings.TrimSuffix(host, "."), ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		base := 10
		switch {
		case len(p) > 2 && (p[:2] == "0x" || p[:2] == "0X"):
			p, base = p[2:], 16
		case len(p) > 1 && p[0] == '0':
			p, base = p[1:], 8
		}
		if p == "" || p[0] == '+' || p[0] == '-' {
			return netip.Addr{}, false
		}
		n, err := strconv.ParseUint(p, base, 32)
		if err != nil {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	last := len(nums) - 1
	for _, n := range nums[:last] {
		if n > 255 {
			return netip.Addr{}, false
		}
	}
	if nums[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	v := nums[last]
	for i, n := range nums[:last] {
		v |= n << (8 * (3 - i))
	}
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}
