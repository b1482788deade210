package clientcli

import (
	"context"
	"fmt"

	"github.com/plantstore/plantstore/client"
	"github.com/plantstore/plantstore/internal/cli/cliexit"
)

// plantsUpdateCmd is `plantstore plants update`: PATCH /plants/{id}.
type plantsUpdateCmd struct {
	clientFlags
	formatFlag
	ID        int64   `arg:"" help:"Id of the plant."`
	Name      *string `help:"New name (1 to 256 characters)."`
	Tag       *string `help:"New tag (at most 64 characters)."`
	RemoveTag bool    `name:"remove-tag" help:"Remove the plant's tag."`
	IfMatch   string  `name:"if-match" placeholder:"ETAG" help:"Change only if the plant's ETag is still this one."`
}

// Run changes the plant and prints it as changed, and its new ETag on
// stderr.
func (c *plantsUpdateCmd) Run(ctx context.Context, e *Env) error {
	if c.Tag != nil && c.RemoveTag {
		return cliexit.Usagef("--tag and --remove-tag exclude each other")
	}
	if c.Name == nil && c.Tag == nil && !c.RemoveTag {
		return cliexit.Usagef("nothing to change: give --name, --tag or --remove-tag")
	}
	cl, err := c.client()
	if err != nil {
		return err
	}
	p, err := cl.UpdatePlant(ctx, c.ID, client.PlantPatch{Name: c.Name, Tag: c.Tag, RemoveTag: c.RemoveTag},
		client.UpdatePlantOptions{IfMatch: c.IfMatch})
	if err != nil {
		return err
	}
	if err := c.print(e.Stdout, []client.Plant{*p}, true); err != nil {
		return err
	}
	printETag(e, p)
	return nil
}

// printETag writes the plant's ETag on stderr, for a later --if-match.
func printETag(e *Env, p *client.Plant) {
	if p.ETag != "" {
		fmt.Fprintf(e.Stderr, "etag: %s\n", p.ETag)
	}
}
