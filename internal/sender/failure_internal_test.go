package sender

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestFailureKind: each kind of error a send can end in, built as net,
// crypto/tls and net/http build it (wrapped in the *url.Error of
// http.Client.Do), is named by its kind, which names no address, port, name
// server or host.
func TestFailureKind(t *testing.T) {
	t.Parallel()
	dial := func(err error) error {
		return &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 8443}, Err: err}
	}
	read := func(err error) error {
		return &net.OpError{Op: "read", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 7), Port: 8443}, Err: err}
	}
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"forbidden address", dial(fmt.Errorf("%w: 10.0.0.7 is not globally reachable: Private-Use (10.0.0.0/8, RFC 1918)", ErrForbiddenAddress)), FailureForbiddenAddress},
		{"no such host", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "receiver.test", Server: "10.0.0.2:53", IsNotFound: true}}, FailureNoSuchHost},
		{"name server time-out", &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "i/o timeout", Name: "receiver.test", Server: "10.0.0.2:53", IsTimeout: true}}, FailureNoSuchHost},
		{"name server failure", &net.DNSError{Err: "server misbehaving", Name: "receiver.test", Server: "[fd00::53]:53", IsTemporary: true}, FailureNoSuchHost},
		{"connection refused", dial(os.NewSyscallError("connect", syscall.ECONNREFUSED)), FailureRefused},
		{"connection reset", read(os.NewSyscallError("read", syscall.ECONNRESET)), FailureReset},
		{"broken pipe", &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}, FailureReset},
		{"closed before an answer", io.EOF, FailureClosed},
		{"closed mid-answer", fmt.Errorf("net/http: transport: %w", io.ErrUnexpectedEOF), FailureClosed},
		{"connect time-out", dial(os.NewSyscallError("connect", syscall.ETIMEDOUT)), FailureTimeout},
		{"dial deadline", dial(os.ErrDeadlineExceeded), FailureTimeout},
		{"attempt deadline", context.DeadlineExceeded, FailureTimeout},
		{"client time-out", timeoutError{}, FailureTimeout},
		{"unknown authority", &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}, FailureTLSCertificate},
		{"wrong host name", x509.HostnameError{Certificate: &x509.Certificate{}, Host: "10.0.0.7"}, FailureTLSCertificate},
		{"expired", x509.CertificateInvalidError{Cert: &x509.Certificate{}, Reason: x509.Expired}, FailureTLSCertificate},
		{"not TLS", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}, FailureTLS},
		{"alert sent", tls.AlertError(40), FailureTLS},
		{"alert received", &net.OpError{Op: "remote error", Err: errors.New("tls: handshake failure")}, FailureTLS},
		{"no shared version", errors.New("tls: server selected unsupported protocol version 300"), FailureTLS},
		{"anything else", dial(os.NewSyscallError("connect", syscall.EHOSTUNREACH)), FailureConnection},
		{"malformed answer", errors.New(`net/http: HTTP/1.x transport connection broken: malformed HTTP response "\x00"`), FailureConnection},
	} {
		err := &url.Error{Op: "Post", URL: "https://user:pass@receiver.test:8443/hook", Err: tt.err}
		got := failureKind(err)
		if got != tt.want {
			t.Errorf("%s: failureKind(%v) = %q, want %q", tt.name, err, got, tt.want)
		}
		if strings.ContainsAny(got, "0123456789:") || strings.Contains(got, "receiver") {
			t.Errorf("%s: failureKind = %q names an address, port or host", tt.name, got)
		}
	}
	if got := failureKind(nil); got != "" {
		t.Errorf("failureKind(nil) = %q, want empty", got)
	}
}

// timeoutError is a net.Error that timed out, as net/http's time-outs are.
type timeoutError struct{}

func (timeoutError) Error() string {
	return "net/http: request canceled (Client.Timeout exceeded while awaiting headers)"
}
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }
