package clientcli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/plantstore/plantstore/internal/cli/cliexit"
)

// Healthcheck is `plantstore healthcheck`: a probe of a running server for
// container HEALTHCHECKs on images without curl or a shell (distroless).
type Healthcheck struct {
	URL     string        `name:"url" env:"PLANTSTORE_HEALTHCHECK_URL" default:"http://127.0.0.1:8080/healthz" help:"URL to GET; healthy when it answers 200."`
	Timeout time.Duration `env:"PLANTSTORE_HEALTHCHECK_TIMEOUT" default:"3s" help:"Time limit of the probe."`
}

// Run gets the URL once: nil on a 200, else an error (exit status 1).
func (c *Healthcheck) Run(ctx context.Context, e *Env) error {
	if c.Timeout <= 0 {
		return cliexit.Usagef("invalid setting --timeout (PLANTSTORE_HEALTHCHECK_TIMEOUT): must be positive, got %v", c.Timeout)
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.URL, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: --url: %w", err)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer res.Body.Close()
	io.Copy(io.Discard, io.LimitReader(res.Body, 1<<16))
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: GET %s: status %d", c.URL, res.StatusCode)
	}
	fmt.Fprintln(e.Stdout, "ok")
	return nil
}
