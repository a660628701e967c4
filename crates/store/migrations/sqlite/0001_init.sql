-- Items of every kind share one table; kind-specific fields live in `data` (JSON).
-- Scope columns use '' for "not set" so that uniqueness and equality need no NULL handling.
CREATE TABLE items (
    rowid           INTEGER PRIMARY KEY,
    id              TEXT    NOT NULL UNIQUE,
    kind            TEXT    NOT NULL,
    org             TEXT    NOT NULL DEFAULT '',
    project         TEXT    NOT NULL DEFAULT '',
    branch          TEXT    NOT NULL DEFAULT '',
    service         TEXT    NOT NULL DEFAULT '',
    sprint          TEXT    NOT NULL DEFAULT '',
    tenant          TEXT    NOT NULL DEFAULT '',
    environment     TEXT    NOT NULL DEFAULT '',
    title           TEXT    NOT NULL,
    body            TEXT    NOT NULL,
    content         TEXT,
    data            TEXT    NOT NULL DEFAULT '{}',
    metadata        TEXT,
    source          TEXT,
    tags            TEXT    NOT NULL DEFAULT '[]',
    status          TEXT,
    content_hash    TEXT    NOT NULL,
    idempotency_key TEXT,
    ttl             TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    expires_at      INTEGER,
    deleted_at      INTEGER
);

-- One item per idempotency key within a project: a retried write cannot store twice,
-- even when two processes race (the constraint decides, not the check before it).
CREATE UNIQUE INDEX items_idempotency ON items (org, project, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- Exact-duplicate lookup: the hash leads, and the index names more columns than
-- items_scope so the planner never prefers scanning a busy branch.
CREATE INDEX items_dedupe ON items (content_hash, kind, org, project, branch);
CREATE INDEX items_scope ON items (org, project, branch);
CREATE INDEX items_updated ON items (updated_at);

CREATE TABLE item_tags (
    tag        TEXT    NOT NULL,
    item_rowid INTEGER NOT NULL REFERENCES items (rowid) ON DELETE CASCADE,
    PRIMARY KEY (tag, item_rowid)
) WITHOUT ROWID;
CREATE INDEX item_tags_item ON item_tags (item_rowid);

-- Full-text index over title and body, kept in sync by the triggers below.
CREATE VIRTUAL TABLE items_fts USING fts5 (
    title, body,
    content = 'items', content_rowid = 'rowid',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN
    INSERT INTO items_fts (rowid, title, body) VALUES (new.rowid, new.title, new.body);
END;

CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN
    INSERT INTO items_fts (items_fts, rowid, title, body) VALUES ('delete', old.rowid, old.title, old.body);
END;

CREATE TRIGGER items_fts_update AFTER UPDATE OF title, body ON items BEGIN
    INSERT INTO items_fts (items_fts, rowid, title, body) VALUES ('delete', old.rowid, old.title, old.body);
    INSERT INTO items_fts (rowid, title, body) VALUES (new.rowid, new.title, new.body);
END;

-- The index's vocabulary (stemmed terms with document counts), for spelling suggestions.
CREATE VIRTUAL TABLE items_vocab USING fts5vocab (items_fts, 'row');
