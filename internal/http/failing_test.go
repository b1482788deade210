package http_test

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/plantstore/plantstore"
	"github.com/plantstore/plantstore/internal/testkit/mock"
)

// failures switches the services of withFailingServices to failing.
type failures struct {
	plants, tokens atomic.Bool
}

// withFailingServices gives the server mock plant and token services that
// pass every call to the real ones until fail says that service fails, and
// from then on fail it with the plant or token cause: storage failures on
// demand, without breaking a database under a running server.
func withFailingServices(fail *failures, plantCause, tokenCause error) func(*TestServer) {
	return func(ts *TestServer) {
		ts.PlantService = &mock.PlantService{
			CreatePlantFn: func(ctx context.Context, p *plantstore.Plant) (*plantstore.Plant, bool, error) {
				if fail.plants.Load() {
					return nil, false, plantCause
				}
				return ts.Services.Plants.CreatePlant(ctx, p)
			},
			FindPlantByIDFn: func(ctx context.Context, owner string, id int64) (*plantstore.Plant, error) {
				if fail.plants.Load() {
					return nil, plantCause
				}
				return ts.Services.Plants.FindPlantByID(ctx, owner, id)
			},
			FindPlantsFn: func(ctx context.Context, f plantstore.PlantFilter) ([]*plantstore.Plant, bool, error) {
				if fail.plants.Load() {
					return nil, false, plantCause
				}
				return ts.Services.Plants.FindPlants(ctx, f)
			},
			DeletePlantFn: func(ctx context.Context, owner string, id int64) error {
				if fail.plants.Load() {
					return plantCause
				}
				return ts.Services.Plants.DeletePlant(ctx, owner, id)
			},
		}
		ts.TokenService = &mock.TokenService{
			AuthenticateFn: func(ctx context.Context, secret string) (*plantstore.Token, error) {
				if fail.tokens.Load() {
					return nil, tokenCause
				}
				return ts.Services.Tokens.Authenticate(ctx, secret)
			},
			// The token API, passed through (the token lookup is what fails).
			MintTokenFn: func(ctx context.Context, caller *plantstore.Token, scopes []string, ttl time.Duration) (*plantstore.Token, string, error) {
				return ts.Services.Tokens.MintToken(ctx, caller, scopes, ttl)
			},
			FindOwnerTokensFn: func(ctx context.Context, f plantstore.TokenFilter) ([]*plantstore.Token, bool, error) {
				return ts.Services.Tokens.FindOwnerTokens(ctx, f)
			},
			FindOwnerTokenFn: func(ctx context.Context, owner, id string) (*plantstore.Token, error) {
				return ts.Services.Tokens.FindOwnerToken(ctx, owner, id)
			},
			RevokeOwnerTokenFn: func(ctx context.Context, owner, id string) (*plantstore.Token, error) {
				return ts.Services.Tokens.RevokeOwnerToken(ctx, owner, id)
			},
		}
	}
}
