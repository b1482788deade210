// Package cliexit is how an error of a plantstore command becomes what the
// process prints and its exit status: Code ends with a status and no
// message (help shown, a usage error the parser printed, an interrupt); a
// UsageError (a bad command line found after parsing) exits 2; any other
// error 1, printed as Describe renders it. cmd/plantstore and the API client
// commands (clientcli) return these; main applies them.
package cliexit

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/plantstore/plantstore"
)

// Code ends the program with a status and no further message.
type Code int

func (e Code) Error() string { return fmt.Sprintf("exit %d", int(e)) }

// UsageError is a bad command line found after parsing (a flag's value out
// of range, flags that exclude each other): exit status 2, like the
// parser's own errors.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// Usagef returns a UsageError with the formatted message.
func Usagef(format string, args ...any) error {
	return &UsageError{fmt.Errorf(format, args...)}
}

// Status is the process status for an error of a command: a Code's own, 2
// for a UsageError, 0 for nil, else 1.
func Status(err error) int {
	var code Code
	var usage *UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &code):
		return int(code)
	case errors.As(err, &usage):
		return 2
	}
	return 1
}

// Describe renders an error for the terminal: a domain error as its message
// and cause, without the code.
func Describe(err error) string {
	var e *plantstore.Error
	if !errors.As(err, &e) {
		return err.Error()
	}
	if e.Err != nil {
		return e.Message + " (" + e.Err.Error() + ")"
	}
	return e.Message
}

// Interrupted is the exit status after the signal that cause (the cause of
// signal.NotifyContext's context) names: 128 + its number, as a shell
// shows a process killed by it; 130 (SIGINT) for any other cause.
func Interrupted(cause error) Code {
	if strings.Contains(cause.Error(), syscall.SIGTERM.String()) {
		return Code(128 + int(syscall.SIGTERM))
	}
	return Code(128 + int(syscall.SIGINT))
}
