package session

import "github.com/pingcap/tidb/pkg/parser/mysql"

// sqlModeCache holds the parsed form of the session's sql_mode text.
type sqlModeCache struct {
	text string
	mode mysql.SQLMode
	set  bool
}

// SQLMode is the session's sql_mode: what the parser reads (ANSI_QUOTES,
// PIPES_AS_CONCAT, HIGH_NOT_PRECEDENCE, NO_BACKSLASH_ESCAPES,
// IGNORE_SPACE) and how writes store values that do not fit
// (STRICT_TRANS_TABLES / STRICT_ALL_TABLES: executor.SQLMode).
func (s *Session) SQLMode() mysql.SQLMode {
	text := s.varValue("sql_mode")
	if !s.sqlMode.set || s.sqlMode.text != text {
		m, _ := mysql.GetSQLMode(text) // SET checked it (normalizeSQLMode)
		s.sqlMode = sqlModeCache{text: text, mode: m, set: true}
	}
	return s.sqlMode.mode
}

// normalizeSQLMode checks a SET sql_mode value and returns its canonical
// text: upper case, combination modes (ANSI, TRADITIONAL) expanded.
func normalizeSQLMode(given, raw string) (string, error) {
	text := mysql.FormatSQLModeStr(raw)
	if _, err := mysql.GetSQLMode(text); err != nil {
		return "", wrongValue(given, raw)
	}
	return text, nil
}
