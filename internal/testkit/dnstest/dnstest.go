// Package dnstest gives tests a resolver that answers names from a table,
// in memory: no DNS query leaves the process (the resolver's connections to
// its name servers are in-process pipes to a responder), so a test can make
// a name resolve to 127.0.0.1 without sending traffic anywhere.
package dnstest

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"sync/atomic"
)

// Resolver is a *net.Resolver whose queries an in-memory responder answers
// from Names.
type Resolver struct {
	*net.Resolver
	// Names maps a lower-case name without a trailing dot to its address;
	// an A query of a name gets its IPv4 address, an AAAA query its IPv6
	// one, a name not in it NXDOMAIN. Do not change it while the resolver
	// is in use.
	Names map[string]netip.Addr

	queries atomic.Int64
}

// New returns a resolver that answers names from the table.
func New(names map[string]netip.Addr) *Resolver {
	r := &Resolver{Names: names}
	r.Resolver = &net.Resolver{
		PreferGo: true, // the Go resolver, whose Dial this is; never the system's
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			// address is a name server of /etc/resolv.conf: it is never
			// dialled; the query goes to the responder over a pipe.
			client, server := net.Pipe()
			go r.serve(server)
			return client, nil
		},
	}
	return r
}

// Queries returns how many queries the responder answered.
func (r *Resolver) Queries() int64 { return r.queries.Load() }

// serve answers the queries on one stream connection (a net.Pipe is not a
// PacketConn, so the resolver frames them as over TCP: a two-byte length
// before each message) until it closes.
func (r *Resolver) serve(c net.Conn) {
	defer c.Close()
	for {
		var n [2]byte
		if _, err := io.ReadFull(c, n[:]); err != nil {
			return
		}
		q := make([]byte, binary.BigEndian.Uint16(n[:]))
		if _, err := io.ReadFull(c, q); err != nil {
			return
		}
		a := r.answer(q)
		if a == nil {
			return
		}
		r.queries.Add(1)
		out := binary.BigEndian.AppendUint16(nil, uint16(len(a)))
		if _, err := c.Write(append(out, a...)); err != nil {
			return
		}
	}
}

// DNS message constants (RFC 1035).
const (
	typeA    = 1
	typeAAAA = 28
	classIN  = 1
)

// answer builds the response to the query q, or nil for a message it
// cannot read: the question echoed, then one answer record, none, or
// NXDOMAIN.
func (r *Resolver) answer(q []byte) []byte {
	if len(q) < 12 || binary.BigEndian.Uint16(q[4:6]) != 1 {
		return nil
	}
	// The question: the name's labels, then type and class.
	var labels []string
	i := 12
	for {
		if i >= len(q) {
			return nil
		}
		l := int(q[i])
		i++
		if l == 0 {
			break
		}
		if l > 63 || i+l > len(q) {
			return nil
		}
		labels = append(labels, string(q[i:i+l]))
		i += l
	}
	if i+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i : i+2])
	question := q[12 : i+4]
	name := strings.ToLower(strings.Join(labels, "."))

	addr, known := r.Names[name]
	var rdata []byte
	switch {
	case known && qtype == typeA && addr.Is4():
		b := addr.As4()
		rdata = b[:]
	case known && qtype == typeAAAA && addr.Is6() && !addr.Is4In6():
		b := addr.As16()
		rdata = b[:]
	}
	// Header: the query's id; a response (QR), authoritative (AA),
	// recursion desired and available; NXDOMAIN (3) for an unknown name.
	flags := uint16(0x8580)
	if !known {
		flags |= 3
	}
	out := make([]byte, 12, 12+len(question)+16+len(rdata))
	copy(out[0:2], q[0:2])
	binary.BigEndian.PutUint16(out[2:4], flags)
	binary.BigEndian.PutUint16(out[4:6], 1) // one question
	if rdata != nil {
		binary.BigEndian.PutUint16(out[6:8], 1) // one answer
	}
	out = append(out, question...)
	if rdata != nil {
		out = append(out, 0xc0, 12) // the name: a pointer to the question's
		out = binary.BigEndian.AppendUint16(out, qtype)
		out = binary.BigEndian.AppendUint16(out, classIN)
		out = binary.BigEndian.AppendUint32(out, 60) // TTL
		out = binary.BigEndian.AppendUint16(out, uint16(len(rdata)))
		out = append(out, rdata...)
	}
	return out
}
