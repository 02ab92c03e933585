-- The database TestMysqldumpRoundTrip dumps with mysqldump and reloads into
-- a second cluster: foreign keys (CASCADE, RESTRICT, a composite primary
-- key), JSON, column, table and database collations, defaults, ON UPDATE
-- CURRENT_TIMESTAMP, a view, generated columns (VIRTUAL and STORED, indexed),
-- CHECK constraints (enforced and not), prefix indexes, an id 0, a
-- NONCLUSTERED integer primary key, zero dates (stored under an empty
-- sql_mode; the dump sets its own), a table made by CREATE TABLE ... SELECT,
-- TIMESTAMPs written in a session at +05:30 (the dump is at +00:00).
CREATE DATABASE dumpdb CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci;
USE dumpdb;
CREATE TABLE customers (
  id BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  email VARCHAR(191) NOT NULL,
  name VARCHAR(100) COLLATE utf8mb4_unicode_ci NOT NULL DEFAULT 'anon',
  code CHAR(8) CHARACTER SET ascii COLLATE ascii_bin,
  created DATETIME NOT NULL DEFAULT CURRENT_TIMESTAMP,
  updated TIMESTAMP(3) NULL DEFAULT CURRENT_TIMESTAMP(3) ON UPDATE CURRENT_TIMESTAMP(3),
  balance DECIMAL(12,2) NOT NULL DEFAULT 0.00,
  active TINYINT(1) NOT NULL DEFAULT 1,
  score DOUBLE,
  note TEXT,
  photo BLOB,
  kind ENUM('a','b','c') DEFAULT 'a',
  flags SET('x','y') DEFAULT NULL,
  born DATE,
  UNIQUE KEY uk_email (email),
  KEY idx_name_created (name, created)
) COMMENT 'people who buy';
CREATE TABLE orders (
  id INT NOT NULL AUTO_INCREMENT,
  customer_id BIGINT NOT NULL,
  attrs JSON,
  qty INT NOT NULL DEFAULT 1,
  price DECIMAL(10,2) NOT NULL,
  KEY idx_price (price, qty),
  PRIMARY KEY (id),
  CONSTRAINT fk_customer FOREIGN KEY (customer_id) REFERENCES customers (id) ON DELETE CASCADE ON UPDATE RESTRICT
);
CREATE TABLE order_tags (
  order_id INT NOT NULL,
  tag VARCHAR(20) NOT NULL,
  PRIMARY KEY (order_id, tag),
  FOREIGN KEY (order_id) REFERENCES orders (id) ON DELETE CASCADE
);
CREATE TABLE empty_t (a INT, b VARCHAR(5) DEFAULT 'x');
INSERT INTO customers (email, name, code, balance, score, note, photo, kind, flags, born) VALUES
 ('ann@x.com', 'Ann', 'A0000001', 10.50, 1.5, 'line1\nline2 ''quoted'' \\ back', X'00FF10', 'b', 'x,y', '1980-02-29'),
 ('bob@x.com', 'Bób', NULL, 0, NULL, NULL, NULL, 'c', '', NULL),
 ('cy@x.com', '日本語 😀', 'C3', -5.25, -0.001, '', '', DEFAULT, 'y', '2000-01-01');
INSERT INTO orders (customer_id, attrs, qty, price) VALUES
 (1, '{"color": "red", "sizes": [1, 2, 3], "gift": true}', 2, 9.99),
 (1, NULL, 1, 100.00),
 (3, '{"nested": {"k": null, "s": "é\\"q"}}', 5, 0.10);
INSERT INTO order_tags VALUES (1, 'red'), (1, 'sale'), (3, 'tiny');
UPDATE customers SET balance = balance + 1 WHERE id = 2; -- ON UPDATE CURRENT_TIMESTAMP(3) moves `updated`
CREATE VIEW big_orders AS SELECT o.id, c.email, o.qty * o.price AS total FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.qty * o.price > 10;
CREATE TABLE flags (
  id INT PRIMARY KEY,
  ok BOOL NOT NULL DEFAULT TRUE,
  t TIME(2) DEFAULT '10:11:12.5',
  y YEAR,
  b BIT(5) DEFAULT b'101',
  u INT UNSIGNED,
  vb VARBINARY(16),
  ts TIMESTAMP NULL DEFAULT NULL
) DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_0900_ai_ci;
INSERT INTO flags VALUES (1, FALSE, '-838:59:59', 2024, b'11111', 4294967295, X'DEADBEEF', '2024-02-29 23:59:59'), (2, DEFAULT, DEFAULT, NULL, DEFAULT, 0, '', NULL);
CREATE TABLE line_items (
  id INT PRIMARY KEY,
  qty INT NOT NULL,
  price DECIMAL(10,2) NOT NULL,
  total DECIMAL(12,2) GENERATED ALWAYS AS (qty * price) STORED NOT NULL,
  label VARCHAR(40) AS (concat(qty, ' x ', price)) VIRTUAL,
  KEY idx_total (total),
  KEY idx_label (label),
  CONSTRAINT qty_positive CHECK (qty > 0),
  CHECK (price < 1000) NOT ENFORCED
);
INSERT INTO line_items (id, qty, price) VALUES (1, 2, 9.99), (2, 10, 0.50);
INSERT INTO line_items VALUES (3, 1, 100.00, DEFAULT, DEFAULT);
-- Prefix key parts, and an AUTO_INCREMENT row whose id is 0: the dump sets
-- NO_AUTO_VALUE_ON_ZERO, so the reload stores 0 rather than a new id.
SET SESSION sql_mode = CONCAT(@@sql_mode, ',NO_AUTO_VALUE_ON_ZERO');
CREATE TABLE seq0 (
  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
  v VARCHAR(40),
  body TEXT,
  KEY idx_v (v(3)),
  UNIQUE KEY uk_body (body(8))
);
INSERT INTO seq0 VALUES (0, 'zero', 'the zero row'), (NULL, 'one', 'the first row');
SET SESSION sql_mode = DEFAULT;
CREATE TABLE sessions (
  id BIGINT NOT NULL PRIMARY KEY NONCLUSTERED,
  token VARCHAR(20) NOT NULL,
  KEY idx_token (token)
);
INSERT INTO sessions VALUES (7, 'a'), (3, 'b');
SET sql_mode = '';
CREATE TABLE legacy (id INT PRIMARY KEY, d DATE NOT NULL DEFAULT '0000-00-00', dt DATETIME, KEY kd (d));
INSERT INTO legacy VALUES (1, '0000-00-00', '0000-00-00 00:00:00'), (2, '2020-00-15', '2020-01-00 10:00:00'), (3, '2021-03-04', NULL);
SET sql_mode = DEFAULT;
CREATE TABLE order_totals (PRIMARY KEY (id)) SELECT id, qty * price AS amount FROM orders;
-- TIMESTAMPs are instants: written at +05:30, dumped at +00:00, and the
-- reload reads them back at +00:00, so every zone sees the same instants.
SET time_zone = '+05:30';
CREATE TABLE events (
  id INT PRIMARY KEY,
  at TIMESTAMP(3) NOT NULL DEFAULT '2024-01-01 05:30:00',
  wall DATETIME,
  KEY idx_at (at)
);
INSERT INTO events VALUES (1, '2024-01-01 05:30:00.5', '2024-01-01 05:30:00'), (2, '2024-07-01 12:00:00', '2024-07-01 12:00:00');
INSERT INTO events (id) VALUES (3);
SET time_zone = DEFAULT;
