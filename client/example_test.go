package client_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/plantstore/plantstore/client"
)

// The example runs against a server at 127.0.0.1:8080 with a token in
// PLANTSTORE_TOKEN, so it has no checked output.
func Example() {
	ctx := context.Background()
	c, err := client.New("http://127.0.0.1:8080", os.Getenv("PLANTSTORE_TOKEN"))
	if err != nil {
		log.Fatal(err)
	}

	// Creates are idempotent: sending the same plant again answers it.
	tag := "indoor"
	if _, err := c.CreatePlant(ctx, 1, "Monstera", &tag); err != nil {
		log.Fatal(err)
	}

	// API errors carry the HTTP status and the contract's stable code.
	var apiErr *client.Error
	if _, err := c.GetPlant(ctx, 404); errors.As(err, &apiErr) && apiErr.Code == 40401 {
		fmt.Println("no plant 404")
	}

	// AllPlants follows the Link header from page to page.
	for p, err := range c.AllPlants(ctx, client.ListOptions{Limit: 500, Tag: &tag}) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(p.ID, p.Name)
	}
}
