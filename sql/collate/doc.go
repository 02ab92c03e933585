// Package collate implements the MySQL collations Strata supports: how two
// strings compare (Compare), the sort key an index stores for a string
// (Key: two strings compare under a collation as their keys compare
// bytewise), and LIKE under a collation (Like).
//
// The collations are TiDB's "new collation framework" set: utf8mb4_bin
// (the default, as in TiDB), utf8mb4_general_ci, utf8mb4_unicode_ci,
// utf8mb4_0900_ai_ci, utf8mb4_0900_bin, binary, ascii_bin, latin1_bin and
// utf8_bin / utf8_general_ci / utf8_unicode_ci (also named utf8mb3_...).
// Pre-0900 collations are PAD SPACE (trailing spaces do not count in
// Compare and Key), the 0900 ones and binary are NO PAD.
//
// # Weights
//
//   - general_ci: one 16-bit weight per character of the Basic
//     Multilingual Plane (upper case, accented letters folded to their
//     base letter; general.go derives most of the table and
//     general_exceptions.go, generated from MariaDB's weights by
//     TestGenerateGeneral, holds the rest). Characters above U+FFFF all
//     weigh U+FFFD, so two emoji are equal, as in MySQL. 'ß' = 's'.
//   - unicode_ci and 0900_ai_ci: the Unicode Collation Algorithm at
//     primary strength (accents, case and width ignored; 'ß' = 'ss') from
//     golang.org/x/text/collate, whose tables are CLDR's root collation
//     (Unicode 6.2). MySQL's unicode_ci is UCA 4.0.0 and 0900_ai_ci UCA
//     9.0.0: characters whose weights changed between those versions
//     may order differently here (sql/server/testdata/collation/mariadb
//     is the differential test against MariaDB).
//   - the _bin collations and binary compare bytewise (Binary reports it).
//
// # Known differences
//
// utf8mb4_bin, utf8_bin, ascii_bin and latin1_bin are PAD SPACE in MySQL
// but compare bytewise here (Strata's behaviour before collations): 'a'
// and 'a ' differ. Keeping them on the byte path keeps utf8mb4_bin
// tables (every table without a COLLATE) on their existing fast path and
// their index entries holding the value itself.
//
// Strings are stored as UTF-8 whatever the character set: latin1 and
// ascii columns accept any UTF-8 text and compare it bytewise.
//
// # Concurrency
//
// Collations are immutable and shared; every method is safe for
// concurrent use (the x/text collators, which are not, are pooled).
package collate
