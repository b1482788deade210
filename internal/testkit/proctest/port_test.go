package proctest

import (
	"net"
	"strconv"
	"testing"
)

// TestFreePort: the ports are below the ephemeral range, free for a TCP
// listener, never handed out twice while reserved, and closed to another
// reservation (here or in another process) until the test ends.
func TestFreePort(t *testing.T) {
	t.Parallel()
	seen := map[int]bool{}
	for range 50 {
		port := FreePort(t)
		if port < 10000 || port >= ephemeralStart() {
			t.Fatalf("port %d is outside [10000, %d)", port, ephemeralStart())
		}
		if seen[port] {
			t.Fatalf("port %d handed out twice", port)
		}
		seen[port] = true
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if c, err := net.ListenPacket("udp", addr); err == nil {
			c.Close()
			t.Fatalf("port %d is reserved, yet another reservation got it", port)
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("port %d: a listener cannot bind it: %v", port, err)
		}
		ln.Close()
	}
}
