-- +goose Up
-- The search index takes new entries into its pending list (fastupdate)
-- until the list holds gin_pending_list_limit, 4 MB by default; every
-- search reads the whole list, which a table of steady creates keeps near
-- full: 3-4 ms more a search (2M plants, measured). At 64 kB a search
-- reads a few pages of it, and inserts flush it more often: bulk loads
-- went from 32,000 to 28,000 rows/s, a page of a rare word from 3.3-4.4 ms
-- to 0.5-1.3 ms. Without the pending list (fastupdate = off) loads fell to
-- 22,000 rows/s for no faster search.
ALTER INDEX plants_search SET (gin_pending_list_limit = 64);
SELECT gin_clean_pending_list('plants_search');

-- +goose Down
ALTER INDEX plants_search RESET (gin_pending_list_limit);
