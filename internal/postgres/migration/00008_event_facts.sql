-- +goose Up
-- Events and deliveries hold facts, not JSON (issue 22): the bodies are
-- rendered when they are read or sent, by one encoder (package eventjson).
-- convert_from(x, 'UTF8')::jsonb reads a stored body (UTF-8 JSON).

-- A subscription's events as a mask (plantstore.Mask): bit 1 typed (the
-- PlantEvent envelope; else the NewPlant body), 2 plant.created, 4
-- plant.updated, 8 plant.deleted. Untyped (types NULL): creates only, 2.
ALTER TABLE webhook_subscriptions ADD COLUMN event_mask BIGINT NOT NULL DEFAULT 2;
UPDATE webhook_subscriptions SET event_mask = 1
    | CASE WHEN ' ' || types || ' ' LIKE '% plant.created %' THEN 2 ELSE 0 END
    | CASE WHEN ' ' || types || ' ' LIKE '% plant.updated %' THEN 4 ELSE 0 END
    | CASE WHEN ' ' || types || ' ' LIKE '% plant.deleted %' THEN 8 ELSE 0 END
WHERE types IS NOT NULL;
ALTER TABLE webhook_subscriptions DROP COLUMN types;

-- An event's plant: its name and tag (plant_id is there), read from the
-- stored Plant JSON.
ALTER TABLE events ADD COLUMN name TEXT;
ALTER TABLE events ADD COLUMN tag TEXT;
UPDATE events SET name = COALESCE(convert_from(data, 'UTF8')::jsonb ->> 'name', ''),
    tag = convert_from(data, 'UTF8')::jsonb ->> 'tag';
ALTER TABLE events ALTER COLUMN name SET NOT NULL;
ALTER TABLE events DROP COLUMN data;

-- A delivery's event: its type, seq (NULL: a delivery to an untyped
-- subscription from before events, whose body has none), the plant's name
-- and tag, and typed (1: the envelope, 0: the NewPlant body); its id is the
-- message id's ('evt_' and the same hex), its time the delivery's
-- created_at. stored_body keeps the stored payload of the rows whose facts
-- would render other bytes: a NewPlant body an earlier encoder wrote
-- (encoding/json escapes <, >, &, U+2028 and U+2029, and writes \b and \f;
-- jx does not), or an envelope whose id is not the message id's. NULL for
-- every other row, and for every row written from now on.
ALTER TABLE webhook_deliveries ADD COLUMN event_type TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN seq BIGINT;
ALTER TABLE webhook_deliveries ADD COLUMN name TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN tag TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN typed INT;
ALTER TABLE webhook_deliveries ADD COLUMN stored_body BYTEA;
UPDATE webhook_deliveries SET typed = 1,
    event_type = convert_from(payload, 'UTF8')::jsonb ->> 'type',
    seq = (convert_from(payload, 'UTF8')::jsonb ->> 'seq')::BIGINT,
    name = COALESCE(convert_from(payload, 'UTF8')::jsonb -> 'data' ->> 'name', ''),
    tag = convert_from(payload, 'UTF8')::jsonb -> 'data' ->> 'tag'
WHERE convert_from(payload, 'UTF8')::jsonb ->> 'type' IS NOT NULL;
UPDATE webhook_deliveries SET typed = 0, event_type = 'plant.created',
    name = COALESCE(convert_from(payload, 'UTF8')::jsonb ->> 'name', ''),
    tag = convert_from(payload, 'UTF8')::jsonb ->> 'tag'
WHERE typed IS NULL;
UPDATE webhook_deliveries SET stored_body = payload
WHERE strpos(convert_from(payload, 'UTF8'), '\u003c') > 0 OR strpos(convert_from(payload, 'UTF8'), '\u003e') > 0
    OR strpos(convert_from(payload, 'UTF8'), '\u0026') > 0 OR strpos(convert_from(payload, 'UTF8'), '\u2028') > 0
    OR strpos(convert_from(payload, 'UTF8'), '\u2029') > 0 OR strpos(convert_from(payload, 'UTF8'), '\b') > 0
    OR strpos(convert_from(payload, 'UTF8'), '\f') > 0
    OR (typed = 1 AND (convert_from(payload, 'UTF8')::jsonb ->> 'id') IS DISTINCT FROM 'evt_' || substr(message_id, 5));
ALTER TABLE webhook_deliveries ALTER COLUMN event_type SET NOT NULL;
ALTER TABLE webhook_deliveries ALTER COLUMN name SET NOT NULL;
ALTER TABLE webhook_deliveries ALTER COLUMN typed SET NOT NULL;
ALTER TABLE webhook_deliveries DROP COLUMN payload;

-- +goose Down
-- The bodies come back as PostgreSQL's JSON of the facts, not byte for byte.
ALTER TABLE webhook_deliveries ADD COLUMN payload BYTEA;
UPDATE webhook_deliveries SET payload = COALESCE(stored_body, convert_to(CASE
    WHEN typed = 1 THEN jsonb_build_object('type', event_type, 'id', 'evt_' || substr(message_id, 5), 'seq', seq,
        'created_at', created_at, 'data', jsonb_strip_nulls(jsonb_build_object('id', plant_id, 'name', name, 'tag', tag)))
    ELSE jsonb_strip_nulls(jsonb_build_object('id', plant_id, 'name', name, 'tag', tag)) END::TEXT, 'UTF8'));
ALTER TABLE webhook_deliveries ALTER COLUMN payload SET NOT NULL;
ALTER TABLE webhook_deliveries DROP COLUMN stored_body;
ALTER TABLE webhook_deliveries DROP COLUMN typed;
ALTER TABLE webhook_deliveries DROP COLUMN tag;
ALTER TABLE webhook_deliveries DROP COLUMN name;
ALTER TABLE webhook_deliveries DROP COLUMN seq;
ALTER TABLE webhook_deliveries DROP COLUMN event_type;
ALTER TABLE events ADD COLUMN data BYTEA;
UPDATE events SET data = convert_to(jsonb_strip_nulls(jsonb_build_object('id', plant_id, 'name', name, 'tag', tag))::TEXT, 'UTF8');
ALTER TABLE events ALTER COLUMN data SET NOT NULL;
ALTER TABLE events DROP COLUMN tag;
ALTER TABLE events DROP COLUMN name;
ALTER TABLE webhook_subscriptions ADD COLUMN types TEXT;
UPDATE webhook_subscriptions SET types = trim(
    CASE WHEN event_mask & 2 <> 0 THEN 'plant.created ' ELSE '' END ||
    CASE WHEN event_mask & 4 <> 0 THEN 'plant.updated ' ELSE '' END ||
    CASE WHEN event_mask & 8 <> 0 THEN 'plant.deleted' ELSE '' END)
WHERE event_mask & 1 <> 0;
ALTER TABLE webhook_subscriptions DROP COLUMN event_mask;
