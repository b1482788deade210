-- +goose Up
-- An attempt's error, which the tenant sees, names the kind of failure only
-- (webhook.failureKind); attempts recorded before said what the send's error
-- said: the address a name resolved to, the server's name servers. Rewrite
-- those to the kind, by the words each kind's error carried.
UPDATE webhook_attempts SET error = CASE
    WHEN error LIKE '%forbidden address%' THEN 'forbidden address: deliveries there are refused unless the server runs with --webhook-allow-private'
    WHEN error LIKE '%no such host%' OR error LIKE '%lookup %' OR error LIKE '%server misbehaving%' THEN 'name did not resolve'
    WHEN error LIKE '%timeout%' OR error LIKE '%deadline exceeded%' OR error LIKE '%timed out%' THEN 'timeout'
    WHEN error LIKE '%x509%' OR error LIKE '%certificate%' THEN 'TLS certificate not valid'
    WHEN error LIKE '%tls:%' OR error LIKE '%remote error%' THEN 'TLS handshake failed'
    WHEN error LIKE '%connection refused%' THEN 'connection refused'
    WHEN error LIKE '%connection reset%' OR error LIKE '%broken pipe%' THEN 'connection reset'
    WHEN error LIKE '%EOF%' THEN 'connection closed before an answer'
    WHEN error LIKE 'invalid url%' THEN 'invalid url'
    WHEN error LIKE '%secret%' THEN 'no valid signing secret'
    ELSE 'connection failed'
END
WHERE error IS NOT NULL AND error NOT IN (
    'forbidden address: deliveries there are refused unless the server runs with --webhook-allow-private',
    'name did not resolve', 'connection refused', 'connection reset',
    'connection closed before an answer', 'timeout', 'TLS certificate not valid',
    'TLS handshake failed', 'connection failed', 'invalid url', 'no valid signing secret');

-- +goose Down
-- The errors' old words are gone; nothing to undo.
SELECT 1;
