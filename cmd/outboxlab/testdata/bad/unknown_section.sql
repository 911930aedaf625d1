-- want: 5: unknown section "publish"
-- name: schema
CREATE TABLE outbox_lab (id bigint);

-- name: publish
SELECT 1;
