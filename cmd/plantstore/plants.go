package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/plantstore/plantstore/client"
)

// plantsCmd is `plantstore plants`: a client of a running server.
type plantsCmd struct {
	Create plantsCreateCmd `cmd:"" help:"Create a plant (idempotent: the same plant again is not an error)."`
	Get    plantsGetCmd    `cmd:"" help:"Print a plant."`
	List   plantsListCmd   `cmd:"" help:"List plants, one page or --all of them."`
	Delete plantsDeleteCmd `cmd:"" help:"Delete a plant."`
	Import plantsImportCmd `cmd:"" help:"Create the plants of a JSON lines or CSV file, concurrently."`
}

// clientFlags are the flags of every `plants` command.
type clientFlags struct {
	Server string `default:"http://127.0.0.1:8080" env:"PLANTSTORE_SERVER" help:"Base URL of the Plant Store server."`
	Token  string `required:"" env:"PLANTSTORE_TOKEN" help:"Bearer token (plantstore token create)."`
}

func (f *clientFlags) client() (*client.Client, error) {
	return client.New(f.Server, f.Token)
}

// formatFlag selects the output of the commands that print plants.
type formatFlag struct {
	Format string `default:"json" enum:"json,table" help:"Output format: json or table."`
}

// print writes plants as a JSON value (one must be an object, else an array)
// or as a table.
func (f formatFlag) print(w io.Writer, plants []client.Plant, one bool) error {
	if f.Format == "table" {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tNAME\tTAG")
		for _, p := range plants {
			tag := ""
			if p.Tag != nil {
				tag = *p.Tag
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\n", p.ID, p.Name, tag)
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
func (c *plantsCreateCmd) Run(ctx context.Context, e *env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	p, err := cl.CreatePlant(ctx, c.ID, c.Name, c.Tag)
	if err != nil {
		return err
	}
	return c.print(e.stdout, []client.Plant{*p}, true)
}

type plantsGetCmd struct {
	clientFlags
	formatFlag
	ID int64 `arg:"" help:"Id of the plant."`
}

// Run prints the plant.
func (c *plantsGetCmd) Run(ctx context.Context, e *env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	p, err := cl.GetPlant(ctx, c.ID)
	if err != nil {
		return err
	}
	return c.print(e.stdout, []client.Plant{*p}, true)
}

type plantsDeleteCmd struct {
	clientFlags
	ID int64 `arg:"" help:"Id of the plant."`
}

// Run deletes the plant; it prints nothing.
func (c *plantsDeleteCmd) Run(ctx context.Context, e *env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	return cl.DeletePlant(ctx, c.ID)
}

type plantsListCmd struct {
	clientFlags
	formatFlag
	All   bool    `help:"Follow the Link header through every page and print all plants."`
	Limit int     `help:"Page size (1..1000); default: the server's (100)."`
	After *int64  `help:"Only plants whose id is greater (the cursor of the next page)."`
	Tag   *string `help:"Only plants with exactly this tag."`
}

// Run prints one page (and, on stderr, the flag for the next one) or all
// plants.
func (c *plantsListCmd) Run(ctx context.Context, e *env) error {
	cl, err := c.client()
	if err != nil {
		return err
	}
	opts := client.ListOptions{Limit: c.Limit, After: c.After, Tag: c.Tag}
	if !c.All {
		page, err := cl.ListPlants(ctx, opts)
		if err != nil {
			return err
		}
		if err := c.print(e.stdout, page.Plants, false); err != nil {
			return err
		}
		if page.Next != nil && page.Next.After != nil {
			fmt.Fprintf(e.stderr, "more plants follow: --after %d (or --all)\n", *page.Next.After)
		}
		return nil
	}
	var plants []client.Plant
	for p, err := range cl.AllPlants(ctx, opts) {
		if err != nil {
			return err
		}
		plants = append(plants, p)
	}
	return c.print(e.stdout, plants, false)
}
