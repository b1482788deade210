-- +goose Up
-- An event's plant carries its own times (plantstore.Event.PlantCreatedAt,
-- PlantUpdatedAt), and so do the deliveries that announce it, as timestamptz.
-- The rows recorded before have none (NULL: not known), and render as they
-- did: a pending delivery is sent with the bytes it had.
ALTER TABLE events ADD COLUMN plant_created_at TIMESTAMPTZ;
ALTER TABLE events ADD COLUMN plant_updated_at TIMESTAMPTZ;
ALTER TABLE webhook_deliveries ADD COLUMN plant_created_at TIMESTAMPTZ;
ALTER TABLE webhook_deliveries ADD COLUMN plant_updated_at TIMESTAMPTZ;

-- +goose Down
ALTER TABLE webhook_deliveries DROP COLUMN plant_updated_at;
ALTER TABLE webhook_deliveries DROP COLUMN plant_created_at;
ALTER TABLE events DROP COLUMN plant_updated_at;
ALTER TABLE events DROP COLUMN plant_created_at;
