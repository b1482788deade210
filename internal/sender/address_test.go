package sender

import (
	"errors"
	"net/netip"
	"strings"
	"testing"
)

// These tests call the dialer's check (forbiddenReason, checkAddress)
// directly: none of them opens a connection.

// lastAddr is the highest address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// middleAddr is p's first address with the bit after the prefix set (p's
// first address when p is a single address).
func middleAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	if i := p.Bits(); i < len(b)*8 {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// tables is every row of both tables.
func tables() []specialBlock {
	return append(append([]specialBlock(nil), ipv4Blocks...), ipv6Blocks...)
}

// catchAll reports whether b is one of the IPv6 address-space rows that
// cover whole swathes of addresses (::/0, 2000::/3).
func catchAll(b specialBlock) bool { return b.prefix.Bits() <= 3 }

// moreSpecific reports whether a row longer than b contains a.
func moreSpecific(b specialBlock, a netip.Addr) bool {
	for _, o := range tables() {
		if o.prefix.Bits() > b.prefix.Bits() && o.prefix.Contains(a) {
			return true
		}
	}
	return false
}

// inAnyRow reports whether a row other than the catch-alls contains a.
func inAnyRow(a netip.Addr) bool {
	for _, o := range tables() {
		if !catchAll(o) && o.prefix.Contains(a) {
			return true
		}
	}
	return false
}

var globalUnicast6 = netip.MustParsePrefix("2000::/3")

// samples returns addresses inside b that no more specific row contains.
func samples(b specialBlock) []netip.Addr {
	first := b.prefix.Masked().Addr()
	last := lastAddr(b.prefix)
	cands := []netip.Addr{first, last, middleAddr(b.prefix)}
	if first != last {
		cands = append(cands, first.Next(), last.Prev())
	}
	var out []netip.Addr
	seen := map[netip.Addr]bool{}
	for _, a := range cands {
		if !seen[a] && !moreSpecific(b, a) {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// TestSpecialBlocks runs over every row of both tables: addresses inside
// the row get the row's verdict, and the addresses just outside it that no
// other row covers are allowed (IPv4, or IPv6 in 2000::/3) or refused (IPv6
// outside 2000::/3).
func TestSpecialBlocks(t *testing.T) {
	for _, b := range tables() {
		t.Run(b.prefix.String(), func(t *testing.T) {
			if got := b.prefix.Masked(); got != b.prefix {
				t.Fatalf("row %s is not a canonical prefix (%s)", b.prefix, got)
			}
			if b.name == "" || b.ref == "" {
				t.Fatalf("row %s lacks its registry name or reference", b.prefix)
			}
			inside := samples(b)
			if len(inside) == 0 {
				t.Fatalf("no address of %s is left to this row", b.prefix)
			}
			for _, a := range inside {
				why := forbiddenReason(a)
				switch b.reach {
				case notGlobal:
					if why == "" {
						t.Errorf("%s (in %s, %s): allowed, want refused", a, b.prefix, b.name)
					} else if !strings.Contains(why, b.prefix.String()) {
						t.Errorf("%s: reason %q does not name %s", a, why, b.prefix)
					}
				case global:
					if why != "" {
						t.Errorf("%s (in %s, %s, globally reachable): refused: %s", a, b.prefix, b.name, why)
					}
				case viaIPv4:
					raw := a.As16()
					v4 := netip.AddrFrom4([4]byte(raw[b.embedAt : b.embedAt+4]))
					if got, want := why == "", forbiddenReason(v4) == ""; got != want {
						t.Errorf("%s (in %s, embedding %s): allowed = %v, want %v as for %s (%q)", a, b.prefix, v4, got, want, v4, why)
					}
				}
			}
			for _, a := range []netip.Addr{b.prefix.Masked().Addr().Prev(), lastAddr(b.prefix).Next()} {
				if !a.IsValid() || inAnyRow(a) {
					continue // the end of the address space, or another row's address: tested there
				}
				want := a.Is4() || globalUnicast6.Contains(a)
				if got := forbiddenReason(a) == ""; got != want {
					t.Errorf("%s (just outside %s): allowed = %v, want %v (%q)", a, b.prefix, got, want, forbiddenReason(a))
				}
			}
		})
	}
}

// TestEmbeddedIPv4 checks the IPv6 forms that carry an IPv4 address with
// every IPv4 row's sample addresses and some global ones: IPv4-mapped,
// NAT64's well-known prefix and 6to4 get the IPv4 address's verdict;
// IPv4-compatible, NAT64 local-use and Teredo are refused whatever they
// carry.
func TestEmbeddedIPv4(t *testing.T) {
	v4s := []netip.Addr{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("8.8.8.8"), netip.MustParseAddr("1.1.1.1")}
	for _, b := range ipv4Blocks {
		v4s = append(v4s, samples(b)...)
	}
	form := func(prefix string, at int, v4 netip.Addr) netip.Addr {
		raw := netip.MustParseAddr(prefix).As16()
		v := v4.As4()
		copy(raw[at:], v[:])
		return netip.AddrFrom16(raw)
	}
	for _, v4 := range v4s {
		want := forbiddenReason(v4) == ""
		for _, tt := range []struct {
			name string
			addr netip.Addr
			want bool
		}{
			{"IPv4-mapped", form("::ffff:0:0", 12, v4), want},
			{"NAT64", form("64:ff9b::", 12, v4), want},
			{"6to4", form("2002::1", 2, v4), want},
			{"IPv4-compatible", form("::", 12, v4), false},
			{"NAT64 local-use", form("64:ff9b:1::", 12, v4), false},
			{"Teredo server", form("2001::1", 4, v4), false},
			{"Teredo client", form("2001::", 12, netip.AddrFrom4([4]byte{^v4.As4()[0], ^v4.As4()[1], ^v4.As4()[2], ^v4.As4()[3]})), false},
		} {
			if got := forbiddenReason(tt.addr) == ""; got != tt.want {
				t.Errorf("%s %s (of %s): allowed = %v, want %v (%q)", tt.name, tt.addr, v4, got, tt.want, forbiddenReason(tt.addr))
			}
		}
	}
	// The reason names both the form and the IPv4 address's row.
	why := forbiddenReason(netip.MustParseAddr("64:ff9b::10.1.2.3"))
	for _, want := range []string{"64:ff9b::/96", "10.1.2.3", "Private-Use", "10.0.0.0/8"} {
		if !strings.Contains(why, want) {
			t.Errorf("reason %q lacks %q", why, want)
		}
	}
}

// TestReportedRanges: the ranges the issue found open are refused, through
// the dialer's Control, with ErrForbiddenAddress.
func TestReportedRanges(t *testing.T) {
	for _, address := range []string{
		"192.0.2.1:443", "192.0.2.255:80", "198.51.100.7:443", "203.0.113.9:443",
		"[2001:db8::1]:443", "[2001:db8:ffff::1]:80", "[64:ff9b:1::5db8:d822]:443",
		"[3fff::1]:443", "[5f00::1]:443", "[100::1]:443", "[2001:2::1]:443", "[2001:10::1]:443",
		"[2001:0:4136:e378:8000:63bf:3fff:fdd2]:443", // a Teredo address
		"192.88.99.1:443", "[2002:c058:6301::1]:443", // 6to4 relay anycast, and its 6to4 form
		"192.0.0.170:443", "192.0.0.8:443", "[4000::1]:443", "[::8.8.8.8]:443",
	} {
		if err := control("tcp", address, nil); !errors.Is(err, ErrForbiddenAddress) {
			t.Errorf("control(%q) = %v, want ErrForbiddenAddress", address, err)
		}
	}
	for _, address := range []string{
		"192.0.0.9:443", "192.0.0.10:3478", "192.31.196.1:53", "192.52.193.1:443", "192.175.48.1:53",
		"[2001:1::1]:443", "[2001:3::1]:443", "[2001:4:112::1]:53", "[2620:4f:8000::1]:53",
		"[2001:20::1]:443", "[2001:30::1]:443", "[2a00:1450:4001:80b::200e]:443",
	} {
		if err := control("tcp", address, nil); err != nil {
			t.Errorf("control(%q) = %v, want nil (globally reachable)", address, err)
		}
	}
}
