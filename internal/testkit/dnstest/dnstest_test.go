package dnstest_test

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/testkit/dnstest"
)

func TestResolver(t *testing.T) {
	r := dnstest.New(map[string]netip.Addr{
		"receiver.test": netip.MustParseAddr("127.0.0.1"),
		"six.test":      netip.MustParseAddr("::1"),
	})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for name, want := range map[string]string{"receiver.test": "127.0.0.1", "RECEIVER.test.": "127.0.0.1", "six.test": "::1"} {
		got, err := r.LookupNetIP(ctx, "ip", name)
		if err != nil {
			t.Fatalf("LookupNetIP(%q): %v", name, err)
		}
		if len(got) != 1 || got[0].String() != want {
			t.Errorf("LookupNetIP(%q) = %v, want [%s]", name, got, want)
		}
	}
	_, err := r.LookupNetIP(ctx, "ip", "unknown.test")
	var dnsErr *net.DNSError
	if !errors.As(err, &dnsErr) || !dnsErr.IsNotFound {
		t.Errorf("LookupNetIP(unknown.test) = %v, want not found", err)
	}
	if r.Queries() == 0 {
		t.Error("the responder answered no query: the names did not come from it")
	}
}
