-- A new embedding alone (`cortex reindex`) is derived data, not a change to the item: it no
-- longer moves `updated_at` (which ranks by recency). Any other change still does, raw SQL
-- included. The audit trigger already ignores the embedding (`UPDATE OF` lists no embedding).
CREATE OR REPLACE FUNCTION items_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.updated_at IS NOT DISTINCT FROM OLD.updated_at
       AND (to_jsonb(NEW) - 'embedding' - 'tsv') IS DISTINCT FROM (to_jsonb(OLD) - 'embedding' - 'tsv') THEN
        NEW.updated_at := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    END IF;
    RETURN NEW;
END $$;
