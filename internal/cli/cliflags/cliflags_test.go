package cliflags_test

import (
	"errors"
	"testing"

	"github.com/alecthomas/kong"
	"github.com/google/go-cmp/cmp"

	"github.com/plantstore/plantstore/internal/cli/cliflags"
)

type cli struct {
	Run struct {
		Addr  string `env:"APP_ADDR" default:":80"`
		Debug bool   `negatable:""`
		Limit int    `env:"APP_LIMIT"`
	} `cmd:""`
}

func TestResolverAndSet(t *testing.T) {
	env := map[string]string{"APP_ADDR": ":8080"}
	getenv := func(k string) string { return env[k] }
	var c cli
	parser, err := kong.New(&c, kong.Resolvers(cliflags.Resolver(getenv)))
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--no-debug", "--limit=3"}
	kctx, err := parser.Parse(args)
	if err != nil {
		t.Fatal(err)
	}
	if c.Run.Addr != ":8080" {
		t.Errorf("Addr = %q, want the environment's", c.Run.Addr)
	}
	want := map[string]bool{"addr": true, "no-debug": true, "debug": true, "limit": true}
	if diff := cmp.Diff(want, cliflags.Set(kctx, args, getenv)); diff != "" {
		t.Errorf("Set (-want +got):\n%s", diff)
	}
	if got := len(cliflags.Commands(parser.Model)); got != 1 {
		t.Errorf("Commands: %d, want 1", got)
	}
}

func TestSource(t *testing.T) {
	env := map[string]string{"APP_LIMIT": "many"}
	var c cli
	parser, err := kong.New(&c, kong.Resolvers(cliflags.Resolver(func(k string) string { return env[k] })))
	if err != nil {
		t.Fatal(err)
	}
	_, err = parser.Parse([]string{"run"})
	if err == nil {
		t.Fatal("no error for a bad value from the environment")
	}
	if got, want := cliflags.Source(parser.Model, err, func(k string) string { return env[k] }), " (from APP_LIMIT)"; got != want {
		t.Errorf("Source(%v) = %q, want %q", err, got, want)
	}
	if got := cliflags.Source(parser.Model, errors.New("--other: bad"), func(string) string { return "" }); got != "" {
		t.Errorf("Source of another flag's error = %q", got)
	}
}

func TestMissingEnv(t *testing.T) {
	t.Parallel()
	var c struct {
		Get struct {
			Token  string `required:"" env:"APP_TOKEN"`
			Server string `required:""`
		} `cmd:""`
	}
	parser, err := kong.New(&c)
	if err != nil {
		t.Fatal(err)
	}
	_, err = parser.Parse([]string{"get"})
	if err == nil {
		t.Fatal("no error without the required flags")
	}
	if got, want := cliflags.MissingEnv(parser.Model, err), "missing flags: --server=STRING, --token=STRING (or APP_TOKEN)"; got != want {
		t.Errorf("MissingEnv(%q) = %q, want %q", err, got, want)
	}
	if got := cliflags.MissingEnv(parser.Model, errors.New("--limit: bad")); got != "--limit: bad" {
		t.Errorf("MissingEnv of another error = %q, want it unchanged", got)
	}
}
