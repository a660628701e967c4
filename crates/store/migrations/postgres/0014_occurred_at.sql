-- When what an item records happened (a commit's time, a release's date, a decision's date),
-- when it says so. "Recent" (the briefing, the web UI's Newest, a find by kinds alone) orders
-- by it, else by `updated_at`; the index serves that order.
ALTER TABLE items ADD COLUMN occurred_at bigint;
CREATE INDEX items_recent ON items ((coalesce(occurred_at, updated_at)) DESC, id DESC);
