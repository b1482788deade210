package postgres

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
)

// faultProxy is a TCP proxy on 127.0.0.1 in front of a PostgreSQL server
// that reads the protocol's messages going each way and, when armed,
// breaks one connection at a chosen message: the fault injection of the
// commit-outcome tests. Without TLS (the test clusters' URLs say
// sslmode=disable), every message but the client's first (the startup
// message: a length, no type byte) is a type byte and a length.
type faultProxy struct {
	ln     net.Listener
	target string

	// fault, when set, is consulted for each message; it returns true to
	// break the connection before the message is passed on. It is
	// cleared once it fired.
	fault atomic.Pointer[faultFunc]
	fired chan struct{} // gets a value each time a fault fires

	mu    sync.Mutex
	conns []net.Conn
}

// faultFunc sees one message: fromServer says its direction, typ is its
// type byte, body what follows the length.
type faultFunc func(fromServer bool, typ byte, body []byte) bool

// startProxy starts a proxy to the server of rawURL and returns it and the
// URL that goes through it. It stops when t ends.
func startProxy(t *testing.T, rawURL string) (*faultProxy, string) {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{ln: ln, target: u.Host, fired: make(chan struct{}, 16)}
	go p.serve()
	t.Cleanup(p.close)
	u.Host = ln.Addr().String()
	return p, u.String()
}

// arm makes fn the fault for the messages to come.
func (p *faultProxy) arm(fn faultFunc) { p.fault.Store(&fn) }

// disarm clears the fault.
func (p *faultProxy) disarm() { p.fault.Store(nil) }

func (p *faultProxy) close() {
	p.ln.Close()
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
}

func (p *faultProxy) serve() {
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, client, server)
		p.mu.Unlock()
		broken := func() {
			client.Close()
			server.Close()
		}
		go p.pipe(client, server, false, broken)
		go p.pipe(server, client, true, broken)
	}
}

// pipe copies messages from src to dst, one at a time, until either end
// closes or a fault fires (then it breaks the connection: both ends
// closed, so the client sees the connection lost, and the server a client
// gone).
func (p *faultProxy) pipe(src, dst net.Conn, fromServer bool, broken func()) {
	defer broken()
	first := !fromServer // the client's startup message has no type byte
	for {
		typ, msg, err := readMessage(src, first)
		if err != nil {
			return
		}
		if f := p.fault.Load(); f != nil && !first && (*f)(fromServer, typ, msg[5:]) {
			if p.fault.CompareAndSwap(f, nil) {
				p.fired <- struct{}{}
				return
			}
		}
		first = false
		if _, err := dst.Write(msg); err != nil {
			return
		}
	}
}

// readMessage reads one message whole (its type byte, when typed, and
// length included).
func readMessage(r io.Reader, untyped bool) (typ byte, msg []byte, err error) {
	head := make([]byte, 5)
	if untyped {
		head = head[:4]
	}
	if _, err := io.ReadFull(r, head); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(head[len(head)-4:])
	if n < 4 || n > 1<<30 {
		return 0, nil, errors.New("proxy: bad message length")
	}
	msg = make([]byte, len(head)+int(n)-4)
	copy(msg, head)
	if _, err := io.ReadFull(r, msg[len(head):]); err != nil {
		return 0, nil, err
	}
	if untyped {
		return 0, msg, nil
	}
	return msg[0], msg, nil
}
