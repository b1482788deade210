package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/plantstore/plantstore/client"
)

// The examples run against a server at 127.0.0.1:8080 with a token in
// PLANTSTORE_TOKEN, so they have no checked output.
func Example() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080", os.Getenv("PLANTSTORE_TOKEN"))
	if err != nil {
		log.Fatal(err)
	}

	// Creates are idempotent: sending the same plant again answers it.
	tag := "indoor"
	if _, err := c.CreatePlant(ctx, client.NewPlant{ID: 1, Name: "Monstera", Tag: &tag}); err != nil {
		log.Fatal(err)
	}

	// API errors carry the HTTP status and the contract's stable code.
	var apiErr *client.Error
	if _, err := c.GetPlant(ctx, 404, client.GetPlantOptions{}); errors.As(err, &apiErr) && apiErr.Code == 40401 {
		fmt.Println("no plant 404")
	}

	// Plants follows the Link header from page to page; breaking out of
	// the loop stops the requests.
	for p, err := range c.Plants(ctx, client.ListPlantsOptions{Limit: 500, Tags: []string{tag}}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(p.ID, p.Name)
	}
}

// A search, newest first, a page at a time, with the number of plants it
// matches (asked for on the first page only: it is the query's).
func ExampleClient_ListPlants() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080", os.Getenv("PLANTSTORE_TOKEN"))
	if err != nil {
		log.Fatal(err)
	}
	opts := &client.ListPlantsOptions{Q: "mon del", Tags: []string{"indoor", "shade"}, Sort: "-created_at", Limit: 20, Count: "exact"}
	for opts != nil {
		page, err := c.ListPlants(ctx, *opts)
		if err != nil {
			log.Fatal(err)
		}
		if page.Total != nil {
			fmt.Printf("%d plants match\n", *page.Total)
		}
		for _, p := range page.Plants {
			fmt.Println(p.ID, p.Name, p.CreatedAt.Format(time.RFC3339))
		}
		opts = page.Next // the cursor of the next page, with the same query
	}
}

// A change made only if nobody changed the plant since it was read: a
// stale ETag is an *Error with Status 412 (code 41201) and changes nothing.
func ExampleClient_UpdatePlant() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080", os.Getenv("PLANTSTORE_TOKEN"))
	if err != nil {
		log.Fatal(err)
	}
	p, err := c.GetPlant(ctx, 1, client.GetPlantOptions{})
	if err != nil {
		log.Fatal(err)
	}
	name := p.Name + " (repotted)"
	_, err = c.UpdatePlant(ctx, 1, client.PlantPatch{Name: &name, RemoveTag: true},
		client.UpdatePlantOptions{IfMatch: p.ETag})
	var apiErr *client.Error
	switch {
	case errors.As(err, &apiErr) && apiErr.Status == 412:
		fmt.Println("plant 1 changed meanwhile: read it again")
	case err != nil:
		log.Fatal(err)
	}
}

// A subscription (the token needs the webhooks:manage scope): its secret
// is shown only on create and rotate; the recent delivery attempts tell
// whether the receiver gets them.
func ExampleClient_CreateWebhook() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080", os.Getenv("PLANTSTORE_TOKEN"))
	if err != nil {
		log.Fatal(err)
	}
	w, err := c.CreateWebhook(ctx, client.NewWebhook{URL: "https://inventory.example.com/plantstore", Description: "sync"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(w.ID, w.Secret) // verify deliveries with the secret

	for d, err := range c.WebhookDeliveries(ctx, w.ID, client.ListDeliveriesOptions{State: "failed"}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d.AttemptedAt, d.Attempt, d.State, d.StatusCode, d.Error)
	}
	for w, err := range c.Webhooks(ctx, client.ListWebhooksOptions{}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(w.ID, w.URL, w.Enabled)
	}
}
