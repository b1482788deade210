// Package cliflags is what the plantstore command line adds to kong's
// parsing: flags read from an injected environment (Resolver), so that
// tests need not touch the process's; which flags a command line or the
// environment set (Set), for the warnings about flags that do not apply;
// which variable gave a flag a bad value (Source); and every command with
// its flags (Commands), from which docs/configuration.md's table is made.
package cliflags

import (
	"strings"

	"github.com/alecthomas/kong"
)

// Resolver resolves a flag from the first of its env tag's variables
// that getenv returns non-empty.
func Resolver(getenv func(string) string) kong.Resolver {
	return kong.ResolverFunc(func(_ *kong.Context, _ *kong.Path, flag *kong.Flag) (any, error) {
		for _, name := range flag.Envs {
			if v := getenv(name); v != "" {
				return v, nil
			}
		}
		return nil, nil
	})
}

// Set returns the flags of the chosen command that args (--name,
// --name=..., --no-name) or the environment (a variable of the flag's env
// tag, non-empty) gave.
func Set(kctx *kong.Context, args []string, getenv func(string) string) map[string]bool {
	set := map[string]bool{}
	for _, f := range kctx.Flags() {
		for _, name := range f.Envs {
			if getenv(name) != "" {
				set[f.Name] = true
			}
		}
	}
	for _, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "--") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		set[name] = true
		set[strings.TrimPrefix(name, "no-")] = true
	}
	return set
}

// Commands is every command of the model with its own flags (help and
// hidden flags left out), in the order of `plantstore --help`.
func Commands(app *kong.Application) []Command {
	var out []Command
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		if n.Type == kong.CommandNode && len(n.Children) == 0 {
			var flags []*kong.Flag
			for _, group := range n.AllFlags(true) {
				for _, f := range group {
					if f.Name != "help" {
						flags = append(flags, f)
					}
				}
			}
			out = append(out, Command{Command: n.FullPath(), Flags: flags})
		}
		for _, c := range n.Children {
			if !c.Hidden {
				walk(c)
			}
		}
	}
	walk(app.Node)
	return out
}

// Command is one command and its flags.
type Command struct {
	Command string // e.g. "plantstore token create"
	Flags   []*kong.Flag
}

// Source says which environment variable gave the value of the flag a
// parse error names, so an error from the environment points at it.
func Source(app *kong.Application, err error, getenv func(string) string) string {
	msg := err.Error()
	for _, cmd := range Commands(app) {
		for _, f := range cmd.Flags {
			if !strings.HasPrefix(msg, "--"+f.Name+":") && !strings.HasPrefix(msg, "--"+f.Name+" ") {
				continue
			}
			for _, name := range f.Envs {
				if getenv(name) != "" {
					return " (from " + name + ")"
				}
			}
		}
	}
	return ""
}

// MissingEnv is the message of a parse error, where kong's "missing flags:
// --token=STRING" also names the environment variable each missing flag
// reads: "missing flags: --token=STRING (or PLANTSTORE_TOKEN)". Any other
// error's message is returned as it is.
func MissingEnv(app *kong.Application, err error) string {
	const prefix = "missing flags: "
	msg := err.Error()
	list, ok := strings.CutPrefix(msg, prefix)
	if !ok {
		return msg
	}
	envs := map[string][]string{} // by the flag's summary, as kong lists it
	for _, cmd := range Commands(app) {
		for _, f := range cmd.Flags {
			if len(f.Envs) > 0 {
				envs[f.Summary()] = f.Envs
			}
		}
	}
	items := strings.Split(list, ", ")
	for i, item := range items {
		if names := envs[item]; len(names) > 0 {
			items[i] = item + " (or " + strings.Join(names, " or ") + ")"
		}
	}
	return prefix + strings.Join(items, ", ")
}
