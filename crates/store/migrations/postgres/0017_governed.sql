-- When an item first entered a state governance protects (`governs` in
-- crates/domain/src/governance.rs: a decision accepted, a section approved), kept for good, so
-- an accepted decision's title, rationale, component and alternatives stay as accepted
-- whatever its status goes through next: `proposed`, an edit, then `accepted` again were three
-- allowed updates before. Every write sets it when the item it writes is governed; nothing
-- clears it (the trigger below refuses).
--
-- Items stored before get it from what they are and what their trail shows:
-- * a decision accepted, deprecated or superseded now (the last two follow acceptance in a
--   decision record's life; a proposal superseded by another proposal is counted too, which
--   only refuses editing a retired proposal in place);
-- * a decision or section whose trail holds a refused edit naming it accepted or approved
--   (a `blocked` record "decision … is accepted: …", "section … is approved: …");
-- * a section approved now (its status, or an `approved_at` date).
-- The trail never recorded a status's value, so a decision flipped back to `proposed` before
-- this version with no refused edit since is not found. The time is the earliest of its
-- `updated_at` and those refusals: no record says when it was accepted.
ALTER TABLE items ADD COLUMN governed_since bigint;

-- Setting the fact is no change to the item: the touch of `updated_at` (0001) is held off.
ALTER TABLE items DISABLE TRIGGER items_touch;
UPDATE items i SET governed_since = g.since
FROM (SELECT id, min(since) AS since FROM (
          SELECT id, updated_at AS since FROM items
          WHERE (kind = 'decision' AND status IN ('accepted', 'deprecated', 'superseded'))
             OR (kind = 'section'
                 AND (status = 'approved' OR coalesce(data -> 'approved_at', 'null'::jsonb) <> 'null'::jsonb))
          UNION ALL
          SELECT item_id, at FROM audit_log
          WHERE operation = 'blocked'
            AND (summary LIKE 'decision % is accepted: %' OR summary LIKE 'section % is approved: %')
      ) s GROUP BY id) g
WHERE i.id = g.id;
ALTER TABLE items ENABLE TRIGGER items_touch;

CREATE FUNCTION items_governed_kept() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.governed_since IS NOT NULL AND NEW.governed_since IS DISTINCT FROM OLD.governed_since THEN
        RAISE EXCEPTION 'governed_since is kept for good: an item once accepted or approved stays governed'
            USING ERRCODE = 'insufficient_privilege',
                  HINT = 'supersede it with a new item instead';
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER items_governed_kept BEFORE UPDATE OF governed_since ON items
    FOR EACH ROW EXECUTE FUNCTION items_governed_kept();
