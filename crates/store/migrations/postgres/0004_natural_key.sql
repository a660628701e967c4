-- The natural key of issues, pull requests, DDL migrations and changes
-- (cortex_domain::natural_key), computed by the store at every write; looked up per project.
ALTER TABLE items ADD COLUMN natural_key text;
CREATE INDEX items_natural_key ON items (natural_key, org, project) WHERE natural_key IS NOT NULL;
