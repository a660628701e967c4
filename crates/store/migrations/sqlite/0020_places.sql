-- The web UI's project and branch picker counts live items per org, project and branch on every
-- page load: a partial index of the live rows holding those columns answers it from the index
-- alone, already in the GROUP BY's order (no table row read, no sort). `deleted_at` (always
-- NULL here) is in it because SQLite counts an index as covering only when it holds every
-- column the query names, its own WHERE's included.
CREATE INDEX items_places ON items (org, project, branch, deleted_at) WHERE deleted_at IS NULL;
