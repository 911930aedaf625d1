-- want: 11: section "claim" does not take parameter @generation
-- name: schema
CREATE TABLE outbox_lab (id bigint, generation bigint);

-- name: claim
-- a comment that mentions @generation is fine,
/* and so is this one: @id */
SELECT id, 'e' AS event_id, generation
FROM outbox_lab
WHERE note <> '@generation'
  AND generation = @generation;

-- name: complete
UPDATE outbox_lab SET id = id WHERE id = @id RETURNING id;

-- name: retry
UPDATE outbox_lab SET id = id WHERE id = @id RETURNING id;
