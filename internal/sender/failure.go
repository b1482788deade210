package sender

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
)

// What an attempt's error says through the API (an attempt's error, a
// ping's answer): the kind of failure only. The error of a send names the
// address a host resolved to ("dial tcp 10.0.0.7:443: ..."), the server's
// name servers ("lookup x on 10.0.0.2:53: ...") or what the network looks
// like from inside; a tenant sees none of that, only one of these phrases,
// and the whole error goes to the server's log.
const (
	FailureForbiddenAddress = "forbidden address"
	FailureNoSuchHost       = "name did not resolve"
	FailureRefused          = "connection refused"
	FailureReset            = "connection reset"
	FailureClosed           = "connection closed before an answer"
	FailureTimeout          = "timeout"
	FailureTLSCertificate   = "TLS certificate not valid"
	FailureTLS              = "TLS handshake failed"
	FailureConnection       = "connection failed"
)

// failureKind names the kind of failure of err, an error of sending a
// request (http.Client.Do), as one of the Failure phrases above; anything it
// does not recognise is FailureConnection. The checks go from the most
// specific to the least: a forbidden address is the dialer's own refusal, a
// DNS error (its time-out included) is a name that did not resolve, and a
// time-out is checked before the TLS errors so that a handshake cut by the
// attempt's deadline reads as a time-out.
func failureKind(err error) string {
	var (
		dnsErr  *net.DNSError
		netErr  net.Error
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		badName x509.HostnameError
		invalid x509.CertificateInvalidError
		record  tls.RecordHeaderError
		alert   tls.AlertError
		opErr   *net.OpError
	)
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrForbiddenAddress):
		return FailureForbiddenAddress
	case errors.As(err, &dnsErr):
		return FailureNoSuchHost
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded),
		errors.As(err, &netErr) && netErr.Timeout():
		return FailureTimeout
	case errors.As(err, &verify), errors.As(err, &unknown), errors.As(err, &badName), errors.As(err, &invalid):
		return FailureTLSCertificate
	case errors.As(err, &record), errors.As(err, &alert),
		errors.As(err, &opErr) && opErr.Op == "remote error", // an alert the receiver sent
		tlsMessage(err):
		return FailureTLS
	case errors.Is(err, syscall.ECONNREFUSED):
		return FailureRefused
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return FailureReset
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return FailureClosed
	}
	return FailureConnection
}

// tlsMessage reports whether an error in err's chain is one of crypto/tls's
// own, which are plain errors whose message starts with "tls: " (a version
// or cipher suite the two sides do not share, a malformed handshake
// message).
func tlsMessage(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if strings.HasPrefix(err.Error(), "tls: ") {
			return true
		}
	}
	return false
}
