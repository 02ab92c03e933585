-- The collation differential test (TestCollationDifferential): every
-- statement runs on Strata and its answer must equal MariaDB 10.11's in
-- expected.txt, which regen.sh (next to this file) records from a private
-- mariadbd. One statement per line.
--
-- Left out on purpose: trailing spaces under utf8mb4_bin. MariaDB's (and
-- MySQL's) utf8mb4_bin is PAD SPACE; Strata's compares bytewise, so 'a'
-- and 'a ' differ there (see sql/collate/doc.go, "Known differences"),
-- and testdata/collation/basic pins that behaviour.
DROP DATABASE IF EXISTS colldiff;
CREATE DATABASE colldiff;
USE colldiff;
CREATE TABLE w (id INT PRIMARY KEY, b VARCHAR(32) COLLATE utf8mb4_bin, g VARCHAR(32) COLLATE utf8mb4_general_ci, u VARCHAR(32) COLLATE utf8mb4_unicode_ci);
INSERT INTO w VALUES (1, 'ann', 'ann', 'ann'), (2, 'Ann', 'Ann', 'Ann'), (3, 'ANN', 'ANN ', 'ANN  '), (4, 'Änne', 'Änne', 'Änne'), (5, 'anne', 'anne', 'anne');
INSERT INTO w VALUES (6, 'Straße', 'Straße', 'Straße'), (7, 'strasse', 'strasse', 'strasse'), (8, 'STRASE', 'STRASE', 'STRASE');
INSERT INTO w VALUES (9, 'Åsa', 'Åsa', 'Åsa'), (10, 'asa', 'asa', 'asa'), (11, 'Øre', 'Øre', 'Øre'), (12, 'øre', 'øre', 'øre'), (13, 'ore', 'ore', 'ore');
INSERT INTO w VALUES (14, 'Ærø', 'Ærø', 'Ærø'), (15, 'aero', 'aero', 'aero'), (16, 'Müller', 'Müller', 'Müller'), (17, 'Muller', 'Muller', 'Muller'), (18, 'mueller', 'mueller', 'mueller');
INSERT INTO w VALUES (19, 'résumé', 'résumé', 'résumé'), (20, 'RESUME', 'RESUME', 'RESUME'), (21, 'zebra', 'zebra', 'zebra'), (22, 'Zürich', 'Zürich', 'Zürich');
INSERT INTO w VALUES (23, '😀', '😀', '😀'), (24, '😺', '😺', '😺'), (25, 'a😀', 'a😀', 'a😀'), (26, '', '', ''), (27, NULL, NULL, NULL);
-- Equality: case, accents, ß, trailing spaces, emoji.
SELECT id FROM w WHERE b = 'ann' ORDER BY id;
SELECT id FROM w WHERE g = 'ann' ORDER BY id;
SELECT id FROM w WHERE u = 'ann' ORDER BY id;
SELECT id FROM w WHERE g = 'ANNE' ORDER BY id;
SELECT id FROM w WHERE u = 'ANNE' ORDER BY id;
SELECT id FROM w WHERE g = 'strasse' ORDER BY id;
SELECT id FROM w WHERE u = 'strasse' ORDER BY id;
SELECT id FROM w WHERE g = 'strase' ORDER BY id;
SELECT id FROM w WHERE u = 'strase' ORDER BY id;
SELECT id FROM w WHERE g = 'asa' ORDER BY id;
SELECT id FROM w WHERE u = 'asa' ORDER BY id;
SELECT id FROM w WHERE g = 'ore' ORDER BY id;
SELECT id FROM w WHERE u = 'ore' ORDER BY id;
SELECT id FROM w WHERE g = 'aero' ORDER BY id;
SELECT id FROM w WHERE u = 'aero' ORDER BY id;
SELECT id FROM w WHERE g = 'muller' ORDER BY id;
SELECT id FROM w WHERE u = 'muller' ORDER BY id;
SELECT id FROM w WHERE g = 'resume' ORDER BY id;
SELECT id FROM w WHERE u = 'resume' ORDER BY id;
SELECT id FROM w WHERE g = 'ann   ' ORDER BY id;
SELECT id FROM w WHERE u = 'ann   ' ORDER BY id;
SELECT id FROM w WHERE g = '😀' ORDER BY id;
SELECT id FROM w WHERE u = '😀' ORDER BY id;
SELECT id FROM w WHERE b = '😀' ORDER BY id;
SELECT id FROM w WHERE g <> 'ann' AND id < 6 ORDER BY id;
SELECT id FROM w WHERE g IN ('STRASSE', 'ZURICH') ORDER BY id;
SELECT id FROM w WHERE u IN ('STRASSE', 'ZURICH') ORDER BY id;
SELECT id FROM w WHERE g BETWEEN 'a' AND 'b' ORDER BY id;
SELECT id FROM w WHERE u BETWEEN 'a' AND 'b' ORDER BY id;
SELECT id FROM w WHERE b BETWEEN 'a' AND 'b' ORDER BY id;
-- ORDER BY (ties broken by id).
SELECT id FROM w ORDER BY b, id;
SELECT id FROM w ORDER BY g, id;
SELECT id FROM w ORDER BY u, id;
SELECT id FROM w ORDER BY g DESC, id;
SELECT id FROM w ORDER BY u DESC, id;
-- GROUP BY and DISTINCT: how many values are one, and which ids.
SELECT COUNT(*), MIN(id), MAX(id) FROM w GROUP BY b ORDER BY MIN(id);
SELECT COUNT(*), MIN(id), MAX(id) FROM w GROUP BY g ORDER BY MIN(id);
SELECT COUNT(*), MIN(id), MAX(id) FROM w GROUP BY u ORDER BY MIN(id);
SELECT COUNT(DISTINCT b), COUNT(DISTINCT g), COUNT(DISTINCT u) FROM w;
SELECT COUNT(*) FROM (SELECT DISTINCT g FROM w) x;
SELECT COUNT(*) FROM (SELECT DISTINCT u FROM w) x;
-- MIN / MAX.
SELECT MIN(b), MAX(b) FROM w;
SELECT MIN(g) = 'ann', MAX(g) = '😺' FROM w;
SELECT MIN(u) = '', MAX(u) = 'Zürich' FROM w WHERE id < 23;
SELECT MIN(g) = 'ann', MAX(g) = 'zürich' FROM w WHERE id BETWEEN 1 AND 22;
-- LIKE compares character by character (no PAD SPACE, ß is not ss).
SELECT id FROM w WHERE b LIKE 'a%' ORDER BY id;
SELECT id FROM w WHERE g LIKE 'a%' ORDER BY id;
SELECT id FROM w WHERE u LIKE 'a%' ORDER BY id;
SELECT id FROM w WHERE g LIKE 'stra_e' ORDER BY id;
SELECT id FROM w WHERE u LIKE 'stra_e' ORDER BY id;
SELECT id FROM w WHERE g LIKE 'strasse' ORDER BY id;
SELECT id FROM w WHERE u LIKE 'strasse' ORDER BY id;
SELECT id FROM w WHERE g LIKE '%ü%' ORDER BY id;
SELECT id FROM w WHERE u LIKE '%U%' ORDER BY id;
SELECT id FROM w WHERE g LIKE 'ann' ORDER BY id;
SELECT id FROM w WHERE g LIKE '_' ORDER BY id;
-- Unique indexes refuse values equal under the column's collation.
CREATE TABLE ug (id INT PRIMARY KEY, e VARCHAR(64) COLLATE utf8mb4_general_ci, UNIQUE KEY ue (e));
INSERT INTO ug VALUES (1, 'A@x.com');
INSERT INTO ug VALUES (2, 'a@x.com');
INSERT INTO ug VALUES (3, 'a@X.COM  ');
INSERT INTO ug VALUES (4, 'Straße');
INSERT INTO ug VALUES (5, 'STRASE');
INSERT INTO ug VALUES (6, 'strasse');
INSERT INTO ug VALUES (7, '😀');
INSERT INTO ug VALUES (8, '😺');
INSERT INTO ug VALUES (9, 'résumé');
INSERT INTO ug VALUES (10, 'Resume');
SELECT id, e FROM ug ORDER BY id;
SELECT id FROM ug WHERE e = 'A@X.COM' ORDER BY id;
CREATE TABLE uu (id INT PRIMARY KEY, e VARCHAR(64) COLLATE utf8mb4_unicode_ci, UNIQUE KEY ue (e));
INSERT INTO uu VALUES (1, 'Straße');
INSERT INTO uu VALUES (2, 'STRASSE');
INSERT INTO uu VALUES (3, 'strase');
INSERT INTO uu VALUES (4, 'Åsa');
INSERT INTO uu VALUES (5, 'asa ');
INSERT INTO uu VALUES (6, 'Øre');
INSERT INTO uu VALUES (7, 'ore');
SELECT id, e FROM uu ORDER BY id;
CREATE TABLE ub (id INT PRIMARY KEY, e VARCHAR(64) COLLATE utf8mb4_bin, UNIQUE KEY ue (e));
INSERT INTO ub VALUES (1, 'A@x.com');
INSERT INTO ub VALUES (2, 'a@x.com');
INSERT INTO ub VALUES (3, 'A@x.com');
SELECT id, e FROM ub ORDER BY id;
-- Secondary indexes: lookups and ranges return what a scan returns.
CREATE TABLE ix (id INT PRIMARY KEY, g VARCHAR(32) COLLATE utf8mb4_general_ci, u VARCHAR(32) COLLATE utf8mb4_unicode_ci, KEY kg (g), KEY ku (u));
INSERT INTO ix SELECT id, g, u FROM w;
SELECT id FROM ix WHERE g = 'ANN' ORDER BY id;
SELECT id FROM ix WHERE u = 'ANN' ORDER BY id;
SELECT id FROM ix WHERE g > 'm' AND g < 'ś' ORDER BY id;
SELECT id FROM ix WHERE u >= 'r' ORDER BY id;
SELECT g FROM ix WHERE g = 'straße' ORDER BY id;
SELECT id FROM ix ORDER BY g, id;
SELECT id FROM ix ORDER BY u, id;
-- COLLATE in expressions.
SELECT id FROM w WHERE g COLLATE utf8mb4_bin = 'Ann' ORDER BY id;
SELECT id FROM w WHERE b = 'ann' COLLATE utf8mb4_general_ci ORDER BY id;
SELECT id FROM w WHERE b COLLATE utf8mb4_unicode_ci = 'strasse' ORDER BY id;
SELECT id FROM w WHERE g = u ORDER BY id;
SELECT id FROM w WHERE g = u COLLATE utf8mb4_general_ci ORDER BY id;
SELECT COLLATION(g), COLLATION(u), COLLATION(g COLLATE utf8mb4_bin), COERCIBILITY(g), COERCIBILITY('x'), COERCIBILITY(g COLLATE utf8mb4_bin) FROM w WHERE id = 1;
SELECT 'a' COLLATE utf8mb4_nope;
SELECT 'a' COLLATE latin1_bin;
DROP DATABASE colldiff;
