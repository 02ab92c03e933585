package session

import (
	"strconv"
	"sync"

	"github.com/stratadb/strata/sql/types"
)

// ServerVersion is the version string in the handshake and @@version.
const ServerVersion = "8.0.11-Strata-0.1.0"

// VersionComment is @@version_comment (the mysql CLI prints it on connect).
const VersionComment = "Strata 0.1.0, MySQL-compatible distributed SQL (https://github.com/stratadb/strata)"

type sysVar struct {
	value   string
	numeric bool
}

// defaultSysVars are the variables drivers and tools read. Values are the
// session defaults; SET changes the session copy.
var defaultSysVars = map[string]sysVar{
	"autocommit":                      {"1", true},
	"auto_increment_increment":        {"1", true},
	"auto_increment_offset":           {"1", true},
	"max_allowed_packet":              {"67108864", true},
	"wait_timeout":                    {"28800", true},
	"interactive_timeout":             {"28800", true},
	"net_write_timeout":               {"60", true},
	"net_read_timeout":                {"30", true},
	"net_buffer_length":               {"16384", true},
	"lower_case_table_names":          {"2", true},
	"sql_select_limit":                {"18446744073709551615", true},
	"sql_safe_updates":                {"0", true},
	"foreign_key_checks":              {"1", true},
	"unique_checks":                   {"1", true},
	"sql_auto_is_null":                {"0", true},
	"transaction_read_only":           {"0", true},
	"tx_read_only":                    {"0", true},
	"performance_schema":              {"0", true},
	"query_cache_size":                {"0", true},
	"div_precision_increment":         {"4", true},
	"group_concat_max_len":            {"1024", true},
	"max_execution_time":              {"0", true},
	"cte_max_recursion_depth":         {"1000", true},
	"warning_count":                   {"0", true},
	"error_count":                     {"0", true},
	"innodb_lock_wait_timeout":        {"50", true},
	"lock_wait_timeout":               {"31536000", true},
	"explicit_defaults_for_timestamp": {"1", true},
	"max_connections":                 {"0", true},
	"port":                            {"4000", true},
	"sql_quote_show_create":           {"1", true},
	"sql_notes":                       {"1", true},
	"sql_warnings":                    {"0", true},
	"big_tables":                      {"0", true},
	"sql_big_selects":                 {"1", true},
	"default_week_format":             {"0", true},
	"version":                         {ServerVersion, false},
	"version_comment":                 {VersionComment, false},
	"version_compile_os":              {"Linux", false},
	"version_compile_machine":         {"x86_64", false},
	"character_set_client":            {"utf8mb4", false},
	"character_set_connection":        {"utf8mb4", false},
	"character_set_results":           {"utf8mb4", false},
	"character_set_server":            {"utf8mb4", false},
	"character_set_database":          {"utf8mb4", false},
	"character_set_system":            {"utf8", false},
	"character_set_filesystem":        {"binary", false},
	"collation_connection":            {"utf8mb4_bin", false},
	"collation_server":                {"utf8mb4_bin", false},
	"collation_database":              {"utf8mb4_bin", false},
	"sql_mode":                        {"ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION", false},
	"transaction_isolation":           {"REPEATABLE-READ", false},
	"tx_isolation":                    {"REPEATABLE-READ", false},
	// time_zone: the session time zone (SYSTEM, '+HH:MM' or an IANA name;
	// expr.ParseTimeZone) NOW(), CURDATE(), FROM_UNIXTIME and
	// UNIX_TIMESTAMP(d) read (Session.TimeZone).
	"time_zone":                       {"SYSTEM", false},
	"system_time_zone":                {"UTC", false},
	"license":                         {"Apache-2.0", false},
	"init_connect":                    {"", false},
	"have_ssl":                        {"DISABLED", false},
	"have_openssl":                    {"DISABLED", false},
	"default_storage_engine":          {"InnoDB", false},
	"storage_engine":                  {"InnoDB", false},
	"query_cache_type":                {"OFF", false},
	"socket":                          {"", false},
	"hostname":                        {"localhost", false},
	"default_authentication_plugin":   {"mysql_native_password", false},
	"tidb_txn_mode":                   {"pessimistic", false},
	"tidb_enable_async_commit":        {"1", true},
	"tidb_enable_1pc":                 {"1", true},
	"tidb_skip_isolation_level_check": {"0", true},
	// tidb_replica_read: which replicas serve the reads of non-locking
	// SELECTs (staleread.go).
	"tidb_replica_read": {"leader", false},
	// tidb_snapshot: the read timestamp of every statement ('' none;
	// staleread.go).
	"tidb_snapshot": {"", false},
	// strata_allow_pushdown: selections, limits, top-N and partial
	// aggregates run on the stores (sql/planner.AllowPushdownVar).
	"strata_allow_pushdown": {"1", true},
	// Memory control (memvars.go, package memory): the statement's quota
	// in bytes (<= 0: none) and whether operators spill to disk past it
	// (OFF: ERROR 8175).
	"tidb_mem_quota_query":           {"1073741824", true},
	"tidb_enable_tmp_storage_on_oom": {"1", true},
	// strata_index_lookup_pushdown: an IndexLookUp's rows are read by the
	// stores in the index scan's request where they lead the rows
	// (sql/planner.IndexLookupPushdownVar).
	"strata_index_lookup_pushdown": {"1", true},
	// tidb_enable_clustered_index: how a PRIMARY KEY without CLUSTERED /
	// NONCLUSTERED is stored (ON, OFF, INT_ONLY; sql/ddl.ClusteredIndexVar).
	"tidb_enable_clustered_index": {"ON", false},
	// tidb_enable_prepared_plan_cache: prepared statements' plans are
	// cached per session (executor.PlanCache; OFF plans every execution).
	"tidb_enable_prepared_plan_cache": {"1", true},
}

// sysVarAliases are the pairs MySQL keeps equal (the tx_* names are the
// pre-8.0 spellings).
var sysVarAliases = map[string]string{
	"transaction_isolation": "tx_isolation",
	"tx_isolation":          "transaction_isolation",
	"transaction_read_only": "tx_read_only",
	"tx_read_only":          "transaction_read_only",
}

// globalSettable are the variables SET GLOBAL accepts. A global value is
// kept by this SQL node only (not persisted, not shared with other nodes)
// and becomes the default of the sessions that connect afterwards, as in
// MySQL.
var globalSettable = map[string]bool{
	"autocommit": true, "transaction_isolation": true, "tx_isolation": true, "transaction_read_only": true,
	"tx_read_only": true, "tidb_txn_mode": true, "tidb_enable_async_commit": true, "tidb_enable_1pc": true,
	"innodb_lock_wait_timeout": true, "tidb_skip_isolation_level_check": true, "strata_allow_pushdown": true,
	"tidb_mem_quota_query": true, "tidb_enable_tmp_storage_on_oom": true,
	"strata_index_lookup_pushdown": true, "tidb_replica_read": true, "foreign_key_checks": true,
	"tidb_enable_clustered_index": true, "time_zone": true, "tidb_enable_prepared_plan_cache": true,
}

var globals struct {
	sync.RWMutex
	m map[string]sysVar
}

func globalVar(name string) (sysVar, bool) {
	globals.RLock()
	defer globals.RUnlock()
	v, ok := globals.m[name]
	return v, ok
}

func setGlobal(name string, v sysVar) {
	globals.Lock()
	defer globals.Unlock()
	if globals.m == nil {
		globals.m = map[string]sysVar{}
	}
	globals.m[name] = v
}

// globalOverrides returns a copy of the SET GLOBAL values: a new session's
// starting values.
func globalOverrides() map[string]sysVar {
	globals.RLock()
	defer globals.RUnlock()
	m := make(map[string]sysVar, len(globals.m))
	for k, v := range globals.m {
		m[k] = v
	}
	return m
}

func (v sysVar) datum() (types.Datum, types.FieldType) {
	if v.numeric {
		if n, err := strconv.ParseInt(v.value, 10, 64); err == nil {
			return types.NewInt(n), types.Int64Type
		}
		if n, err := strconv.ParseUint(v.value, 10, 64); err == nil {
			return types.NewUint(n), types.Uint64Type
		}
	}
	ft := types.VarcharType
	ft.Flen = max(len(v.value), 1)
	return types.NewString(v.value), ft
}
