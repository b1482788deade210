-- +goose Up
-- Events and deliveries hold facts, not JSON (issue 22): the bodies are
-- rendered when they are read or sent, by one encoder (package eventjson).

-- A subscription's events as a mask (plantstore.Mask): bit 1 typed (the
-- PlantEvent envelope; else the NewPlant body), 2 plant.created, 4
-- plant.updated, 8 plant.deleted. Untyped (types NULL): creates only, 2.
ALTER TABLE webhook_subscriptions ADD COLUMN event_mask INTEGER NOT NULL DEFAULT 2;
UPDATE webhook_subscriptions SET event_mask = 1
    | CASE WHEN instr(' ' || types || ' ', ' plant.created ') > 0 THEN 2 ELSE 0 END
    | CASE WHEN instr(' ' || types || ' ', ' plant.updated ') > 0 THEN 4 ELSE 0 END
    | CASE WHEN instr(' ' || types || ' ', ' plant.deleted ') > 0 THEN 8 ELSE 0 END
WHERE types IS NOT NULL;
ALTER TABLE webhook_subscriptions DROP COLUMN types;

-- An event's plant: its name and tag (plant_id is there), read from the
-- stored Plant JSON. (CAST: SQLite reads a BLOB as JSONB.)
ALTER TABLE events ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE events ADD COLUMN tag TEXT;
UPDATE events SET name = COALESCE(json_extract(CAST(data AS TEXT), '$.name'), ''), tag = json_extract(CAST(data AS TEXT), '$.tag');
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
ALTER TABLE webhook_deliveries ADD COLUMN event_type TEXT NOT NULL DEFAULT 'plant.created';
ALTER TABLE webhook_deliveries ADD COLUMN seq INTEGER;
ALTER TABLE webhook_deliveries ADD COLUMN name TEXT NOT NULL DEFAULT '';
ALTER TABLE webhook_deliveries ADD COLUMN tag TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN typed INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhook_deliveries ADD COLUMN stored_body BLOB;
UPDATE webhook_deliveries SET typed = 1,
    event_type = COALESCE(json_extract(CAST(payload AS TEXT), '$.type'), event_type),
    seq = json_extract(CAST(payload AS TEXT), '$.seq'),
    name = COALESCE(json_extract(CAST(payload AS TEXT), '$.data.name'), ''),
    tag = json_extract(CAST(payload AS TEXT), '$.data.tag')
WHERE json_type(CAST(payload AS TEXT), '$.type') IS NOT NULL;
UPDATE webhook_deliveries SET
    name = COALESCE(json_extract(CAST(payload AS TEXT), '$.name'), ''),
    tag = json_extract(CAST(payload AS TEXT), '$.tag')
WHERE typed = 0;
UPDATE webhook_deliveries SET stored_body = payload
WHERE instr(CAST(payload AS TEXT), '\u003c') > 0 OR instr(CAST(payload AS TEXT), '\u003e') > 0
    OR instr(CAST(payload AS TEXT), '\u0026') > 0 OR instr(CAST(payload AS TEXT), '\u2028') > 0
    OR instr(CAST(payload AS TEXT), '\u2029') > 0 OR instr(CAST(payload AS TEXT), '\b') > 0
    OR instr(CAST(payload AS TEXT), '\f') > 0
    OR (typed = 1 AND json_extract(CAST(payload AS TEXT), '$.id') IS NOT 'evt_' || substr(message_id, 5));
ALTER TABLE webhook_deliveries DROP COLUMN payload;

-- +goose Down
-- The bodies come back as SQLite's JSON of the facts, not byte for byte.
ALTER TABLE webhook_deliveries ADD COLUMN payload BLOB NOT NULL DEFAULT x'';
UPDATE webhook_deliveries SET payload = CAST(CASE
    WHEN stored_body IS NOT NULL THEN stored_body
    WHEN typed = 1 THEN json_object('type', event_type, 'id', 'evt_' || substr(message_id, 5), 'seq', seq,
        'created_at', strftime('%Y-%m-%dT%H:%M:%fZ', created_at / 1e9, 'unixepoch'),
        'data', json(CASE WHEN tag IS NULL THEN json_object('id', plant_id, 'name', name)
            ELSE json_object('id', plant_id, 'name', name, 'tag', tag) END))
    WHEN tag IS NULL THEN json_object('id', plant_id, 'name', name)
    ELSE json_object('id', plant_id, 'name', name, 'tag', tag) END AS BLOB);
ALTER TABLE webhook_deliveries DROP COLUMN stored_body;
ALTER TABLE webhook_deliveries DROP COLUMN typed;
ALTER TABLE webhook_deliveries DROP COLUMN tag;
ALTER TABLE webhook_deliveries DROP COLUMN name;
ALTER TABLE webhook_deliveries DROP COLUMN seq;
ALTER TABLE webhook_deliveries DROP COLUMN event_type;
ALTER TABLE events ADD COLUMN data BLOB NOT NULL DEFAULT x'';
UPDATE events SET data = CAST(CASE WHEN tag IS NULL THEN json_object('id', plant_id, 'name', name)
    ELSE json_object('id', plant_id, 'name', name, 'tag', tag) END AS BLOB);
ALTER TABLE events DROP COLUMN tag;
ALTER TABLE events DROP COLUMN name;
ALTER TABLE webhook_subscriptions ADD COLUMN types TEXT;
UPDATE webhook_subscriptions SET types = trim(
    CASE WHEN event_mask & 2 <> 0 THEN 'plant.created ' ELSE '' END ||
    CASE WHEN event_mask & 4 <> 0 THEN 'plant.updated ' ELSE '' END ||
    CASE WHEN event_mask & 8 <> 0 THEN 'plant.deleted' ELSE '' END)
WHERE event_mask & 1 <> 0;
ALTER TABLE webhook_subscriptions DROP COLUMN event_mask;
