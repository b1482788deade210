// Command yaml2json converts a YAML document to indented JSON, keeping the
// order of mapping keys, so the served OpenAPI document reads like its
// source. It is run by `go generate` in package api.
//
// Usage: yaml2json IN.yaml OUT.json
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"

	"gopkg.in/yaml.v3"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "yaml2json:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	if len(args) != 2 {
		return errors.New("usage: yaml2json IN.yaml OUT.json")
	}
	in, err := os.ReadFile(args[0])
	if err != nil {
		return err
	}
	out, err := Convert(in)
	if err != nil {
		return err
	}
	return os.WriteFile(args[1], out, 0o644)
}

// Convert turns one YAML document into indented JSON with a final newline.
func Convert(in []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(in, &doc); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := write(&buf, &doc); err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, buf.Bytes(), "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func write(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) != 1 {
			return errors.New("expected one document")
		}
		return write(buf, n.Content[0])
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			buf.Write(k)
			buf.WriteByte(':')
			if err := write(buf, n.Content[i+1]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := write(buf, c); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!int", "!!float":
			if _, err := strconv.ParseFloat(n.Value, 64); err != nil {
				return fmt.Errorf("line %d: number %q: %w", n.Line, n.Value, err)
			}
			buf.WriteString(n.Value)
		case "!!bool":
			buf.WriteString(strconv.FormatBool(n.Value == "true"))
		case "!!null":
			buf.WriteString("null")
		default:
			s, _ := json.Marshal(n.Value)
			buf.Write(s)
		}
	case yaml.AliasNode:
		return write(buf, n.Alias)
	default:
		return fmt.Errorf("line %d: unsupported YAML node", n.Line)
	}
	return nil
}
