package clientcli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
)

// Plants is `plantstore plants`: a client of a running server.
type Plants struct {
	Create plantsCreateCmd `cmd:"" help:"Create a plant (idempotent: the same plant again is not an error)."`
	Get    plantsGetCmd    `cmd:"" help:"Print a plant."`
	List   plantsListCmd   `cmd:"" help:"List plants, one page or --all of them."`
	Update plantsUpdateCmd `cmd:"" help:"Change a plant's name and/or tag (optionally only if unchanged since read: --if-match)."`
	Delete plantsDeleteCmd `cmd:"" help:"Delete a plant."`
	Import plantsImportCmd `cmd:"" help:"Create the plants of a JSON lines or CSV file, concurrently."`
}

// clientFlags are the flags of every `plants` command.
type clientFlags struct {
	Server string `default:"http://127.0.0.1:8080" env:"PLANTSTORE_SERVER" help:"Base URL of the Plant Store server, or host:port (then http://host:port)."`
	Token  string `required:"" env:"PLANTSTORE_TOKEN" help:"Bearer token (plantstore token create)."`
}

func (f *clientFlags) client() (*client.Client, error) {
	c, err := client.New(serverURL(f.Server), f.Token)
	if err != nil {
		return nil, cliexit.Usagef("--server %q or --token: %w", f.Server, err)
	}
	return c, nil
}

// serverURL is the base URL of --server: a value without a scheme
// (127.0.0.1:8080, localhost:8080, [::1]:8080, plants.internal) is
// http://VALUE.
func serverURL(s string) string {
	if !strings.Contains(s, "://") {
		return "http://" + s
	}
	return s
}

// formatFlag selects the output of the commands that print plants.
type formatFlag struct {
	Format string `default:"json" enum:"json,table" help:"Output format: json or table."`
}

// print writes plants as a JSON value (one must be an object, else an array)
// or as a table (names and tags through textColumn).
func (f formatFlag) print(w io.Writer, plants []client.Plant, one bool) error {
	if f.Format == "table" {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tTAG")
		for _, p := range plants {
			tag := ""
			if p.Tag != nil {
				tag = *p.Tag
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\n", p.ID, TextColumn(p.Name), TextColumn(tag))
		}
		return tw.Flush()
	}
	var v any = plants
	if one {
		v = plants[0]
	} else if plants == nil {
		v = []client.Plant{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

type plantsCreateCmd struct {
	clientFlags
	formatFlag
	ID   int64   `arg:"" help:"Id of the plant (int64)."`
	Name string  `arg:"" help:"Name (1 to 256 characters)."`
	Tag  *string `help:"Tag (at most 64 characters)."`
}

// Run creates the plant and prints the stored one.
func (c *plantsCreateCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	p, err := cl.CreatePlant(ctx, client.NewPlant{ID: c.ID, Name: c.Name, Tag: c.Tag})
	if err != nil {
		return err
	}
	return c.print(e.Stdout, []client.Plant{*p}, true)
}

type plantsGetCmd struct {
	clientFlags
	formatFlag
	ID int64 `arg:"" help:"Id of the plant."`
}

// Run prints the plant, and its ETag on stderr.
func (c *plantsGetCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	p, err := cl.GetPlant(ctx, c.ID, client.GetPlantOptions{})
	if err != nil {
		return err
	}
	if err := c.print(e.Stdout, []client.Plant{*p}, true); err != nil {
		return err
	}
	printETag(e, p)
	return nil
}

type plantsDeleteCmd struct {
	clientFlags
	ID      int64  `arg:"" help:"Id of the plant."`
	IfMatch string `name:"if-match" placeholder:"ETAG" help:"Delete only if the plant's ETag is still this one."`
}

// Run deletes the plant; it prints nothing.
func (c *plantsDeleteCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	return cl.DeletePlant(ctx, c.ID, client.DeletePlantOptions{IfMatch: c.IfMatch})
}

type plantsListCmd struct {
	clientFlags
	formatFlag
	All           bool      `help:"Follow the Link header through every page and print all plants."`
	Limit         int       `help:"Page size (1..1000); default: the server's (100)."`
	Q             string    `name:"q" placeholder:"TEXT" help:"Search: only plants whose name or tag has, for every word of TEXT, a word starting with it (case and accents ignored: --q 'mon del' finds Monstera deliciosa)."`
	Tag           []string  `sep:"none" placeholder:"TAG" help:"Only plants with exactly this tag; repeat the flag for any of several."`
	CreatedAfter  time.Time `name:"created-after" placeholder:"TIME" help:"Only plants created after TIME (exclusive), RFC 3339 with a zone: 2025-03-01T12:00:00Z."`
	CreatedBefore time.Time `name:"created-before" placeholder:"TIME" help:"Only plants created before TIME (exclusive), RFC 3339 with a zone."`
	Sort          string    `enum:",id,-id,name,-name,created_at,-created_at" default:"" placeholder:"KEY" help:"Order: id (the default), name or created_at; a leading - for descending (--sort=-name)."`
	After         string    `placeholder:"CURSOR" help:"The cursor of the next page, as the previous page printed it on stderr, with the same query flags (a plant id works too, by id)."`
	Count         string    `enum:",exact,estimated" default:"" help:"Also count the plants the query matches, printed on stderr (N plants match (exact)), never on stdout: exact, or estimated (cheap at any size, exact up to 1,000)."`
}

// Run prints one page (and, on stderr, the flag for the next one) or all
// plants, and on stderr the count --count asks for.
func (c *plantsListCmd) Run(ctx context.Context, e *Env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	opts := client.ListPlantsOptions{
		Limit: c.Limit, Q: c.Q, Tags: c.Tag, CreatedAfter: c.CreatedAfter, CreatedBefore: c.CreatedBefore,
		Sort: c.Sort, After: c.After, Count: c.Count,
	}
	// The first page answers the count; --all follows its next link.
	page, err := cl.ListPlants(ctx, opts)
	if err != nil {
		return err
	}
	plants := page.Plants
	if c.All && page.Next != nil {
		for p, err := range cl.Plants(ctx, *page.Next) {
			if err != nil {
				return err
			}
			plants = append(plants, p)
		}
	}
	if err := c.print(e.Stdout, plants, false); err != nil {
		return err
	}
	if page.Total != nil {
		fmt.Fprintln(e.Stderr, matchCount(*page.Total, page.TotalEstimated))
	}
	if !c.All && page.Next != nil {
		fmt.Fprintf(e.Stderr, "more plants follow: --after %s (with the same query flags; or --all)\n", page.Next.After)
	}
	return nil
}

// matchCount is the line that tells a list's count: "1204 plants match
// (exact)", "about 1204 plants match (estimated)".
func matchCount(n int64, estimated bool) string {
	what := "plants match"
	if n == 1 {
		what = "plant matches"
	}
	if estimated {
		return fmt.Sprintf("about %d %s (estimated)", n, what)
	}
	return fmt.Sprintf("%d %s (exact)", n, what)
}
