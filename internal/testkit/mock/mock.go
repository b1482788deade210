// Package mock holds hand-written fakes of the plantstore service
// interfaces, in the style of wtf's mock package: every method calls the Fn
// field of the same name, which a test sets to what it needs (a method whose
// Fn is nil panics, so a test cannot pass through a call it did not expect).
// The http tests use them to make a service fail in a chosen way instead of
// breaking a real database.
package mock

import (
	"context"
	"time"

	"github.com/plantstore/plantstore"
)

var (
	_ plantstore.PlantService   = (*PlantService)(nil)
	_ plantstore.TokenService   = (*TokenService)(nil)
	_ plantstore.WebhookService = (*WebhookService)(nil)
)

// PlantService is a fake plantstore.PlantService.
type PlantService struct {
	CreatePlantFn   func(ctx context.Context, p *plantstore.Plant) (*plantstore.Plant, bool, error)
	CreatePlantsFn  func(ctx context.Context, plants []*plantstore.Plant) ([]*plantstore.Plant, error)
	FindPlantByIDFn func(ctx context.Context, owner string, id int64) (*plantstore.Plant, error)
	FindPlantsFn    func(ctx context.Context, f plantstore.PlantFilter) ([]*plantstore.Plant, bool, error)
	CountPlantsFn   func(ctx context.Context, f plantstore.PlantFilter, mode plantstore.CountMode) (int64, error)
	DeletePlantFn   func(ctx context.Context, owner string, id int64) error
	ImportPlantsFn  func(ctx context.Context, plants []*plantstore.Plant) (int, error)
	DeletePlantIfFn func(ctx context.Context, owner string, id int64, ifMatch string) error
	UpdatePlantFn   func(ctx context.Context, owner string, id int64, upd plantstore.PlantUpdate, ifMatch string) (*plantstore.Plant, error)
}

// CreatePlant calls CreatePlantFn.
func (s *PlantService) CreatePlant(ctx context.Context, p *plantstore.Plant) (*plantstore.Plant, bool, error) {
	return s.CreatePlantFn(ctx, p)
}

// CreatePlants calls CreatePlantsFn.
func (s *PlantService) CreatePlants(ctx context.Context, plants []*plantstore.Plant) ([]*plantstore.Plant, error) {
	return s.CreatePlantsFn(ctx, plants)
}

// FindPlantByID calls FindPlantByIDFn.
func (s *PlantService) FindPlantByID(ctx context.Context, owner string, id int64) (*plantstore.Plant, error) {
	return s.FindPlantByIDFn(ctx, owner, id)
}

// FindPlants calls FindPlantsFn.
func (s *PlantService) FindPlants(ctx context.Context, f plantstore.PlantFilter) ([]*plantstore.Plant, bool, error) {
	return s.FindPlantsFn(ctx, f)
}

// CountPlants calls CountPlantsFn.
func (s *PlantService) CountPlants(ctx context.Context, f plantstore.PlantFilter, mode plantstore.CountMode) (int64, error) {
	return s.CountPlantsFn(ctx, f, mode)
}

// DeletePlant calls DeletePlantFn.
func (s *PlantService) DeletePlant(ctx context.Context, owner string, id int64) error {
	return s.DeletePlantFn(ctx, owner, id)
}

// DeletePlantIf calls DeletePlantIfFn.
func (s *PlantService) DeletePlantIf(ctx context.Context, owner string, id int64, ifMatch string) error {
	return s.DeletePlantIfFn(ctx, owner, id, ifMatch)
}

// UpdatePlant calls UpdatePlantFn.
func (s *PlantService) UpdatePlant(ctx context.Context, owner string, id int64, upd plantstore.PlantUpdate, ifMatch string) (*plantstore.Plant, error) {
	return s.UpdatePlantFn(ctx, owner, id, upd, ifMatch)
}

// ImportPlants calls ImportPlantsFn.
func (s *PlantService) ImportPlants(ctx context.Context, plants []*plantstore.Plant) (int, error) {
	return s.ImportPlantsFn(ctx, plants)
}

// TokenService is a fake plantstore.TokenService.
type TokenService struct {
	CreateTokenFn      func(ctx context.Context, req plantstore.TokenRequest) (*plantstore.Token, string, error)
	CreateFirstTokenFn func(ctx context.Context, req plantstore.TokenRequest) (*plantstore.Token, string, bool, error)
	FindTokensFn       func(ctx context.Context) ([]*plantstore.Token, error)
	RevokeTokenFn      func(ctx context.Context, id string) error
	AuthenticateFn     func(ctx context.Context, secret string) (*plantstore.Token, error)
	MintTokenFn        func(ctx context.Context, caller *plantstore.Token, scopes []string, ttl time.Duration) (*plantstore.Token, string, error)
	FindOwnerTokensFn  func(ctx context.Context, f plantstore.TokenFilter) ([]*plantstore.Token, bool, error)
	FindOwnerTokenFn   func(ctx context.Context, owner, id string) (*plantstore.Token, error)
	RevokeOwnerTokenFn func(ctx context.Context, owner, id string) (*plantstore.Token, error)
}

// CreateToken calls CreateTokenFn.
func (s *TokenService) CreateToken(ctx context.Context, req plantstore.TokenRequest) (*plantstore.Token, string, error) {
	return s.CreateTokenFn(ctx, req)
}

// CreateFirstToken calls CreateFirstTokenFn.
func (s *TokenService) CreateFirstToken(ctx context.Context, req plantstore.TokenRequest) (*plantstore.Token, string, bool, error) {
	return s.CreateFirstTokenFn(ctx, req)
}

// FindTokens calls FindTokensFn.
func (s *TokenService) FindTokens(ctx context.Context) ([]*plantstore.Token, error) {
	return s.FindTokensFn(ctx)
}

// RevokeToken calls RevokeTokenFn.
func (s *TokenService) RevokeToken(ctx context.Context, id string) error {
	return s.RevokeTokenFn(ctx, id)
}

// Authenticate calls AuthenticateFn.
func (s *TokenService) Authenticate(ctx context.Context, secret string) (*plantstore.Token, error) {
	return s.AuthenticateFn(ctx, secret)
}

// MintToken calls MintTokenFn.
func (s *TokenService) MintToken(ctx context.Context, caller *plantstore.Token, scopes []string, ttl time.Duration) (*plantstore.Token, string, error) {
	return s.MintTokenFn(ctx, caller, scopes, ttl)
}

// FindOwnerTokens calls FindOwnerTokensFn.
func (s *TokenService) FindOwnerTokens(ctx context.Context, f plantstore.TokenFilter) ([]*plantstore.Token, bool, error) {
	return s.FindOwnerTokensFn(ctx, f)
}

// FindOwnerToken calls FindOwnerTokenFn.
func (s *TokenService) FindOwnerToken(ctx context.Context, owner, id string) (*plantstore.Token, error) {
	return s.FindOwnerTokenFn(ctx, owner, id)
}

// RevokeOwnerToken calls RevokeOwnerTokenFn.
func (s *TokenService) RevokeOwnerToken(ctx context.Context, owner, id string) (*plantstore.Token, error) {
	return s.RevokeOwnerTokenFn(ctx, owner, id)
}

// WebhookService is a fake plantstore.WebhookService.
type WebhookService struct {
	CreateSubscriptionFn   func(ctx context.Context, owner, url, description string, types ...string) (*plantstore.Subscription, error)
	FindSubscriptionsFn    func(ctx context.Context, f plantstore.SubscriptionFilter) ([]*plantstore.Subscription, bool, error)
	FindSubscriptionByIDFn func(ctx context.Context, owner, id string) (*plantstore.Subscription, error)
	DeleteSubscriptionFn   func(ctx context.Context, owner, id string) error
	RotateSecretFn         func(ctx context.Context, owner, id string, oldExpiresIn *time.Duration) (*plantstore.Subscription, error)
	FindAttemptsFn         func(ctx context.Context, f plantstore.AttemptFilter) ([]*plantstore.Attempt, bool, error)
	UpdateSubscriptionFn   func(ctx context.Context, owner, id string, u plantstore.SubscriptionUpdate) (*plantstore.Subscription, *time.Time, error)
	ResendDeliveryFn       func(ctx context.Context, owner, id, messageID string) (*plantstore.Delivery, error)
	RecoverDeliveriesFn    func(ctx context.Context, owner, id string, since time.Time) (int64, error)
	PingSubscriptionFn     func(ctx context.Context, owner, id string) (*plantstore.PingResult, error)
}

// CreateSubscription calls CreateSubscriptionFn.
func (s *WebhookService) CreateSubscription(ctx context.Context, owner, url, description string, types ...string) (*plantstore.Subscription, error) {
	return s.CreateSubscriptionFn(ctx, owner, url, description, types...)
}

// FindSubscriptions calls FindSubscriptionsFn.
func (s *WebhookService) FindSubscriptions(ctx context.Context, f plantstore.SubscriptionFilter) ([]*plantstore.Subscription, bool, error) {
	return s.FindSubscriptionsFn(ctx, f)
}

// FindSubscriptionByID calls FindSubscriptionByIDFn.
func (s *WebhookService) FindSubscriptionByID(ctx context.Context, owner, id string) (*plantstore.Subscription, error) {
	return s.FindSubscriptionByIDFn(ctx, owner, id)
}

// DeleteSubscription calls DeleteSubscriptionFn.
func (s *WebhookService) DeleteSubscription(ctx context.Context, owner, id string) error {
	return s.DeleteSubscriptionFn(ctx, owner, id)
}

// RotateSecret calls RotateSecretFn.
func (s *WebhookService) RotateSecret(ctx context.Context, owner, id string, oldExpiresIn *time.Duration) (*plantstore.Subscription, error) {
	return s.RotateSecretFn(ctx, owner, id, oldExpiresIn)
}

// FindAttempts calls FindAttemptsFn.
func (s *WebhookService) FindAttempts(ctx context.Context, f plantstore.AttemptFilter) ([]*plantstore.Attempt, bool, error) {
	return s.FindAttemptsFn(ctx, f)
}

// UpdateSubscription calls UpdateSubscriptionFn.
func (s *WebhookService) UpdateSubscription(ctx context.Context, owner, id string, u plantstore.SubscriptionUpdate) (*plantstore.Subscription, *time.Time, error) {
	return s.UpdateSubscriptionFn(ctx, owner, id, u)
}

// ResendDelivery calls ResendDeliveryFn.
func (s *WebhookService) ResendDelivery(ctx context.Context, owner, id, messageID string) (*plantstore.Delivery, error) {
	return s.ResendDeliveryFn(ctx, owner, id, messageID)
}

// RecoverDeliveries calls RecoverDeliveriesFn.
func (s *WebhookService) RecoverDeliveries(ctx context.Context, owner, id string, since time.Time) (int64, error) {
	return s.RecoverDeliveriesFn(ctx, owner, id, since)
}

// PingSubscription calls PingSubscriptionFn.
func (s *WebhookService) PingSubscription(ctx context.Context, owner, id string) (*plantstore.PingResult, error) {
	return s.PingSubscriptionFn(ctx, owner, id)
}
