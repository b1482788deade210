package proctest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// A port that a test picks for a child to listen on must stay free until
// the child binds it. Asking the kernel for one (listen on port 0, close)
// does not ensure that: the kernel hands out the same range as the local
// ports of outgoing connections, which the tests open by the thousand, and
// another test binary (a second `go test ./...` beside this one) may pick
// the same port. Ports here come from below the kernel's ephemeral range,
// which no outgoing connection uses, and each is reserved, across
// processes, by a UDP socket bound to the same number on 127.0.0.1: a TCP
// listener is not hindered by it, and another reservation is.

// FreePort returns a TCP port on 127.0.0.1 that is free and reserved for
// tb until it ends.
func FreePort(tb testing.TB) int {
	tb.Helper()
	port, hold, err := reserve()
	if err != nil {
		tb.Fatalf("proctest: %v", err)
	}
	tb.Cleanup(func() { hold.Close() })
	return port
}

// ReservePort returns a TCP port on 127.0.0.1 that is free and reserved
// until the process exits, for servers that live as long as the test
// binary.
func ReservePort() (int, error) {
	port, hold, err := reserve()
	if err != nil {
		return 0, err
	}
	held.Lock()
	held.conns = append(held.conns, hold)
	held.Unlock()
	return port, nil
}

var held struct {
	sync.Mutex
	conns []net.PacketConn
}

// reserve finds a port below the ephemeral range that no other
// reservation holds and no TCP socket uses, and returns it with the UDP
// socket that holds it.
func reserve() (int, net.PacketConn, error) {
	lo, hi := 10000, ephemeralStart()
	if hi-lo < 1000 {
		return 0, nil, fmt.Errorf("no ports to choose from below the ephemeral range (it starts at %d)", hi)
	}
	start := lo + rand.IntN(hi-lo)
	for i := range hi - lo {
		port := lo + (start-lo+i)%(hi-lo)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		hold, err := net.ListenPacket("udp", addr)
		if err != nil {
			continue // reserved by another test, or in use
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			hold.Close()
			continue
		}
		ln.Close()
		return port, hold, nil
	}
	return 0, nil, errors.New("no free port below the ephemeral range")
}

// ephemeralStart returns the first port of the kernel's ephemeral range
// (Linux's default, 32768, where the setting cannot be read).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				return n
			}
		}
	}
	return 32768
}
