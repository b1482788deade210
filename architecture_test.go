package plantstore_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestArchitectureTable checks docs/architecture.md's package table against
// the module as `go list` sees it: one row per package, each package's
// imports of the module's packages (test files aside) within its row's
// "may import" cell, and the public packages (outside internal/ and cmd/)
// exactly the ones users import.
func TestArchitectureTable(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	rows := readPackageTable(t, filepath.Join("docs", "architecture.md"))
	pkgs := listModule(t)

	var errs []string
	for _, name := range sortedKeys(rows) {
		if _, ok := pkgs[name]; !ok {
			errs = append(errs, fmt.Sprintf("docs/architecture.md:%d: row %s: no such package in the module (remove the row, or fix its path)", rows[name].line, name))
		}
	}
	for _, name := range sortedKeys(pkgs) {
		row, ok := rows[name]
		if !ok {
			errs = append(errs, fmt.Sprintf("docs/architecture.md: package %s has no row (add one: its job, what it may import)", name))
			continue
		}
		var extra []string
		for _, imp := range pkgs[name] {
			if !slices.Contains(row.mayImport, imp) {
				extra = append(extra, imp)
			}
		}
		if len(extra) > 0 {
			errs = append(errs, fmt.Sprintf("docs/architecture.md:%d: row %s: imports %s, which its row does not allow (may import: %s)",
				row.line, name, strings.Join(extra, ", "), orNothing(row.mayImport)))
		}
		for _, m := range row.mayImport {
			if _, ok := pkgs[m]; !ok && m != name {
				errs = append(errs, fmt.Sprintf("docs/architecture.md:%d: row %s: may import %s, which is not a package of the module", row.line, name, m))
			}
		}
	}

	// The packages users import: the domain, the Go client, the contract and
	// the webhook signature package a receiver verifies with.
	wantPublic := []string{"root", "api", "client", "client/oapi", "webhook"}
	for _, name := range sortedKeys(pkgs) {
		if !strings.HasPrefix(name, "internal/") && !strings.HasPrefix(name, "cmd/") && !slices.Contains(wantPublic, name) {
			errs = append(errs, fmt.Sprintf("package %s is public (outside internal/ and cmd/) but not one users import (%s): move it under internal/",
				name, strings.Join(wantPublic, ", ")))
		}
	}
	for _, name := range wantPublic {
		if _, ok := pkgs[name]; !ok {
			errs = append(errs, fmt.Sprintf("public package %s is missing from the module", name))
		}
	}
	for _, e := range errs {
		t.Error(e)
	}
}

type tableRow struct {
	line      int
	mayImport []string
}

var (
	backticked  = regexp.MustCompile("`([^`]*)`")
	tableHeader = regexp.MustCompile(`^\|\s*package\s*\|\s*job\s*\|\s*may import\s*\|$`)
)

// readPackageTable reads the table whose header is "| package | job | may
// import |": the package is the first cell's backticked path, what it may
// import every backticked path of the third cell (none: nothing).
func readPackageTable(t *testing.T, path string) map[string]tableRow {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]tableRow{}
	in := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !in {
			in = tableHeader.MatchString(line)
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		if strings.HasPrefix(line, "|---") || strings.HasPrefix(line, "| ---") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			t.Fatalf("%s:%d: a row of the package table has %d cells, want 3 (package, job, may import)", path, n, len(cells))
		}
		m := backticked.FindStringSubmatch(cells[0])
		if m == nil {
			t.Fatalf("%s:%d: the package cell names no `path`", path, n)
		}
		name := m[1]
		if prev, dup := rows[name]; dup {
			t.Fatalf("%s:%d: package %s has a second row (first at line %d)", path, n, name, prev.line)
		}
		var may []string
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			may = append(may, m[1])
		}
		rows[name] = tableRow{line: n, mayImport: may}
	}
	if len(rows) == 0 {
		t.Fatalf("%s: no table with the header | package | job | may import |", path)
	}
	return rows
}

// listModule returns every package of the module with the module's packages
// its non-test files import, both relative to the module ("root" for the
// root package).
func listModule(t *testing.T) map[string][]string {
	t.Helper()
	gocmd := filepath.Join(runtime.GOROOT(), "bin", "go")
	if _, err := os.Stat(gocmd); err != nil {
		gocmd = "go"
	}
	cmd := exec.Command(gocmd, "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const module = "github.com/plantstore/plantstore"
	rel := func(p string) (string, bool) {
		switch {
		case p == module:
			return "root", true
		case strings.HasPrefix(p, module+"/"):
			return strings.TrimPrefix(p, module+"/"), true
		}
		return "", false
	}
	pkgs := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		name, ok := rel(f[0])
		if !ok {
			t.Fatalf("go list: %s is not in module %s", f[0], module)
		}
		imports := []string{}
		for _, p := range f[1:] {
			if r, ok := rel(p); ok {
				imports = append(imports, r)
			}
		}
		pkgs[name] = imports
	}
	return pkgs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func orNothing(s []string) string {
	if len(s) == 0 {
		return "nothing"
	}
	return strings.Join(s, ", ")
}

// TestPackageDocs keeps every package's doc comment short (at most 20
// lines): what the package is for and how to start using it; the rest
// belongs in docs/.
func TestPackageDocs(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs go list over the module")
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{.Dir}} {{join .GoFiles ","}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const maxLines = 20
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		for _, name := range strings.Split(f[2], ",") {
			file, err := parser.ParseFile(token.NewFileSet(), filepath.Join(f[1], name), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			if file.Doc == nil {
				continue
			}
			if n := len(file.Doc.List); n > maxLines {
				t.Errorf("%s (%s): package doc of %d lines, want at most %d (move the rest to docs/)", f[0], name, n, maxLines)
			}
		}
	}
}
