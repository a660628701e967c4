-- Each API key's request budget and calls running, shared by every `cortex serve --http` over
-- this database (src/postgres/limits.rs). Unlogged: no WAL for a row every request writes; a
-- crash empties it (keys start again with a full budget and no call running) and a replica
-- holds none, which a limit can afford.
CREATE UNLOGGED TABLE key_limits (
    -- The principal's id (an API key's lookup id; never reused).
    key    text PRIMARY KEY,
    -- Requests the key may make now, as counted at `at` (epoch ms, the database's clock).
    tokens double precision NOT NULL,
    at     bigint NOT NULL,
    -- For each of its calls running, when it lets go of its place (epoch ms) if its server
    -- never ends it.
    calls  bigint[] NOT NULL DEFAULT '{}'
);
