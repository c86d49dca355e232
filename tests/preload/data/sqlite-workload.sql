CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT, v TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000)
INSERT INTO t(k, v) SELECT printf('%x', (x * 2654435761) % 1000003), printf('%.*c', 10 + x % 90, 'v') FROM c;
CREATE INDEX tk ON t(k);
SELECT count(*), sum(length(v)) FROM t;
SELECT substr(k, 1, 2) AS p, count(*), max(length(v)) FROM t GROUP BY p ORDER BY p LIMIT 5;
SELECT k, group_concat(id) FROM t WHERE k LIKE 'ab%' GROUP BY k ORDER BY k LIMIT 3;
