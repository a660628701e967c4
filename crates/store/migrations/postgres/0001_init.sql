-- The PostgreSQL schema mirrors the SQLite one (migrations/sqlite): same columns, same rules,
-- so both backends pass one conformance suite. Times are epoch milliseconds (bigint), as in
-- SQLite, so exports move between backends unchanged.
-- Extensions are created by the store before migrating (it checks they are available first).

-- Items of every kind share one table; kind-specific fields live in `data`.
-- Scope columns use '' for "not set" so that uniqueness and equality need no NULL handling.
CREATE TABLE items (
    id              uuid    PRIMARY KEY DEFAULT uuidv7(),
    kind            text    NOT NULL,
    org             text    NOT NULL DEFAULT '',
    project         text    NOT NULL DEFAULT '',
    branch          text    NOT NULL DEFAULT '',
    service         text    NOT NULL DEFAULT '',
    sprint          text    NOT NULL DEFAULT '',
    tenant          text    NOT NULL DEFAULT '',
    environment     text    NOT NULL DEFAULT '',
    title           text    NOT NULL,
    body            text    NOT NULL,
    content         text,
    data            jsonb   NOT NULL DEFAULT '{}',
    metadata        jsonb,
    source          jsonb,
    tags            text[]  NOT NULL DEFAULT '{}',
    status          text,
    content_hash    text    NOT NULL,
    idempotency_key text,
    ttl             text,
    created_at      bigint  NOT NULL,
    updated_at      bigint  NOT NULL,
    expires_at      bigint,
    deleted_at      bigint,
    -- The embedding of title + body, of whatever dimension the store's model has; an HNSW
    -- index per dimension (created by the store when vectors of that size first arrive).
    embedding       vector,
    -- Title words weigh as A, body words as B: a title match counts twice a body match.
    tsv             tsvector GENERATED ALWAYS AS (
                        setweight(to_tsvector('english', title), 'A') ||
                        setweight(to_tsvector('english', body), 'B')
                    ) STORED
);

-- One item per idempotency key within a project: a retried write cannot store twice,
-- even when two processes race (the constraint decides, not the check before it).
CREATE UNIQUE INDEX items_idempotency ON items (org, project, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
CREATE INDEX items_dedupe ON items (content_hash, kind, org, project, branch);
CREATE INDEX items_scope ON items (org, project, branch);
CREATE INDEX items_updated ON items (updated_at);
CREATE INDEX items_tsv ON items USING gin (tsv);
CREATE INDEX items_tags ON items USING gin (tags);

-- `updated_at` moves on every change, even one made by raw SQL that forgot it.
CREATE FUNCTION items_touch() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.updated_at IS NOT DISTINCT FROM OLD.updated_at THEN
        NEW.updated_at := (extract(epoch FROM clock_timestamp()) * 1000)::bigint;
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER items_touch BEFORE UPDATE ON items FOR EACH ROW EXECUTE FUNCTION items_touch();

-- A number that moves on every committed write, for caches that must notice changes made by
-- other processes (sequences are not rolled back, so it may move without a change: harmless).
CREATE SEQUENCE items_changes;
CREATE FUNCTION items_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM nextval('items_changes');
    RETURN NULL;
END $$;
CREATE TRIGGER items_changed AFTER INSERT OR UPDATE OR DELETE ON items
    FOR EACH STATEMENT EXECUTE FUNCTION items_changed();

-- Words as written (not stemmed), with how many items hold them: spelling suggestions and
-- typo tolerance look here (pg_trgm finds words a few letters away). Kept by the store.
CREATE TABLE lexicon (
    term text COLLATE "C" PRIMARY KEY,
    docs bigint NOT NULL
);
CREATE INDEX lexicon_docs ON lexicon (docs DESC);
CREATE INDEX lexicon_trgm ON lexicon USING gin (term gin_trgm_ops);

-- Facts about the store itself, such as which embedding model its vectors came from.
CREATE TABLE store_meta (
    key   text PRIMARY KEY,
    value text NOT NULL
);
