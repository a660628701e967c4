-- The ends of the knowledge graph's links, so a walk is an index lookup per step: a relation's
-- `from` and `to` item ids, an observation's entity (in link_from). The store sets them from
-- `data` at every write, once the service has resolved references to ids. Rows written before
-- this migration get them when next rewritten (a backfill here would rewrite their history).
ALTER TABLE items ADD COLUMN link_from TEXT;
ALTER TABLE items ADD COLUMN link_to TEXT;
CREATE INDEX items_link_from ON items (link_from) WHERE link_from IS NOT NULL AND deleted_at IS NULL;
CREATE INDEX items_link_to ON items (link_to) WHERE link_to IS NOT NULL AND deleted_at IS NULL;
