package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/plantstore/plantstore/internal/cli/cliflags"
	"github.com/plantstore/plantstore/internal/testkit/proctest"
)

// No Docker engine runs here: these tests check what can be checked
// without one: the compose file parses and uses real settings, the
// Dockerfile has its stages, user, port and probe, and systemd accepts the
// unit.

// envNames is every PLANTSTORE_* variable some flag reads.
func envNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, cmd := range cliflags.Commands(model(t)) {
		for _, f := range cmd.Flags {
			for _, e := range f.Envs {
				names[e] = true
			}
		}
	}
	return names
}

func TestComposeFile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var compose struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Build       any               `yaml:"build"`
			Environment map[string]string `yaml:"environment"`
			DependsOn   map[string]struct {
				Condition string `yaml:"condition"`
			} `yaml:"depends_on"`
			Ports       []string `yaml:"ports"`
			Volumes     []string `yaml:"volumes"`
			Healthcheck struct {
				Test []string `yaml:"test"`
			} `yaml:"healthcheck"`
			StopGracePeriod string `yaml:"stop_grace_period"`
		} `yaml:"services"`
		Volumes map[string]any `yaml:"volumes"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(data)))
	dec.KnownFields(false)
	if err := dec.Decode(&compose); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	ps, ok := compose.Services["plantstore"]
	if !ok {
		t.Fatal("compose.yaml has no plantstore service")
	}
	pg, ok := compose.Services["postgres"]
	if !ok {
		t.Fatal("compose.yaml has no postgres service")
	}
	if !strings.HasPrefix(pg.Image, "postgres:15") {
		t.Errorf("postgres image = %q, want postgres:15", pg.Image)
	}
	if ps.Build == nil {
		t.Error("plantstore is not built from the Dockerfile")
	}

	// Every PLANTSTORE_* variable is one a flag reads (a typo would be
	// silently ignored).
	known := envNames(t)
	for name := range ps.Environment {
		if strings.HasPrefix(name, "PLANTSTORE_") && !known[name] {
			t.Errorf("plantstore sets %s, which no flag reads", name)
		}
	}
	db := ps.Environment["PLANTSTORE_DB"]
	if !isPostgres(db) || !strings.Contains(db, "@postgres:5432/") {
		t.Errorf("PLANTSTORE_DB = %q, want a postgres:// URL to the postgres service", db)
	}
	// The password is the one the postgres service is given.
	if pw := pg.Environment["POSTGRES_PASSWORD"]; pw == "" || !strings.Contains(db, ":"+pw+"@") {
		t.Errorf("PLANTSTORE_DB does not use POSTGRES_PASSWORD")
	}
	if got, want := ps.DependsOn["postgres"].Condition, "service_healthy"; got != want {
		t.Errorf("plantstore depends_on postgres condition = %q, want %q", got, want)
	}
	for name, svc := range map[string][]string{"plantstore": ps.Healthcheck.Test, "postgres": pg.Healthcheck.Test} {
		if len(svc) == 0 {
			t.Errorf("%s has no healthcheck", name)
		}
	}
	// The plantstore probe is the healthcheck subcommand (no curl in the image).
	if hc := strings.Join(ps.Healthcheck.Test, " "); !strings.Contains(hc, "plantstore healthcheck") {
		t.Errorf("plantstore healthcheck = %q, want the healthcheck subcommand", hc)
	} else if r := runCLI(t, nil, append(ps.Healthcheck.Test[2:], "--help")...); !strings.Contains(r.stdout, "--url") {
		t.Errorf("the healthcheck command line %q does not parse: %v", hc, r.err)
	}
	// The database lives on a named volume.
	if len(pg.Volumes) == 0 {
		t.Fatal("postgres has no volume")
	}
	vol := strings.SplitN(pg.Volumes[0], ":", 2)[0]
	if _, ok := compose.Volumes[vol]; !ok {
		t.Errorf("postgres volume %q is not a named volume", vol)
	}
	if len(ps.Ports) == 0 || !strings.HasSuffix(ps.Ports[0], ":8080") {
		t.Errorf("plantstore ports = %v, want 8080 published", ps.Ports)
	}
	// Metrics: a listener of their own, reachable on the compose network,
	// published on the host's loopback only.
	// The API on every interface of the container (the binary's default
	// is loopback only).
	if got, want := ps.Environment["PLANTSTORE_ADDR"], ":8080"; got != want {
		t.Errorf("PLANTSTORE_ADDR = %q, want %q (the published port reaches it)", got, want)
	}
	if got, want := ps.Environment["PLANTSTORE_METRICS_ADDR"], ":9464"; got != want {
		t.Errorf("PLANTSTORE_METRICS_ADDR = %q, want %q (a scraper on the network reaches it)", got, want)
	}
	if !slices.Contains(ps.Ports, "127.0.0.1:9464:9464") {
		t.Errorf("plantstore ports = %v, want the metrics port 9464 published on 127.0.0.1 only", ps.Ports)
	}
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string // instructions, continuation lines joined
	var cur string
	for _, l := range strings.Split(string(data), "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "#") || l == "" && cur == "" {
			continue
		}
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		lines = append(lines, cur+l)
		cur = ""
	}
	has := func(re string) string {
		t.Helper()
		r := regexp.MustCompile(re)
		for _, l := range lines {
			if r.MatchString(l) {
				return l
			}
		}
		t.Errorf("Dockerfile has no instruction matching %s", re)
		return ""
	}
	has(`^FROM golang:1\.26-bookworm AS build$`)
	has(`^FROM gcr\.io/distroless/static-debian12:nonroot AS runtime$`)
	build := has(`^RUN CGO_ENABLED=1 go build `)
	for _, want := range []string{"-trimpath", "-s -w", "-static", "./cmd/plantstore"} {
		if !strings.Contains(build, want) {
			t.Errorf("the build lacks %s: %s", want, build)
		}
	}
	has(`^COPY --from=build /out/plantstore /usr/local/bin/plantstore$`)
	has(`^USER 65532:65532$`)
	has(`^EXPOSE 8080 9464$`)
	// The metrics listener on the container's interfaces, so that a scraper
	// reaches it (the default, loopback, would be unreachable).
	has(`^ENV .*PLANTSTORE_METRICS_ADDR=:9464( |$)`)
	// The API too (the default, 127.0.0.1:8080, would be unreachable).
	has(`^ENV .*PLANTSTORE_ADDR=:8080( |$)`)
	hc := has(`^HEALTHCHECK .*CMD \["/usr/local/bin/plantstore", "healthcheck"`)
	if !strings.Contains(hc, "/healthz") {
		t.Errorf("HEALTHCHECK does not probe /healthz: %s", hc)
	}
	has(`^ENTRYPOINT \["/usr/local/bin/plantstore"\]$`)
	has(`^CMD \["serve"\]$`)
	known := envNames(t)
	for _, m := range regexp.MustCompile(`PLANTSTORE_[A-Z_]+`).FindAllString(string(data), -1) {
		if !known[m] {
			t.Errorf("Dockerfile sets %s, which no flag reads", m)
		}
	}
	if ignore, err := os.ReadFile("../../.dockerignore"); err != nil || !strings.Contains(string(ignore), ".git") {
		t.Errorf(".dockerignore missing or without .git: %v", err)
	}
}

func TestSystemdUnit(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../deploy/plantstore.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(data)
	for _, want := range []string{
		"ExecStart=/usr/local/bin/plantstore serve",
		"DynamicUser=yes", "StateDirectory=plantstore", "NoNewPrivileges=yes",
		"ProtectSystem=strict", "PrivateTmp=yes", "Restart=on-failure", "EnvironmentFile=",
		"KillSignal=SIGTERM",
		"Environment=PLANTSTORE_METRICS_ADDR=127.0.0.1:9464", // metrics on loopback, apart from the API
		"Environment=PLANTSTORE_ADDR=:8080",                  // the API on every interface, for a proxy on another host
	} {
		if !strings.Contains(unit, "\n"+want) {
			t.Errorf("the unit lacks %s", want)
		}
	}
	known := envNames(t)
	for _, m := range regexp.MustCompile(`Environment=(PLANTSTORE_[A-Z_]+)=`).FindAllStringSubmatch(unit, -1) {
		if !known[m[1]] {
			t.Errorf("the unit sets %s, which no flag reads", m[1])
		}
	}
	analyze, err := exec.LookPath("systemd-analyze")
	if err != nil {
		skipUnlessCI(t, "systemd-analyze not installed: unit not verified")
	}
	// Verify the unit with the test's binary in place of /usr/local/bin.
	path := filepath.Join(t.TempDir(), "plantstore.service")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(unit, "/usr/local/bin/plantstore", binary)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := proctest.CombinedOutput(exec.Command(analyze, "verify", path)); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// TestObservabilityDoc: every plantstore_* metric a running server exposes
// is named in docs/observability.md.
func TestObservabilityDoc(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	const secret = "observability-doc-test-token-0123456789"
	s := startServer(t, tempDBPath(t), "--bootstrap-token", secret)
	do(t, testClient, "POST", s.url+"/plants", secret, `{"id":1,"name":"Fern"}`)
	status, _, body := do(t, testClient, "GET", s.metricsURL+"/metrics", "", "")
	if status != 200 {
		t.Fatalf("GET /metrics: %d", status)
	}
	names := regexp.MustCompile(`(?m)^# HELP (plantstore_[a-z_]+) `).FindAllStringSubmatch(string(body), -1)
	if len(names) < 8 {
		t.Fatalf("only %d plantstore metrics exposed:\n%s", len(names), body)
	}
	for _, m := range names {
		if !strings.Contains(string(doc), "`"+m[1]+"`") {
			t.Errorf("docs/observability.md does not name %s", m[1])
		}
	}
}
