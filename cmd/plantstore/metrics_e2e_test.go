package main

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/plantstore/plantstore/internal/cli/cliexit"
	"github.com/plantstore/plantstore/internal/cli/cliflags"
)

// TestServeMetricsAddr: /metrics has a listener of its own, on loopback
// by default; --metrics-addr= or off turns it off; an address that is taken
// stops the start with an error naming the setting.
func TestServeMetricsAddr(t *testing.T) {
	t.Parallel()
	t.Run("Default", func(t *testing.T) {
		for _, cmd := range cliflags.Commands(model(t)) {
			if cmd.Command != "plantstore serve" {
				continue
			}
			for _, f := range cmd.Flags {
				if f.Name == "metrics-addr" {
					if got, want := f.Default, "127.0.0.1:9464"; got != want {
						t.Fatalf("--metrics-addr default = %q, want %q (loopback)", got, want)
					}
					if got, want := strings.Join(f.Envs, ","), "PLANTSTORE_METRICS_ADDR"; got != want {
						t.Fatalf("--metrics-addr env = %q, want %q", got, want)
					}
					return
				}
			}
		}
		t.Fatal("serve has no --metrics-addr")
	})

	t.Run("Busy", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		r := runCLI(t, nil, "serve", "--addr", "127.0.0.1:0", "--metrics-addr", ln.Addr().String(),
			"--db", tempDBPath(t), "--no-bootstrap-admin")
		if r.err == nil || cliexit.Status(r.err) != 1 {
			t.Fatalf("serve with a taken metrics address: %v (exit %d), want exit 1", r.err, cliexit.Status(r.err))
		}
		for _, want := range []string{"--metrics-addr (PLANTSTORE_METRICS_ADDR)", ln.Addr().String(), "--metrics-addr="} {
			if !strings.Contains(r.err.Error(), want) {
				t.Errorf("error %q lacks %q", r.err, want)
			}
		}
	})

	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
	}{
		{"OffByFlag", []string{"--metrics-addr="}, nil},
		{"OffByEnv", nil, map[string]string{"PLANTSTORE_METRICS_ADDR": "off"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			stdout, stderr := &syncBuffer{}, &syncBuffer{}
			done := make(chan error, 1)
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", tempDBPath(t), "--no-bootstrap-admin"}, tt.args...)
			go func() { done <- run(ctx, args, func(k string) string { return tt.env[k] }, stdout, stderr) }()
			line := waitLogLine(t, stderr, done, "plantstore serving")
			if !strings.Contains(line, `"metrics":"off"`) {
				t.Errorf("start-up line %s, want metrics off", line)
			}
			m := regexp.MustCompile(`"url":"(http://[^"]+)"`).FindStringSubmatch(line)
			if m == nil {
				t.Fatalf("no url in %s", line)
			}
			if status, _, body := do(t, testClient, "GET", m[1]+"/metrics", "", ""); status != 404 || errorCode(body) != 40402 {
				t.Errorf("GET /metrics on the API listener: %d %s, want the contract's 404", status, body)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	}
}

// waitLogLine waits (at most 10 s) for a log line on stderr whose msg is
// msg and returns it; done is the command's result.
func waitLogLine(t *testing.T, stderr *syncBuffer, done <-chan error, msg string) string {
	t.Helper()
	want := fmt.Sprintf(`"msg":%q`, msg)
	for deadline := time.Now().Add(10 * time.Second); ; {
		for line := range strings.Lines(stderr.String()) {
			if strings.Contains(line, want) {
				return strings.TrimSpace(line)
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the command returned early: %v\nstderr:\n%s", err, stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s log line after 10 s\nstderr:\n%s", want, stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
