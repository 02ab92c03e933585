package txn

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/stratadb/strata/kv/keys"
	"github.com/stratadb/strata/proto/errorpb"
	"github.com/stratadb/strata/proto/kvrpcpb"
	"github.com/stratadb/strata/store/concurrency"
	"github.com/stratadb/strata/store/mvcc"
	"github.com/stratadb/strata/store/storetest/memengine"
)

// newEngine returns the Engine the harness evaluates commands on:
// store/storetest's engine over in-memory Pebble (one region, id 1, until
// a test changes it; writes applied at once, no raft).
func newEngine(t testing.TB) *memengine.Engine {
	e, err := memengine.Open(memengine.Options{Logger: quietLogger{t}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// quietLogger drops pebble's informational logs.
type quietLogger struct{ t testing.TB }

func (quietLogger) Infof(string, ...any)           {}
func (l quietLogger) Errorf(f string, args ...any) { l.t.Logf(f, args...) }
func (l quietLogger) Fatalf(f string, args ...any) { l.t.Fatalf(f, args...) }

type counterTSO struct{ ts atomic.Uint64 }

func (c *counterTSO) GetTS(context.Context) (uint64, error) { return c.ts.Add(1), nil }

type harness struct {
	t   testing.TB
	e   *memengine.Engine
	s   *Storage
	tso *counterTSO
}

// newHarness runs the store as deployed: in-memory pessimistic locks on.
func newHarness(t testing.TB) *harness {
	return newHarnessWith(t, Config{InMemoryPessimisticLock: true})
}

func newHarnessWith(t testing.TB, cfg Config) *harness {
	e := newEngine(t)
	tso := &counterTSO{}
	return &harness{t: t, e: e, tso: tso, s: New(e, concurrency.New(), tso, cfg)}
}

// ---- argument parsing ----

// parseTS reads a timestamp: N (raw) or Np (N physical ms, logical 0).
func parseTS(s string) uint64 {
	if p, ok := strings.CutSuffix(s, "p"); ok {
		v, err := strconv.ParseUint(p, 10, 64)
		if err != nil {
			panic(err)
		}
		return v << 18
	}
	if s == "max" {
		return ^uint64(0)
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		panic(err)
	}
	return v
}

func fmtTS(ts uint64) string {
	if ts == ^uint64(0) {
		return "max"
	}
	if ts >= 1<<18 && ts&(1<<18-1) == 0 {
		return fmt.Sprintf("%dp", ts>>18)
	}
	return strconv.FormatUint(ts, 10)
}

type args map[string]string

func parseArgs(d *datadriven.TestData) args {
	a := args{}
	for _, arg := range d.CmdArgs {
		a[arg.Key] = strings.Join(arg.Vals, ",")
	}
	return a
}

func (a args) ts(k string) uint64 {
	if v, ok := a[k]; ok {
		return parseTS(v)
	}
	return 0
}

func (a args) has(k string) bool { _, ok := a[k]; return ok }

func (a args) bytes(k string) []byte {
	if v, ok := a[k]; ok {
		return []byte(v)
	}
	return nil
}

func (a args) keys(k string) [][]byte {
	v, ok := a[k]
	if !ok || v == "" {
		return nil
	}
	var out [][]byte
	for _, s := range strings.Split(v, ",") {
		out = append(out, []byte(s))
	}
	return out
}

func (a args) int(k string) int64 {
	v, ok := a[k]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		panic(err)
	}
	return n
}

// value turns "long:N" into N bytes.
func value(s string) []byte {
	if n, ok := strings.CutPrefix(s, "long:"); ok {
		k, _ := strconv.Atoi(n)
		return bytes.Repeat([]byte("x"), k)
	}
	return []byte(s)
}

func fmtValue(v []byte) string {
	if len(v) > 24 {
		return fmt.Sprintf("<%d bytes>", len(v))
	}
	return string(v)
}

// parseMutations reads "op key [value] [action]" lines.
func parseMutations(input string) ([]*kvrpcpb.Mutation, []kvrpcpb.PessimisticAction, bool) {
	var (
		muts        []*kvrpcpb.Mutation
		actions     []kvrpcpb.PessimisticAction
		pessimistic bool
	)
	for _, line := range strings.Split(input, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		m := &kvrpcpb.Mutation{Key: []byte(f[1])}
		rest := f[2:]
		switch f[0] {
		case "put":
			m.Op = kvrpcpb.Op_Put
		case "del":
			m.Op = kvrpcpb.Op_Del
		case "insert":
			m.Op = kvrpcpb.Op_Insert
		case "lock":
			m.Op = kvrpcpb.Op_Lock
		case "check_not_exists":
			m.Op = kvrpcpb.Op_CheckNotExists
		default:
			panic("unknown op " + f[0])
		}
		if (m.Op == kvrpcpb.Op_Put || m.Op == kvrpcpb.Op_Insert) && len(rest) > 0 {
			m.Value, rest = value(rest[0]), rest[1:]
		}
		action := kvrpcpb.PessimisticAction_SkipPessimisticCheck
		for _, r := range rest {
			pessimistic = true
			switch r {
			case "check":
				action = kvrpcpb.PessimisticAction_DoPessimisticCheck
			case "constraint":
				action = kvrpcpb.PessimisticAction_DoConstraintCheck
			case "skip":
			default:
				panic("unknown action " + r)
			}
		}
		muts = append(muts, m)
		actions = append(actions, action)
	}
	return muts, actions, pessimistic
}

// ---- response printing ----

func fmtKeyError(e *kvrpcpb.KeyError) string {
	switch {
	case e == nil:
		return "<nil>"
	case e.Locked != nil:
		return "locked " + fmtLockInfo(e.Locked)
	case e.Conflict != nil:
		c := e.Conflict
		return fmt.Sprintf("write conflict key=%s start=%s conflict_start=%s conflict_commit=%s reason=%s",
			c.Key, fmtTS(c.StartTs), fmtTS(c.ConflictTs), fmtTS(c.ConflictCommitTs), c.Reason)
	case e.AlreadyExist != nil:
		return "already exist " + string(e.AlreadyExist.Key)
	case e.TxnNotFound != nil:
		return fmt.Sprintf("txn not found start=%s primary=%s", fmtTS(e.TxnNotFound.StartTs), e.TxnNotFound.PrimaryKey)
	case e.CommitTsExpired != nil:
		c := e.CommitTsExpired
		return fmt.Sprintf("commit ts expired key=%s commit=%s min_commit=%s", c.Key, fmtTS(c.AttemptedCommitTs), fmtTS(c.MinCommitTs))
	case e.TxnLockNotFound != nil:
		return "txn lock not found " + string(e.TxnLockNotFound.Key)
	case e.Deadlock != nil:
		var chain []string
		for _, w := range e.Deadlock.WaitChain {
			chain = append(chain, fmt.Sprintf("%s->%s(%s)", fmtTS(w.Txn), fmtTS(w.WaitForTxn), w.Key))
		}
		return fmt.Sprintf("deadlock lock_ts=%s key=%s chain=%s", fmtTS(e.Deadlock.LockTs), e.Deadlock.LockKey, strings.Join(chain, ","))
	case e.LockWaitTimeout != nil:
		return fmt.Sprintf("lock wait timeout key=%s lock_ts=%s", e.LockWaitTimeout.Key, fmtTS(e.LockWaitTimeout.LockTs))
	case e.Abort != "":
		return "abort: " + e.Abort
	case e.Retryable != "":
		return "retryable: " + e.Retryable
	}
	return "empty key error"
}

func fmtLockInfo(l *kvrpcpb.LockInfo) string {
	s := fmt.Sprintf("key=%s primary=%s start=%s ttl=%d type=%s", l.Key, l.PrimaryLock, fmtTS(l.LockVersion), l.LockTtl, l.LockType)
	if l.LockForUpdateTs != 0 {
		s += " for_update=" + fmtTS(l.LockForUpdateTs)
	}
	if l.MinCommitTs != 0 {
		s += " min_commit=" + fmtTS(l.MinCommitTs)
	}
	if l.UseAsyncCommit {
		s += " async"
		if len(l.Secondaries) > 0 {
			s += fmt.Sprintf(" secondaries=%s", bytes.Join(l.Secondaries, []byte(",")))
		}
	}
	if l.TxnSize != 0 {
		s += fmt.Sprintf(" txn_size=%d", l.TxnSize)
	}
	return s
}

func fmtRegionError(e *errorpb.Error) string { return "region error: " + e.GetMessage() }

// dump prints the engine's key spaces; locks as the store's readers see
// them (with in-memory pessimistic locks, when on, in their place), so a
// script's output is the same in both modes.
func (h *harness) dump() string {
	var sb strings.Builder
	snap := h.e.Snapshot()
	r := h.s.newReader(snap, 1)
	err := r.ScanLocks(nil, nil, func(uk []byte, l *mvcc.Lock) bool {
		fmt.Fprintf(&sb, "lock %s: %s", uk, fmtLockInfo(l.Info(uk)))
		if l.HasShortValue {
			fmt.Fprintf(&sb, " value=%s", fmtValue(l.ShortValue))
		}
		sb.WriteString("\n")
		return true
	})
	r.Close()
	snap.Close()
	if err != nil {
		return err.Error()
	}
	it, err := h.e.DB().NewIter(nil)
	if err != nil {
		return err.Error()
	}
	defer it.Close()
	for valid := it.First(); valid; valid = it.Next() {
		k, v := it.Key(), it.Value()
		switch k[0] {
		case keys.PrefixLock:
			// printed above
		case keys.PrefixWrite:
			uk, ts, _ := keys.DecodeVersioned(k[1:], nil)
			w, err := mvcc.DecodeWrite(v)
			if err != nil {
				fmt.Fprintf(&sb, "write %s@%s: %v\n", uk, fmtTS(ts), err)
				continue
			}
			fmt.Fprintf(&sb, "write %s@%s: %s start=%s", uk, fmtTS(ts), w.Kind, fmtTS(w.StartTS))
			if w.HasShortValue {
				fmt.Fprintf(&sb, " value=%s", fmtValue(w.ShortValue))
			}
			if w.OverlappedRollback {
				sb.WriteString(" overlapped_rollback")
			}
			sb.WriteString("\n")
		case keys.PrefixDefault:
			uk, ts, _ := keys.DecodeVersioned(k[1:], nil)
			fmt.Fprintf(&sb, "data %s@%s: %s\n", uk, fmtTS(ts), fmtValue(v))
		default:
			fmt.Fprintf(&sb, "other %x\n", k)
		}
	}
	if sb.Len() == 0 {
		return "<empty>\n"
	}
	return sb.String()
}

var bg = context.Background()

func rctxFrom(a args) *kvrpcpb.Context {
	rctx := &kvrpcpb.Context{}
	if a.has("rc") {
		rctx.IsolationLevel = kvrpcpb.IsolationLevel_RC
	}
	for _, k := range a.keys("resolved") {
		rctx.ResolvedLocks = append(rctx.ResolvedLocks, parseTS(string(k)))
	}
	for _, k := range a.keys("committed") {
		rctx.CommittedLocks = append(rctx.CommittedLocks, parseTS(string(k)))
	}
	return rctx
}

func (h *harness) run(d *datadriven.TestData) string {
	a := parseArgs(d)
	var sb strings.Builder
	fail := func(err error) string { return "error: " + err.Error() + "\n" }
	keyErrs := func(es []*kvrpcpb.KeyError) {
		for _, e := range es {
			sb.WriteString(fmtKeyError(e) + "\n")
		}
	}
	switch d.Cmd {
	case "dump":
		return h.dump()
	case "max_ts":
		h.s.cm.SyncMaxTS(a.ts("ts"))
		return fmt.Sprintf("max_ts=%s\n", fmtTS(h.s.cm.MaxTS()))
	case "prewrite":
		muts, actions, pessimistic := parseMutations(d.Input)
		req := &kvrpcpb.PrewriteRequest{
			Context: rctxFrom(a), Mutations: muts, PrimaryLock: a.bytes("primary"),
			StartVersion: a.ts("start"), LockTtl: uint64(a.int("ttl")), ForUpdateTs: a.ts("for_update"),
			MinCommitTs: a.ts("min_commit"), MaxCommitTs: a.ts("max_commit"), TxnSize: uint64(len(muts)),
			UseAsyncCommit: a.has("async"), Secondaries: a.keys("secondaries"), TryOnePc: a.has("one_pc"),
			SkipConstraintCheck: a.has("skip_check"),
		}
		if pessimistic || a.has("pessimistic") {
			req.PessimisticActions = actions
		}
		resp, err := h.s.Prewrite(bg, req)
		if err != nil {
			return fail(err)
		}
		keyErrs(resp.Errors)
		if resp.MinCommitTs != 0 {
			fmt.Fprintf(&sb, "min_commit_ts=%s\n", fmtTS(resp.MinCommitTs))
		}
		if resp.OnePcCommitTs != 0 {
			fmt.Fprintf(&sb, "one_pc_commit_ts=%s\n", fmtTS(resp.OnePcCommitTs))
		}
	case "commit":
		resp, err := h.s.Commit(bg, &kvrpcpb.CommitRequest{StartVersion: a.ts("start"), CommitVersion: a.ts("commit"), Keys: a.keys("keys")})
		if err != nil {
			return fail(err)
		}
		if resp.Error != nil {
			sb.WriteString(fmtKeyError(resp.Error) + "\n")
		}
	case "rollback":
		resp, err := h.s.BatchRollback(bg, &kvrpcpb.BatchRollbackRequest{StartVersion: a.ts("start"), Keys: a.keys("keys")})
		if err != nil {
			return fail(err)
		}
		if resp.Error != nil {
			sb.WriteString(fmtKeyError(resp.Error) + "\n")
		}
	case "cleanup":
		resp, err := h.s.Cleanup(bg, &kvrpcpb.CleanupRequest{Key: a.bytes("key"), StartVersion: a.ts("start"), CurrentTs: a.ts("current")})
		if err != nil {
			return fail(err)
		}
		if resp.Error != nil {
			sb.WriteString(fmtKeyError(resp.Error) + "\n")
		}
		if resp.CommitVersion != 0 {
			fmt.Fprintf(&sb, "committed at %s\n", fmtTS(resp.CommitVersion))
		}
	case "check_txn_status":
		resp, err := h.s.CheckTxnStatus(bg, &kvrpcpb.CheckTxnStatusRequest{
			PrimaryKey: a.bytes("primary"), LockTs: a.ts("lock"), CallerStartTs: a.ts("caller"), CurrentTs: a.ts("current"),
			RollbackIfNotExist: a.has("rollback_if_not_exist"), ForceSyncCommit: a.has("force_sync"),
			ResolvingPessimisticLock: a.has("resolving_pessimistic"),
		})
		if err != nil {
			return fail(err)
		}
		if resp.Error != nil {
			sb.WriteString(fmtKeyError(resp.Error) + "\n")
			break
		}
		fmt.Fprintf(&sb, "ttl=%d commit=%s action=%s\n", resp.LockTtl, fmtTS(resp.CommitVersion), resp.Action)
		if resp.LockInfo != nil {
			sb.WriteString("lock " + fmtLockInfo(resp.LockInfo) + "\n")
		}
	case "check_secondary_locks":
		resp, err := h.s.CheckSecondaryLocks(bg, &kvrpcpb.CheckSecondaryLocksRequest{StartVersion: a.ts("start"), Keys: a.keys("keys")})
		if err != nil {
			return fail(err)
		}
		if resp.Error != nil {
			sb.WriteString(fmtKeyError(resp.Error) + "\n")
			break
		}
		fmt.Fprintf(&sb, "commit=%s locks=%d\n", fmtTS(resp.CommitTs), len(resp.Locks))
		for _, l := range resp.Locks {
			sb.WriteString("lock " + fmtLockInfo(l) + "\n")
		}
	case "resolve_lock":
		req := &kvrpcpb.ResolveLockRequest{StartVersion: a.ts("start"), CommitVersion: a.ts("commit"), Keys: a.keys("keys")}
		resp, err := h.s.ResolveLock(bg, req)
		if err != nil {
			return fail(err)
		}
		if resp.Error != nil {
			sb.WriteString(fmtKeyError(resp.Error) + "\n")
		}
	case "heartbeat":
		resp, err := h.s.TxnHeartBeat(bg, &kvrpcpb.TxnHeartBeatRequest{PrimaryLock: a.bytes("primary"), StartVersion: a.ts("start"), AdviseLockTtl: uint64(a.int("ttl"))})
		if err != nil {
			return fail(err)
		}
		if resp.Error != nil {
			sb.WriteString(fmtKeyError(resp.Error) + "\n")
			break
		}
		fmt.Fprintf(&sb, "ttl=%d\n", resp.LockTtl)
	case "pessimistic_lock":
		var muts []*kvrpcpb.Mutation
		op := kvrpcpb.Op_PessimisticLock
		if a.has("insert") {
			op = kvrpcpb.Op_Insert
		}
		for _, k := range a.keys("keys") {
			muts = append(muts, &kvrpcpb.Mutation{Op: op, Key: k})
		}
		wait := int64(-1)
		if a.has("wait") {
			wait = a.int("wait")
		}
		resp, err := h.s.PessimisticLock(bg, &kvrpcpb.PessimisticLockRequest{
			Mutations: muts, PrimaryLock: a.bytes("primary"), StartVersion: a.ts("start"), ForUpdateTs: a.ts("for_update"),
			LockTtl: uint64(a.int("ttl")), WaitTimeout: wait, ReturnValues: a.has("return_values"),
			CheckExistence: a.has("check_existence"), MinCommitTs: a.ts("min_commit"), LockOnlyIfExists: a.has("only_if_exists"),
		})
		if err != nil {
			return fail(err)
		}
		keyErrs(resp.Errors)
		for i, v := range resp.Values {
			fmt.Fprintf(&sb, "value %s=%s\n", muts[i].Key, fmtValue(v))
		}
		for i, nf := range resp.NotFounds {
			fmt.Fprintf(&sb, "not_found %s=%v\n", muts[i].Key, nf)
		}
	case "pessimistic_rollback":
		resp, err := h.s.PessimisticRollback(bg, &kvrpcpb.PessimisticRollbackRequest{StartVersion: a.ts("start"), ForUpdateTs: a.ts("for_update"), Keys: a.keys("keys")})
		if err != nil {
			return fail(err)
		}
		keyErrs(resp.Errors)
	case "scan_lock":
		resp, err := h.s.ScanLock(bg, &kvrpcpb.ScanLockRequest{MaxVersion: a.ts("max"), StartKey: a.bytes("start"), EndKey: a.bytes("end"), Limit: uint32(a.int("limit"))})
		if err != nil {
			return fail(err)
		}
		for _, l := range resp.Locks {
			sb.WriteString("lock " + fmtLockInfo(l) + "\n")
		}
	case "get":
		resp, err := h.s.Get(bg, &kvrpcpb.GetRequest{Context: rctxFrom(a), Key: a.bytes("key"), Version: a.ts("ts")})
		if err != nil {
			return fail(err)
		}
		switch {
		case resp.Error != nil:
			sb.WriteString(fmtKeyError(resp.Error) + "\n")
		case resp.NotFound:
			sb.WriteString("not found\n")
		default:
			sb.WriteString(fmtValue(resp.Value) + "\n")
		}
	case "batch_get":
		resp, err := h.s.BatchGet(bg, &kvrpcpb.BatchGetRequest{Context: rctxFrom(a), Keys: a.keys("keys"), Version: a.ts("ts")})
		if err != nil {
			return fail(err)
		}
		for _, p := range resp.Pairs {
			if p.Error != nil {
				fmt.Fprintf(&sb, "%s: %s\n", p.Key, fmtKeyError(p.Error))
			} else {
				fmt.Fprintf(&sb, "%s=%s\n", p.Key, fmtValue(p.Value))
			}
		}
	case "scan":
		resp, err := h.s.Scan(bg, &kvrpcpb.ScanRequest{
			Context: rctxFrom(a), StartKey: a.bytes("start"), EndKey: a.bytes("end"), Version: a.ts("ts"),
			Limit: uint32(a.int("limit")), KeyOnly: a.has("key_only"), Reverse: a.has("reverse"),
		})
		if err != nil {
			return fail(err)
		}
		for _, p := range resp.Pairs {
			if a.has("key_only") {
				fmt.Fprintf(&sb, "%s\n", p.Key)
			} else {
				fmt.Fprintf(&sb, "%s=%s\n", p.Key, fmtValue(p.Value))
			}
		}
		if resp.Error != nil {
			sb.WriteString(fmtKeyError(resp.Error) + "\n")
		}
	default:
		d.Fatalf(h.t, "unknown command %s", d.Cmd)
	}
	if sb.Len() == 0 {
		return "ok\n"
	}
	return sb.String()
}

// TestDataDriven runs every script with pessimistic locks written through
// the engine and kept in memory (same expected output).
func TestDataDriven(t *testing.T) {
	for _, mode := range []string{"raft_locks", "memory_locks"} {
		t.Run(mode, func(t *testing.T) {
			datadriven.Walk(t, "testdata", func(t *testing.T, path string) {
				h := newHarnessWith(t, Config{InMemoryPessimisticLock: mode == "memory_locks"})
				datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
					h.t = t
					return h.run(d)
				})
			})
		})
	}
}
