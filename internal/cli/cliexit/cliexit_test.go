package cliexit_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
)

func TestStatus(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{nil, 0},
		{errors.New("failed"), 1},
		{cliexit.Usagef("--x: bad"), 2},
		{fmt.Errorf("wrapped: %w", cliexit.Usagef("--x: bad")), 2},
		{cliexit.Code(0), 0},
		{cliexit.Code(130), 130},
		{cliexit.Interrupted(errors.New("terminated signal received")), 143},
		{cliexit.Interrupted(errors.New("interrupt signal received")), 130},
	} {
		if got := cliexit.Status(tt.err); got != tt.want {
			t.Errorf("Status(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}

func TestDescribe(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{errors.New("plain"), "plain"},
		{&plantstore.Error{Code: plantstore.CodeInvalidBody, Message: "name: required"}, "name: required"},
		{&plantstore.Error{Code: plantstore.CodeStorageUnavailable, Message: "storage is not available", Err: errors.New("disk full")},
			"storage is not available (disk full)"},
	} {
		if got := cliexit.Describe(tt.err); got != tt.want {
			t.Errorf("Describe(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}
